#include "sim/ir/graph.h"

#include <algorithm>
#include <array>

#include "sim/util/error.h"

namespace npusim {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  std::uint32_t bytes;
};

constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},
    {DType::kInt16, "int16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat32, "float32", 4},
    {DType::kBool, "bool", 1},
    {DType::kInt4, "int4", 1},  // a byte where counted per element; packed_bytes packs two
}};

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<std::uint64_t>> broadcast(const std::vector<std::uint64_t>& a,
                                                    const std::vector<std::uint64_t>& b) {
  std::vector<std::uint64_t> out(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::uint64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - i] = std::max(da, db);
  }
  return out;
}

// The largest tensor, as the largest transfer of a schedule (kMaxTransferBytes): 256 TiB.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 48;

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

std::uint32_t dtype_bytes(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d.bytes;
  }
  return 1;
}

std::uint64_t packed_bytes(DType dtype, std::uint64_t elements) {
  return dtype == DType::kInt4 ? elements / 2 + elements % 2 : elements * dtype_bytes(dtype);
}

const char* dtype_name(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (name == d.name) return d.dtype;
  }
  return std::nullopt;
}

std::uint64_t Tensor::elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

std::uint64_t Tensor::bytes() const { return packed_bytes(dtype, elements()); }

std::int64_t Attributes::get_int(const std::string& key, std::int64_t fallback) const {
  auto it = ints.find(key);
  return it == ints.end() || it->second.empty() ? fallback : it->second.front();
}

std::vector<std::int64_t> Attributes::get_ints(const std::string& key,
                                               std::vector<std::int64_t> fallback) const {
  auto it = ints.find(key);
  return it == ints.end() ? fallback : it->second;
}

double Attributes::get_float(const std::string& key, double fallback) const {
  auto it = floats.find(key);
  return it == floats.end() ? fallback : it->second;
}

std::string Attributes::get_string(const std::string& key, const std::string& fallback) const {
  auto it = strings.find(key);
  return it == strings.end() ? fallback : it->second;
}

std::uint64_t Graph::weights_bytes() const {
  std::vector<bool> read(tensors.size(), false);
  for (const Layer& l : layers) {
    for (std::uint32_t t : l.inputs) read[t] = true;
  }
  std::uint64_t total = 0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].constant && read[t]) total += tensors[t].bytes();
  }
  return total;
}

std::optional<std::uint32_t> Graph::find_tensor(std::string_view tensor_name) const {
  for (std::uint32_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].name == tensor_name) return t;
  }
  return std::nullopt;
}

bool is_elementwise_op(std::string_view op) {
  // clang-format off
  static const std::vector<std::string_view> ops = {
      "BatchNormalization", "Add", "Sub", "Mul", "Div", "Relu", "Clip", "LeakyRelu", "Sigmoid",
      "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Erf", "Exp", "Sqrt", "Reciprocal", "Rsqrt",
      "Neg", "Abs", "Log"};
  // clang-format on
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

const Layer* writer_of(const Graph& g, std::uint32_t t) {
  for (const Layer& l : g.layers) {
    if (std::find(l.outputs.begin(), l.outputs.end(), t) != l.outputs.end()) return &l;
  }
  return nullptr;
}

namespace {

// Whether every reader of `t` is a MatMul that takes it as its right operand (B) only, and `t`
// is no graph output. A MatMul reads B by columns: column n of a Transpose that makes its input's
// last axis the next-to-last is a run of the input's last axis, contiguous in memory, so a
// strided DMA fetches the columns straight from the untransposed tensor (a GEMM with B
// transposed, ONNX Gemm's transB): attention's K^T.
bool only_right_operand(const Graph& g, std::uint32_t t) {
  if (std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end()) return false;
  bool read = false;
  for (const Layer& l : g.layers) {
    for (std::size_t i = 0; i < l.inputs.size(); ++i) {
      if (l.inputs[i] != t) continue;
      if (l.op != "MatMul" || i != 1) return false;
      read = true;
    }
  }
  return read;
}

// Whether `t` is laid out as an NHWC image, as the compiler's assign_layouts decides it, told from
// the graph alone: a 4-d graph input or output of a conv or pool, a Concat of 4-d tensors whose
// first part is an image, or the 4-d output of an op that keeps its driver's layout
// (keeps_input_layout, layout_driver).
bool is_image(const Graph& g, std::uint32_t t) {
  for (;;) {
    if (g.tensors[t].shape.size() != 4) return false;
    if (std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()) return true;
    const Layer* p = writer_of(g, t);
    if (p == nullptr || p->inputs.empty()) return false;
    if (p->op == "Conv" || p->op == "MaxPool" || p->op == "AveragePool") return true;
    if (p->op == "Concat") {
      t = p->inputs[0];
      continue;
    }
    if (!keeps_input_layout(p->op)) return false;
    const std::uint32_t driver = layout_driver(g, p->inputs, t);
    if (driver == t) return false;  // the output drives: not yet laid out, row-major
    t = driver;
  }
}

// A Gather or Transpose whose output is exactly its input rearranged (same dtype, the shape the op
// makes; check_graph does not check these two ops' shapes, so anything else stays a copy, whose
// tiles do the work for the output as declared) and whose readers fetch whole rows: a Gather of
// one constant index on an axis before the last, or a Transpose that keeps the last axis in place
// or makes it the next-to-last for MatMuls' right operands alone. Judged from the layer alone;
// moves_no_data adds the rule for images.
bool view_by_its_own_rule(const Graph& g, const Layer& l) {
  if ((l.op != "Gather" && l.op != "Transpose") || l.outputs.size() != 1 || l.inputs.empty()) {
    return false;
  }
  const Tensor& x = g.tensors[l.inputs[0]];
  const Tensor& y = g.tensors[l.outputs[0]];
  const std::size_t rank = x.shape.size();
  if (x.constant || x.dtype != y.dtype || rank < 2) return false;
  if (l.op == "Gather") {
    // One constant index on an axis before the last: the reader takes whole rows of one index.
    // (The importer writes Where as a Gather of three inputs, with `onnx_op` set.)
    if (l.inputs.size() != 2 || l.attrs.strings.count("onnx_op") != 0) return false;
    const Tensor& index = g.tensors[l.inputs[1]];
    std::int64_t axis = l.attrs.get_int("axis", 0);
    if (axis < 0) axis += static_cast<std::int64_t>(rank);
    if (!index.constant || index.elements() != 1 || axis < 0 ||
        axis >= static_cast<std::int64_t>(rank) - 1) {
      return false;
    }
    return y.elements() == x.elements() / x.shape[static_cast<std::size_t>(axis)];
  }
  const std::vector<std::int64_t> perm = l.attrs.get_ints("perm", {});
  const auto last_axis = static_cast<std::int64_t>(rank - 1);
  if (l.inputs.size() != 1 || perm.size() != rank ||
      (perm.back() != last_axis &&
       !(perm[rank - 2] == last_axis && only_right_operand(g, l.outputs[0])))) {
    return false;
  }
  std::vector<bool> seen(rank, false);
  std::vector<std::uint64_t> permuted;
  for (const std::int64_t p : perm) {
    if (p < 0 || static_cast<std::size_t>(p) >= rank || seen[static_cast<std::size_t>(p)]) {
      return false;
    }
    seen[static_cast<std::size_t>(p)] = true;
    permuted.push_back(x.shape[static_cast<std::size_t>(p)]);
  }
  return y.shape == permuted;
}

// Whether Transpose `l` (a view by its own rule) moves only channels of an image whose H x W
// plane has `plane` elements: it keeps the last axis and its trailing axes of exactly that
// product in place.
bool keeps_plane(const Graph& g, const Layer& l, std::uint64_t plane) {
  const std::vector<std::uint64_t>& x = g.tensors[l.inputs[0]].shape;
  const std::vector<std::int64_t> perm = l.attrs.get_ints("perm", {});
  std::uint64_t trailing = 1;
  for (std::size_t i = x.size(); i-- > 0 && trailing < plane;) {
    if (perm[i] != static_cast<std::int64_t>(i)) return false;
    trailing *= x[i];
  }
  return trailing == plane;
}

}  // namespace

bool keeps_input_layout(std::string_view op) {
  const OpClass cls = classify_op(op);
  return (cls == OpClass::kVector && op != "GlobalAveragePool") || cls == OpClass::kBatchNorm ||
         op == "Resize" || op == "Pad";
}

std::uint32_t layout_driver(const Graph& g, const std::vector<std::uint32_t>& inputs,
                            std::uint32_t output) {
  std::optional<std::uint32_t> input;
  for (const std::uint32_t t : inputs) {
    const Tensor& x = g.tensors[t];
    if (!x.constant && (!input || x.elements() > g.tensors[*input].elements())) input = t;
  }
  if (!input || g.tensors[output].elements() > g.tensors[*input].elements()) return output;
  return *input;
}

// A Transpose [0, 2, 3, 1] (NCHW to NHWC) of an NHWC image: its row-major output is the image's
// bytes in the order they are stored (a detection head's permute before its Reshape), so nothing
// moves. Only of the image itself: behind a Reshape the bytes' order is another.
bool nhwc_of_image(const Graph& g, const Layer& l) {
  if (l.op != "Transpose" || l.inputs.size() != 1 || l.outputs.size() != 1) return false;
  const Tensor& x = g.tensors[l.inputs[0]];
  const Tensor& y = g.tensors[l.outputs[0]];
  const std::vector<std::int64_t> perm = l.attrs.get_ints("perm", {});
  return perm == std::vector<std::int64_t>{0, 2, 3, 1} && x.shape.size() == 4 &&
         x.dtype == y.dtype &&
         y.shape == std::vector<std::uint64_t>{x.shape[0], x.shape[2], x.shape[3], x.shape[1]} &&
         is_image(g, l.inputs[0]);
}

bool moves_no_data(const Graph& g, const Layer& l) {
  if (classify_op(l.op) == OpClass::kView || l.op == "Concat" || l.op == "Split" ||
      l.op == "Slice") {
    return true;
  }
  if (nhwc_of_image(g, l)) return true;
  if (!view_by_its_own_rule(g, l)) return false;
  if (l.op == "Gather") return true;
  // Behind single-input views (Reshape, ...), an NHWC image's bytes are not the view's rows:
  // there the permutation must keep the H x W plane in place (trailing axes of exactly that
  // product), so that it permutes channels only, which a compiler folds into the weights
  // (docs/compiler.md, "Views"). The walk back to the bytes' source also passes Gathers and
  // Transposes that are views by their own rule; it is one walk, not one per layer passed.
  std::vector<const Layer*> transposes;  // passed on the way, nearest first
  std::uint32_t source = l.inputs[0];
  for (const Layer* p = writer_of(g, source); p != nullptr && !p->inputs.empty();
       p = writer_of(g, source)) {
    const bool view = p->inputs.size() == 1 && classify_op(p->op) == OpClass::kView;
    if (!view && !view_by_its_own_rule(g, *p)) break;
    if (p->op == "Transpose") transposes.push_back(p);
    source = p->inputs[0];
  }
  if (!is_image(g, source)) return true;
  const std::vector<std::uint64_t>& image = g.tensors[source].shape;
  const std::uint64_t plane = image[2] * image[3];
  const auto channels_only = [&](const Layer& t) {
    const std::vector<std::int64_t> perm = t.attrs.get_ints("perm", {});
    return perm.back() == static_cast<std::int64_t>(perm.size() - 1) && keeps_plane(g, t, plane);
  };
  // A Transpose passed that moves more than channels is a copy: its output, and so this layer's
  // input, is row-major, and this layer's own rule holds.
  for (const Layer* t : transposes) {
    if (!channels_only(*t)) return true;
  }
  return channels_only(l);  // an image's pixels are no MatMul's columns either
}

OpClass classify_op(std::string_view op) {
  static const std::vector<std::pair<std::string_view, OpClass>> table = {
      {"Conv", OpClass::kArray},
      {"MatMul", OpClass::kArray},
      {"BatchNormalization", OpClass::kBatchNorm},
      {"MaxPool", OpClass::kVector},
      {"AveragePool", OpClass::kVector},
      {"GlobalAveragePool", OpClass::kVector},
      {"Relu", OpClass::kVector},
      {"Clip", OpClass::kVector},
      {"LeakyRelu", OpClass::kVector},
      {"Sigmoid", OpClass::kVector},
      {"HardSigmoid", OpClass::kVector},
      {"HardSwish", OpClass::kVector},
      {"Tanh", OpClass::kVector},
      {"Erf", OpClass::kVector},
      {"Exp", OpClass::kVector},
      {"Sqrt", OpClass::kVector},
      {"Gelu", OpClass::kVector},
      {"Quantize", OpClass::kVector},
      {"Dequantize", OpClass::kVector},
      {"Add", OpClass::kVector},
      {"Sub", OpClass::kVector},
      {"Mul", OpClass::kVector},
      {"Div", OpClass::kVector},
      {"Pow", OpClass::kVector},
      {"Min", OpClass::kVector},
      {"Max", OpClass::kVector},
      {"Reciprocal", OpClass::kVector},
      {"Rsqrt", OpClass::kVector},
      {"Log", OpClass::kVector},
      {"Neg", OpClass::kVector},
      {"Abs", OpClass::kVector},
      {"Softmax", OpClass::kVector},
      {"LogSoftmax", OpClass::kVector},
      {"LayerNorm", OpClass::kVector},
      {"ReduceMean", OpClass::kVector},
      {"LRN", OpClass::kVector},
      {"Concat", OpClass::kCopy},
      {"Transpose", OpClass::kCopy},
      {"Resize", OpClass::kCopy},
      {"Pad", OpClass::kCopy},
      {"Slice", OpClass::kCopy},
      {"Split", OpClass::kCopy},
      {"Gather", OpClass::kCopy},
      {"Cast", OpClass::kCopy},
      {"Reshape", OpClass::kView},
      {"Flatten", OpClass::kView},
      {"Squeeze", OpClass::kView},
      {"Unsqueeze", OpClass::kView},
      {"Identity", OpClass::kView},
      {"Dropout", OpClass::kView},
      {"Host", OpClass::kHost},
  };
  for (const auto& [name, cls] : table) {
    if (name == op) return cls;
  }
  return OpClass::kUnknown;
}

std::optional<SpatialDims> conv_output_dims(std::uint64_t in_h, std::uint64_t in_w,
                                            const Attributes& attrs, bool ceil_mode) {
  const auto k = attrs.get_ints("kernel_shape", {});
  const auto s = attrs.get_ints("strides", {1, 1});
  const auto p = attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = attrs.get_ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2) return std::nullopt;
  for (auto v : {k[0], k[1], s[0], s[1], d[0], d[1]}) {
    if (v < 1) return std::nullopt;
  }
  for (auto v : p) {
    if (v < 0) return std::nullopt;
  }
  const auto extent = [](std::uint64_t in, std::int64_t pad0, std::int64_t pad1,
                         std::int64_t kernel, std::int64_t dilation, std::int64_t stride,
                         bool ceil) -> std::optional<std::uint64_t> {
    // Attributes come from the file: sums and products past 64 bits are invalid, not wrapped.
    std::int64_t padded = 0, span = 0, steps = 0;
    if (__builtin_add_overflow(static_cast<std::int64_t>(in), pad0, &padded) ||
        __builtin_add_overflow(padded, pad1, &padded) ||
        __builtin_mul_overflow(dilation, kernel - 1, &span) ||
        __builtin_add_overflow(span, 1, &span)) {
      return std::nullopt;
    }
    if (padded < span) return std::nullopt;
    steps = padded - span;
    if (ceil && __builtin_add_overflow(steps, stride - 1, &steps)) return std::nullopt;
    return static_cast<std::uint64_t>(steps / stride + 1);
  };
  const auto h = extent(in_h, p[0], p[2], k[0], d[0], s[0], ceil_mode);
  const auto w = extent(in_w, p[1], p[3], k[1], d[1], s[1], ceil_mode);
  if (!h || !w) return std::nullopt;
  return SpatialDims{*h, *w};
}

std::uint64_t layer_macs(const Graph& g, const Layer& l) {
  if (l.op == "Conv" && l.inputs.size() >= 2 && !l.outputs.empty()) {
    const Tensor& w = g.tensors[l.inputs[1]];
    const Tensor& y = g.tensors[l.outputs[0]];
    // Every output element accumulates C/group * kh * kw products.
    return y.elements() * w.shape[1] * w.shape[2] * w.shape[3];
  }
  if (l.op == "MatMul" && l.inputs.size() >= 2 && !l.outputs.empty()) {
    const Tensor& a = g.tensors[l.inputs[0]];
    const Tensor& y = g.tensors[l.outputs[0]];
    return y.elements() * a.shape.back();
  }
  return 0;
}

namespace {

// A leading pad as wide as the kernel window makes the first output row or column read only
// padding: a geometry no exporter writes (ONNX Runtime refuses it for pools), whose tiles would
// start past the input. Trailing pads may be (SCALE-Sim's output size needs them when the stride
// passes the filter). Attributes that conv_output_dims rejects anyway are left to it.
std::optional<std::string> leading_pad_problem(const Attributes& attrs) {
  const auto k = attrs.get_ints("kernel_shape", {});
  const auto p = attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = attrs.get_ints("dilations", {1, 1});
  if (k.size() != 2 || p.size() != 4 || d.size() != 2) return std::nullopt;
  std::int64_t window[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || d[i] < 1 || __builtin_mul_overflow(d[i], k[i] - 1, &window[i]) ||
        __builtin_add_overflow(window[i], 1, &window[i])) {
      return std::nullopt;
    }
  }
  if (p[0] < window[0] && p[1] < window[1]) return std::nullopt;
  std::string pads;
  for (std::size_t i = 0; i < p.size(); ++i) pads += (i ? ", " : "") + std::to_string(p[i]);
  return "pads [" + pads + "] are not smaller than the kernel window " + std::to_string(window[0]) +
         "x" + std::to_string(window[1]) + ": its first output " +
         (p[0] >= window[0] ? "row" : "column") + " would read only padding";
}

}  // namespace

void check_graph(const Graph& g) {
  Diagnostics diag(g.source_file);
  auto where = [&](const Layer& l) {
    return "layer '" + l.name + "'" + (l.loc.empty() ? "" : " (" + l.loc + ")");
  };
  // Names end up in JSON outputs (stats.json, trace.json, schedules), which must be UTF-8; a
  // topology CSV or an ONNX file can hold any bytes.
  if (!valid_utf8(g.name)) diag.error("graph name", "is not valid UTF-8 text");
  for (const Tensor& t : g.tensors) {
    if (!valid_utf8(t.name) || !valid_utf8(t.layout))
      diag.error("tensor '" + t.name + "'", "name or layout is not valid UTF-8 text");
  }
  for (const Layer& l : g.layers) {
    bool ok = valid_utf8(l.name) && valid_utf8(l.op) && valid_utf8(l.loc);
    for (const auto& attr : l.attrs.strings)
      ok = ok && valid_utf8(attr.first) && valid_utf8(attr.second);
    for (const auto& attr : l.attrs.ints) ok = ok && valid_utf8(attr.first);
    for (const auto& attr : l.attrs.floats) ok = ok && valid_utf8(attr.first);
    if (!ok) diag.error(where(l), "name, op, location or an attribute is not valid UTF-8 text");
  }
  diag.throw_if_any();
  std::vector<bool> available(g.tensors.size(), false);
  for (std::uint32_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].constant) available[t] = true;
    std::uint64_t bytes = dtype_bytes(g.tensors[t].dtype);
    bool overflow = false;
    for (std::uint64_t d : g.tensors[t].shape) {
      if (d == 0)
        diag.error("tensor '" + g.tensors[t].name + "'",
                   "shape " + shape_text(g.tensors[t].shape) + " has a zero dimension");
      overflow = overflow || __builtin_mul_overflow(bytes, d, &bytes);
    }
    // Sizes past 64 bits would wrap in every byte count the compiler makes (and divide by zero).
    if (overflow || bytes > kMaxTensorBytes) {
      diag.error("tensor '" + g.tensors[t].name + "'",
                 "shape " + shape_text(g.tensors[t].shape) +
                     " holds more than 2^48 bytes, the most a tensor may hold");
    }
  }
  for (std::uint32_t t : g.inputs) {
    available.at(t) = true;
    if (g.tensors[t].dtype == DType::kInt4) {
      diag.error("tensor '" + g.tensors[t].name + "'",
                 "is a graph input of dtype int4: int4 is for the constant weights of a MatMul "
                 "only");
    }
  }
  for (const Layer& l : g.layers) {
    bool ok = true;
    for (std::uint32_t t : l.inputs) {
      if (t >= g.tensors.size()) {
        diag.error(where(l), "input index out of range");
        ok = false;
      } else if (!available[t]) {
        diag.error(where(l),
                   "reads tensor '" + g.tensors[t].name + "' before any layer produces it");
        ok = false;
      }
    }
    for (std::uint32_t t : l.outputs) {
      if (t >= g.tensors.size()) {
        diag.error(where(l), "output index out of range");
        ok = false;
      } else if (available[t]) {
        diag.error(where(l),
                   "writes tensor '" + g.tensors[t].name + "', which already has a value");
        ok = false;
      } else {
        available[t] = true;
      }
    }
    if (!ok) continue;
    // int4 is packed two to a byte; only a MatMul's weight loads count it so.
    for (std::size_t i = 0; i < l.inputs.size(); ++i) {
      const Tensor& x = g.tensors[l.inputs[i]];
      if (x.dtype == DType::kInt4 && !(l.op == "MatMul" && i == 1 && x.constant)) {
        diag.error(where(l), "reads int4 tensor '" + x.name +
                                 "': int4 is for the constant weights of a MatMul (its second "
                                 "input) only, as weight-only quantisation stores them");
      }
    }
    for (std::uint32_t t : l.outputs) {
      if (g.tensors[t].dtype == DType::kInt4) {
        diag.error(where(l), "writes int4 tensor '" + g.tensors[t].name +
                                 "': int4 is for the constant weights of a MatMul only");
      }
    }
    const OpClass cls = classify_op(l.op);
    if (cls == OpClass::kUnknown) {
      diag.error(where(l), "unknown graph op '" + l.op + "'");
      continue;
    }
    if (l.outputs.empty()) {
      diag.error(where(l), "has no output");
      continue;
    }
    const Tensor& y = g.tensors[l.outputs[0]];
    auto expect_shape = [&](const std::vector<std::uint64_t>& want) {
      if (y.shape != want) {
        diag.error(where(l), "output '" + y.name + "' has shape " + shape_text(y.shape) +
                                 ", expected " + shape_text(want));
      }
    };
    auto need_inputs = [&](std::size_t n) {
      if (l.inputs.size() < n) {
        diag.error(where(l), l.op + " needs " + std::to_string(n) + " inputs, has " +
                                 std::to_string(l.inputs.size()));
        return false;
      }
      return true;
    };
    if (l.op == "Conv") {
      if (!need_inputs(2)) continue;
      const Tensor& x = g.tensors[l.inputs[0]];
      const Tensor& w = g.tensors[l.inputs[1]];
      const std::int64_t group = l.attrs.get_int("group", 1);
      if (x.shape.size() != 4 || w.shape.size() != 4) {
        diag.error(where(l), "Conv needs 4-d input and weight, got " + shape_text(x.shape) +
                                 " and " + shape_text(w.shape));
        continue;
      }
      if (group < 1 || static_cast<std::uint64_t>(group) > x.shape[1] ||
          w.shape[1] * static_cast<std::uint64_t>(group) != x.shape[1] ||
          w.shape[0] % static_cast<std::uint64_t>(group) != 0) {
        diag.error(where(l), "weight " + shape_text(w.shape) + " does not fit input " +
                                 shape_text(x.shape) + " with group " + std::to_string(group));
        continue;
      }
      const std::vector<std::int64_t> weight_kernel = {static_cast<std::int64_t>(w.shape[2]),
                                                       static_cast<std::int64_t>(w.shape[3])};
      if (l.attrs.get_ints("kernel_shape", weight_kernel) != weight_kernel) {
        diag.error(where(l), "kernel_shape does not match the weight " + shape_text(w.shape));
        continue;
      }
      Attributes attrs = l.attrs;
      attrs.ints["kernel_shape"] = weight_kernel;
      if (const auto problem = leading_pad_problem(attrs)) {
        diag.error(where(l), *problem);
        continue;
      }
      const auto dims = conv_output_dims(x.shape[2], x.shape[3], attrs);
      if (!dims) {
        diag.error(where(l), "invalid kernel_shape, strides, pads or dilations for input " +
                                 shape_text(x.shape));
        continue;
      }
      expect_shape({x.shape[0], w.shape[0], dims->out_h, dims->out_w});
    } else if (l.op == "MatMul") {
      if (!need_inputs(2)) continue;
      const Tensor& a = g.tensors[l.inputs[0]];
      const Tensor& b = g.tensors[l.inputs[1]];
      if (a.shape.size() < 2 || b.shape.size() < 2 ||
          a.shape.back() != b.shape[b.shape.size() - 2]) {
        diag.error(where(l), "MatMul operands " + shape_text(a.shape) + " x " +
                                 shape_text(b.shape) + " do not multiply");
        continue;
      }
      const auto batch = broadcast(std::vector<std::uint64_t>(a.shape.begin(), a.shape.end() - 2),
                                   std::vector<std::uint64_t>(b.shape.begin(), b.shape.end() - 2));
      if (!batch) {
        diag.error(where(l), "MatMul batch dimensions do not broadcast");
        continue;
      }
      auto want = *batch;
      want.push_back(a.shape[a.shape.size() - 2]);
      want.push_back(b.shape.back());
      expect_shape(want);
    } else if (l.op == "MaxPool" || l.op == "AveragePool") {
      if (!need_inputs(1)) continue;
      const Tensor& x = g.tensors[l.inputs[0]];
      if (const auto problem = leading_pad_problem(l.attrs)) {
        diag.error(where(l), *problem);
        continue;
      }
      const auto dims = x.shape.size() == 4 ? conv_output_dims(x.shape[2], x.shape[3], l.attrs,
                                                               l.attrs.get_int("ceil_mode", 0) != 0)
                                            : std::nullopt;
      if (!dims) {
        diag.error(where(l),
                   "invalid pool kernel_shape, strides or pads for input " + shape_text(x.shape));
        continue;
      }
      expect_shape({x.shape[0], x.shape[1], dims->out_h, dims->out_w});
    } else if (l.op == "GlobalAveragePool") {
      if (!need_inputs(1)) continue;
      const Tensor& x = g.tensors[l.inputs[0]];
      if (x.shape.size() != 4) {
        diag.error(where(l), "GlobalAveragePool needs a 4-d input, got " + shape_text(x.shape));
        continue;
      }
      expect_shape({x.shape[0], x.shape[1], 1, 1});
    } else if (l.op == "Add" || l.op == "Sub" || l.op == "Mul" || l.op == "Div" || l.op == "Pow" ||
               l.op == "Min" || l.op == "Max") {
      if (!need_inputs(2)) continue;
      const auto want = broadcast(g.tensors[l.inputs[0]].shape, g.tensors[l.inputs[1]].shape);
      if (!want) {
        diag.error(where(l), "operands " + shape_text(g.tensors[l.inputs[0]].shape) + " and " +
                                 shape_text(g.tensors[l.inputs[1]].shape) + " do not broadcast");
        continue;
      }
      expect_shape(*want);
    } else if (cls == OpClass::kVector && l.op != "Softmax" && l.op != "LogSoftmax" &&
               l.op != "LayerNorm" && l.op != "ReduceMean" && l.op != "LRN") {
      if (!need_inputs(1)) continue;
      expect_shape(g.tensors[l.inputs[0]].shape);
    } else if (cls == OpClass::kView) {
      if (!need_inputs(1)) continue;
      if (y.elements() != g.tensors[l.inputs[0]].elements()) {
        diag.error(where(l), "view " + shape_text(y.shape) +
                                 " has a different element count from its input " +
                                 shape_text(g.tensors[l.inputs[0]].shape));
      }
    }
  }
  for (std::uint32_t t : g.outputs) {
    if (t >= g.tensors.size()) {
      diag.error("graph outputs", "output tensor #" + std::to_string(t) +
                                      " does not exist (the graph has " +
                                      std::to_string(g.tensors.size()) + " tensors)");
    } else if (!available[t]) {
      diag.error("graph outputs",
                 "output tensor '" + g.tensors[t].name +
                     "' is never produced (no layer writes it and it is not a graph input)");
    }
  }
  diag.throw_if_any();
}

}  // namespace npusim
