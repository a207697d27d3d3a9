#include "sim/compiler/passes/assign_layouts.h"

namespace npusim {

std::uint64_t TensorLayouts::rows(const Graph& graph, std::uint32_t tensor) const {
  const Tensor& x = graph.tensors[tensor];
  if (image[tensor]) return x.shape[0] * x.shape[2];
  return x.shape.size() >= 2 ? x.elements() / x.shape.back() : 1;
}

std::uint32_t vector_driver(const Graph& graph, const LayerGroup& group) {
  return layout_driver(graph, graph.layers[group.layers[0]].inputs, group.output);
}

TensorLayouts assign_layouts(const Graph& graph, const std::vector<LayerGroup>& groups) {
  TensorLayouts layouts;
  layouts.image.assign(graph.tensors.size(), false);
  std::vector<bool>& image = layouts.image;
  for (std::uint32_t t : graph.inputs) image[t] = graph.tensors[t].shape.size() == 4;
  for (const LayerGroup& group : groups) {
    const Layer& l = graph.layers[group.layers[0]];
    switch (group_kind(graph, group)) {
      case GroupKind::kView:
        for (std::uint32_t out : l.outputs) {
          image[out] =
              l.op == "Concat" && graph.tensors[out].shape.size() == 4 && image[l.inputs[0]];
        }
        break;
      case GroupKind::kSpatial:
        image[group.output] = true;
        break;
      case GroupKind::kVector: {
        // Element-wise ops and resizes keep an image an image; other copies lay out row-major.
        image[group.output] = keeps_input_layout(l.op) && image[vector_driver(graph, group)] &&
                              graph.tensors[group.output].shape.size() == 4;
        break;
      }
      case GroupKind::kHost:
      case GroupKind::kMatMul:
      case GroupKind::kGlobalPool:
      case GroupKind::kUnknown:
        break;
    }
  }
  return layouts;
}

}  // namespace npusim
