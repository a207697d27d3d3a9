// Pass: chains of convolutions computed depth first (docs/compiler.md, "Chains of convolutions").
// A chain is a run of consecutive spatial groups, each the only reader of the one before, whose
// intermediate outputs never go to DRAM: the chain is emitted band by band of output rows, each
// member producing just the rows its successor's next tile needs, and each intermediate row is
// freed once no later tile of its reader needs it. MobileNetV2's inverted residual blocks
// (expand, depthwise, project) are the case in point: their six-times-wider tensors do not fit a
// small local memory whole, so without chains every one makes a DRAM round trip.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"

namespace npusim {

// One tile of a chain member, in the order the chain emits them. A step of a member after the
// first frees the tiles of the member before it that no later tile of its own reads: when it
// ends, the first `freed_before` tiles of member - 1 are free.
struct ChainStep {
  std::uint32_t member = 0;
  std::uint64_t tile = 0;  // its row tile: output rows [tile x rows, ...) of the member
  std::uint64_t freed_before = 0;
};

// (chain_fields lists every field but `first`: the compiler's costs of chains are keyed by it.)
struct Chain {
  std::size_t first = 0;  // index of its first group; the members are consecutive groups
  // One per member: weights outer, one chunk of every channel unit, whole-width tiles of rows.
  std::vector<Mapping> mappings;
  std::vector<ChainStep> order;
  // How many tiles each member produces ahead of what its reader's tile needs (chain_order).
  std::uint64_t ahead = 0;
  // How many tiles later than it could a reader frees the tiles it has done with (chain_order):
  // the chain's slice count, so that the free seldom waits on a reader still running on another
  // slice, or fewer when that holds more than the reservation may.
  std::uint64_t free_delay = 1;
  // Whether the first member, reading its input from DRAM, loads each input row once: a tile
  // loads the rows the tiles before it did not, and keeps those a later tile reads too.
  bool reuse_halo = false;
  // Per member: the most of its tiles live at once (0 for the last member, whose tiles are stored
  // as usual). A tile of member i waits for the step that freed its tile live_tiles[i] back.
  std::vector<std::uint64_t> live_tiles;
  // What the chain holds outside the tiles' ring while it runs: every member's weights and the
  // intermediate tiles live at once.
  std::uint64_t reserved_bytes = 0;
  // The slices its tiles go round-robin over (0: all), as Mapping::slices.
  std::uint32_t slices = 0;
  // What its tiles need of the ring at the least (as ring_need): a first member's input or a
  // last member's output, on each slice.
  std::uint64_t ring_bytes = 0;
  // A channel chain (docs/compiler.md, "Channel chains"): 0 for a chain of row bands, else the
  // channels per step. An expand 1 x 1 conv, a depthwise conv and a project 1 x 1 conv run block
  // by block of the expand's output channels over the whole map: the expand computes a block
  // (array), the depthwise conv filters it (vector) while the array computes the next, and the
  // project conv accumulates it (a K-split step). `ahead` is how many of a slice's blocks its
  // expand runs ahead of its project; `order` and `live_tiles` are empty, and everything the
  // chain holds is in `reserved_bytes` (`ring_bytes` is 0).
  std::uint64_t channel_block = 0;
  // On several slices, whether each slice's project computes its share of the output channels
  // from every slice's depthwise blocks (read across slices from the shared local memory), so that
  // no PartialSum adds the slices' partial sums; else each slice accumulates all output channels
  // over its own blocks and PartialSums add them up.
  bool split_outputs = false;
  // For a channel chain, the run's best chain of row bands, if any saved cycles alone: where the
  // channel chain loses in the model, the driver tries it instead (chains_one_by_one). Costed
  // alone, a channel chain may beat the rows yet hold more of the memory the model's other groups
  // would use (MobileNetV2 on `server`). At most one; never part of chain_fields.
  std::vector<Chain> instead;
};

// Every field of `chain` but `first`: chains alike apart from where they start have the same.
std::vector<std::uint64_t> chain_fields(const Chain& chain);

// Whether `group`'s output is read by `next`'s head alone, as its input: it is no graph output,
// the only output of the group's last layer, and no other layer (a residual Add of `next`
// included, which loads it from DRAM) reads it.
bool read_only_by(const Graph& graph, const LayerGroup& group, const LayerGroup& next);

// What a chain costs alone, and its `count` member groups from `first` one after another as
// mapped, in estimated cycles (nullopt: the schedule does not check). The driver emits them.
using ChainCost = std::function<std::optional<std::uint64_t>(const Chain&)>;
using PlainCost = std::function<std::optional<std::uint64_t>(std::size_t first, std::size_t count)>;

// The chains of `groups` (of which the first mappings.size() are mapped), earliest first, none
// overlapping. Members: spatial groups of one image, not cut within a group (the first member's
// input in any layout; it reuses its halo where emit_chain knows its rows' writers; the first may
// be a pointwise_group, as a QDQ model's input quantize, and so may any but the last); each member
// after the first reads the one before as its spatial input and nothing else reads that; only the
// last may have a fused residual. From each group, every run length from two members up and every
// row and slice count that fits (fitting_chains in plan_chains.cpp) is costed alone, and the one
// that saves the most against the members one after another is kept, if any saves. Fewer slices are
// among the options, so that more slices never make a chain slower.
std::vector<Chain> plan_chains(const Graph& graph, const HwConfig& config,
                               const std::vector<LayerGroup>& groups,
                               const std::vector<Mapping>& mappings, const ChainCost& chain_cost,
                               const PlainCost& plain_cost);

}  // namespace npusim
