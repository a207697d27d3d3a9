// The ONNX front-end: an ONNX model file -> Graph (sim/ir/graph.h), ready for check_graph and the
// compiler.
//
// What it does, in order:
//  1. parses the ModelProto (a file that is not a readable ONNX model is an InputError naming it);
//  2. gives every graph input a static shape: dims from OnnxImportOptions::input_shapes, else the
//     model's static dims, else default_dynamic_dim for each dynamic dim (reported in `notes`);
//  3. walks the nodes in topological order, computing every tensor's static shape and dtype, and
//     folds what is computable at import time: every node whose inputs are all constants
//     (initializers, Constant nodes, folded results) and every Shape/Size node becomes a constant,
//     with its element values when it is small (shape arithmetic: Shape, Gather, Slice, Concat,
//     Unsqueeze, Squeeze, Cast, Range, ConstantOfShape, Reshape, Expand, Add, Mul, Div, Sub,
//     Equal, Where, Min, Max, ...) and with its shape only when it is large (weights made by
//     ConstantOfShape, a Transpose of a weight). A DequantizeLinear of a constant folds into that
//     constant, which keeps its integer dtype;
//  4. maps the remaining nodes to graph ops (table below). An op with no graph op is an
//     InputError naming the node and op type, or, with host_fallback, a "Host" layer with string
//     attr "onnx_op" whose output shapes come from ONNX shape inference. Without host_fallback
//     the walk goes on past such a node (its outputs take those inferred shapes), so every
//     unsupported node is reported in one error, also one that reads another's output;
//  5. fuses decomposed LayerNorm (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, and the
//     optional Mul scale and Add bias) and decomposed GELU (Div sqrt2 or Mul 1/sqrt2, Erf, Add 1,
//     Mul x, Mul 0.5, in any of the usual orders) into one LayerNorm / Gelu layer when their
//     intermediate tensors have no other consumers: the graph pass
//     sim/compiler/passes/fuse_layer_norm_gelu.h, given the values of the scalar constants. The
//     same pass makes Sqrt then Reciprocal (or Div(1, Sqrt)) one Rsqrt layer;
//  6. folds each DequantizeLinear of an activation into its readers, which then read the integer
//     tensor (sim/compiler/passes/fold_dequantize.h): a QDQ model moves int8 activations.
//
// ONNX op -> graph op (layer inputs in brackets; constant inputs that only configure the op,
// such as a Reshape's shape or a Slice's starts, become attributes):
//   Conv, ConvInteger, QLinearConv -> Conv [x, w, bias?]; 2-d only; auto_pad resolved to pads;
//       zero points and scales dropped; attr onnx_op names the integer forms
//   Gemm -> MatMul [a, b, bias?]; transA/transB applied (a transposed constant, else a Transpose
//       layer); alpha and beta (attrs when not 1) do not change the cost. MatMul,
//       MatMulInteger, QLinearMatMul -> MatMul [a, b];
//       a 1-d operand gets a Reshape layer (or a reshaped constant) on each side
//   BatchNormalization -> BatchNormalization [x, scale, bias, mean, var]
//   Relu Sigmoid Tanh Erf Exp Sqrt Reciprocal Log Neg Abs HardSwish LeakyRelu HardSigmoid -> same
//       op; Clip -> Clip [x] with float attrs min/max; Add Sub Mul Div Pow -> same op; Sum -> a
//       chain of Add; Min, Max -> a chain of the binary Min / Max
//   ReduceMean, Softmax, LogSoftmax, LRN, MaxPool, AveragePool, GlobalAveragePool -> same op
//       (axes normalised to non-negative); GlobalMaxPool -> MaxPool over the whole plane
//   LayerNormalization -> LayerNorm [x, scale, bias?]
//   Concat Transpose Pad Slice Split Gather -> same op; Resize, Upsample -> Resize;
//       Expand -> Resize (a broadcast copy; attr onnx_op=Expand); Where -> Gather [x, y, cond]
//       (a data-dependent select; attr onnx_op=Where); Cast -> Cast (dropped when the tensor
//       already has the target type)
//   Reshape Flatten Squeeze Unsqueeze Identity Dropout -> same op (views)
//   QuantizeLinear, DynamicQuantizeLinear -> Quantize; DequantizeLinear -> Dequantize; attrs
//       scale / zero_point for per-tensor parameters, axis for per-channel ones
//   Shape, Size, Constant, ConstantOfShape, Range, and any op whose inputs are all constants:
//       folded, no layer
//
// Layer names are the ONNX node names (`<op>_<index>` for unnamed nodes; a fused layer takes the
// name of its first node and lists all of them in string attr "fused_nodes"); `loc` is
// `loc("<file name>":node <index> "<node name>")` with the node's index in the file. Auxiliary
// layers (a Gemm's Transpose, the Adds of a Sum) are named `<node name>/<what>`. The graph is
// named after the ONNX graph (or the file stem when the graph has no name); Graph::batch is dim 0
// of the first graph input when that input has rank 2 or more, else 1. Dtypes map one to one
// (uint16/uint32/uint64 to the signed type of the same size); float64 and strings are errors.
//
// Not supported yet: Conv and pools other than 2-d (Host with host_fallback); ConvTranspose,
// InstanceNormalization, Elu, PRelu, Softplus, comparisons and other ops
// on activations that have no graph op (Host); control flow (If, Loop, Scan: a Host layer sees
// only the explicit inputs, not the values its subgraphs read); LayerNorm written with
// Reciprocal (it compiles as its vector ops, with one Rsqrt) or with a non-constant scale, and
// the tanh approximation of GELU, stay decomposed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/ir/graph.h"

namespace npusim {

struct OnnxImportOptions {
  // Full shapes for graph inputs, by input name (from `--input-shape name=1x3x224x224`). The rank
  // must match the model's; a static dim of the model must not be contradicted.
  std::map<std::string, std::vector<std::uint64_t>> input_shapes;
  // Size of every dynamic input dim (batch, seq_len, ...) that input_shapes does not give, and of
  // any output dim of a Host op that ONNX shape inference cannot determine. Each use is reported
  // in the `notes` of import_onnx.
  std::uint64_t default_dynamic_dim = 1;
  // Unsupported ops become "Host" layers instead of errors.
  bool host_fallback = false;
};

// Imports the ONNX model at `path`. Throws InputError (naming the file, and the node as
// `node '<name>' (<op type>)` where one is at fault) when the file is not an ONNX model, an op is
// unsupported, a shape cannot be made static, or the model is inconsistent. `notes`, when given,
// receives one line per assumption made (a dynamic dim given its default size), without the file
// name, for the caller to show as warnings.
Graph import_onnx(const std::string& path, const OnnxImportOptions& options,
                  std::vector<std::string>* notes = nullptr);

}  // namespace npusim
