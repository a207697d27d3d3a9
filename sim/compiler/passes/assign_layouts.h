// Pass: decides how each tensor is laid out in DRAM. A tensor is an NHWC image (N*H rows of W*C
// elements) when it is a 4-d graph input, the output of a Conv or spatial pool, or the 4-d output
// of an element-wise op, Resize or Pad over an image, or a Concat of images; every other tensor is
// row-major with rows of its last dimension. The emitter computes byte ranges, and so which
// stores a load waits for, from these layouts; ranges are only compared within one layout.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/ir/graph.h"

namespace npusim {

struct TensorLayouts {
  std::vector<bool> image;  // per tensor: laid out as an NHWC image

  bool is_image(std::uint32_t tensor) const { return image[tensor]; }
  // Rows of the tensor as laid out in DRAM: N*H for an image, else all elements over the last
  // dimension (1 for a scalar or a vector).
  std::uint64_t rows(const Graph& graph, std::uint32_t tensor) const;
};

// Walks the groups in order; a group's layout depends only on the groups before it.
TensorLayouts assign_layouts(const Graph& graph, const std::vector<LayerGroup>& groups);

// The tensor that drives a vector group's tiling and layout: layout_driver of its head's inputs
// and its output (sim/ir/graph.h).
std::uint32_t vector_driver(const Graph& graph, const LayerGroup& group);

}  // namespace npusim
