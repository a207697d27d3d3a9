// summary.txt (for people) and stats.json (for scripts, sweeps and budgets).
#pragma once

#include <optional>
#include <ostream>
#include <vector>

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
  const LlmRun* llm = nullptr;              // a language model's phases; null for other models
  // Why the run could not complete, if it could not; the outputs then hold the commands that
  // finished and say so.
  std::string incomplete;
};

// `runtime` is null when only the compile-time estimate was made (`npusim estimate`).
void write_summary(std::ostream& out, const Workload& workload, const Timeline& estimate,
                   const Timeline* runtime, const ReportOptions& options = {});
void write_stats_json(std::ostream& out, const Workload& workload, const Timeline& estimate,
                      const Timeline* runtime, const ReportOptions& options = {});

}  // namespace npusim::profiler
