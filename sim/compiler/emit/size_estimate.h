// What emitting a group will cost before it is emitted: its commands and the memory they take,
// from the chosen Mapping alone (docs/compiler.md, "Limits"). The driver checks the running total
// against kMaxCommands and kMaxScheduleBytes before each group, so that a config that makes too
// many tiles stops with an input error instead of running out of memory.
#pragma once

#include <cstdint>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/ir/graph.h"

namespace npusim {

// The most memory a compiled schedule may be estimated to take: 4 GiB.
inline constexpr std::uint64_t kMaxScheduleBytes = std::uint64_t{1} << 32;

struct GroupSize {
  std::uint64_t commands = 0;  // saturates at 2^62
  std::uint64_t bytes = 0;     // saturates at 2^62
};

// Commands the emitter makes for `group` tiled as `mapping` (exact on one DMA_IN channel, except
// a vector tile that loads a zero-byte piece, or a halo-reusing column band wholly in the padding,
// counted anyway; on several, at most: each shared chunk or block counts a piece per burst of its
// largest, up to one per channel),
// and an upper estimate of their memory: the command itself, its layer and loc strings, its
// buffers, at most kMaxDepsPerCommand dependencies, and the per-command state of finalize_schedule
// and the estimate.
GroupSize estimate_group(const Graph& graph, const LayerGroup& group, const Mapping& mapping,
                         const TensorLayouts& layouts, const Budgets& budgets);

// The sum, saturating.
GroupSize operator+(GroupSize a, GroupSize b);

}  // namespace npusim
