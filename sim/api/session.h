// The run pipeline as a library: load or compile a model for a config, estimate it, simulate it
// and write the outputs. The CLI's run, estimate, sweep and check call it; so can a Python
// binding or a scenario driver.
//
//   api::RunRequest req{"models/fc.json", "default"};
//   api::Session session = api::Session::open(req);
//   api::Measured m = session.measure(/*simulate=*/true);
//   session.write(m, "traces/fc", profiler::StatsLevel::k70);
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/llm_report.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "profiler/timeline.h"
#include "sim/api/llm_run.h"
#include "sim/api/models.h"
#include "sim/config/hw_config.h"
#include "sim/frontend/llm.h"
#include "sim/ir/schedule.h"

namespace npusim::api {

// load_hw_config, with the config's warnings (SCALE-Sim keys npusim does not model) logged.
HwConfig load_config(const std::string& path_or_name, const std::vector<std::string>& overrides);

// A scenario: what is run. Today back-to-back inferences with a profiling window (--iterations);
// LLM prefill and decode will be further scenario types.
struct Iterations {
  std::uint32_t count = 1;           // inferences run, 1 to 10000
  std::uint32_t first_profiled = 0;  // 0-based
  std::uint32_t profiled = 0;        // inferences profiled from first_profiled; 0: all the rest
};

struct RunRequest {
  std::string model;  // a schedule, graph JSON, SCALE-Sim topology or ONNX file
  std::string config = "default";
  std::vector<std::string> overrides;  // "key.path=value"
  ModelOptions model_options;
  Iterations iterations;
  // Where the simulation runs. By default in a forked child (simulate_in_child), so that a process
  // may measure any number of times; a program that simulates once (the CLI) may run it here.
  bool simulate_in_this_process = false;
};

// What a run measured: every command of one inference, else the profiled inferences, with
// per-inference figures.
struct Measured {
  // Shared with the session when it is the session's own (one inference): it holds every command.
  std::shared_ptr<const profiler::Workload> workload;
  profiler::Timeline estimate;
  std::optional<profiler::Timeline> runtime;
  std::optional<profiler::Iterations> iterations;
  // A language model: the prefill (which the fields above profile) and every decode step.
  std::optional<profiler::LlmRun> llm;
  std::string failure;  // why the run could not complete; the outputs then hold what finished
  bool failed_in_estimate = false;  // the estimate found the failure (the simulation never ran)
  // profiler::compute_stats of `workload` with `estimate` and with `runtime`, when measure() has
  // them (it checks local memory with them): the writers reuse them instead of recomputing.
  std::optional<profiler::RunStats> estimate_stats, runtime_stats;
};

// How much the output files hold (--stats-level, --trace-detail; docs/outputs.md).
struct WriteOptions {
  profiler::StatsLevel level = profiler::StatsLevel::kOps;
  profiler::TraceDetail detail = profiler::TraceDetail::kAuto;
  // With kAuto, outputs of more commands than this are aggregated (--trace-detail-commands).
  std::uint64_t auto_detail_commands = profiler::kAutoDetailCommands;
};

// What the outputs aggregate or leave out: lines for summary.txt (and the summary printed).
using DetailNotes = std::vector<std::string>;

// traces/<the model file's name without its extension, made a safe folder name>.
std::filesystem::path default_out_for(const std::string& model);

// The model whose outputs `out` holds ("NAME (FILE)", from its stats.json), when that is not
// `model` (compared by file name); "" when it holds none, or the same model's.
std::string other_model_in(const std::filesystem::path& out, const std::string& model);

class Session {
 public:
  // Loads the config and loads or compiles the model. Throws InputError on bad input.
  static Session open(const RunRequest& request);

  const HwConfig& config() const { return config_; }
  const Schedule& schedule() const { return schedule_; }
  const profiler::Workload& workload() const { return *workload_; }

  // Estimates and, if `simulate`, simulates the request's scenario, where the request says. A run
  // that cannot complete returns what finished with `failure` set.
  Measured measure(bool simulate) const;

  // Writes every output file into `out` atomically (all or none). Throws profiler::OutputError.
  void write(const Measured& measured, const std::filesystem::path& out,
             profiler::StatsLevel level) const;
  // The same with a trace detail; returns what the outputs aggregate or leave out, as
  // summary.txt says it.
  DetailNotes write(const Measured& measured, const std::filesystem::path& out,
                    const WriteOptions& options) const;

  // traces/<model name>, the default output folder.
  std::filesystem::path default_out() const;

 private:
  Session(RunRequest request, HwConfig config, Schedule schedule);
  // Compiles, estimates and (if `simulate`) simulates each decode step of the language model,
  // appending them to `m.llm`; a step that cannot complete sets `m.failure` and ends the run.
  void measure_decode(Measured& m, bool simulate) const;

  RunRequest request_;
  HwConfig config_;
  Schedule schedule_;
  std::shared_ptr<const profiler::Workload> workload_;
  std::optional<LlmSpec> llm_;  // set when the model is a language model
  // How the language model's prefill runs (sim/api/llm_run.h); its schedule_ is the assembly.
  std::optional<LlmPhasePlan> prefill_plan_;
};

// The summary that `run` prints, as written into summary.txt.
void write_summary(std::ostream& out, const Measured& measured, profiler::StatsLevel level,
                   const DetailNotes& notes = {});

// Checks the scenario against the schedule (count within limits, window inside the run); throws
// InputError naming the option.
void check_iterations(const Iterations& iterations, std::size_t schedule_commands);

}  // namespace npusim::api
