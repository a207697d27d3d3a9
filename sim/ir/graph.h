// The model graph: what every front-end (graph JSON, SCALE-Sim topology, ONNX) produces and the
// compiler consumes. Front-end neutral: ops are the graph ops below, tensors carry full static
// shapes, activations are NCHW (the compiler picks memory layouts), weights are constant tensors.
//
// Graph ops and their attributes (ints unless noted; docs/graph.md has the full table):
//   Conv               in [x, w, bias?]; kernel_shape[2], strides[2]=1, pads[4] (top, left,
//                      bottom, right)=0, dilations[2]=1, group=1. x [N,C,H,W], w [K,C/group,kh,kw].
//   MatMul             in [a, b, bias?]; a [..., M, K], b [..., K, N] -> [..., M, N] (batch dims
//                      broadcast). Gemm and transposed operands arrive here already transposed.
//   BatchNormalization in [x, scale, bias, mean, var]; folded into a preceding Conv when it can.
//   MaxPool, AveragePool  kernel_shape[2], strides[2]=1, pads[4]=0, ceil_mode=0.
//   GlobalAveragePool  [N,C,H,W] -> [N,C,1,1].
//   Unary vector ops   Relu Clip LeakyRelu Sigmoid HardSigmoid HardSwish Tanh Erf Exp Sqrt Gelu
//                      Reciprocal Rsqrt Log Neg Abs Quantize Dequantize; output shape = input
//                      shape.
//   Binary vector ops  Add Sub Mul Div Pow Min Max; numpy broadcasting.
//   Softmax LogSoftmax LayerNorm ReduceMean LRN   vector ops; output shape declared.
//   Copy ops           Concat Transpose Resize Pad Slice Split Gather Cast: move data on the
//                      vector unit; output shapes declared by the front-end.
//   View ops           Reshape Flatten Squeeze Unsqueeze Identity Dropout: no data moves, the
//                      output aliases the input; no command.
//   Host               an op the NPU cannot run, kept only with --host-fallback; string attr
//                      "onnx_op" names what it was.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npusim {

enum class DType : std::uint8_t {
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kBool,
  // Two weights per byte: only the constant right operand of a MatMul may be int4 (weight-only
  // quantisation, check_graph), because nothing else in the compiler counts half bytes.
  kInt4
};
// Bytes per element where the compiler counts whole elements (1 for int4: check_graph keeps
// int4 where only packed sizes are used, packed_bytes).
std::uint32_t dtype_bytes(DType dtype);
// Bytes of `elements` packed elements of `dtype`, rounded up to a whole byte.
std::uint64_t packed_bytes(DType dtype, std::uint64_t elements);
const char* dtype_name(DType dtype);  // "int8", "float32", ...
std::optional<DType> parse_dtype(std::string_view name);

struct Tensor {
  std::string name;
  DType dtype = DType::kInt8;
  std::vector<std::uint64_t> shape;  // every dimension known; empty for a scalar
  std::string layout;                // informational ("NCHW", "NC", ...)
  bool constant = false;             // a weight: in DRAM before the run, counted in weights_bytes
  std::uint64_t elements() const;    // product of dims (1 for a scalar)
  std::uint64_t bytes() const;       // packed: an int4 tensor of n elements takes ceil(n / 2)
};

struct Attributes {
  std::map<std::string, std::vector<std::int64_t>> ints;
  std::map<std::string, double> floats;
  std::map<std::string, std::string> strings;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  std::vector<std::int64_t> get_ints(const std::string& key,
                                     std::vector<std::int64_t> fallback) const;
  double get_float(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
};

struct Layer {
  std::string name;
  std::string op;                     // a graph op (above)
  std::vector<std::uint32_t> inputs;  // indices into Graph::tensors
  std::vector<std::uint32_t> outputs;
  Attributes attrs;
  std::string loc;  // where it came from: ONNX node, topology row, graph layer
};

struct Graph {
  std::string name;
  std::string source_file;
  std::uint64_t batch = 1;
  std::vector<Tensor> tensors;
  std::vector<Layer> layers;          // in a topological order
  std::vector<std::uint32_t> inputs;  // non-constant graph inputs
  std::vector<std::uint32_t> outputs;

  std::uint64_t weights_bytes() const;  // sum of constant tensors that layers read
  std::optional<std::uint32_t> find_tensor(std::string_view tensor_name) const;
};

// What the compiler does with a graph op.
enum class OpClass : std::uint8_t { kArray, kVector, kCopy, kView, kBatchNorm, kHost, kUnknown };
OpClass classify_op(std::string_view op);
// Element-wise graph ops: each output element comes from the same element of each (broadcast)
// input, so a chain of them can run on a tile in turn (docs/compiler.md, "Groups and fusion").
bool is_elementwise_op(std::string_view op);

// Layouts (docs/compiler.md, "Layouts and dependencies"): ops whose output is laid out as their
// driver is (element-wise ops and normalisations, batch norms, Resize, Pad), and the driver: the
// largest non-constant of `inputs` (the first on a tie), or `output` when it is larger (a Resize)
// or every input is a constant. The compiler's assign_layouts and moves_no_data's image rule
// both decide layouts with these.
bool keeps_input_layout(std::string_view op);
std::uint32_t layout_driver(const Graph& graph, const std::vector<std::uint32_t>& inputs,
                            std::uint32_t output);

// The layer that writes `t`, or nullptr (a graph input or a constant). A scan of the layers.
const Layer* writer_of(const Graph& g, std::uint32_t t);

// Whether a layer moves no data: no command runs it, and its readers' DMA fetches the producers'
// bytes in the order it describes (docs/compiler.md, "Views"). These are the views (Reshape, ...),
// Concat, Split and Slice; a Gather of one constant index on an axis before the last, of a
// computed tensor (a Slice that drops its axis); and a Transpose that keeps the last axis in
// place, whose readers fetch whole rows in the permuted order (a channel shuffle, a split into
// attention heads; on an NHWC image it must keep the H x W plane too), or that makes the last
// axis the next-to-last when only MatMuls read it, as their right operand (attention's K^T: each
// of B's columns is a row of the input); and a Transpose [0, 2, 3, 1] of an NHWC image itself,
// whose row-major output is the image's bytes in stored order. Each only when its output has the
// input's dtype and the shape it makes.
bool moves_no_data(const Graph& graph, const Layer& layer);

// Multiply-accumulates of a layer as a model architect counts them (Conv and MatMul; 0 for the
// rest). The compiled schedule's MACs must add up to the sum over the graph.
std::uint64_t layer_macs(const Graph& graph, const Layer& layer);

// Checks the graph's structure and the shapes of the ops whose shape the compiler relies on
// (Conv, MatMul, pools, element-wise); throws InputError naming the layer (by `loc` and name).
void check_graph(const Graph& graph);

// Output shape of a Conv or pool given its input [N,C,H,W], or an error message.
struct SpatialDims {
  std::uint64_t out_h = 0, out_w = 0;
};
std::optional<SpatialDims> conv_output_dims(std::uint64_t in_h, std::uint64_t in_w,
                                            const Attributes& attrs, bool ceil_mode = false);

}  // namespace npusim
