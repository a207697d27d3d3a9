// The trace model: one format-neutral description of what trace.json and trace.pftrace show,
// built once from a Workload and its timelines and serialised by both writers
// (chrome_trace.h, perfetto_trace.h). Every rule the viewers rely on lives here, so that the two
// files cannot disagree:
//   - processes: one per run (pid 1 = the first run, ...); when the engines belong to several
//     devices, per run one per device ("Device <d> (<run>)", External HDMA included) and then a
//     "Host (<run>)" one, the track and counter names without the "DEV<d>." prefix;
//   - tracks: one per engine, per unit (DMA channel) that ran at least one command, named
//     `{group}: {engine}` (command_names and EngineInfo::trace_category: the RBLN profiler's
//     vocabulary); commands that would overlap on one track (only possible with inconsistent
//     timelines) go to extra lanes, so slices on a track never overlap and nest trivially;
//   - slices: one per command, named `{iteration}_{layer}_{k}` (command_names), all in one
//     category, kTraceCategory: DevTools binds a flow event to a slice only when their categories
//     are equal, and groups a flow's events by category too, so a flow between two engines can
//     only be drawn when both slices share one;
//   - flows: per command, the dependency that finished last (the one it waited for; every
//     dependency edge of the critical path is one of these), or with all_flows every dependency
//     edge; with several devices also every edge between two processes (a Device HDMA to the
//     commands on its peer that wait for it, a Device Sync to and from its peers'); ids unique
//     across the file;
//   - counters: DRAM GB/s and per-engine utilisation per window, local-memory occupancy as an
//     exact step function;
//   - events: slice begins and ends and counter samples in one total order that both writers
//     follow: by time, ends before begins at one timestamp, zero-length slices in between.
// Time is converted once, here: ns = floor(cycles * 10^6 / clock_khz), exact integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/figures.h"
#include "profiler/op_groups.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

// How much goes into a trace; the CLI maps stats levels to it.
struct TraceOptions {
  bool flows = true;          // dependency arrows
  bool all_flows = false;     // an arrow for every dependency, not only the one waited for
  bool counters = true;       // DRAM bandwidth, local memory, utilisation
  bool detailed_args = true;  // all slice arguments; otherwise only `id` and `cycles`
  // One slice per layer per engine (OpGroup) instead of one per command, no flows, and local
  // memory as its peak per counter window: the trace of a large run that a person can open
  // (--trace-detail, docs/outputs.md#detail).
  bool aggregate = false;
};

// One run, shown as one process (or one per device and one for the host).
struct TraceRun {
  std::string name;                    // process name, e.g. "compile-time estimate"
  const Timeline* timeline = nullptr;  // indexed like Workload::commands; outlives the model
  // Its figures, if the caller has them (shared with the other writers); else computed.
  const TimelineFigures* figures = nullptr;
};

// Counter windows: DRAM GB/s and utilisation are averaged over windows of
// ceil(total_cycles / kTraceCounterWindows) cycles (at least 1), the last one possibly shorter;
// a sample at the start of each window whose value differs from the previous window's, and 0 at
// the end of the run.
inline constexpr std::uint64_t kTraceCounterWindows = 200;

// The category of every slice and flow event (see the file comment).
inline constexpr const char* kTraceCategory = "npu";

// Nanoseconds since cycle 0: floor(cycles * 10^6 / clock_khz), in 128-bit integers, so that it is
// exact and monotone (cycle order is preserved, equal cycles give equal ns). A clock of 0 kHz is
// treated as 1 GHz (1 cycle = 1 ns).
std::uint64_t trace_ns(Cycles cycles, std::uint64_t clock_khz);
// Microseconds as text with exactly three decimals, from integer ns: 1234567 -> "1234.567".
std::string trace_us_text(std::uint64_t ns);

// One argument of a slice (a Chrome `args` entry, a Perfetto debug annotation).
struct TraceArg {
  enum class Kind : std::uint8_t { kUint, kDouble, kString };
  const char* name = "";
  Kind kind = Kind::kUint;
  std::uint64_t uint_value = 0;
  double double_value = 0;
  std::string_view string_value;  // into the workload or the model, which outlive it
};

struct TraceProcess {
  std::int32_t pid = 0;
  std::string name;
  std::uint64_t uuid = 0;  // Perfetto process track
  const Timeline* timeline = nullptr;
  Cycles total_cycles = 0;
  Cycles window_cycles = 1;  // counter window
};

struct TraceTrack {
  std::uint32_t process = 0;    // index into TraceModel::processes
  std::uint32_t engine = 0;     // index into Workload::engines
  std::uint32_t unit = 0;       // CommandTiming::unit
  std::uint32_t lane = 0;       // 0, or an extra lane for commands that overlap on one unit
  std::string name;             // "Neural Engine Clusters: SLICE0.ARRAY", "Task DMA: DMA_IN ch1"
  std::int32_t tid = 0;         // unique in the file, increasing in sort order
  std::int32_t sort_index = 0;  // order within the process: engines order, then unit, then lane
  std::uint64_t uuid = 0;
};

// Slices are indexed run * commands + command; aggregated, in the order of TraceModel::groups.
struct TraceSlice {
  std::uint32_t process = 0;
  std::uint32_t command = 0;  // aggregated: the group, an index into TraceModel::groups
  std::uint32_t track = 0;    // index into TraceModel::tracks
  std::uint64_t begin_ns = 0;
  std::uint64_t end_ns = 0;
  Cycles stall_deps = 0;  // CommandStalls
  Cycles stall_dram = 0;
};

struct TraceFlow {
  std::uint64_t id = 0;    // unique in the file, from 1
  std::uint32_t from = 0;  // slice of the dependency
  std::uint32_t to = 0;    // slice of the dependant
};

struct TraceCounterSample {
  std::uint64_t ts_ns = 0;
  double value = 0;
};

struct TraceCounter {
  enum class Unit : std::uint8_t { kGbps, kBytes, kPercent, kWatts };
  std::uint32_t process = 0;
  std::string name;    // "DRAM GB/s", "LRAM bytes", "SLICE0.ARRAY utilisation %", "Power W"
  std::string group;   // the name without its unit: "DRAM", "LRAM", "SLICE0.ARRAY utilisation"
  std::string series;  // the unit: "GB/s", "bytes", "%"; name = group + " " + series
  Unit unit = Unit::kGbps;
  std::int32_t sort_index = 0;  // after the process's tracks
  std::uint64_t uuid = 0;
  std::vector<TraceCounterSample> samples;  // strictly increasing ts_ns
  bool integer() const { return unit == Unit::kBytes; }
};

// A slice begin or end, or a counter sample, in the order both writers emit them.
struct TraceEvent {
  enum class Kind : std::uint8_t { kBegin, kEnd, kCounter };
  Kind kind = Kind::kBegin;
  std::uint32_t index = 0;   // slice, or counter
  std::uint32_t sample = 0;  // counter sample
  std::uint64_t ts_ns = 0;
};

class TraceModel {
 public:
  const Workload* workload = nullptr;  // outlives the model
  TraceOptions options;
  std::vector<TraceProcess> processes;
  std::vector<TraceTrack> tracks;  // grouped by process, in sort order
  std::vector<TraceSlice> slices;
  std::vector<TraceFlow> flows;  // in id order
  std::vector<TraceCounter> counters;
  // All slice begins/ends and counter samples, sorted by ts_ns; at one timestamp: ends of slices
  // that began earlier, then zero-length slices (begin, end; in start-cycle, end-cycle,
  // dependency order), then begins of slices that end later, then counter samples. On every
  // track each end precedes the next begin, and every flow's source begin precedes its
  // destination begin.
  std::vector<TraceEvent> events;
  std::vector<std::string> names;  // per command: command_names, or the names given
  std::vector<OpGroup> groups;     // aggregated: every run's groups, run after run

  const std::string& slice_name(const TraceSlice& slice) const {
    return options.aggregate ? groups[slice.command].name : names[slice.command];
  }
  // kTraceCategory, for every slice.
  static const char* slice_category(const TraceSlice& /*slice*/) { return kTraceCategory; }
  // Arguments in a fixed order: id, index (in the schedule), engine, group (the track's
  // group), op, cycles, start_cycle, end_cycle, unit, bytes, macs, utilisation_pct (array: MACs /
  // (rows x cols x cycles); DMA: bytes / (cycles x DRAM bytes per cycle); absent for vector ops
  // and zero-cycle commands), layer, location, program, program_name, stall_deps_cycles,
  // stall_dram_cycles. Only id, index and cycles without detailed_args. Aggregated: layer, engine,
  // group, op, commands, cycles (the sum of the commands' own cycles), start_cycle, end_cycle,
  // bytes, macs, first_index, program, program_name, stall_deps_cycles, stall_dram_cycles (sums);
  // only layer, commands and cycles without detailed_args.
  std::vector<TraceArg> slice_args(const TraceSlice& slice) const;
  // The same into `args`, whose capacity is reused (the writers call it once per slice).
  void slice_args(const TraceSlice& slice, std::vector<TraceArg>& args) const;
  // Ids of the flows that start (out) or end (in) at a slice, increasing.
  std::vector<std::uint64_t> flows_out(std::uint32_t slice) const;
  std::vector<std::uint64_t> flows_in(std::uint32_t slice) const;
  // Calls f(id) for each of them, without building a list.
  template <typename F>
  void for_each_flow_out(std::uint32_t slice, F&& f) const {
    if (slice + 1 >= out_offsets.size()) return;
    for (std::uint32_t i = out_offsets[slice]; i < out_offsets[slice + 1]; ++i) {
      f(flows[out_flows[i]].id);
    }
  }
  template <typename F>
  void for_each_flow_in(std::uint32_t slice, F&& f) const {
    if (slice + 1 >= in_offsets.size()) return;
    for (std::uint32_t i = in_offsets[slice]; i < in_offsets[slice + 1]; ++i) {
      f(flows[in_flows[i]].id);
    }
  }

  // Filled by build_trace_model: flows by source and by destination (CSR).
  void group_args(const OpGroup& group, std::vector<TraceArg>& args) const;
  std::vector<std::uint32_t> out_offsets;
  std::vector<std::uint32_t> out_flows;  // indices into flows
  std::vector<std::uint32_t> in_offsets;
  std::vector<std::uint32_t> in_flows;
};

// `workload` and every run's timeline must outlive the model. Slices are named by `names`
// (indexed like Workload::commands), or command_names when it is empty. Throws
// std::invalid_argument if a run has no timeline or a timeline or `names` is not indexed like
// Workload::commands.
TraceModel build_trace_model(const Workload& workload, const std::vector<TraceRun>& runs,
                             const TraceOptions& options = {}, std::vector<std::string> names = {});

}  // namespace npusim::profiler
