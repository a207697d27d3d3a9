// Process-level measurements for scripts/bench.sh, where SystemC is involved (it elaborates once
// per process, so each measurement is its own run of this program). Prints one JSON object.
//   npusim_bench synthetic N [CONFIG]   generate N commands, estimate and simulate them
//   npusim_bench core MODEL [CONFIG]    load or compile MODEL, then time the simulation alone
//   npusim_bench load SCHEDULE [CONFIG] load a schedule file, then time the estimate and the
//                                       simulation (build_s is the load)
//   npusim_bench write-synthetic N FILE [CONFIG]
//                                       write a synthetic schedule of N commands to FILE, with a
//                                       layer and a loc on each command as compiled ones have
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/schedule_writer.h"
#include "sim/ir/synthetic.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/heap_pages.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

int usage() {
  std::cerr << "usage: npusim_bench synthetic N [CONFIG] | core MODEL.json [CONFIG] |\n"
               "       load SCHEDULE.json [CONFIG] | write-synthetic N FILE [CONFIG]\n";
  return 2;
}

// A synthetic schedule as a file: the tiles of synthetic_schedule, named as a compiler names them
// (layers of 64 tiles, each with its loc), so that loading it costs what a compiled one does.
int write_synthetic(std::uint64_t commands, const std::string& file,
                    const npusim::HwConfig& config) {
  npusim::Schedule schedule = npusim::synthetic_schedule(commands, config);
  for (std::size_t i = 0; i < schedule.commands.size(); ++i) {
    npusim::Command& c = schedule.commands[i];
    c.layer = "conv" + std::to_string(i / 192);
    c.loc = "loc(\"" + c.layer + "\")";
  }
  std::ofstream out(file, std::ios::binary);
  npusim::write_schedule_json(out, schedule);
  out.close();
  if (!out) {
    std::cerr << "npusim_bench: cannot write " << file << '\n';
    return 3;
  }
  return 0;
}

// As npusim sets its heap up (sim/app/main.cpp), so the figures are the CLI's.
__attribute__((section(".preinit_array"), used)) auto* const kSetUpHeap =
    &npusim::use_huge_pages_for_the_heap;

}  // namespace

int main(int argc, char** argv) {
  npusim::configure_systemc_process();
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  const bool write = mode == "write-synthetic";
  if (write && argc < 4) return usage();
  const std::string config_name = argc > (write ? 4 : 3) ? argv[write ? 4 : 3] : "default";
  try {
    const npusim::HwConfig config = npusim::load_hw_config(config_name);
    if (write) return write_synthetic(std::stoull(argv[2]), argv[3], config);
    auto start = std::chrono::steady_clock::now();
    npusim::Schedule schedule;
    if (mode == "synthetic") {
      schedule = npusim::synthetic_schedule(std::stoull(argv[2]), config);
    } else if (mode == "load") {
      schedule = npusim::load_schedule(argv[2], config);
    } else if (mode == "core") {
      const std::string model = argv[2];
      const npusim::Json root = npusim::read_json_file(model);
      const bool graph =
          root.is_object() && root.contains("format") && root["format"] == "npusim-graph";
      schedule = graph ? npusim::compile_schedule(npusim::parse_graph_json(root, model), config)
                       : npusim::parse_schedule(root, model, config);
    } else {
      return usage();
    }
    const double build_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const auto est = npusim::estimate(schedule, config);
    const double estimate_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const auto sim = npusim::simulate(schedule, config);
    const double simulate_s = seconds_since(start);
    const double n = static_cast<double>(schedule.commands.size());
    std::cout << "{\"mode\": \"" << mode << "\", \"config\": \"" << config.name
              << "\", \"commands\": " << schedule.commands.size() << ", \"build_s\": " << build_s
              << ", \"estimate_s\": " << estimate_s << ", \"simulate_s\": " << simulate_s
              << ", \"estimate_commands_per_s\": " << n / estimate_s
              << ", \"simulate_commands_per_s\": " << n / simulate_s
              << ", \"simulated_cycles\": " << sim.total_cycles()
              << ", \"estimated_cycles\": " << est.total_cycles()
              << ", \"peak_rss_kib\": " << peak_rss_kib() << "}\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "npusim_bench: " << e.what() << '\n';
    return 3;
  }
}
