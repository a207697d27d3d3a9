#include "sim/compiler/passes/layer_views.h"

namespace npusim {
namespace {

LayerView view_of(const Graph& g, const LayerGroup& group) {
  LayerView v;
  v.name = group.name;
  const Layer& head = g.layers[group.layers.front()];
  if (head.inputs.size() < 2 || head.outputs.empty()) return v;
  const Tensor& y = g.tensors[head.outputs[0]];
  if (head.op == "Conv") {
    const Tensor& x = g.tensors[head.inputs[0]];
    const Tensor& w = g.tensors[head.inputs[1]];
    const auto groups = static_cast<std::uint64_t>(head.attrs.get_int("group", 1));
    // Depthwise convolutions run on the vector unit (mapping/spatial.cpp).
    if (groups == x.shape[1] && x.shape[1] > 1) return v;
    v.on_array = true;
    v.gemm.batch = groups;
    v.gemm.m = y.shape[0] * y.shape[2] * y.shape[3];
    v.gemm.n = w.shape[0] / groups;
    v.gemm.k = w.shape[1] * w.shape[2] * w.shape[3];
  } else if (head.op == "MatMul") {
    const Tensor& a = g.tensors[head.inputs[0]];
    if (y.shape.size() < 2) return v;
    v.on_array = true;
    v.gemm.m = y.shape[y.shape.size() - 2];
    v.gemm.n = y.shape.back();
    v.gemm.k = a.shape.back();
    v.gemm.batch = 1;
    for (std::size_t d = 0; d + 2 < y.shape.size(); ++d) v.gemm.batch *= y.shape[d];
  }
  return v;
}

}  // namespace

std::vector<LayerView> layer_views(const Graph& graph, const std::vector<LayerGroup>& groups) {
  std::vector<LayerView> views;
  for (const LayerGroup& group : groups) {
    const GroupKind kind = group_kind(graph, group);
    if (kind == GroupKind::kView || kind == GroupKind::kUnknown) continue;
    views.push_back(view_of(graph, group));
  }
  return views;
}

}  // namespace npusim
