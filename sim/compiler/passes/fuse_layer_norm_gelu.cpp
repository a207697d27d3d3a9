#include "sim/compiler/passes/fuse_layer_norm_gelu.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npusim {
namespace {

using TensorId = std::optional<std::uint32_t>;

// A matched pattern, replaced by one layer.
struct Fused {
  std::string op;
  std::vector<std::uint32_t> layers;  // in layer order
  std::vector<std::uint32_t> inputs;
  std::uint32_t output = 0;
  Attributes attrs;
};

class Fuser {
 public:
  Fuser(Graph& graph, const ScalarValues& scalars)
      : g_(graph), scalars_(scalars), fused_of_(graph.layers.size(), -1) {
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      for (std::uint32_t t : g_.layers[l].outputs) producer_[t] = static_cast<int>(l);
      for (std::uint32_t t : g_.layers[l].inputs) consumers_[t].insert(static_cast<int>(l));
    }
    outputs_.insert(g_.outputs.begin(), g_.outputs.end());
  }

  std::size_t run() {
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      if (fused_of_[l] >= 0) continue;
      if (is(static_cast<int>(l), "Div")) match_layer_norm(static_cast<int>(l));
      if (is(static_cast<int>(l), "Erf")) match_gelu(static_cast<int>(l));
      if (unfused(static_cast<int>(l)) &&
          (is(static_cast<int>(l), "Reciprocal") || is(static_cast<int>(l), "Div"))) {
        match_rsqrt(static_cast<int>(l));
      }
    }
    if (!fused_.empty()) rebuild();
    return fused_.size();
  }

 private:
  const Layer& layer(int l) const { return g_.layers[static_cast<std::size_t>(l)]; }
  bool is(int l, const char* op) const { return l >= 0 && layer(l).op == op; }
  bool unfused(int l) const { return fused_of_[static_cast<std::size_t>(l)] < 0; }

  // The layer that writes `t`, unless it is already part of a match; else -1.
  int live_producer(TensorId t) const {
    if (!t) return -1;
    const auto it = producer_.find(*t);
    return it != producer_.end() && unfused(it->second) ? it->second : -1;
  }

  // The one layer that reads `t`, unless it has several readers or none or is a graph output.
  int sole_consumer(std::uint32_t t) const {
    const auto it = consumers_.find(t);
    if (it == consumers_.end() || it->second.size() != 1 || outputs_.count(t) != 0) return -1;
    return *it->second.begin();
  }

  // For a binary layer with `t` as one operand, the other one.
  TensorId other_operand(int l, std::uint32_t t) const {
    const std::vector<std::uint32_t>& in = layer(l).inputs;
    if (in.size() != 2) return std::nullopt;
    if (in[0] == t) return in[1];
    if (in[1] == t) return in[0];
    return std::nullopt;
  }

  std::optional<double> scalar(TensorId t) const {
    if (!t) return std::nullopt;
    const auto it = scalars_.find(*t);
    if (it == scalars_.end()) return std::nullopt;
    return it->second;
  }

  bool scalar_is(TensorId t, double want, double tol) const {
    const auto s = scalar(t);
    return s && std::fabs(*s - want) <= tol;
  }

  // True when every output of `group` but `final_output` is read only inside the group and is
  // not a graph output.
  bool internal_only(const std::set<int>& group, std::uint32_t final_output) const {
    for (int l : group) {
      for (std::uint32_t out : layer(l).outputs) {
        if (out == final_output) continue;
        if (outputs_.count(out) != 0) return false;
        const auto it = consumers_.find(out);
        if (it == consumers_.end()) continue;
        for (int c : it->second) {
          if (group.count(c) == 0) return false;
        }
      }
    }
    return true;
  }

  // The axes of a ReduceMean with keepdims (sorted, non-negative), or empty.
  std::vector<std::int64_t> reduce_axes(int l) const {
    const Layer& r = layer(l);
    if (r.attrs.get_int("keepdims", 1) == 0 || r.inputs.empty()) return {};
    std::vector<std::int64_t> axes = r.attrs.get_ints("axes", {});
    const auto rank = static_cast<std::int64_t>(g_.tensors[r.inputs[0]].shape.size());
    for (auto& a : axes) {
      a = a < 0 ? a + rank : a;
      if (a < 0 || a >= rank) return {};
    }
    std::sort(axes.begin(), axes.end());
    return axes;
  }

  void add_fused(Fused f, const std::set<int>& group) {
    std::string names;
    for (int l : group) {
      f.layers.push_back(static_cast<std::uint32_t>(l));
      names += (names.empty() ? "" : "+") + layer(l).name;
    }
    f.attrs.strings["fused_nodes"] = names;
    const int id = static_cast<int>(fused_.size());
    for (int l : group) fused_of_[static_cast<std::size_t>(l)] = id;
    fused_.push_back(std::move(f));
  }

  void match_layer_norm(int div);
  void match_gelu(int erf);
  void match_rsqrt(int inverse);
  void rebuild();

  Graph& g_;
  const ScalarValues& scalars_;
  std::map<std::uint32_t, int> producer_;
  std::map<std::uint32_t, std::set<int>> consumers_;
  std::set<std::uint32_t> outputs_;
  std::vector<int> fused_of_;  // layer -> index into fused_, or -1
  std::vector<Fused> fused_;
};

// x - mean(x) over trailing axes, divided by sqrt(mean((x - mean)^2) + eps), then optionally
// times a constant scale and plus a constant bias.
void Fuser::match_layer_norm(int div) {
  const Layer& d = layer(div);
  if (d.inputs.size() != 2) return;
  const int sub1 = live_producer(d.inputs[0]);
  const int root = live_producer(d.inputs[1]);
  if (!is(sub1, "Sub") || !is(root, "Sqrt") || layer(sub1).inputs.size() != 2) return;
  const std::uint32_t x = layer(sub1).inputs[0];
  const std::uint32_t mean = layer(sub1).inputs[1];
  const int rm1 = live_producer(mean);
  if (!is(rm1, "ReduceMean") || layer(rm1).inputs.empty() || layer(rm1).inputs[0] != x) return;
  const std::vector<std::int64_t> axes = reduce_axes(rm1);
  const auto rank = static_cast<std::int64_t>(g_.tensors[x].shape.size());
  if (axes.empty() || axes.back() != rank - 1) return;
  for (std::size_t k = 1; k < axes.size(); ++k) {
    if (axes[k] != axes[k - 1] + 1) return;
  }
  if (layer(root).inputs.empty()) return;
  const int add_eps = live_producer(layer(root).inputs[0]);
  if (!is(add_eps, "Add") || layer(add_eps).inputs.size() != 2) return;
  std::uint32_t var = 0;
  std::optional<double> eps;
  for (int k = 0; k < 2 && !eps; ++k) {
    eps = scalar(layer(add_eps).inputs[static_cast<std::size_t>(k)]);
    var = layer(add_eps).inputs[static_cast<std::size_t>(1 - k)];
  }
  if (!eps) return;
  const int rm2 = live_producer(var);
  if (!is(rm2, "ReduceMean") || reduce_axes(rm2) != axes) return;
  const int sq = live_producer(layer(rm2).inputs[0]);
  if (!(is(sq, "Pow") || is(sq, "Mul")) || layer(sq).inputs.size() != 2) return;
  const std::vector<std::uint32_t>& sq_in = layer(sq).inputs;
  const bool squares = is(sq, "Pow") ? scalar_is(sq_in[1], 2.0, 0.0) : sq_in[0] == sq_in[1];
  if (!squares) return;
  const int sub2 = live_producer(sq_in[0]);
  if (!is(sub2, "Sub") || layer(sub2).inputs.size() != 2 || layer(sub2).inputs[0] != x ||
      layer(sub2).inputs[1] != mean) {
    return;
  }
  std::set<int> group = {rm1, sub1, sub2, sq, rm2, add_eps, root, div};
  std::uint32_t out = d.outputs.at(0);
  Fused f;
  f.op = "LayerNorm";
  f.inputs = {x};
  const int mul = sole_consumer(out);
  if (is(mul, "Mul") && unfused(mul)) {
    const TensorId scale = other_operand(mul, out);
    if (scale && *scale != out && g_.tensors[*scale].constant) {
      group.insert(mul);
      f.inputs.push_back(*scale);
      out = layer(mul).outputs.at(0);
      const int add = sole_consumer(out);
      if (is(add, "Add") && unfused(add)) {
        const TensorId bias = other_operand(add, out);
        if (bias && *bias != out && g_.tensors[*bias].constant) {
          group.insert(add);
          f.inputs.push_back(*bias);
          out = layer(add).outputs.at(0);
        }
      }
    }
  }
  if (!internal_only(group, out)) return;
  f.output = out;
  f.attrs.ints["axis"] = {axes.front()};
  f.attrs.floats["epsilon"] = *eps;
  add_fused(std::move(f), group);
}

// 0.5 * x * (1 + erf(x / sqrt(2))) in its usual orders.
void Fuser::match_gelu(int erf) {
  constexpr double kSqrt2 = 1.4142135623730951;
  if (layer(erf).inputs.empty()) return;
  const int scale = live_producer(layer(erf).inputs[0]);
  TensorId x;
  if (is(scale, "Div") && layer(scale).inputs.size() == 2 &&
      scalar_is(layer(scale).inputs[1], kSqrt2, 1e-3)) {
    x = layer(scale).inputs[0];
  } else if (is(scale, "Mul") && layer(scale).inputs.size() == 2) {
    for (std::size_t k = 0; k < 2 && !x; ++k) {
      if (scalar_is(layer(scale).inputs[k], 1.0 / kSqrt2, 1e-3)) x = layer(scale).inputs[1 - k];
    }
  }
  if (!x) return;
  const std::uint32_t erf_out = layer(erf).outputs.at(0);
  const int add1 = sole_consumer(erf_out);
  if (!is(add1, "Add") || !scalar_is(other_operand(add1, erf_out), 1.0, 1e-6)) return;
  const std::uint32_t e = layer(add1).outputs.at(0);
  const int m1 = sole_consumer(e);
  if (!is(m1, "Mul")) return;
  const TensorId o = other_operand(m1, e);
  if (!o) return;
  std::set<int> group = {scale, erf, add1, m1};
  std::uint32_t out = 0;
  if (*o == *x || scalar_is(o, 0.5, 1e-6)) {
    // (x * e) * 0.5, or x * (e * 0.5)
    const std::uint32_t m1_out = layer(m1).outputs.at(0);
    const int m2 = sole_consumer(m1_out);
    if (!is(m2, "Mul")) return;
    const TensorId o2 = other_operand(m2, m1_out);
    if (*o == *x ? !scalar_is(o2, 0.5, 1e-6) : o2 != x) return;
    group.insert(m2);
    out = layer(m2).outputs.at(0);
  } else {
    // (x * 0.5) * e
    const int half = live_producer(o);
    if (!is(half, "Mul") || !other_operand(half, *x) ||
        !scalar_is(other_operand(half, *x), 0.5, 1e-6)) {
      return;
    }
    group.insert(half);
    out = layer(m1).outputs.at(0);
  }
  for (int l : group) {
    if (!unfused(l)) return;
  }
  if (!internal_only(group, out)) return;
  Fused f;
  f.op = "Gelu";
  f.inputs = {*x};
  f.output = out;
  add_fused(std::move(f), group);
}

// 1 / sqrt(x), as Reciprocal(Sqrt(x)) (TensorFlow's Rsqrt, exported by tf2onnx) or Div(1, Sqrt(x)).
void Fuser::match_rsqrt(int inverse) {
  const Layer& inv = layer(inverse);
  if (inv.inputs.empty()) return;
  const bool reciprocal = inv.op == "Reciprocal";
  if (!reciprocal && (inv.inputs.size() != 2 || !scalar_is(inv.inputs[0], 1.0, 0.0))) return;
  const std::uint32_t root_out = inv.inputs[reciprocal ? 0 : 1];
  const int root = live_producer(root_out);
  if (!is(root, "Sqrt") || layer(root).inputs.empty() || sole_consumer(root_out) != inverse) return;
  Fused f;
  f.op = "Rsqrt";
  f.inputs = {layer(root).inputs[0]};
  f.output = inv.outputs.at(0);
  add_fused(std::move(f), {root, inverse});
}

// Each match becomes one layer in its last layer's place; tensors that only removed layers
// touched go, and the others are renumbered in their order.
void Fuser::rebuild() {
  std::vector<Layer> layers;
  std::vector<bool> touched_by_removed(g_.tensors.size(), false);
  for (std::size_t l = 0; l < g_.layers.size(); ++l) {
    const int f = fused_of_[l];
    if (f < 0) {
      layers.push_back(std::move(g_.layers[l]));
      continue;
    }
    Layer& old = g_.layers[l];
    for (std::uint32_t t : old.inputs) touched_by_removed[t] = true;
    for (std::uint32_t t : old.outputs) touched_by_removed[t] = true;
    const Fused& fu = fused_[static_cast<std::size_t>(f)];
    if (fu.layers.back() != l) continue;
    const Layer& first = g_.layers[fu.layers.front()];
    Layer fused;
    fused.name = first.name;
    fused.loc = first.loc;
    fused.op = fu.op;
    fused.inputs = fu.inputs;
    fused.outputs = {fu.output};
    fused.attrs = fu.attrs;
    layers.push_back(std::move(fused));
  }
  g_.layers = std::move(layers);

  std::vector<bool> used(g_.tensors.size(), false);
  for (std::uint32_t t : g_.inputs) used[t] = true;
  for (std::uint32_t t : g_.outputs) used[t] = true;
  for (const Layer& l : g_.layers) {
    for (std::uint32_t t : l.inputs) used[t] = true;
    for (std::uint32_t t : l.outputs) used[t] = true;
  }
  std::vector<std::uint32_t> renumber(g_.tensors.size(), 0);
  std::vector<Tensor> tensors;
  for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
    if (touched_by_removed[t] && !used[t]) continue;
    renumber[t] = static_cast<std::uint32_t>(tensors.size());
    tensors.push_back(std::move(g_.tensors[t]));
  }
  g_.tensors = std::move(tensors);
  for (std::uint32_t& t : g_.inputs) t = renumber[t];
  for (std::uint32_t& t : g_.outputs) t = renumber[t];
  for (Layer& l : g_.layers) {
    for (std::uint32_t& t : l.inputs) t = renumber[t];
    for (std::uint32_t& t : l.outputs) t = renumber[t];
  }
}

}  // namespace

std::size_t fuse_layer_norm_gelu(Graph& graph, const ScalarValues& scalars) {
  return Fuser(graph, scalars).run();
}

}  // namespace npusim
