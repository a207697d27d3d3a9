#include "sim/compiler/passes/fuse_layer_groups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

namespace npusim {
namespace {

const std::vector<std::string_view> kFusableActivations = {
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu"};

class Grouper {
 public:
  Grouper(const Graph& graph, std::uint64_t chain_constant_bytes, const std::vector<bool>* image)
      : g_(graph), chain_constant_bytes_(chain_constant_bytes), image_(image) {
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      for (std::uint32_t t : g_.layers[l].inputs) consumers_[t].push_back(l);
      for (std::uint32_t t : g_.layers[l].outputs) producer_[t] = l;
    }
  }

  std::vector<LayerGroup> run() const {
    std::vector<LayerGroup> groups;
    std::vector<bool> done(g_.layers.size(), false);
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      if (done[l]) continue;
      groups.push_back(make_group(l));
      for (std::uint32_t m : groups.back().layers) done[m] = true;
    }
    return groups;
  }

 private:
  // The one layer that reads `tensor`, unless it has several readers or is a graph output.
  std::optional<std::uint32_t> sole_consumer(std::uint32_t tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    if (std::find(g_.outputs.begin(), g_.outputs.end(), tensor) != g_.outputs.end()) {
      return std::nullopt;
    }
    return it->second.front();
  }

  // An array layer's group is its head, then as many of these epilogue stages as match, in
  // order: a Cast of its output (the integer accumulator's dequantisation); a batch norm (Conv)
  // or a bias Add (MatMul: one constant per output column); a scalar scale (MatMul), then the
  // bias if none came before it; a per-channel scale and shift (Conv); the residual Add
  // of an earlier activation (Conv); one activation, or x * f(x) with f Sigmoid or HardSigmoid
  // (SiLU, HardSwish); a Quantize (requantisation), after which a Conv without a residual may still
  // take one, an activation and a Quantize (QDQ models). A pool takes a Relu or Clip; an
  // element-wise vector layer a chain of element-wise layers, which may end with a row
  // normalization; a vector layer's group may end with a Quantize too.
  LayerGroup make_group(std::uint32_t first) const {
    LayerGroup group;
    group.layers = {first};
    const Layer& head = g_.layers[first];
    group.output = head.outputs.at(0);
    const OpClass cls = classify_op(head.op);
    if (cls == OpClass::kArray) {
      fuse_cast(group);
      const bool affine = fuse_affine(group);
      if (head.op == "MatMul" && fuse_output_scale(group) && !affine) fuse_bias(group);
      if (head.op == "Conv") {
        fuse_channel_scale(group);
        fuse_residual(group);
      }
      if (!fuse_activation(group)) fuse_gated_activation(group);
    } else if (head.op == "MaxPool" || head.op == "AveragePool") {
      fuse_clamp(group);
    } else if (is_elementwise_op(head.op) && head.outputs.size() == 1) {
      fuse_elementwise_chain(group);
    }
    if (cls == OpClass::kArray || (cls == OpClass::kVector && head.op != "Quantize" &&
                                   head.op != "Dequantize" && head.outputs.size() == 1)) {
      // In a QDQ model a conv's residual Add comes after its requantisation: Add(Quantize(conv),
      // r), r the earlier int8 activation, then its own Quantize (the importer folded the
      // DequantizeLinears between). The output stage adds r as it would before requantising.
      if (fuse_quantize(group) && head.op == "Conv" && !group.residual && fuse_residual(group)) {
        fuse_activation(group);
        fuse_quantize(group);
      }
    }
    name_group(group);
    return group;
  }

  void append(LayerGroup& group, std::uint32_t layer) const {
    group.layers.push_back(layer);
    group.output = g_.layers[layer].outputs.at(0);
  }

  // Conv/MatMul -> Cast of its output, as ConvInteger and MatMulInteger export (onnxruntime's
  // quantize_dynamic: the int32 accumulator cast to float, then scaled): the output stage converts
  // each element as it scales it (the dequantise factor it applies anyway), so the cast loads
  // and costs nothing, and the group stores the cast's dtype.
  void fuse_cast(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next) return;
    const Layer& l = g_.layers[*next];
    if (l.op != "Cast" || l.inputs.size() != 1 || l.outputs.size() != 1) return;
    if (g_.tensors[l.outputs[0]].shape != g_.tensors[group.output].shape) return;
    append(group, *next);
  }

  // A Conv's BatchNormalization, or a MatMul's bias (fuse_bias).
  bool fuse_affine(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next) return false;
    const Layer& head = g_.layers[group.layers[0]];
    if (head.op == "Conv" && g_.layers[*next].op == "BatchNormalization") {
      append(group, *next);
      return true;
    }
    return head.op == "MatMul" && fuse_bias(group);
  }

  // MatMul [-> scale] -> Add(y, b), b a bias: one constant per output column (its elements are
  // y's last dimension) or a scalar, loaded with the weights; after the scale it folds before it as
  // b / s (onnxruntime's dynamic quantisation writes MatMulInteger -> Cast -> Mul(scale) ->
  // Add(bias)). A larger constant is no bias (attention's mask after its scale: a matrix the size
  // of the scores, which the Softmax's chain reads by rows).
  bool fuse_bias(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next) return false;
    const Layer& l = g_.layers[*next];
    if (l.op != "Add" || l.inputs.size() != 2 || l.outputs.size() != 1) return false;
    const std::uint32_t b = l.inputs[0] == group.output ? l.inputs[1] : l.inputs[0];
    const Tensor& bt = g_.tensors[b];
    const Tensor& y = g_.tensors[group.output];
    // One value per column: b's dims, leading 1s dropped, are y's last one ([N], [1, N]). A
    // scalar is a bias too (the same value for every column); [N, 1] is one value per row.
    if (!bt.constant || (bt.elements() != 1 && broadcast_dims(bt, y) != 1)) return false;
    group.extra_constants.push_back(b);
    append(group, *next);
    return true;
  }

  // MatMul[+bias] -> Mul(y, s) or Div(y, s), s a scalar constant: attention's 1/sqrt(d) scale of
  // Q K^T. The output stage multiplies every element by the output's scale anyway (a dequantise
  // or requantise factor); s folds into that factor, so it loads and costs nothing.
  bool fuse_output_scale(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next) return false;
    const Layer& l = g_.layers[*next];
    if ((l.op != "Mul" && l.op != "Div") || l.inputs.size() != 2 || l.outputs.size() != 1) {
      return false;
    }
    const bool y_first = l.inputs[0] == group.output;
    if (!y_first && (l.op != "Mul" || l.inputs[1] != group.output)) return false;
    const Tensor& s = g_.tensors[y_first ? l.inputs[1] : l.inputs[0]];
    const Tensor& y = g_.tensors[group.output];
    const Tensor& out = g_.tensors[l.outputs[0]];
    if (!s.constant || s.elements() != 1 || out.shape != y.shape || out.dtype != y.dtype) {
      return false;
    }
    append(group, *next);
    return true;
  }

  // Conv[+BN] -> Mul(y, s) -> Add(y, b), s and b constants per output channel (or scalars), as
  // Caffe's Scale layer after a BatchNorm exports: folded into the conv's weights and bias as a
  // batch norm is, so they load nothing. Sub and Div by such a constant fold the same way.
  void fuse_channel_scale(LayerGroup& group) const {
    for (const char* op : {"Mul", "Div", "Add", "Sub"}) {
      const auto next = sole_consumer(group.output);
      if (!next) return;
      const Layer& l = g_.layers[*next];
      if (l.op != op || l.inputs.size() != 2) continue;
      // y first; Mul and Add commute, so for them the constant may come first.
      const bool y_first = l.inputs[0] == group.output;
      const bool y_second = l.inputs[1] == group.output && (l.op == "Mul" || l.op == "Add");
      if (!y_first && !y_second) continue;
      const std::uint32_t c = l.inputs[0] == group.output ? l.inputs[1] : l.inputs[0];
      if (!per_channel_constant(c, group.output)) continue;
      append(group, *next);
    }
  }

  // A constant that broadcasts over an NCHW tensor `y` along its channels only: one element per
  // channel, its shape right-aligned to y's with 1 everywhere but at C (or a scalar).
  bool per_channel_constant(std::uint32_t c, std::uint32_t y) const {
    const Tensor& ct = g_.tensors[c];
    const Tensor& yt = g_.tensors[y];
    if (!ct.constant || yt.shape.size() != 4 || ct.shape.size() > 4) return false;
    if (ct.elements() == 1) return true;
    const std::size_t offset = 4 - ct.shape.size();
    for (std::size_t d = 0; d < ct.shape.size(); ++d) {
      const std::uint64_t want = d + offset == 1 ? yt.shape[1] : 1;
      if (ct.shape[d] != want) return false;
    }
    return true;
  }

  // A constant a chain may take besides its head's: a scalar, one value per channel (NCHW), or
  // one that broadcasts over `y`'s leading dimensions (its dims, leading 1s dropped, are y's last
  // ones: a bias, an attention mask, or y's whole shape). Other broadcasts would be loaded whole
  // with the weights however large they are.
  bool small_constant(std::uint32_t c, std::uint32_t y) const {
    const Tensor& ct = g_.tensors[c];
    if (!ct.constant) return false;
    return ct.elements() == 1 || per_channel_constant(c, y) ||
           broadcast_dims(ct, g_.tensors[y]).has_value();
  }

  // When `c`'s dims, leading 1s dropped, are `y`'s last ones (c broadcasts over y's leading
  // dimensions), how many they are; nullopt when they are not.
  static std::optional<std::size_t> broadcast_dims(const Tensor& c, const Tensor& y) {
    const auto first =
        std::find_if(c.shape.begin(), c.shape.end(), [](std::uint64_t d) { return d != 1; });
    const auto dims = static_cast<std::size_t>(c.shape.end() - first);
    if (dims > y.shape.size() ||
        !std::equal(first, c.shape.end(), y.shape.end() - static_cast<std::ptrdiff_t>(dims))) {
      return std::nullopt;
    }
    return dims;
  }

  // An element-wise vector head, then each element-wise layer that is the only reader of the
  // chain so far and whose other operands are constants, of the chain's shape and dtype: one
  // trip through local memory instead of one per layer. Each still costs its own vector op. The
  // chain's smaller constants are loaded once, with the weights: it stops before a layer that
  // would take them past `chain_constant_bytes`, so it fits wherever its head alone does.
  void fuse_elementwise_chain(LayerGroup& group) const {
    std::uint64_t constant_bytes = 0;
    for (std::uint32_t t : g_.layers[group.layers[0]].inputs) {
      constant_bytes += once_bytes(t, group.output);
    }
    for (;;) {
      const auto next = sole_consumer(group.output);
      if (!next) return;
      const Layer& l = g_.layers[*next];
      const Tensor& y = g_.tensors[group.output];
      if (ends_chain_by_rows(l, group.output)) {
        std::uint64_t added = 0;
        for (std::size_t i = 1; i < l.inputs.size(); ++i) {
          if (!small_constant(l.inputs[i], group.output)) return;
          added += once_bytes(l.inputs[i], group.output);
        }
        if (constant_bytes + added > chain_constant_bytes_) return;
        append(group, *next);
        return;
      }
      if (!is_elementwise_op(l.op) || l.outputs.size() != 1) return;
      const Tensor& out = g_.tensors[l.outputs[0]];
      if (out.shape != y.shape || out.dtype != y.dtype) return;
      std::uint64_t added = 0;
      for (std::size_t i = 0; i < l.inputs.size(); ++i) {
        const std::uint32_t t = l.inputs[i];
        if (t == group.output) continue;
        // A batch norm's scale, bias, mean and variance hold one value per channel (axis 1).
        const bool ok = l.op == "BatchNormalization"
                            ? i > 0 && g_.tensors[t].constant && y.shape.size() >= 2 &&
                                  g_.tensors[t].elements() == y.shape[1]
                            : small_constant(t, group.output);
        if (!ok) return;
        added += once_bytes(t, group.output);
      }
      if (constant_bytes + added > chain_constant_bytes_) return;
      constant_bytes += added;
      append(group, *next);
    }
  }

  // A Softmax or LayerNorm over the last axis of `y`, a row-major tensor, into one of y's shape
  // and dtype: each of a chain's tiles holds whole rows of y (or, where a row does not fit, runs
  // of it, as the layer alone would have), so it can normalize them before the store, and ends
  // the chain (an attention mask's Add and its Softmax; a residual Add and its LayerNorm).
  bool ends_chain_by_rows(const Layer& l, std::uint32_t y) const {
    if ((l.op != "Softmax" && l.op != "LayerNorm") || l.outputs.size() != 1 || l.inputs.empty() ||
        l.inputs[0] != y || image_ == nullptr || (*image_)[y]) {
      return false;
    }
    const Tensor& yt = g_.tensors[y];
    const Tensor& out = g_.tensors[l.outputs[0]];
    const auto rank = static_cast<std::int64_t>(yt.shape.size());
    std::int64_t axis = l.attrs.get_int("axis", -1);
    if (axis < 0) axis += rank;
    return rank >= 1 && axis == rank - 1 && out.shape == yt.shape && out.dtype == yt.dtype;
  }

  // The bytes of `t` a chain may load once with its weights: a constant smaller than `y`, but for
  // one the tiles stream by rows (vector.h, Feed::kRows): of y's last dimension, broadcast over
  // its leading ones, when y is not an NHWC image. Without `image_` every smaller one counts.
  std::uint64_t once_bytes(std::uint32_t t, std::uint32_t y) const {
    const Tensor& tt = g_.tensors[t];
    const Tensor& yt = g_.tensors[y];
    if (!tt.constant || tt.elements() >= yt.elements()) return 0;
    const bool by_rows = image_ != nullptr && !(*image_)[y] && tt.shape.size() >= 2 &&
                         !yt.shape.empty() && tt.shape.back() == yt.shape.back() &&
                         small_constant(t, y);
    return by_rows ? 0 : tt.bytes();
  }

  // Conv[+BN] -> Add(y, r): r an activation of y's shape and dtype that is written before the
  // group runs (a graph input, or the output of an earlier layer). Each tile also loads its rows
  // of r. In a ResNet block with a projection shortcut, the later of the two convs takes the Add.
  bool fuse_residual(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next || g_.layers[*next].op != "Add" || g_.layers[*next].inputs.size() != 2) return false;
    const Layer& add = g_.layers[*next];
    const std::uint32_t y = group.output;
    const std::uint32_t r = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    const Tensor& rt = g_.tensors[r];
    if (r == y || rt.constant || rt.shape != g_.tensors[y].shape ||
        rt.dtype != g_.tensors[y].dtype) {
      return false;
    }
    const auto producer = producer_.find(r);
    const bool written_before =
        producer == producer_.end()
            ? std::find(g_.inputs.begin(), g_.inputs.end(), r) != g_.inputs.end()
            : producer->second < group.layers[0];
    if (!written_before) return false;
    group.residual = r;
    append(group, *next);
    return true;
  }

  bool fuse_activation(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (!next ||
        std::find(kFusableActivations.begin(), kFusableActivations.end(), g_.layers[*next].op) ==
            kFusableActivations.end() ||
        !constant_bounds(g_.layers[*next])) {
      return false;
    }
    append(group, *next);
    return true;
  }

  // An activation whose operands past the first (a Clip's min and max) are constants: an epilogue
  // loads nothing for it, so a computed bound must not be fused away.
  bool constant_bounds(const Layer& l) const {
    for (std::size_t i = 1; i < l.inputs.size(); ++i) {
      if (!g_.tensors[l.inputs[i]].constant) return false;
    }
    return true;
  }

  // A pool's Relu or Clip with constant bounds (PyTorch's classic MNIST net pools before its
  // ReLU): a clamp of each output as the pool writes it, counted free like an array's epilogue
  // (exactly free for a max pool's floor, which its running max can start from). Only for a pool
  // with one output: the group's other outputs are its last layer's.
  void fuse_clamp(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (next && g_.layers[group.layers[0]].outputs.size() == 1 &&
        (g_.layers[*next].op == "Relu" || g_.layers[*next].op == "Clip") &&
        g_.layers[*next].outputs.size() == 1 && constant_bounds(g_.layers[*next])) {
      append(group, *next);
    }
  }

  // x * f(x), f Sigmoid (SiLU / Swish, as YOLOv5, YOLOX and EfficientNet export it) or HardSigmoid
  // (HardSwish written out): x has exactly two readers, the f and the Mul, and f(x) only the Mul.
  void fuse_gated_activation(LayerGroup& group) const {
    const std::uint32_t x = group.output;
    const auto it = consumers_.find(x);
    if (it == consumers_.end() || it->second.size() != 2 || is_graph_output(x)) return;
    for (int k = 0; k < 2; ++k) {
      const std::uint32_t f = it->second[static_cast<std::size_t>(k)];
      const std::uint32_t mul = it->second[static_cast<std::size_t>(1 - k)];
      const Layer& fl = g_.layers[f];
      const Layer& ml = g_.layers[mul];
      if ((fl.op != "Sigmoid" && fl.op != "HardSigmoid") || fl.inputs.size() != 1) continue;
      if (ml.op != "Mul" || ml.inputs.size() != 2) continue;
      const std::uint32_t fx = fl.outputs.at(0);
      const bool operands =
          (ml.inputs[0] == x && ml.inputs[1] == fx) || (ml.inputs[0] == fx && ml.inputs[1] == x);
      if (!operands || sole_consumer(fx) != mul) continue;
      append(group, f);
      append(group, mul);
      return;
    }
  }

  // A QuantizeLinear of the group's output: the group stores the quantised tensor.
  bool fuse_quantize(LayerGroup& group) const {
    const auto next = sole_consumer(group.output);
    if (next && g_.layers[*next].op == "Quantize" && !g_.layers[*next].inputs.empty() &&
        g_.layers[*next].inputs[0] == group.output) {
      append(group, *next);
      return true;
    }
    return false;
  }

  bool is_graph_output(std::uint32_t tensor) const {
    return std::find(g_.outputs.begin(), g_.outputs.end(), tensor) != g_.outputs.end();
  }

  void name_group(LayerGroup& group) const {
    if (group.layers.size() == 1) {
      group.name = g_.layers[group.layers[0]].name;
      group.loc = g_.layers[group.layers[0]].loc;
      return;
    }
    group.name = "fused(";
    std::string inner;
    for (std::size_t i = 0; i < group.layers.size(); ++i) {
      const Layer& l = g_.layers[group.layers[i]];
      group.name += (i ? "+" : "") + l.name;
      std::string loc = l.loc;
      if (loc.rfind("loc(", 0) == 0 && loc.back() == ')') loc = loc.substr(4, loc.size() - 5);
      inner += (i ? ", " : "") + loc;
    }
    group.name += ")";
    group.loc = "loc(fused[" + inner + "])";
  }

  const Graph& g_;
  const std::uint64_t chain_constant_bytes_;
  const std::vector<bool>* image_;  // per tensor: an NHWC image (assign_layouts), if known
  std::map<std::uint32_t, std::vector<std::uint32_t>> consumers_;
  std::map<std::uint32_t, std::uint32_t> producer_;  // tensor -> the layer that writes it
};

}  // namespace

std::vector<LayerGroup> fuse_layer_groups(const Graph& graph, std::uint64_t chain_constant_bytes,
                                          const std::vector<bool>* image) {
  return Grouper(graph, chain_constant_bytes, image).run();
}

GroupKind group_kind(const Graph& graph, const LayerGroup& group) {
  const Layer& first = graph.layers[group.layers[0]];
  const std::string& op = first.op;
  const OpClass cls = classify_op(op);
  if (moves_no_data(graph, first)) return GroupKind::kView;
  if (cls == OpClass::kUnknown) return GroupKind::kUnknown;
  if (cls == OpClass::kHost) return GroupKind::kHost;
  if (cls == OpClass::kArray) return op == "Conv" ? GroupKind::kSpatial : GroupKind::kMatMul;
  if (op == "GlobalAveragePool") return GroupKind::kGlobalPool;
  if (op == "MaxPool" || op == "AveragePool") return GroupKind::kSpatial;
  return GroupKind::kVector;
}

}  // namespace npusim
