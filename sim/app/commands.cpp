#include "sim/app/commands.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include "profiler/csv_writers.h"
#include "profiler/output_dir.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "sim/engines.h"
#include "sim/error.h"
#include "sim/estimator.h"
#include "sim/platform/platform.h"

namespace po = boost::program_options;

namespace npusim::app {
namespace {

struct RunOptions {
  std::string model;
  std::string config = "default";
  std::vector<std::string> overrides;
  std::string out;
  bool help = false;
};

po::options_description run_options(RunOptions& o, const std::string& what) {
  po::options_description desc("Options for npusim " + what);
  desc.add_options()
      ("help,h", po::bool_switch(&o.help), "show this help")
      ("model,m", po::value(&o.model)->value_name("FILE"), "compiled schedule (JSON); required")
      ("config,c", po::value(&o.config)->value_name("FILE|NAME")->default_value("default"),
       "hardware config: a JSON file or a built-in name (default, server)")
      ("set", po::value(&o.overrides)->value_name("KEY=VALUE")->composing(),
       "override one config field, e.g. --set dram.bandwidth_gbps=25.6 (repeatable)")
      ("out,o", po::value(&o.out)->value_name("DIR"),
       "output folder (default: traces/<model name>)")
      // Accepted here too so that they may follow the command; main() applies them.
      ("log-level", po::value<std::string>()->value_name("LEVEL"), "trace|debug|info|warn|error|off")
      ("quiet,q", po::bool_switch(), "print nothing but errors");
  return desc;
}

// Parses a subcommand's options; usage errors become InputError (exit 2).
bool parse(const std::vector<std::string>& args, po::options_description& desc,
           const std::string& usage, bool help) {
  try {
    po::variables_map vm;
    const po::positional_options_description no_positionals;
    po::store(po::command_line_parser(args)
                  .options(desc)
                  .positional(no_positionals)
                  .style(po::command_line_style::default_style &
                         ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError("", "", std::string(e.what()) + " (see npusim " + usage + " --help)");
  }
  (void)help;
  return true;
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

// A schedule that overfills local memory cannot run as compiled.
void check_lram(const profiler::Workload& w, const profiler::Timeline& t, const char* which) {
  const profiler::RunStats stats = profiler::compute_stats(w, t);
  if (const auto& over = stats.lram.overflow) {
    throw SimulationError(std::string("local memory capacity exceeded in the ") + which + ": " +
                          w.commands[over->command].id + " allocates at cycle " +
                          std::to_string(over->at) + ", bringing occupancy to " +
                          std::to_string(over->in_use_bytes) + " of " +
                          std::to_string(w.device.lram_bytes) + " bytes");
  }
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
  Schedule schedule = load_schedule(o.model, config);
  warn_on_target_mismatch(schedule, config);
  profiler::Workload workload = make_workload(schedule, config);
  std::filesystem::path out = o.out.empty() ? std::filesystem::path("traces") / folder_name(schedule.model.name)
                                            : std::filesystem::path(o.out);
  spdlog::info("{}: {} commands, config '{}' ({} slices)", o.model, schedule.commands.size(),
               config.name, config.slices.count);
  return {std::move(config), std::move(schedule), std::move(workload), std::move(out)};
}

void write_outputs(const Loaded& l, const profiler::Timeline& estimate,
                   const profiler::Timeline* runtime, bool quiet) {
  profiler::OutputDir dir(l.out);
  const auto& w = l.workload;
  dir.write("timeline.csv", [&](std::ostream& s) { profiler::write_timeline_csv(s, w, estimate); });
  if (runtime) {
    dir.write("runtime_timeline.csv",
              [&](std::ostream& s) { profiler::write_timeline_csv(s, w, *runtime); });
    dir.write("runtime.csv", [&](std::ostream& s) { profiler::write_runtime_csv(s, w, *runtime); });
  }
  dir.write("summary.txt", [&](std::ostream& s) { profiler::write_summary(s, w, estimate, runtime); });
  dir.write("stats.json", [&](std::ostream& s) { profiler::write_stats_json(s, w, estimate, runtime); });
  dir.commit();
  if (!quiet) {
    profiler::write_summary(std::cout, w, estimate, runtime);
    std::cout << "\noutputs written to " << l.out.string() << '\n';
  }
}

bool is_quiet(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--quiet" || a == "-q") return true;
  }
  return false;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = run_options(o, "run");
  parse(args, desc, "run", o.help);
  if (o.help) {
    print_help("npusim run --model SCHEDULE.json [--config C] [--set K=V ...] [--out DIR]",
               "Estimates the schedule's timeline statically, simulates it on the SystemC model of\n"
               "the configured NPU, and writes timeline.csv (estimate), runtime_timeline.csv,\n"
               "runtime.csv, summary.txt and stats.json into the output folder.",
               desc);
    return kExitOk;
  }
  const Loaded l = load(o, "run");
  const profiler::Timeline est = estimate(l.schedule, l.config);
  check_lram(l.workload, est, "estimate");
  const profiler::Timeline sim = simulate(l.schedule, l.config);
  check_lram(l.workload, sim, "simulation");
  write_outputs(l, est, &sim, is_quiet(args));
  return kExitOk;
}

int estimate_command(const std::vector<std::string>& args) {
  RunOptions o;
  auto desc = run_options(o, "estimate");
  parse(args, desc, "estimate", o.help);
  if (o.help) {
    print_help("npusim estimate --model SCHEDULE.json [--config C] [--set K=V ...] [--out DIR]",
               "Estimates the schedule's timeline statically (no simulation) and writes\n"
               "timeline.csv, summary.txt and stats.json into the output folder.",
               desc);
    return kExitOk;
  }
  const Loaded l = load(o, "estimate");
  const profiler::Timeline est = estimate(l.schedule, l.config);
  check_lram(l.workload, est, "estimate");
  write_outputs(l, est, nullptr, is_quiet(args));
  return kExitOk;
}

}  // namespace npusim::app
