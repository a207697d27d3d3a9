// A layer group's signature: everything its mapping and its cost alone depend on (its kind, ops,
// attributes, the shapes, dtypes and layouts of the tensors it reads and writes, and which of them
// it reads twice), nothing they do not (names, locations, the tensors' indices in the graph). Two
// groups with the same signature map and cost alike, so the compiler chooses once for both:
// ResNet-50's repeated bottleneck blocks, a decoder stack's identical layers. A run of consecutive
// groups (a chain's members) has one too, its tensors placed across the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/ir/graph.h"

namespace npusim {

class GroupSignature {
 public:
  GroupSignature(const Graph& graph, const LayerGroup& group, const TensorLayouts& layouts);
  GroupSignature(const Graph& graph, const std::vector<const LayerGroup*>& run,
                 const TensorLayouts& layouts);
  // The signature with what a choice is made under: the input kept on chip from the last group,
  // the residency plan's context (OnChipContext) and `flags` (the caller's options).
  std::string with(std::optional<std::uint32_t> on_chip_input, const OnChipContext& context,
                   std::uint64_t flags) const;
  // Appends a number, or a tensor by its place (one the group does not name, by its bytes: it
  // only takes room).
  void add(std::uint64_t v);
  void add_tensor_place(std::uint32_t tensor);
  const std::string& text() const { return text_; }

 private:
  void add_group(const LayerGroup& group);
  // A tensor's place in the group (in the order the group first names it), or a place past them
  // for one it does not name.
  std::uint64_t local(std::uint32_t tensor) const;
  void add_tensor(std::uint32_t tensor);

  const Graph& graph_;
  const TensorLayouts& layouts_;
  std::vector<std::uint32_t> tensors_;  // the group's tensors, by local place
  std::string text_;
};

}  // namespace npusim
