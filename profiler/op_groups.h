// Commands summed per layer and engine: what the traces and stats.json show instead of one entry
// per command when the outputs are aggregated (--trace-detail, docs/outputs.md#detail).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

struct OpGroup {
  std::string name;        // "{iteration}_{layer}": the commands' trace names without `_k`
  std::string_view layer;  // the commands' layer, or their op type when it is empty
  std::string_view op;     // the commands' op type, or "mixed" when they differ
  std::uint32_t iteration = 0;
  std::uint32_t engine = 0;       // index into Workload::engines
  std::uint32_t program = 0;      // the program of its first command
  std::uint32_t first_index = 0;  // its first command, in schedule order
  std::uint32_t commands = 0;
  Cycles cycles = 0;            // the sum of its commands' own cycles (end - start)
  Cycles start = 0;             // first start of its commands
  Cycles end = 0;               // last end of its commands
  std::uint64_t bytes = 0;      // DMA bytes, both directions
  std::uint64_t macs = 0;       // array and vector MACs
  std::uint64_t energy_fj = 0;  // its commands' dynamic energy
  Cycles wait_deps = 0;         // sums of its commands' CommandStalls
  Cycles wait_dram = 0;
};

// One group per (iteration, layer, engine) of the commands, in the order of each group's first
// command in the schedule. The views point into `workload`, which must outlive them. `stalls`
// (command_stalls, indexed like the commands) may be empty: the waits then stay 0.
std::vector<OpGroup> group_ops(const Workload& workload, const Timeline& timeline,
                               const std::vector<CommandStalls>& stalls);

}  // namespace npusim::profiler
