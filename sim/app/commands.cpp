#include "sim/app/commands.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <spdlog/spdlog.h>
#include <boost/program_options.hpp>

#include "profiler/chrome_trace.h"
#include "profiler/csv_writers.h"
#include "profiler/output_dir.h"
#include "profiler/perfetto_trace.h"
#include "profiler/report_writers.h"
#include "profiler/select.h"
#include "profiler/stats.h"
#include "profiler/trace_model.h"
#include "sim/api/models.h"
#include "sim/api/session.h"
#include "sim/app/cli_options.h"
#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule_writer.h"
#include "sim/util/error.h"

namespace po = boost::program_options;

namespace npusim::app {

using api::add_input_shape;
using api::detect_model_kind;
using api::load_graph;
using api::model_kind_name;
using api::ModelKind;
namespace {

struct RunOptions {
  std::string model;
  std::string config = "default";
  std::vector<std::string> overrides;
  std::vector<std::string> input_shapes;
  bool host_fallback = false;
  bool ideal_memory = false;
  std::string devices;  // --devices N: devices.count=N
  std::string out;
  bool force = false;
  bool help = false;
  int stats_level = 70;
  std::string trace_detail = "auto";
  std::int64_t trace_detail_commands = static_cast<std::int64_t>(profiler::kAutoDetailCommands);
  // Signed, so that a negative value is reported as such rather than wrapped.
  std::int64_t iterations = 1;
  std::int64_t profile_start = 0;
  std::int64_t profile_samples = 0;  // 0: every inference from profile_start on
};

// What run and estimate measure and how much they write.
void add_profile_options(po::options_description& desc, RunOptions& o) {
  desc.add_options()(
      "force", po::bool_switch(&o.force),
      "write into --out even when it holds another model's outputs (they are replaced)")(
      "stats-level", po::value(&o.stats_level)->value_name("40|50|70|100")->default_value(70),
      "how much the outputs hold: 40 totals; 50 + wait cycles; 70 + per-op figures; 100 + DRAM "
      "latency histogram, per-op MAC utilisation, per-program local-memory peak")(
      "trace-detail",
      po::value(&o.trace_detail)->value_name("auto|full|summary")->default_value("auto"),
      "per-command detail of the traces and stats.json: auto aggregates them per layer and engine "
      "above --trace-detail-commands commands; full keeps every command (large: open "
      "trace.pftrace); summary always aggregates")(
      "trace-detail-commands",
      po::value(&o.trace_detail_commands)->value_name("N")->default_value(o.trace_detail_commands),
      "with --trace-detail auto, outputs of more than N commands are aggregated")(
      "iterations", po::value(&o.iterations)->value_name("N")->default_value(1),
      "run N inferences back to back")(
      "profile-start-iter", po::value(&o.profile_start)->value_name("K")->default_value(0),
      "first inference profiled (0-based)")("profile-samples",
                                            po::value(&o.profile_samples)->value_name("S"),
                                            "inferences profiled from K on (default: all from K)");
}

// The options every model-taking command shares.
po::options_description model_options(RunOptions& o, const std::string& what,
                                      const char* out_help) {
  po::options_description desc("Options for npusim " + what);
  desc.add_options()("help,h", po::bool_switch(&o.help), "show this help")(
      "model,m", po::value(&o.model)->value_name("FILE"),
      "the model: a schedule or graph JSON, a SCALE-Sim topology (.csv) or an ONNX file; may "
      "also be given as the one positional argument")(
      "config,c", po::value(&o.config)->value_name("FILE|NAME")->default_value("default"),
      "hardware config: a JSON file or a built-in name (default, server)")(
      "set", po::value(&o.overrides)->value_name("KEY=VALUE")->composing(),
      "override one config field, e.g. --set dram.bandwidth_gbps=25.6 (repeatable)")(
      "devices", po::value(&o.devices)->value_name("N"),
      "shard the model tensor-parallel over N devices (same as --set devices.count=N; "
      "docs/multi-device.md)")(
      "input-shape", po::value(&o.input_shapes)->value_name("NAME=DxD...")->composing(),
      "fix an ONNX input's shape, e.g. --input-shape input=1x3x224x224 (repeatable)")(
      "host-fallback", po::bool_switch(&o.host_fallback),
      "run ONNX ops the NPU cannot on the host (config host.call_cycles and "
      "host.cycles_per_element) instead of rejecting the model")(
      "ideal-memory", po::bool_switch(&o.ideal_memory),
      "DMA, DRAM and dispatch take no cycles and local memory is unbounded: compute alone, as "
      "SCALE-Sim's compute report (same as --set ideal_memory=true)")(
      "out,o", po::value(&o.out)->value_name(what == "compile" ? "FILE" : "DIR"), out_help)
      // Accepted here too so that they may follow the command; main() applies them.
      ("log-level", po::value<std::string>()->value_name("LEVEL"),
       "trace|debug|info|warn|error|off")("quiet,q", po::bool_switch(), "print nothing but errors");
  return desc;
}

// --set overrides, with --ideal-memory and --devices as the ones they stand for.
std::vector<std::string> overrides_of(const RunOptions& o) {
  std::vector<std::string> all = o.overrides;
  if (o.ideal_memory) all.push_back("ideal_memory=true");
  if (!o.devices.empty()) all.push_back("devices.count=" + o.devices);
  return all;
}

api::ModelOptions model_options_of(const RunOptions& o) {
  api::ModelOptions m;
  for (const std::string& shape : o.input_shapes) add_input_shape(m, shape);
  m.host_fallback = o.host_fallback;
  return m;
}

// Checked by checked_level before use: 1 <= iterations <= 10000, the window inside.
api::Iterations iterations_of(const RunOptions& o) {
  api::Iterations it;
  it.count = static_cast<std::uint32_t>(o.iterations);
  it.first_profiled = static_cast<std::uint32_t>(o.profile_start);
  it.profiled = static_cast<std::uint32_t>(o.profile_samples);
  return it;
}

api::RunRequest request_of(const RunOptions& o, const std::string& usage) {
  if (o.model.empty())
    throw InputError("", "", "--model is required (see npusim " + usage + " --help)");
  api::RunRequest r;
  r.model = o.model;
  r.config = o.config;
  r.overrides = overrides_of(o);
  r.model_options = model_options_of(o);
  r.iterations = iterations_of(o);
  r.simulate_in_this_process = true;  // one simulation per CLI process
  return r;
}

api::WriteOptions write_options(const RunOptions& o, profiler::StatsLevel level) {
  api::WriteOptions w;
  w.level = level;
  const auto detail = profiler::trace_detail_from(o.trace_detail);
  if (!detail) {
    throw InputError("--trace-detail", "",
                     "expected auto, full or summary, found " + o.trace_detail);
  }
  w.detail = *detail;
  if (o.trace_detail_commands < 0) {
    throw InputError(
        "--trace-detail-commands", "",
        "expected a non-negative number, found " + std::to_string(o.trace_detail_commands));
  }
  w.auto_detail_commands = static_cast<std::uint64_t>(o.trace_detail_commands);
  return w;
}

profiler::StatsLevel checked_level(const RunOptions& o) {
  const auto level = profiler::stats_level_from(o.stats_level);
  if (!level)
    throw InputError("--stats-level", "",
                     "expected 40, 50, 70 or 100, found " + std::to_string(o.stats_level));
  if (o.profile_start < 0 || o.profile_samples < 0) {
    throw InputError(o.profile_start < 0 ? "--profile-start-iter" : "--profile-samples", "",
                     "expected a non-negative number");
  }
  if (o.iterations < 1 || o.iterations > 10000) {
    throw InputError("--iterations", "",
                     "expected 1 to 10000 inferences, found " + std::to_string(o.iterations));
  }
  api::check_iterations(iterations_of(o), 0);
  return *level;
}

// run and estimate: measure, write every output, print the summary.
int measure_and_write(const RunOptions& o, const std::vector<std::string>& args,
                      const std::string& usage, bool simulate) {
  const profiler::StatsLevel level = checked_level(o);
  const api::WriteOptions write = write_options(o, level);
  const api::Session session = api::Session::open(request_of(o, usage));
  const std::filesystem::path out =
      o.out.empty() ? session.default_out() : std::filesystem::path(o.out);
  if (!o.force) {
    const std::string other = api::other_model_in(out, o.model);
    if (!other.empty()) {
      throw InputError(out.string(), "",
                       "holds the outputs of another model, " + other +
                           "; give --force to replace them, or another --out");
    }
  }
  const api::Measured m = session.measure(simulate);
  const api::DetailNotes notes = session.write(m, out, write);
  if (!is_quiet(args)) {
    api::write_summary(std::cout, m, level, notes);
    std::cout << "\noutputs written to " << out.string() << '\n';
  }
  if (!m.failure.empty())
    throw SimulationError(m.failure + "\n(outputs up to that point written to " + out.string() +
                              ", marked incomplete)",
                          nullptr, m.failed_in_estimate ? "estimate" : "simulation");
  return kExitOk;
}

}  // namespace

constexpr const char* kOutFolderHelp =
    "output folder (default: traces/<model file name without extension>)";

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "run", kOutFolderHelp);
  add_profile_options(desc, o);
  parse_options(args, desc, "run", "model", 1);
  if (o.help) {
    print_help("npusim run [--model] MODEL [--config C] [--set K=V ...] [--out DIR]",
               "Compiles the model for the config unless it is a schedule already, estimates the\n"
               "schedule's timeline statically, simulates it on the SystemC model of the NPU, and\n"
               "writes timeline.csv (estimate), runtime_timeline.csv, runtime.csv, annotated.csv,\n"
               "trace.json, trace.pftrace, summary.txt and stats.json into the output folder.",
               desc);
    return kExitOk;
  }
  return measure_and_write(o, args, "run", true);
}

int estimate_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "estimate", kOutFolderHelp);
  add_profile_options(desc, o);
  parse_options(args, desc, "estimate", "model", 1);
  if (o.help) {
    print_help("npusim estimate [--model] MODEL [--config C] [--set K=V ...] [--out DIR]",
               "Compiles the model if needed and estimates the schedule's timeline statically (no\n"
               "simulation); writes timeline.csv, trace.json, trace.pftrace, summary.txt and\n"
               "stats.json.",
               desc);
    return kExitOk;
  }
  return measure_and_write(o, args, "estimate", false);
}

int compile_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "compile", "schedule file to write (default: standard output)");
  bool explain = false;
  desc.add_options()("explain", po::bool_switch(&explain),
                     "print each layer group's chosen mapping, its estimated cycles and the "
                     "runner-up's to standard error");
  parse_options(args, desc, "compile", "model", 1);
  if (o.help) {
    print_help("npusim compile [--model] MODEL [--config C] [--set K=V ...] [-o SCHEDULE.json]",
               "Compiles a graph JSON, SCALE-Sim topology or ONNX model into a schedule for the\n"
               "config (docs/compiler.md), checks it like any schedule, and writes it as JSON.",
               desc);
    return kExitOk;
  }
  if (o.model.empty()) throw InputError("", "", "a model is required (see npusim compile --help)");
  const HwConfig config = api::load_config(o.config, overrides_of(o));
  const ModelKind kind = detect_model_kind(o.model);
  if (kind == ModelKind::kSchedule)
    throw InputError(o.model, "",
                     "is a schedule already; compile takes a graph, topology or ONNX model");
  std::vector<std::string> lines;
  // A language model compiles as it runs: its prefill's parts, assembled (docs/llm.md).
  const Schedule schedule = kind == ModelKind::kLlm
                                ? api::load_or_compile(o.model, config, model_options_of(o))
                                : compile_schedule(*load_graph(o.model, kind, model_options_of(o)),
                                                   config, explain ? &lines : nullptr);
  for (const std::string& line : lines) std::cerr << line << '\n';
  if (o.out.empty()) {
    write_schedule_json(std::cout, schedule);
    std::cout.flush();
    if (!std::cout) throw profiler::OutputError("cannot write the schedule to standard output");
  } else {
    profiler::write_file_atomically(o.out,
                                    [&](std::ostream& s) { write_schedule_json(s, schedule); });
    spdlog::info("{}: {} commands written to {}", o.model, schedule.commands.size(), o.out);
  }
  return kExitOk;
}

int info_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = model_options(o, "info", "unused");
  parse_options(args, desc, "info", "model", 1);
  if (o.help) {
    print_help(
        "npusim info [--model] MODEL [--config C] [--set K=V ...]",
        "Describes a model: name, file size, weights, batch, inputs and outputs, MACs; and,\n"
        "compiled for the config, its commands per engine and peak local memory.",
        desc);
    return kExitOk;
  }
  if (o.model.empty()) throw InputError("", "", "a model is required (see npusim info --help)");
  const HwConfig config = api::load_config(o.config, overrides_of(o));
  const ModelKind kind = detect_model_kind(o.model);
  const api::ModelOptions mo = model_options_of(o);
  const std::optional<Graph> graph = load_graph(o.model, kind, mo);
  const Schedule schedule = graph && kind != ModelKind::kLlm
                                ? compile_schedule(*graph, config)
                                : api::load_or_compile(o.model, config, mo);
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
    std::cout << "compiled for: "
              << (schedule.target_config.empty() ? "(not stated)" : schedule.target_config)
              << (schedule.target_slices
                      ? " (" + std::to_string(schedule.target_slices) + " slices)"
                      : "")
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
