// summary.txt (for people) and stats.json (for scripts, sweeps and budgets).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/figures.h"
#include "profiler/llm_report.h"
#include "profiler/timeline.h"

#include "profiler/trace_model.h"

namespace npusim::profiler {

// How much the outputs hold (--stats-level). Additive: each level has everything of the ones
// below it (docs/outputs.md).
enum class StatsLevel : int {
  kTotals = 40,    // inference totals: per-engine busy cycles, DRAM traffic per engine
  kWaits = 50,     // + cycles engines waited for dependencies and DMA waited for DRAM
  kOps = 70,       // + per-op cycles (the per-op reports need them); the default
  kExtended = 100  // + DRAM latency histogram, MAC utilisation per op, local-memory peak per
                   //   program
};
// Nullopt unless `level` is one of 40, 50, 70, 100.
std::optional<StatsLevel> stats_level_from(int level);
// Trace size follows the level: 40 slices with their id and cycles; 50 adds counters; 70 adds
// every slice argument and dependency flows.
TraceOptions trace_options_for(StatsLevel level);

// How much of each command the traces and stats.json keep (--trace-detail, docs/outputs.md#detail).
enum class TraceDetail : std::uint8_t {
  kAuto,     // every command up to kAutoDetailCommands commands, aggregated above
  kFull,     // every command, whatever the size
  kSummary,  // aggregated, whatever the size
};
// Nullopt unless `name` is "auto", "full" or "summary".
std::optional<TraceDetail> trace_detail_from(std::string_view name);
// auto: outputs of more commands than this are aggregated (docs/outputs.md#detail). At about 3 KB
// of outputs a command at the default stats level, this keeps a full-detail run under 100 MB.
inline constexpr std::uint64_t kAutoDetailCommands = 20000;
// Whether outputs of `commands` commands are aggregated.
bool aggregated(TraceDetail detail, std::uint64_t commands,
                std::uint64_t auto_threshold = kAutoDetailCommands);

// Back-to-back inferences (--iterations): when each ran, for per-inference figures.
struct Iterations {
  std::uint32_t count = 1;
  std::uint32_t first_profiled = 0;
  std::uint32_t profiled = 1;
  struct Span {
    Cycles start = 0;
    Cycles end = 0;
  };
  std::vector<Span> estimate;  // one per inference, in the full run's cycles
  std::vector<Span> runtime;   // empty without a simulation
};

struct ReportOptions {
  StatsLevel level = StatsLevel::kOps;
  const Iterations* iterations = nullptr;  // null for a single inference
  const LlmRun* llm = nullptr;             // a language model's phases; null for other models
  // Why the run could not complete, if it could not; the outputs then hold the commands that
  // finished and say so.
  std::string incomplete;
  // stats.json holds op_groups[] (one entry per layer per engine) instead of ops[] and says
  // "aggregated": true (docs/outputs.md#detail).
  bool aggregated = false;
  // Lines for summary.txt on what the outputs aggregate or leave out, after the config line.
  std::vector<std::string> detail_notes;
  // The figures of the estimate's and the runtime's timelines, when the caller has them (shared
  // by the writers of one run); used only if they are of the timelines written, else computed.
  const TimelineFigures* estimate_figures = nullptr;
  const TimelineFigures* runtime_figures = nullptr;
};

// `runtime` is null when only the compile-time estimate was made (`npusim estimate`).
void write_summary(std::ostream& out, const Workload& workload, const Timeline& estimate,
                   const Timeline* runtime, const ReportOptions& options = {});
void write_stats_json(std::ostream& out, const Workload& workload, const Timeline& estimate,
                      const Timeline* runtime, const ReportOptions& options = {});

}  // namespace npusim::profiler
