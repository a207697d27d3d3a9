// Figures derived from a Workload and a Timeline: busy cycles, traffic, bounds, memory occupancy.
// Pure functions; the estimate and the simulation are measured by the same code.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "profiler/timeline.h"

namespace npusim::profiler {

struct EngineStats {
  Cycles busy_cycles = 0;  // cycles in which at least one of the engine's channels was busy
  std::uint32_t commands = 0;
};

struct ProgramStats {
  Cycles start = 0;  // first start of any of its commands
  Cycles end = 0;    // last end of any of its commands
  std::uint32_t commands = 0;
};

// Local-memory occupancy over time: allocations at command starts, frees at command ends; at one
// cycle, frees happen before allocations.
struct LramStats {
  std::uint64_t peak_bytes = 0;  // the "variable buffer size"
  Cycles peak_at = 0;
  // The first moment occupancy exceeded DeviceInfo::lram_bytes, if it ever did.
  struct Overflow {
    std::uint32_t command = 0;  // whose allocation overflowed
    Cycles at = 0;
    std::uint64_t in_use_bytes = 0;  // occupancy including that allocation
  };
  std::optional<Overflow> overflow;
};

// Lower bounds on the total time of any execution of a workload.
struct Bounds {
  Cycles compute_cycles = 0;  // ceil(MACs / peak MACs per cycle over all slices)
  Cycles dram_cycles = 0;     // ceil(DRAM bytes / DRAM bytes per cycle)
};

struct RunStats {
  Cycles total_cycles = 0;
  std::vector<EngineStats> engines;  // indexed like Workload::engines
  std::vector<ProgramStats> programs;
  std::uint64_t dram_read_bytes = 0;
  std::uint64_t dram_write_bytes = 0;
  std::uint64_t macs = 0;
  std::uint64_t vector_macs = 0;
  LramStats lram;
};

RunStats compute_stats(const Workload& workload, const Timeline& timeline);

// Local-memory changes in the order they apply: by cycle; at one cycle frees first, except that
// a command's own allocation comes before its own free (a command that takes no cycles). The one
// home of that rule: the statistics, the trace counter and the per-program peaks use it.
struct LramChange {
  Cycles at = 0;
  bool is_alloc = false;
  std::uint32_t command = 0;
};
std::vector<LramChange> lram_changes(const Workload& workload, const Timeline& timeline);
Bounds compute_bounds(const Workload& workload);

// Achieved DRAM bandwidth in GB/s (10^9 bytes per second) over `cycles`; 0 for 0 cycles.
double achieved_gbps(std::uint64_t bytes, Cycles cycles, std::uint64_t clock_khz);

// Why a command started later than its unit could have run it, in cycles.
struct CommandStalls {
  // Cycles its unit sat idle waiting for the command's dependencies: max(0, deps_done -
  // unit_ready), where deps_done is the latest end of its dependencies (0 if none) and unit_ready
  // the end of the command before it on the same engine and unit, in order of start (ties in
  // schedule order; 0 if none).
  Cycles deps = 0;
  // For DMA commands, cycles beyond the cost model's isolated figure: (end - start) -
  // isolated_cycles, clamped at 0. Always 0 for compute commands.
  Cycles dram = 0;
};

// One entry per command, indexed like Workload::commands.
std::vector<CommandStalls> command_stalls(const Workload& workload, const Timeline& timeline);

}  // namespace npusim::profiler
