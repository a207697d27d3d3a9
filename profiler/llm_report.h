// A language model's run (docs/llm.md): the prefill and every decode step, each simulated as its
// own schedule, and the figures LLM users ask for: time to first token, time per output token,
// tokens per second, DRAM traffic per token, and what binds each phase.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "profiler/json_writer.h"
#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

struct LlmStep {
  bool prefill = false;
  std::uint64_t index = 0;    // the decode step (0-based); 0 for the prefill
  std::uint64_t tokens = 0;   // new tokens per sequence
  std::uint64_t context = 0;  // positions each new token attends to
  std::uint64_t commands = 0;
  Cycles estimate_cycles = 0;
  std::optional<Cycles> runtime_cycles;  // none without a simulation
  std::uint64_t macs = 0;
  std::uint64_t dram_read_bytes = 0;
  std::uint64_t dram_write_bytes = 0;
  Bounds bounds;
  // The simulation's cycles, else the estimate's.
  Cycles cycles() const { return runtime_cycles.value_or(estimate_cycles); }
};

struct LlmRun {
  std::uint64_t batch = 1;
  std::uint64_t prefill_tokens = 0;
  std::uint64_t decode_tokens = 0;
  std::vector<LlmStep> steps;  // the prefill, then decode steps 0, 1, ...
};

// The figures derived from the steps, in one place for every output.
struct LlmFigures {
  Cycles ttft_cycles = 0;  // the prefill, which yields the first token
  double ttft_ms = 0;
  std::uint64_t decode_steps = 0;
  double tpot_mean_ms = 0, tpot_p50_ms = 0, tpot_p99_ms = 0;  // 0 without decode steps
  double decode_tokens_per_s = 0;                             // batch x steps / decode time
  double end_to_end_ms = 0;                                   // prefill + every decode step
  double decode_dram_bytes_per_token = 0;                     // mean step traffic / batch
  Bounds prefill_bounds, decode_bounds;                       // decode: the steps' bounds summed
};
LlmFigures llm_figures(const LlmRun& run, const Clock& clock);

void write_llm_summary(std::ostream& out, const LlmRun& run, const Clock& clock);
void write_llm_json(JsonWriter& j, const LlmRun& run, const Clock& clock);
// llm.csv: one row per phase step.
void write_llm_csv(std::ostream& out, const LlmRun& run, const Clock& clock);

}  // namespace npusim::profiler
