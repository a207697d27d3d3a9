// Pass: which group outputs stay resident in local memory from their producer to their last
// reader group, instead of making a DRAM round trip (docs/compiler.md, "Tensors resident on
// chip"). It runs after the search has mapped every group and before emission, because whether a
// reader can take a tensor from local memory depends on how it is tiled.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/mapping/work.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"

namespace npusim {

// What one group does with resident tensors.
struct Residency {
  bool output = false;  // the group's output stays on chip and is not written to DRAM
  // Resident tensors whose last reader is this group: its last command frees them.
  std::vector<std::uint32_t> release;
};

// Whether a group mapped as `m` writes its output through its tiles' stores, so that it can
// leave it on chip.
bool tiles_output(const Mapping& m);

// Whether layer `l` of group `g`, mapped as `m`, reads `tensor` through its tiles' loads, which
// can take it from local memory: a spatial or global-pool head's input, a fused residual, any
// operand of a vector layer, a MatMul's left operand, or its right one when input outer (weights
// outer loads an activation as the right operand like a weight chunk).
bool reads_through_tiles(const Graph& graph, const LayerGroup& g, const Mapping& m, std::uint32_t l,
                         std::uint32_t tensor);

// What a group's tiles need of the tiles' half of local memory at the least: one of its largest
// tiles (loads and output) live on each slice it uses; for tiles that may take the whole memory
// (GroupWork::whole_memory), what of that passes the other half.
std::uint64_t ring_need(const GroupWork& work, std::uint64_t lram_bytes);

// One Residency per mapped group (mappings[i] is groups[i]'s). `kept[i]` says the group's output
// is already kept for the next group alone ("Outputs kept on chip"), and `ring_needs[i]` is
// ring_need of its work. A tensor is resident when
//  - its producer tiles its output (a spatial, vector, global-pool or row-tiled MatMul group);
//  - it is no graph output, and the producer's last layer has no other output;
//  - every reader is a later mapped group of those kinds that reads it through its tiles' loads
//    (not a view, a host layer, a K-split MatMul, or a weights-outer MatMul's right operand);
//  - while it lives, every group still has its ring_need within the tiles' half of the local
//    memory (docs/compiler.md, "Memory budgets") besides the resident and kept tensors, so that
//    every slice can still hold a tile; and the resident and kept tensors together hold at most
//    `on_chip_cap` bytes. Earlier tensors are planned first.
// `internal[i]` (if given) says group i's output never leaves local memory another way (a chain's
// members but the last): it is never planned.
// Whether a plan pays (less lookahead for the tiles against fewer DRAM trips) is the driver's
// call: it plans with two caps and estimates the schedules with each plan and without.
std::vector<Residency> plan_residency(const Graph& graph, const HwConfig& config,
                                      const std::vector<LayerGroup>& groups,
                                      const std::vector<Mapping>& mappings,
                                      const std::vector<bool>& kept,
                                      const std::vector<std::uint64_t>& ring_needs,
                                      std::uint64_t on_chip_cap,
                                      const std::vector<bool>* internal = nullptr);

// What each group finds on chip under `plan` (one Residency per mapped group), as the emitter
// will track it: the resident tensors (or views of them) it reads, whether its output stays, and
// the bytes the other resident tensors hold while it runs. Views and unmapped groups get none.
std::vector<OnChipContext> on_chip_contexts(const Graph& graph,
                                            const std::vector<LayerGroup>& groups,
                                            const std::vector<Residency>& plan);

}  // namespace npusim
