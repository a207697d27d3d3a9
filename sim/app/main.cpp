// npusim: one binary, subcommands. Maps every error to the documented exit codes.
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "profiler/output_dir.h"
#include "sim/app/commands.h"
#include "sim/app/process_runner.h"
#include "sim/app/profiler_commands.h"
#include "sim/app/sweep.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/heap_pages.h"
#include "sim/util/parallel.h"

namespace {

const char* kUsage =
    "usage: npusim <command> [options]   (npusim <command> --help for its options)\n"
    "\n"
    "commands:\n"
    "  run       compile if needed, estimate and simulate; write timelines, summary, stats\n"
    "  estimate  the compile-time estimate only\n"
    "  compile   a graph JSON, SCALE-Sim topology or ONNX model into a schedule\n"
    "  info      describe a model and its compiled schedule\n"
    "  sweep     run a grid of config values (clock, slices, any key) as parallel processes\n"
    "  check     compare runs with the cycle budgets of a budget file (CI)\n"
    "  report    op-type and per-layer breakdown of a run's outputs\n"
    "  convert   timeline.csv / runtime.csv files into one Perfetto trace\n"
    "  diff      compare two runs, or a run's estimate with its simulation\n"
    "\n"
    "common options: --log-level trace|debug|info|warn|error|off (default warn), --quiet\n"
    "environment: NPUSIM_THREADS=N (1-256) compiler threads (default: the cores this process\n"
    "             may use; sweep and check give each child its share)\n"
    "exit codes: 0 success, 1 a check failed, 2 bad input or usage,\n"
    "            3 the simulation could not complete (deadlock, capacity), 4 internal error\n";

// Applies --log-level and --quiet wherever they appear; logs go to stderr.
void configure_logging(const std::vector<std::string>& args) {
  auto logger = spdlog::stderr_color_mt("npusim");
  logger->set_pattern("npusim: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string level;
    if (args[i] == "--log-level" && i + 1 < args.size()) {
      level = args[i + 1];
    } else if (args[i].rfind("--log-level=", 0) == 0) {
      level = args[i].substr(12);
    } else if (args[i] == "--quiet" || args[i] == "-q") {
      level = "error";
    }
    if (level.empty()) continue;
    const auto parsed = spdlog::level::from_str(level);
    if (parsed == spdlog::level::off && level != "off") {
      throw npusim::InputError("", "--log-level", "unknown level '" + level + "'");
    }
    spdlog::set_level(parsed);
  }
}

int dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "run") return npusim::app::run_command(args);
  if (command == "estimate") return npusim::app::estimate_command(args);
  if (command == "compile") return npusim::app::compile_command(args);
  if (command == "info") return npusim::app::info_command(args);
  if (command == "sweep") return npusim::app::sweep_command(args);
  if (command == "check") return npusim::app::check_command(args);
  if (command == "report") return npusim::app::report_command(args);
  if (command == "convert") return npusim::app::convert_command(args);
  if (command == "diff") return npusim::app::diff_command(args);
  throw npusim::InputError("", "", "unknown command '" + command + "'\n" + kUsage);
}

// The heap's setup, which runs the program again (sim/util/heap_pages.h), before the shared
// libraries' constructors: the first start would otherwise run them for nothing.
__attribute__((section(".preinit_array"), used)) auto* const kSetUpHeap =
    &npusim::use_huge_pages_for_the_heap;

}  // namespace

int main(int argc, char** argv) {
  npusim::app::die_with_parent();
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty() || all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    std::cout << kUsage;
    return all.empty() ? npusim::kExitBadInput : npusim::kExitOk;
  }
  if (all[0] == "--version") {
    std::cout << "npusim 0.1.0\n";
    return npusim::kExitOk;
  }
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    configure_logging(args);
    npusim::check_threads_setting();
    npusim::configure_systemc_process();
    return dispatch(all[0], args);
  } catch (const npusim::InputError& e) {
    std::cerr << "npusim: error: " << e.what() << '\n';
    return npusim::kExitBadInput;
  } catch (const npusim::profiler::OutputError& e) {
    std::cerr << "npusim: error: " << e.what() << '\n';
    return npusim::kExitBadInput;
  } catch (const npusim::SimulationError& e) {
    std::cerr << "npusim: " << e.stage() << " failed: " << e.what() << '\n';
    return npusim::kExitSimulationFailed;
  } catch (const std::exception& e) {
    std::cerr << "npusim: internal error: " << e.what() << '\n';
    return npusim::kExitInternalError;
  }
}
