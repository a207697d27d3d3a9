// The CSV outputs of DESIGN.md's table: timeline.csv / runtime_timeline.csv and runtime.csv.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

// One field, quoted as RFC 4180 requires when it holds the separator, a quote or a line break.
std::string csv_field(const std::string& value, char separator = ',');

// `ID,Start,End,Location,Op Type`, then one row per command in order of start cycle (ties in
// schedule order). Used for the compile-time estimate and the simulated execution alike.
// Returns false, having stopped, when the file would grow past `limit_bytes`: the caller then
// discards it (a per-command CSV is either complete or not written; docs/outputs.md#detail).
bool write_timeline_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                        std::uint64_t limit_bytes = ~std::uint64_t{0});

// `id;time_since_open;time_since_start;location`, one row per program: its index, its end in
// integer microseconds since the run began (cycle 0), its duration in integer microseconds
// (both rounded to nearest, halves up), and its location.
// `stats`, when given, must be compute_stats(workload, timeline).
void write_runtime_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                       const RunStats* stats = nullptr);

// annotated.csv: per program, per hardware op, `;`-separated:
// program;operation;slice;invocation;start_us;end_us;total_us;slice0_used;...;dma_in_used;dma_out_used;host_used
// ordered by program, then start cycle. `slice` is the slice index or `-` for a DMA op;
// `invocation` is the trace name `{index}_{layer}_{id}`; times in microseconds with 3 decimals
// (exact, from integer nanoseconds); the flags (0/1) say which slices, DMA engines and the host
// the program uses, the same on each of its rows. `slice` is `-` for DMA and host ops.
// Stops and returns false past `limit_bytes`, as write_timeline_csv.
bool write_annotated_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                         std::uint64_t limit_bytes = ~std::uint64_t{0});

}  // namespace npusim::profiler
