#include "sim/app/commands.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include "profiler/chrome_trace.h"
#include "profiler/csv_writers.h"
#include "profiler/perfetto_trace.h"
#include "profiler/select.h"
#include "profiler/trace_model.h"
#include "profiler/output_dir.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"
#include "sim/estimator/estimator.h"
#include "sim/api/iterations.h"
#include "sim/app/models.h"
#include "sim/compiler/compiler.h"
#include "sim/ir/schedule_writer.h"
#include "sim/platform/platform.h"

namespace po = boost::program_options;

namespace npusim::app {
namespace {

// Logs how long a phase took at info level (`--log-level info`), for people sizing runs.
class PhaseTimer {
 public:
  explicit PhaseTimer(const char* phase) : phase_(phase), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    spdlog::info("{}: {:.1f} ms", phase_, ms);
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* phase_;
  std::chrono::steady_clock::time_point start_;
};

struct RunOptions {
  std::string model;
  std::string config = "default";
  std::vector<std::string> overrides;
  std::vector<std::string> input_shapes;
  bool host_fallback = false;
  std::string out;
  bool help = false;
  int stats_level = 70;
  // Signed, so that a negative value is reported as such rather than wrapped.
  std::int64_t iterations = 1;
  std::int64_t profile_start = 0;
  std::int64_t profile_samples = 0;  // 0: every inference from profile_start on
};

// What run and estimate measure and how much they write.
void add_profile_options(po::options_description& desc, RunOptions& o) {
  desc.add_options()
      ("stats-level", po::value(&o.stats_level)->value_name("40|50|70|100")->default_value(70),
       "how much the outputs hold: 40 totals; 50 + wait cycles; 70 + per-op figures; 100 + DRAM "
       "latency histogram, per-op MAC utilisation, per-program local-memory peak")
      ("iterations", po::value(&o.iterations)->value_name("N")->default_value(1),
       "run N inferences back to back")
      ("profile-start-iter", po::value(&o.profile_start)->value_name("K")->default_value(0),
       "first inference profiled (0-based)")
      ("profile-samples", po::value(&o.profile_samples)->value_name("S"),
       "inferences profiled from K on (default: all from K)");
}

// The options every model-taking command shares.
po::options_description model_options(RunOptions& o, const std::string& what, const char* out_help) {
  po::options_description desc("Options for npusim " + what);
  desc.add_options()
      ("help,h", po::bool_switch(&o.help), "show this help")
      ("model,m", po::value(&o.model)->value_name("FILE"),
       "the model: a schedule or graph JSON, a SCALE-Sim topology (.csv) or an ONNX file; may "
       "also be given as the one positional argument")
      ("config,c", po::value(&o.config)->value_name("FILE|NAME")->default_value("default"),
       "hardware config: a JSON file or a built-in name (default, server)")
      ("set", po::value(&o.overrides)->value_name("KEY=VALUE")->composing(),
       "override one config field, e.g. --set dram.bandwidth_gbps=25.6 (repeatable)")
      ("input-shape", po::value(&o.input_shapes)->value_name("NAME=DxD...")->composing(),
       "fix an ONNX input's shape, e.g. --input-shape input=1x3x224x224 (repeatable)")
      ("host-fallback", po::bool_switch(&o.host_fallback),
       "run ONNX ops the NPU cannot on the host (config host.call_cycles and "
       "host.cycles_per_element) instead of rejecting the model")
      ("out,o", po::value(&o.out)->value_name(what == "compile" ? "FILE" : "DIR"), out_help)
      // Accepted here too so that they may follow the command; main() applies them.
      ("log-level", po::value<std::string>()->value_name("LEVEL"), "trace|debug|info|warn|error|off")
      ("quiet,q", po::bool_switch(), "print nothing but errors");
  return desc;
}

// Parses a subcommand's options, with at most one positional argument (the model); usage errors
// become InputError (exit 2).
void parse(const std::vector<std::string>& args, po::options_description& desc,
           const std::string& usage, const char* positional = "model") {
  try {
    po::variables_map vm;
    po::positional_options_description positionals;
    if (positional != nullptr) positionals.add(positional, 1);
    po::store(po::command_line_parser(args)
                  .options(desc)
                  .positional(positionals)
                  .style(po::command_line_style::default_style &
                         ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError("", "", std::string(e.what()) + " (see npusim " + usage + " --help)");
  }
}

ModelOptions model_options_of(const RunOptions& o) {
  ModelOptions m;
  for (const std::string& shape : o.input_shapes) add_input_shape(m, shape);
  m.host_fallback = o.host_fallback;
  return m;
}

void print_help(const std::string& synopsis, const std::string& text,
                const po::options_description& desc) {
  std::cout << "usage: " << synopsis << "\n\n" << text << "\n\n" << desc << '\n';
}

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

// A schedule that overfills local memory cannot run as compiled: why, if it does.
std::string lram_failure(const profiler::Workload& w, const profiler::Timeline& t, const char* which) {
  const profiler::RunStats stats = profiler::compute_stats(w, t);
  const auto& over = stats.lram.overflow;
  if (!over) return "";
  return std::string("local memory capacity exceeded in the ") + which + ": " +
         w.commands[over->command].id + " allocates at cycle " + std::to_string(over->at) +
         ", bringing occupancy to " + std::to_string(over->in_use_bytes) + " of " +
         std::to_string(w.device.lram_bytes) + " bytes";
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

struct Loaded {
  HwConfig config;
  Schedule schedule;
  profiler::Workload workload;
  std::filesystem::path out;
};

Loaded load(const RunOptions& o, const std::string& usage) {
  if (o.model.empty()) throw InputError("", "", "--model is required (see npusim " + usage + " --help)");
  HwConfig config = load_hw_config(o.config, o.overrides);
  Schedule schedule = [&] {
    PhaseTimer t("load and compile");
    return load_or_compile(o.model, config, model_options_of(o));
  }();
  warn_on_target_mismatch(schedule, config);
  profiler::Workload workload = make_workload(schedule, config);
  std::filesystem::path out = o.out.empty() ? std::filesystem::path("traces") / folder_name(schedule.model.name)
                                            : std::filesystem::path(o.out);
  spdlog::info("{}: {} commands, config '{}' ({} slices)", o.model, schedule.commands.size(),
               config.name, config.slices.count);
  return {std::move(config), std::move(schedule), std::move(workload), std::move(out)};
}

// The measured part of a run: every command for one inference, else the profiled inferences,
// with per-inference figures.
struct Measured {
  profiler::Workload workload;
  profiler::Timeline estimate;
  std::optional<profiler::Timeline> runtime;
  std::optional<profiler::Iterations> iterations;
  std::string failure;  // why the run could not complete; the outputs then hold what finished
};

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

Measured measure(const Loaded& l, const RunOptions& o, bool simulate_too) {
  // Checked by checked_level: 1 <= n <= 10000, 0 <= start < n, 0 <= samples <= n - start.
  const auto n = static_cast<std::uint32_t>(o.iterations);
  const auto start = static_cast<std::uint32_t>(o.profile_start);
  const Schedule schedule = repeat_schedule(l.schedule, n);
  const profiler::Workload full = n == 1 ? l.workload : make_workload(schedule, l.config);
  std::string failure;
  std::vector<bool> finished(schedule.commands.size(), true);
  profiler::Timeline est = run_or_partial([&] {
    PhaseTimer t("estimate");
    return estimate(schedule, l.config);
  }, failure, finished);
  if (failure.empty()) failure = lram_failure(full, est, "estimate");
  std::optional<profiler::Timeline> sim;
  // A run the estimate cannot complete, the simulation cannot either: it is not started.
  if (simulate_too && failure.empty()) {
    sim = run_or_partial([&] {
      PhaseTimer t("simulate");
      return simulate(schedule, l.config);
    }, failure, finished);
    if (failure.empty()) failure = lram_failure(full, *sim, "simulation");
  }
  if (!failure.empty()) {
    // The outputs hold the commands that finished, with the run's own times.
    std::vector<const profiler::Timeline*> timelines = {&est};
    if (sim) timelines.push_back(&*sim);
    profiler::Selection part = profiler::select_commands(full, timelines, finished, 0);
    Measured m{std::move(part.workload), std::move(part.timelines[0]), std::nullopt, std::nullopt, failure};
    if (sim) m.runtime = std::move(part.timelines[1]);
    return m;
  }
  if (n == 1) return {full, std::move(est), std::move(sim), std::nullopt, ""};

  const std::size_t per = l.schedule.commands.size();
  const std::uint32_t samples = o.profile_samples == 0 ? n - start : static_cast<std::uint32_t>(o.profile_samples);
  profiler::Iterations it;
  it.count = n;
  it.first_profiled = start;
  it.profiled = samples;
  auto spans = [&](const profiler::Timeline& t) {
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
  };
  it.estimate = spans(est);
  if (sim) it.runtime = spans(*sim);
  std::vector<bool> keep(schedule.commands.size(), false);
  for (std::size_t i = start * per; i < (start + samples) * per; ++i) keep[i] = true;
  // Times count from the end of the inference before the window (an inference starts when the
  // previous one has finished).
  auto origin = [&](const std::vector<profiler::Iterations::Span>& list) {
    return start == 0 ? profiler::Cycles{0} : list[start - 1].end;
  };
  profiler::Selection e = profiler::select_commands(full, {&est}, keep, origin(it.estimate));
  Measured m{std::move(e.workload), std::move(e.timelines[0]), std::nullopt, it, ""};
  if (sim) m.runtime = std::move(profiler::select_commands(full, {&*sim}, keep, origin(it.runtime)).timelines[0]);
  return m;
}

void write_outputs(const Loaded& l, const Measured& m, profiler::StatsLevel level, bool quiet) {
  PhaseTimer timer("write outputs");
  profiler::OutputDir dir(l.out);
  const auto& w = m.workload;
  const profiler::Timeline& est = m.estimate;
  const profiler::Timeline* sim = m.runtime ? &*m.runtime : nullptr;
  profiler::ReportOptions report;
  report.level = level;
  report.iterations = m.iterations ? &*m.iterations : nullptr;
  report.incomplete = m.failure;
  dir.write("timeline.csv", [&](std::ostream& s) { profiler::write_timeline_csv(s, w, est); });
  if (sim) {
    dir.write("runtime_timeline.csv", [&](std::ostream& s) { profiler::write_timeline_csv(s, w, *sim); });
    dir.write("runtime.csv", [&](std::ostream& s) { profiler::write_runtime_csv(s, w, *sim); });
    dir.write("annotated.csv", [&](std::ostream& s) { profiler::write_annotated_csv(s, w, *sim); });
  }
  std::vector<profiler::TraceRun> runs = {{"compile-time estimate", &est}};
  if (sim) runs.push_back({"runtime simulation", sim});
  const profiler::TraceModel trace = profiler::build_trace_model(w, runs, profiler::trace_options_for(level));
  dir.write("trace.json", [&](std::ostream& s) { profiler::write_chrome_trace(s, trace); });
  dir.write("trace.pftrace", [&](std::ostream& s) { profiler::write_perfetto_trace(s, trace); });
  dir.write("summary.txt", [&](std::ostream& s) { profiler::write_summary(s, w, est, sim, report); });
  dir.write("stats.json", [&](std::ostream& s) { profiler::write_stats_json(s, w, est, sim, report); });
  dir.commit();
  if (!quiet) {
    profiler::write_summary(std::cout, w, est, sim, report);
    std::cout << "\noutputs written to " << l.out.string() << '\n';
  }
}

// N back-to-back copies must stay within the schedule limit.
void check_iteration_size(const Loaded& l, const RunOptions& o) {
  const std::uint64_t total = l.schedule.commands.size() * static_cast<std::uint64_t>(o.iterations);
  if (total > kMaxCommands) {
    throw InputError("--iterations", "", std::to_string(o.iterations) + " copies of " + std::to_string(l.schedule.commands.size()) + " commands exceed the limit of " + std::to_string(kMaxCommands) + " commands");
  }
}

profiler::StatsLevel checked_level(const RunOptions& o) {
  const auto level = profiler::stats_level_from(o.stats_level);
  if (!level) throw InputError("--stats-level", "", "expected 40, 50, 70 or 100, found " + std::to_string(o.stats_level));
  if (o.profile_start < 0 || o.profile_samples < 0) {
    throw InputError(o.profile_start < 0 ? "--profile-start-iter" : "--profile-samples", "", "expected a non-negative number");
  }
  if (o.iterations < 1 || o.iterations > 10000) {
    throw InputError("--iterations", "", "expected 1 to 10000 inferences, found " + std::to_string(o.iterations));
  }
  if (o.profile_start >= o.iterations) {
    throw InputError("--profile-start-iter", "", "inference " + std::to_string(o.profile_start) + " of " + std::to_string(o.iterations) + " does not exist (they count from 0)");
  }
  if (o.profile_samples > o.iterations - o.profile_start) {
    throw InputError("--profile-samples", "", std::to_string(o.profile_samples) + " inferences from #" + std::to_string(o.profile_start) + " run past the " + std::to_string(o.iterations) + " run");
  }
  return *level;
}

bool is_quiet(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--quiet" || a == "-q") return true;
  }
  return false;
}

}  // namespace

constexpr const char* kOutFolderHelp = "output folder (default: traces/<model name>)";

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "run", kOutFolderHelp);
  add_profile_options(desc, o);
  parse(args, desc, "run");
  if (o.help) {
    print_help("npusim run [--model] MODEL [--config C] [--set K=V ...] [--out DIR]",
               "Compiles the model for the config unless it is a schedule already, estimates the\n"
               "schedule's timeline statically, simulates it on the SystemC model of the NPU, and\n"
               "writes timeline.csv (estimate), runtime_timeline.csv, runtime.csv, annotated.csv,\n"
               "trace.json, trace.pftrace, summary.txt and stats.json into the output folder.",
               desc);
    return kExitOk;
  }
  const profiler::StatsLevel level = checked_level(o);
  const Loaded l = load(o, "run");
  check_iteration_size(l, o);
  const Measured m = measure(l, o, true);
  write_outputs(l, m, level, is_quiet(args));
  if (!m.failure.empty()) throw SimulationError(m.failure + "\n(outputs up to that point written to " + l.out.string() + ", marked incomplete)");
  return kExitOk;
}

int estimate_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "estimate", kOutFolderHelp);
  add_profile_options(desc, o);
  parse(args, desc, "estimate");
  if (o.help) {
    print_help("npusim estimate [--model] MODEL [--config C] [--set K=V ...] [--out DIR]",
               "Compiles the model if needed and estimates the schedule's timeline statically (no\n"
               "simulation); writes timeline.csv, trace.json, trace.pftrace, summary.txt and\n"
               "stats.json.",
               desc);
    return kExitOk;
  }
  const profiler::StatsLevel level = checked_level(o);
  const Loaded l = load(o, "estimate");
  check_iteration_size(l, o);
  const Measured m = measure(l, o, false);
  write_outputs(l, m, level, is_quiet(args));
  if (!m.failure.empty()) throw SimulationError(m.failure + "\n(outputs up to that point written to " + l.out.string() + ", marked incomplete)");
  return kExitOk;
}

int compile_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "compile", "schedule file to write (default: standard output)");
  parse(args, desc, "compile");
  if (o.help) {
    print_help("npusim compile [--model] MODEL [--config C] [--set K=V ...] [-o SCHEDULE.json]",
               "Compiles a graph JSON, SCALE-Sim topology or ONNX model into a schedule for the\n"
               "config (docs/compiler.md), checks it like any schedule, and writes it as JSON.",
               desc);
    return kExitOk;
  }
  if (o.model.empty()) throw InputError("", "", "a model is required (see npusim compile --help)");
  const HwConfig config = load_hw_config(o.config, o.overrides);
  const ModelKind kind = detect_model_kind(o.model);
  if (kind == ModelKind::kSchedule) throw InputError(o.model, "", "is a schedule already; compile takes a graph, topology or ONNX model");
  const Graph graph = *load_graph(o.model, kind, model_options_of(o));
  const Schedule schedule = compile_schedule(graph, config);
  if (o.out.empty()) {
    write_schedule_json(std::cout, schedule);
    std::cout.flush();
    if (!std::cout) throw profiler::OutputError("cannot write the schedule to standard output");
  } else {
    // Written beside its final name and renamed, so no half-written schedule is ever seen.
    const std::filesystem::path path(o.out);
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      write_schedule_json(out, schedule);
      out.flush();
      if (!out) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw profiler::OutputError("cannot write " + path.string());
      }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw profiler::OutputError("cannot write " + path.string() + ": " + ec.message());
    spdlog::info("{}: {} commands written to {}", o.model, schedule.commands.size(), o.out);
  }
  return kExitOk;
}

int info_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "info", "unused");
  parse(args, desc, "info");
  if (o.help) {
    print_help("npusim info [--model] MODEL [--config C] [--set K=V ...]",
               "Describes a model: name, file size, weights, batch, inputs and outputs, MACs; and,\n"
               "compiled for the config, its commands per engine and peak local memory.",
               desc);
    return kExitOk;
  }
  if (o.model.empty()) throw InputError("", "", "a model is required (see npusim info --help)");
  const HwConfig config = load_hw_config(o.config, o.overrides);
  const ModelKind kind = detect_model_kind(o.model);
  const ModelOptions mo = model_options_of(o);
  const std::optional<Graph> graph = load_graph(o.model, kind, mo);
  const Schedule schedule = graph ? compile_schedule(*graph, config) : load_schedule(o.model, config);
  const profiler::Workload w = make_workload(schedule, config);
  const profiler::Timeline est = estimate(schedule, config);
  const profiler::RunStats stats = profiler::compute_stats(w, est);
  auto shape_text = [](const std::vector<std::uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s + "]";
  };
  std::cout << "model:        " << schedule.model.name << '\n';
  std::cout << "file:         " << o.model << " (" << model_kind_name(kind) << ", "
            << std::filesystem::file_size(o.model) << " bytes)\n";
  std::cout << "batch:        " << schedule.model.batch << '\n';
  std::cout << "weights:      " << schedule.model.weights_bytes << " bytes\n";
  for (const auto* list : {&schedule.model.inputs, &schedule.model.outputs}) {
    const char* label = list == &schedule.model.inputs ? "input:        " : "output:       ";
    for (const TensorInfo& t : *list) {
      std::cout << label << t.name << " " << t.dtype << " " << (t.layout.empty() ? "-" : t.layout)
                << " " << shape_text(t.shape) << '\n';
    }
  }
  if (graph) {
    std::uint64_t macs = 0;
    for (const Layer& l : graph->layers) macs += layer_macs(*graph, l);
    std::cout << "layers:       " << graph->layers.size() << '\n';
    std::cout << "MACs:         " << macs << '\n';
  } else {
    std::uint64_t macs = 0;
    for (const Command& c : schedule.commands) macs += c.macs + c.vector_macs;
    std::cout << "MACs:         " << macs << '\n';
  }
  if (graph) {
    std::cout << "compiled for: " << config.name << " (" << config.slices.count << " slices)\n";
  } else {
    std::cout << "compiled for: " << (schedule.target_config.empty() ? "(not stated)" : schedule.target_config)
              << (schedule.target_slices ? " (" + std::to_string(schedule.target_slices) + " slices)" : "")
              << "; measured on " << config.name << '\n';
  }
  std::cout << "commands:     " << schedule.commands.size() << " in " << schedule.programs.size()
            << " program(s)\n";
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    std::cout << "  " << w.engines[e].name << ": " << stats.engines[e].commands << '\n';
  }
  std::cout << "peak local memory (variable buffer size): " << stats.lram.peak_bytes << " of "
            << config.lram_bytes << " bytes\n";
  std::cout << "estimated cycles: " << stats.total_cycles << '\n';
  return kExitOk;
}

}  // namespace npusim::app
