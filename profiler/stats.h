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
  // A vector unit only: cycles in which it and its slice's array were both busy. What is left of
  // busy_cycles ran while the array idled: a schedule that overlapped it perfectly would save it
  // (docs/outputs.md, "Array and vector overlap"). 0 for every other engine.
  Cycles array_overlap_cycles = 0;
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

// A resource that limits how fast a workload can run. The order is the one reports list them
// in, and the one that breaks ties: of equal bounds, the first binds.
enum class BoundResource : std::uint8_t {
  kArray,       // the busiest slice's systolic array
  kVector,      // the busiest slice's vector unit
  kMacPeak,     // every PE of every slice doing a MAC each cycle
  kDmaInPort,   // the DMA_IN channels' ports
  kDmaOutPort,  // the DMA_OUT channels' ports
  kDram,        // DRAM bandwidth
  kHost,        // the host CPU
  kDeviceLink,  // the busiest direction of a device-to-device link (DEV_HDMA)
  kHostLink,    // the host link, all its channels (EXT_HDMA)
};
// The resources every run reports.
constexpr BoundResource kBoundResources[] = {BoundResource::kArray,      BoundResource::kVector,
                                             BoundResource::kMacPeak,    BoundResource::kDmaInPort,
                                             BoundResource::kDmaOutPort, BoundResource::kDram,
                                             BoundResource::kHost};
// The links' bounds, reported only by runs with the multi-device engines
// (has_multi_device_engines), so that a one-device run's outputs stay as they were; they are 0
// in any other run, so they never bind there.
constexpr BoundResource kLinkBoundResources[] = {BoundResource::kDeviceLink,
                                                 BoundResource::kHostLink};
// Stable names, used in summary.txt, stats.json (`bounds.<name>_cycles`, `bounds.binding`) and
// sweeps: "array", "vector", "mac_peak", "dma_in_port", "dma_out_port", "dram", "host",
// "device_link", "host_link".
const char* bound_name(BoundResource resource);

// Lower bounds on the total time of any execution of a workload, one per resource: no schedule
// of these commands on this device can end sooner than any of them. Static: they depend on the
// commands and the device, never on a timeline.
struct Bounds {
  // Per array (vector) unit, the sum of its commands' isolated cycles; the largest over slices.
  Cycles array_cycles = 0;
  Cycles vector_cycles = 0;
  Cycles mac_peak_cycles = 0;      // ceil(array MACs / (slices x rows x cols))
  Cycles dma_in_port_cycles = 0;   // ceil(DMA_IN bytes / (channels x bytes per cycle))
  Cycles dma_out_port_cycles = 0;  // ceil(DMA_OUT bytes / (channels x bytes per cycle))
  Cycles dram_cycles = 0;          // ceil(DRAM bytes / DRAM bytes per cycle)
  Cycles host_cycles = 0;          // the sum of HOST commands' isolated cycles
  // Per direction of each device pair, ceil(DEV_HDMA bytes / link bytes per cycle) + latency;
  // the largest. A direction has one lane: its transfers cross one after another.
  Cycles device_link_cycles = 0;
  // ceil(EXT_HDMA bytes, both directions / (channels x bytes per cycle)) + latency: the host link
  // is shared by every device.
  Cycles host_link_cycles = 0;

  Cycles cycles(BoundResource resource) const;
  // The largest bound, ties to the first in kBoundResources then kLinkBoundResources order;
  // nullopt when every bound is 0 (nothing to do).
  std::optional<BoundResource> binding() const;
};
// `sum` plus `n` times `part`: the bounds of work that runs one part after another add up.
void add_bounds(Bounds& sum, const Bounds& part, std::uint64_t n = 1);
// bound_name of the binding resource, or "none" when every bound is 0.
const char* binding_name(const Bounds& bounds);

// Whether the workload has the EXT_HDMA, DEV_HDMA and SYNC engines (several devices, or a
// schedule that uses them): only then do reports carry the links' bounds, the per-device figures
// and the interconnect figures.
bool has_multi_device_engines(const Workload& workload);
// Devices the workload's engines belong to (at least one).
std::uint32_t device_count(const Workload& workload);

// Whether a command is part of a collective: a DEV_HDMA or SYNC, or any command whose layer
// begins with "collective." (the compiler's name for the commands of a collective, such as the
// adds of a reduction: "collective.all_reduce.3").
bool is_collective(const Workload& workload, const CommandInfo& command);

// One device's share of a run (has_multi_device_engines).
struct DeviceStats {
  Cycles busy_cycles = 0;          // union of the intervals of all its commands
  Cycles compute_busy_cycles = 0;  // union of its array and vector commands' intervals
  Cycles collective_cycles = 0;    // union of its collective commands' intervals (is_collective)
  std::uint32_t commands = 0;
  std::uint64_t dev_hdma_sent_bytes = 0;       // DEV_HDMA from this device
  std::uint64_t dev_hdma_received_bytes = 0;   // DEV_HDMA to this device
  std::uint64_t ext_hdma_to_device_bytes = 0;  // EXT_HDMA host -> this device
  std::uint64_t ext_hdma_to_host_bytes = 0;    // EXT_HDMA this device -> host
};
// Indexed by device; a command's device is its engine's (a DEV_HDMA is its sender's). HOST
// commands belong to no device and are left out.
std::vector<DeviceStats> compute_device_stats(const Workload& workload, const Timeline& timeline);

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

// Local-memory occupancy alone (RunStats::lram): the peak over the devices and the first overflow.
LramStats lram_occupancy(const Workload& workload, const Timeline& timeline);

// Local-memory changes in the order they apply: by cycle; at one cycle frees first, except that
// a command's own allocation comes before its own free (a command that takes no cycles). The one
// home of that rule: the statistics, the trace counter and the per-program peaks use it.
struct LramChange {
  Cycles at = 0;
  bool is_alloc = false;
  std::uint32_t command = 0;
  // Within a cycle: 0 a free, 1 the allocation and free of a command that takes no cycles, 2 an
  // allocation (lram_changes sorts by cycle, rank, command, allocation first).
  std::uint8_t rank = 0;
};
std::vector<LramChange> lram_changes(const Workload& workload, const Timeline& timeline);

// Every resource's lower bound (see Bounds). A rate of 0 in the device (unknown, as in a workload
// read back from CSV files) gives a bound of 0 for that resource.
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
