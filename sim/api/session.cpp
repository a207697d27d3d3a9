#include "sim/api/session.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "profiler/chrome_trace.h"
#include "profiler/csv_writers.h"
#include "profiler/input_file.h"
#include "profiler/output_dir.h"
#include "profiler/perfetto_trace.h"
#include "profiler/select.h"
#include "profiler/trace_model.h"
#include "sim/api/iterations.h"
#include "sim/api/llm_run.h"
#include "sim/api/simulate_child.h"
#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/ir/engines.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/json_stream.h"
#include "sim/util/parallel.h"

namespace npusim::api {
namespace {

// Logs how long a phase took at info level (`--log-level info`), for people sizing runs.
class PhaseTimer {
 public:
  explicit PhaseTimer(const char* phase)
      : phase_(phase), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
            .count();
    spdlog::info("{}: {:.1f} ms", phase_, ms);
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* phase_;
  std::chrono::steady_clock::time_point start_;
};

void warn_on_target_mismatch(const Schedule& schedule, const HwConfig& config) {
  if (!schedule.target_config.empty() && schedule.target_config != config.name) {
    spdlog::warn("{} was compiled for config '{}' but runs on '{}'", schedule.file,
                 schedule.target_config, config.name);
  }
  if (schedule.target_slices != 0 && schedule.target_slices != config.slices.count) {
    spdlog::warn("{} was compiled for {} slice(s) but the config has {}", schedule.file,
                 schedule.target_slices, config.slices.count);
  }
}

// A schedule that overfills local memory cannot run as compiled: why, if it does. `stats` are
// the timeline's.
std::string lram_failure(const profiler::Workload& w, const profiler::RunStats& stats,
                         const char* which) {
  const auto& over = stats.lram.overflow;
  if (!over) return "";
  return std::string("local memory capacity exceeded in the ") + which + ": " +
         w.commands[over->command].id + " allocates at cycle " + std::to_string(over->at) +
         ", bringing occupancy to " + std::to_string(over->in_use_bytes) + " of " +
         std::to_string(w.device.lram_bytes) + " bytes";
}

// The config a schedule file says it was compiled for (`target.config`), or "" when the file
// is not a readable schedule JSON or does not say.
std::string schedule_target_config(const std::string& path) {
  // Only a hint: not for a file that is not a regular one (a FIFO would block) or is large
  // enough that a second parse would cost more than the hint is worth.
  constexpr std::uintmax_t kHintMaxBytes = std::uintmax_t{64} << 20;
  std::error_code ec;
  if (profiler::input_file_problem(path) || std::filesystem::file_size(path, ec) > kHintMaxBytes ||
      ec) {
    return "";
  }
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return "";
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != "npusim-schedule") return "";
  const auto target = j.find("target");
  if (target == j.end() || !target->is_object()) return "";
  const auto config = target->find("config");
  return config != target->end() && config->is_string() ? config->get<std::string>() : "";
}

// A model name as a folder name: letters, digits, '.', '-' and '_' kept, anything else '_'.
std::string folder_name(const std::string& model_name) {
  std::string name;
  for (char ch : model_name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
    name += keep ? ch : '_';
  }
  if (name.empty() || name.find_first_not_of('.') == std::string::npos) name = "model";
  return name;
}

// Runs `run` and returns its timeline; if it cannot complete, records why and which commands
// finished, and returns the partial timeline.
template <typename Run>
profiler::Timeline run_or_partial(Run run, std::string& failure, std::vector<bool>& finished) {
  try {
    return run();
  } catch (const SimulationError& e) {
    if (e.partial() == nullptr) throw;
    failure = e.what();
    finished = e.partial()->finished;
    return e.partial()->timeline;
  }
}

// Per inference k of n, its first start and last end.
std::vector<profiler::Iterations::Span> spans(const profiler::Timeline& t, std::uint32_t n,
                                              std::size_t per) {
  std::vector<profiler::Iterations::Span> list(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    profiler::Iterations::Span& s = list[k];
    s.start = ~profiler::Cycles{0};
    for (std::size_t i = k * per; i < (k + 1) * per; ++i) {
      s.start = std::min(s.start, t.commands[i].start);
      s.end = std::max(s.end, t.commands[i].end);
    }
    if (per == 0) s.start = 0;
  }
  return list;
}

}  // namespace

void check_iterations(const Iterations& it, std::size_t schedule_commands) {
  if (it.count < 1 || it.count > 10000) {
    throw InputError("--iterations", "",
                     "expected 1 to 10000 inferences, found " + std::to_string(it.count));
  }
  if (it.first_profiled >= it.count) {
    throw InputError("--profile-start-iter", "",
                     "inference " + std::to_string(it.first_profiled) + " of " +
                         std::to_string(it.count) + " does not exist (they count from 0)");
  }
  if (it.profiled > it.count - it.first_profiled) {
    throw InputError("--profile-samples", "",
                     std::to_string(it.profiled) + " inferences from #" +
                         std::to_string(it.first_profiled) + " run past the " +
                         std::to_string(it.count) + " run");
  }
  // N back-to-back copies must stay within the schedule limit.
  const std::uint64_t total = schedule_commands * std::uint64_t{it.count};
  if (total > kMaxCommands) {
    throw InputError("--iterations", "",
                     std::to_string(it.count) + " copies of " + std::to_string(schedule_commands) +
                         " commands exceed the limit of " + std::to_string(kMaxCommands) +
                         " commands");
  }
}

HwConfig load_config(const std::string& path_or_name, const std::vector<std::string>& overrides) {
  HwConfig config = load_hw_config(path_or_name, overrides);
  for (const std::string& w : config.warnings) spdlog::warn("{}", w);
  return config;
}

Session::Session(RunRequest request, HwConfig config, Schedule schedule)
    : request_(std::move(request)), config_(std::move(config)), schedule_(std::move(schedule)) {
  workload_ = std::make_shared<const profiler::Workload>(make_workload(schedule_, config_));
}

Session Session::open(const RunRequest& request) {
  if (request.model.empty()) throw InputError("", "", "a model is required");
  HwConfig config = load_config(request.config, request.overrides);
  std::optional<LlmSpec> llm;
  std::optional<LlmPhasePlan> plan;
  if (detect_model_kind_to_load(request.model) == ModelKind::kLlm) {
    llm = load_llm_spec(request.model);
    const Iterations& it = request.iterations;
    if (it.count != 1 || it.first_profiled != 0 || it.profiled != 0) {
      throw InputError("--iterations", "",
                       "a language model runs its prefill and decode steps (decode_tokens in " +
                           request.model + "), not back-to-back inferences");
    }
  }
  Schedule schedule = [&] {
    PhaseTimer t("load and compile");
    if (llm) {
      plan = compile_llm_phase(*llm, prefill_phase(*llm), config);
      return assemble_llm_phase(*plan);
    }
    try {
      return load_or_compile(request.model, config, request.model_options);
    } catch (const InputError& e) {
      // A schedule compiled for another config fails the checks against this one (slices out of
      // range, ...): say so first, with the way to run it as compiled.
      const std::string target = schedule_target_config(request.model);
      if (target.empty() || target == config.name) throw;
      std::vector<Problem> problems = {{request.model, "/target/config",
                                        "compiled for config '" + target + "', not '" +
                                            config.name + "': run it with -c " + target +
                                            ", or compile the model for '" + config.name +
                                            "'. Its problems on '" + config.name + "':"}};
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
      throw InputError(std::move(problems));
    }
  }();
  warn_on_target_mismatch(schedule, config);
  spdlog::info("{}: {} commands, config '{}' ({} slices)", request.model, schedule.commands.size(),
               config.name, config.slices.count);
  Session session(request, std::move(config), std::move(schedule));
  session.llm_ = std::move(llm);
  session.prefill_plan_ = std::move(plan);
  return session;
}

std::filesystem::path default_out_for(const std::string& model) {
  return std::filesystem::path("traces") /
         folder_name(std::filesystem::path(model).stem().string());
}

std::filesystem::path Session::default_out() const { return default_out_for(request_.model); }

namespace {

// A stats.json's "format" and "model": {"name", "file"}, read with the SAX interface, which stops
// as soon as it has them: they come first, and the file can be tens of MB.
class StatsHeader final : public JsonSaxHandler {
 public:
  std::string format, name, file;
  bool has_model = false;
  bool done() const { return !format.empty() && has_model; }

  bool null() override { return scalar(); }
  bool boolean(bool /*value*/) override { return scalar(); }
  bool number_integer(number_integer_t /*value*/) override { return scalar(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return scalar(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return scalar();
  }
  bool string(string_t& value) override {
    if (depth() == 1 && key_ == "format") format = value;
    if (depth() == 2 && in_model_ && key_ == "name") name = value;
    if (depth() == 2 && in_model_ && key_ == "file") file = value;
    return scalar();
  }
  bool start_object(std::size_t /*elements*/) override {
    if (depth() == 0) is_object_ = true;
    if (depth() == 1 && key_ == "model") in_model_ = true;
    return enter();
  }
  bool key(string_t& value) override {
    key_ = value;
    return true;
  }
  bool end_object() override {
    leave();
    if (depth() == 1 && in_model_) in_model_ = false, has_model = true;
    return !done();  // false stops the parse: everything needed is read
  }
  bool start_array(std::size_t /*elements*/) override { return is_object_ && enter(); }
  bool end_array() override {
    leave();
    return true;
  }

 private:
  bool scalar() const { return is_object_; }  // a top level that is not an object is no stats.json
  bool is_object_ = false, in_model_ = false;
  std::string key_;
};

}  // namespace

std::string other_model_in(const std::filesystem::path& out, const std::string& model) {
  std::ifstream in(out / "stats.json");
  if (!in) return "";
  in.close();
  StatsHeader header;
  try {
    sax_parse_json_file((out / "stats.json").string(), header);
  } catch (const InputError&) {
    return "";  // not JSON: not a stats.json
  }
  if (!header.done() || header.format != "npusim-stats") return "";
  if (header.file.empty() || header.file == std::filesystem::path(model).filename().string()) {
    return "";
  }
  return header.name + " (" + header.file + ")";
}

namespace {

// A phase's figures from its workload and timelines; `known`, when given, is the statistics of
// the last of them.
profiler::LlmStep phase_step(const profiler::Workload& w, const profiler::Timeline& est,
                             const profiler::Timeline* sim,
                             const profiler::RunStats* known = nullptr) {
  profiler::LlmStep step;
  step.commands = w.commands.size();
  step.estimate_cycles = est.total_cycles();
  std::optional<profiler::RunStats> computed;
  if (known == nullptr) computed = profiler::compute_stats(w, sim != nullptr ? *sim : est);
  const profiler::RunStats& stats = known != nullptr ? *known : *computed;
  if (sim != nullptr) step.runtime_cycles = stats.total_cycles;
  step.macs = stats.macs;
  step.dram_read_bytes = stats.dram_read_bytes;
  step.dram_write_bytes = stats.dram_write_bytes;
  step.bounds = profiler::compute_bounds(w);
  return step;
}

// `sum` plus `n` times `part`: parts run one after another, so their figures add.
void add_part(profiler::LlmStep& sum, const profiler::LlmStep& part, std::uint64_t n) {
  sum.commands += part.commands * n;
  sum.estimate_cycles += part.estimate_cycles * n;
  if (part.runtime_cycles)
    sum.runtime_cycles = sum.runtime_cycles.value_or(0) + *part.runtime_cycles * n;
  sum.macs += part.macs * n;
  sum.dram_read_bytes += part.dram_read_bytes * n;
  sum.dram_write_bytes += part.dram_write_bytes * n;
  profiler::add_bounds(sum.bounds, part.bounds, n);
}

// Runs each part of a language model's phase once: its estimate, and its simulation in a child.
// A part that cannot complete throws SimulationError naming the part (without a partial run: the
// parts' commands are not the phase's).
struct PartRuns {
  std::vector<profiler::Workload> workloads;
  std::vector<profiler::Timeline> estimate, runtime;
};
PartRuns run_llm_parts(const LlmPhasePlan& plan, const HwConfig& config, bool simulate_too) {
  PartRuns runs;
  for (const LlmPhasePlan::Part& part : plan.parts) {
    const std::string name = part.schedule.model.name;
    runs.workloads.push_back(make_workload(part.schedule, config));
    auto checked = [&](auto run, const char* which) {
      profiler::Timeline t;
      try {
        t = run();
      } catch (const SimulationError& e) {
        throw SimulationError(name + ": " + e.what(), nullptr, e.stage());
      }
      const std::string over = lram_failure(
          runs.workloads.back(), profiler::compute_stats(runs.workloads.back(), t), which);
      if (!over.empty()) throw SimulationError(std::string(name).append(": ").append(over));
      return t;
    };
    runs.estimate.push_back(checked([&] { return estimate(part.schedule, config); }, "estimate"));
    if (simulate_too) {
      runs.runtime.push_back(
          checked([&] { return simulate_in_child(part.schedule, config); }, "simulation"));
    }
  }
  return runs;
}

}  // namespace

Measured Session::measure(bool simulate_too) const {
  const Iterations& iters = request_.iterations;
  check_iterations(iters, schedule_.commands.size());
  const std::uint32_t n = iters.count;
  const std::uint32_t start = iters.first_profiled;
  // One inference runs the schedule as it is: no copy of its commands.
  std::optional<Schedule> repeated;
  if (n > 1) repeated = repeat_schedule(schedule_, n);
  const Schedule& schedule = repeated ? *repeated : schedule_;
  // One inference profiles the session's own workload: shared, not copied (millions of commands).
  std::shared_ptr<const profiler::Workload> full_workload = [&] {
    if (n == 1) return workload_;
    profiler::Workload w = make_workload(schedule, config_);
    const std::size_t per = schedule_.commands.size();
    for (std::size_t i = 0; i < w.commands.size(); ++i) {
      w.commands[i].iteration = static_cast<std::uint32_t>(i / per);
    }
    return std::make_shared<const profiler::Workload>(std::move(w));
  }();
  const profiler::Workload& full = *full_workload;
  std::string failure;
  std::vector<bool> finished(schedule.commands.size(), true);
  profiler::Timeline est = run_or_partial(
      [&] {
        PhaseTimer t("estimate");
        if (prefill_plan_)
          return replay_llm_phase(*prefill_plan_,
                                  run_llm_parts(*prefill_plan_, config_, false).estimate);
        return estimate(schedule, config_);
      },
      failure, finished);
  std::optional<profiler::RunStats> est_stats, sim_stats;
  if (failure.empty()) {
    est_stats = profiler::compute_stats(full, est);
    failure = lram_failure(full, *est_stats, "estimate");
  }
  const bool failed_in_estimate = !failure.empty();
  std::optional<profiler::Timeline> sim;
  // A run the estimate cannot complete, the simulation cannot either: it is not started.
  if (simulate_too && failure.empty()) {
    sim = run_or_partial(
        [&] {
          PhaseTimer t("simulate");
          if (prefill_plan_)
            return replay_llm_phase(*prefill_plan_,
                                    run_llm_parts(*prefill_plan_, config_, true).runtime);
          return request_.simulate_in_this_process ? simulate(schedule, config_)
                                                   : simulate_in_child(schedule, config_);
        },
        failure, finished);
    if (failure.empty()) {
      sim_stats = profiler::compute_stats(full, *sim);
      failure = lram_failure(full, *sim_stats, "simulation");
    }
  }
  if (!failure.empty()) {
    // The outputs hold the commands that finished, with the run's own times.
    std::vector<const profiler::Timeline*> timelines = {&est};
    if (sim) timelines.push_back(&*sim);
    profiler::Selection part = profiler::select_commands(full, timelines, finished, 0);
    Measured m{std::make_shared<const profiler::Workload>(std::move(part.workload)),
               std::move(part.timelines[0]),
               std::nullopt,
               std::nullopt,
               std::nullopt,
               failure,
               failed_in_estimate,
               std::nullopt,
               std::nullopt};
    if (sim) m.runtime = std::move(part.timelines[1]);
    return m;
  }
  if (n == 1) {
    Measured m{full_workload, std::move(est),       std::move(sim),
               std::nullopt,  std::nullopt,         "",
               false,         std::move(est_stats), std::move(sim_stats)};
    if (llm_) measure_decode(m, simulate_too);
    return m;
  }

  const std::size_t per = schedule_.commands.size();
  const std::uint32_t samples = iters.profiled == 0 ? n - start : iters.profiled;
  profiler::Iterations it;
  it.count = n;
  it.first_profiled = start;
  it.profiled = samples;
  it.estimate = spans(est, n, per);
  if (sim) it.runtime = spans(*sim, n, per);
  std::vector<bool> keep(schedule.commands.size(), false);
  for (std::size_t i = start * per; i < (start + samples) * per; ++i) keep[i] = true;
  // Times count from the end of the inference before the window (an inference starts when the
  // previous one has finished).
  auto origin = [&](const std::vector<profiler::Iterations::Span>& list) {
    return start == 0 ? profiler::Cycles{0} : list[start - 1].end;
  };
  profiler::Selection e = profiler::select_commands(full, {&est}, keep, origin(it.estimate));
  Measured m{std::make_shared<const profiler::Workload>(std::move(e.workload)),
             std::move(e.timelines[0]),
             std::nullopt,
             it,
             std::nullopt,
             "",
             false,
             std::nullopt,
             std::nullopt};
  if (sim) {
    m.runtime =
        std::move(profiler::select_commands(full, {&*sim}, keep, origin(it.runtime)).timelines[0]);
  }
  return m;
}

void Session::measure_decode(Measured& m, bool simulate_too) const {
  const LlmSpec& spec = *llm_;
  profiler::LlmRun run;
  run.batch = spec.batch;
  run.prefill_tokens = spec.prefill_tokens;
  run.decode_tokens = spec.decode_tokens;
  const std::optional<profiler::RunStats>& last_stats =
      m.runtime ? m.runtime_stats : m.estimate_stats;
  profiler::LlmStep prefill = phase_step(*m.workload, m.estimate, m.runtime ? &*m.runtime : nullptr,
                                         last_stats ? &*last_stats : nullptr);
  prefill.prefill = true;
  prefill.tokens = spec.prefill_tokens;
  prefill.context = spec.prefill_tokens;
  run.steps.push_back(prefill);
  PhaseTimer timer("decode steps");
  // Where the decode steps' time goes, logged at info level like the phases.
  double compile_ms = 0, run_ms = 0;
  auto timed = [](double& total_ms, auto&& work) {
    const auto start = std::chrono::steady_clock::now();
    auto result = work();
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  // The steps compile independently of each other, so a batch of them compiles at once on the
  // cores (the plans are those of one after another); then they run one after another. (Not
  // compiled while one runs: a step's simulation forks a child, which must not be forked while
  // other threads may hold locks.)
  const std::uint64_t batch = std::max<unsigned>(1, worker_threads());
  std::vector<LlmPhasePlan> plans;
  for (std::uint64_t i = 0; i < spec.decode_tokens; ++i) {
    if (i % batch == 0) {
      const std::uint64_t count = std::min(batch, spec.decode_tokens - i);
      plans = timed(compile_ms, [&] {
        return parallel_map(count, [&](std::size_t k) {
          return compile_llm_phase(spec, decode_phase(spec, i + k), config_);
        });
      });
    }
    const LlmPhase phase = decode_phase(spec, i);
    const LlmPhasePlan& plan = plans[i % batch];
    PartRuns runs;
    try {
      runs = timed(run_ms, [&] { return run_llm_parts(plan, config_, simulate_too); });
    } catch (const SimulationError& e) {
      m.failure = "decode step " + std::to_string(i) + ": " + e.what();
      break;
    }
    profiler::LlmStep step;
    for (std::size_t p = 0; p < plan.parts.size(); ++p) {
      add_part(step,
               phase_step(runs.workloads[p], runs.estimate[p],
                          simulate_too ? &runs.runtime[p] : nullptr),
               plan.parts[p].copies);
    }
    step.index = i;
    step.tokens = phase.tokens;
    step.context = phase.past + phase.tokens;
    run.steps.push_back(step);
  }
  spdlog::info("decode steps: compile {:.1f} ms, estimate and simulate {:.1f} ms", compile_ms,
               run_ms);
  m.llm = std::move(run);
}

namespace {
profiler::ReportOptions report_options(const Measured& m, profiler::StatsLevel level) {
  profiler::ReportOptions report;
  report.level = level;
  report.iterations = m.iterations ? &*m.iterations : nullptr;
  report.incomplete = m.failure;
  report.llm = m.llm ? &*m.llm : nullptr;
  return report;
}

// The per-command CSVs together, and trace.json, are kept to these sizes unless every command is
// asked for (docs/outputs.md#detail): with the aggregated traces and stats.json, a run's outputs
// stay under 100 MB, and DevTools can load the trace.
constexpr std::uint64_t kCsvBudgetBytes = 90'000'000;
constexpr std::uint64_t kChromeTraceMaxBytes = 400'000'000;
// Up to this many commands the independent writers run side by side (Session::write).
constexpr std::uint64_t kConcurrentWritersMaxCommands = 1'000'000;

std::string thousands(std::uint64_t n) {
  std::string digits = std::to_string(n), text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// timeline.csv, and for a run runtime_timeline.csv, runtime.csv and annotated.csv. The
// per-command ones are complete or not written: past `budget` bytes together they are dropped.
bool write_csvs(profiler::OutputDir& dir, const profiler::Workload& w,
                const profiler::Timeline& est, const profiler::TimelineFigures* sim,
                std::uint64_t budget) {
  bool fits = true;
  std::uint64_t used = 0;
  auto per_command = [&](const char* name, auto write) {
    if (!fits) return;
    dir.write(name, [&](std::ostream& s) { fits = write(s, budget - used); });
    used += dir.staged_bytes(name);
    fits = fits && used <= budget;
  };
  per_command("timeline.csv", [&](std::ostream& s, std::uint64_t left) {
    return profiler::write_timeline_csv(s, w, est, left);
  });
  if (sim) {
    const profiler::Timeline& t = sim->timeline();
    per_command("runtime_timeline.csv", [&](std::ostream& s, std::uint64_t left) {
      return profiler::write_timeline_csv(s, w, t, left);
    });
    per_command("annotated.csv", [&](std::ostream& s, std::uint64_t left) {
      return profiler::write_annotated_csv(s, w, t, left);
    });
    dir.write("runtime.csv",
              [&](std::ostream& s) { profiler::write_runtime_csv(s, w, t, &sim->stats()); });
  }
  if (!fits) {
    for (const char* name : {"timeline.csv", "runtime_timeline.csv", "annotated.csv"}) {
      dir.discard(name);
    }
  }
  return fits;
}

}  // namespace

void write_summary(std::ostream& out, const Measured& m, profiler::StatsLevel level,
                   const DetailNotes& notes) {
  profiler::ReportOptions report = report_options(m, level);
  report.detail_notes = notes;
  const profiler::TimelineFigures est(*m.workload, m.estimate, m.estimate_stats);
  std::optional<profiler::TimelineFigures> sim;
  if (m.runtime) sim.emplace(*m.workload, *m.runtime, m.runtime_stats);
  report.estimate_figures = &est;
  report.runtime_figures = sim ? &*sim : nullptr;
  profiler::write_summary(out, *m.workload, m.estimate, m.runtime ? &*m.runtime : nullptr, report);
}

void Session::write(const Measured& m, const std::filesystem::path& out,
                    profiler::StatsLevel level) const {
  WriteOptions options;
  options.level = level;
  write(m, out, options);
}

DetailNotes Session::write(const Measured& m, const std::filesystem::path& out,
                           const WriteOptions& options) const {
  PhaseTimer timer("write outputs");
  profiler::OutputDir dir(out);
  const profiler::Workload& w = *m.workload;
  const profiler::Timeline& est = m.estimate;
  const profiler::Timeline* sim = m.runtime ? &*m.runtime : nullptr;
  const std::uint64_t commands = w.commands.size();
  const bool full = options.detail == profiler::TraceDetail::kFull;
  const bool aggregate =
      profiler::aggregated(options.detail, commands, options.auto_detail_commands);
  // Figures several writers need, computed once (profiler/figures.h).
  profiler::TimelineFigures est_figures(w, est, m.estimate_stats);
  std::optional<profiler::TimelineFigures> sim_figures;
  if (sim) sim_figures.emplace(w, *sim, m.runtime_stats);
  const profiler::TimelineFigures* simf = sim_figures ? &*sim_figures : nullptr;
  profiler::ReportOptions report = report_options(m, options.level);
  report.aggregated = aggregate;
  report.estimate_figures = &est_figures;
  report.runtime_figures = simf;
  DetailNotes& notes = report.detail_notes;
  if (aggregate) {
    notes.push_back("traces and stats.json aggregated per layer and engine (" +
                    thousands(commands) + " commands" +
                    (options.detail == profiler::TraceDetail::kAuto
                         ? " > " + thousands(options.auto_detail_commands) + ", --trace-detail auto"
                         : ", --trace-detail summary") +
                    "); --trace-detail full writes every command");
  }
  // The writers that do not depend on one another run on the machine's cores at once, each into
  // its own file (the outputs are the same bytes whatever runs first): the CSVs beside the trace
  // model, then the two traces and stats.json. summary.txt comes last: it carries the notes. Past
  // kConcurrentWritersMaxCommands they run one after another: side by side, the CSV writer's
  // buffers add to the trace model's peak (+220 MB on 5M commands, past the 4 GB target).
  const auto invoke = [&](const std::vector<std::function<void()>>& jobs) {
    if (commands <= kConcurrentWritersMaxCommands) return parallel_invoke(jobs);
    for (const auto& job : jobs) job();
  };
  std::vector<profiler::TraceRun> runs = {{"compile-time estimate", &est, &est_figures}};
  if (sim) runs.push_back({"runtime simulation", sim, simf});
  profiler::TraceOptions trace_options = profiler::trace_options_for(options.level);
  trace_options.aggregate = aggregate;
  bool csvs_fit = true;
  std::optional<profiler::TraceModel> trace;
  invoke({[&] {
            PhaseTimer t("write CSVs");
            csvs_fit = write_csvs(dir, w, est, simf, full ? ~std::uint64_t{0} : kCsvBudgetBytes);
          },
          [&] {
            PhaseTimer t("build trace model");
            trace.emplace(profiler::build_trace_model(w, runs, trace_options));
          }});
  if (!csvs_fit) {
    notes.push_back(
        std::string(sim ? "timeline.csv, runtime_timeline.csv, annotated.csv" : "timeline.csv") +
        " not written: over " + thousands(kCsvBudgetBytes / 1000000) +
        " MB; --trace-detail full writes them");
  }
  bool chrome_fits = true;
  auto write_stats = [&] {
    PhaseTimer t("write stats.json");
    dir.write("stats.json",
              [&](std::ostream& s) { profiler::write_stats_json(s, w, est, sim, report); });
  };
  // stats.json carries the notes, the last of which may say that trace.json did not fit. When
  // the traces aggregate, or hold few commands, trace.json fits but for absurdly long names, so
  // stats.json is written beside the traces as if it fits; when it does not, it is written again
  // below, with the note. Either way its bytes are those of writing it after the traces.
  const bool stats_beside = commands <= kConcurrentWritersMaxCommands &&
                            (aggregate || commands <= options.auto_detail_commands);
  std::vector<std::function<void()>> jobs = {
      [&] {
        PhaseTimer t("write trace.json");
        dir.write("trace.json", [&](std::ostream& s) {
          chrome_fits = profiler::write_chrome_trace(s, *trace, kChromeTraceMaxBytes);
        });
      },
      [&] {
        PhaseTimer t("write trace.pftrace");
        dir.write("trace.pftrace",
                  [&](std::ostream& s) { profiler::write_perfetto_trace(s, *trace); });
      }};
  if (stats_beside) jobs.emplace_back(write_stats);
  invoke(jobs);
  if (!chrome_fits) {
    dir.discard("trace.json");
    notes.push_back("trace.json not written: over " + thousands(kChromeTraceMaxBytes / 1000000) +
                    " MB, more than DevTools loads; open trace.pftrace in ui.perfetto.dev");
  }
  trace.reset();
  for (std::size_t i = aggregate ? 1 : 0; i < notes.size(); ++i) spdlog::warn("{}", notes[i]);
  if (!stats_beside || !chrome_fits) write_stats();
  PhaseTimer t("write summary.txt");
  // The last writer of the stalls is done: summary.txt's op-type table takes more memory, and
  // both timelines' stalls (16 bytes a command each) would raise the run's peak.
  est_figures.release_stalls();
  if (sim_figures) sim_figures->release_stalls();
  dir.write("summary.txt",
            [&](std::ostream& s) { profiler::write_summary(s, w, est, sim, report); });
  if (m.llm) {
    dir.write("llm.csv", [&](std::ostream& s) {
      profiler::write_llm_csv(s, *m.llm, profiler::Clock{w.device.clock_khz});
    });
  }
  dir.commit();
  return notes;
}

}  // namespace npusim::api
