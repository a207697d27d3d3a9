// The commands of the collectives the sharded compiler inserts (docs/multi-device.md,
// "Collectives"): DEV_HDMA transfers between device DRAMs, and the additions of partial sums on
// the receiving device (a compiled element-wise Add: DMA_IN of both, the vector unit, DMA_OUT).
//
//   ring topology        ring all-reduce: a reduce-scatter of devices - 1 steps (device d sends
//                        a 1/devices chunk to d + 1, which adds it to its own), then an
//                        all-gather of devices - 1 steps passing the reduced chunks on; ring
//                        all-gather: devices - 1 steps passing parts on.
//   full, tree (star)    root and leaves: every leaf sends to device 0, which adds (all-reduce)
//                        or places (all-gather) the parts and sends the whole tensor back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/compiler/shard/tensor_parallel.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule_append.h"

namespace npusim::shard {

struct CollectiveCommands {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string layer;           // every command's: "collective.<kind>.<tensor>"
  std::uint64_t elements = 0;  // of the whole (replicated) tensor
  std::uint32_t element_bytes = 1;
  std::uint32_t program = 0;
};

// The compiled schedule adding two vectors of `elements` elements on one device.
using ReductionPart = std::function<const Schedule&(std::uint64_t elements)>;

// Per device, the commands the next thing on that device waits for.
using Frontier = std::vector<std::vector<std::uint32_t>>;

// Appends the collective's commands; each device's first waits for its `frontier`, which is then
// what waits for the collective's end on that device.
void emit_collective(const CollectiveCommands& c, const DevicesConfig& devices,
                     const ReductionPart& reduction, ScheduleAppender& out, Frontier& frontier);

}  // namespace npusim::shard
