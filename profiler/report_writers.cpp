#include "profiler/report_writers.h"

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "profiler/stats.h"

namespace npusim::profiler {
namespace {

using Json = nlohmann::ordered_json;

// Fixed-point text so that the same figures always print the same way.
std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// Rounded to 6 decimals: enough for any report, short in JSON, deterministic.
double round6(double value) { return std::round(value * 1e6) / 1e6; }

double ratio(Cycles part, Cycles whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

double mac_utilization(const Workload& w, const RunStats& s) {
  const double peak = static_cast<double>(w.device.slices) * w.device.array_rows *
                      w.device.array_cols * static_cast<double>(s.total_cycles);
  return peak == 0 ? 0.0 : static_cast<double>(s.macs) / peak;
}

Json run_json(const Workload& w, const RunStats& s) {
  const Clock clock{w.device.clock_khz};
  Json engines = Json::object();
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    engines[w.engines[e].name] = {
        {"busy_cycles", s.engines[e].busy_cycles},
        {"utilization", round6(ratio(s.engines[e].busy_cycles, s.total_cycles))},
        {"commands", s.engines[e].commands}};
  }
  Json programs = Json::array();
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    const ProgramStats& ps = s.programs[p];
    programs.push_back({{"name", w.programs[p].name},
                        {"start_cycle", ps.start},
                        {"end_cycle", ps.end},
                        {"cycles", ps.end - ps.start},
                        {"commands", ps.commands}});
  }
  Json run = {
      {"total_cycles", s.total_cycles},
      {"time_us", round6(clock.to_us(s.total_cycles))},
      {"mac_utilization", round6(mac_utilization(w, s))},
      {"dram_achieved_gbps",
       round6(achieved_gbps(s.dram_read_bytes + s.dram_write_bytes, s.total_cycles,
                            w.device.clock_khz))},
      {"lram_peak_bytes", s.lram.peak_bytes},
      {"lram_peak_cycle", s.lram.peak_at},
      {"engines", engines},
      {"programs", programs}};
  return run;
}

void engine_table(std::ostream& out, const Workload& w, const RunStats& s) {
  out << "  " << pad_right("engine", 16) << pad_left("busy cycles", 14) << pad_left("busy %", 9)
      << pad_left("commands", 10) << '\n';
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    out << "  " << pad_right(w.engines[e].name, 16)
        << pad_left(std::to_string(s.engines[e].busy_cycles), 14)
        << pad_left(fixed(100.0 * ratio(s.engines[e].busy_cycles, s.total_cycles), 1), 9)
        << pad_left(std::to_string(s.engines[e].commands), 10) << '\n';
  }
}

}  // namespace

void write_summary(std::ostream& out, const Workload& w, const Timeline& estimate,
                   const Timeline* runtime) {
  const DeviceInfo& d = w.device;
  const Clock clock{d.clock_khz};
  const RunStats est = compute_stats(w, estimate);
  const Bounds bounds = compute_bounds(w);
  const RunStats& main = runtime ? compute_stats(w, *runtime) : est;

  out << "npusim " << (runtime ? "run" : "estimate") << " summary\n";
  out << "model:   " << w.model_name << " (" << w.model_file << "), " << w.commands.size()
      << " commands in " << w.programs.size() << " program(s)\n";
  out << "config:  " << d.config_name << ": " << fixed(static_cast<double>(d.clock_khz) / 1000, 3)
      << " MHz, " << d.slices << " slice(s) of " << d.array_rows << "x" << d.array_cols << " "
      << d.dataflow << ", LRAM " << d.lram_bytes << " B, DRAM "
      << fixed(static_cast<double>(d.dram_bandwidth_mbps) / 1000, 3) << " GB/s\n\n";

  out << "  " << pad_right("", 22) << pad_left("estimate", 14)
      << (runtime ? pad_left("simulation", 14) + pad_left("delta %", 10) : "") << '\n';
  auto row = [&](const std::string& label, const std::string& e, const std::string& r,
                 const std::string& delta) {
    out << "  " << pad_right(label, 22) << pad_left(e, 14)
        << (runtime ? pad_left(r, 14) + pad_left(delta, 10) : "") << '\n';
  };
  const double delta_pct =
      est.total_cycles == 0
          ? 0.0
          : 100.0 * (static_cast<double>(main.total_cycles) - static_cast<double>(est.total_cycles)) /
                static_cast<double>(est.total_cycles);
  row("total cycles", std::to_string(est.total_cycles), std::to_string(main.total_cycles),
      fixed(delta_pct, 2));
  row("time (us)", fixed(clock.to_us(est.total_cycles), 3), fixed(clock.to_us(main.total_cycles), 3),
      "");
  row("MAC utilization %", fixed(100 * mac_utilization(w, est), 2),
      fixed(100 * mac_utilization(w, main), 2), "");
  const std::uint64_t dram_bytes = main.dram_read_bytes + main.dram_write_bytes;
  row("DRAM achieved GB/s", fixed(achieved_gbps(dram_bytes, est.total_cycles, d.clock_khz), 3),
      fixed(achieved_gbps(dram_bytes, main.total_cycles, d.clock_khz), 3), "");
  row("LRAM peak bytes", std::to_string(est.lram.peak_bytes), std::to_string(main.lram.peak_bytes),
      "");
  out << '\n';

  out << "lower bounds: compute " << bounds.compute_cycles << " cycles, DRAM " << bounds.dram_cycles
      << " cycles\n";
  out << "work:         " << main.macs << " MACs, DRAM read " << main.dram_read_bytes
      << " B, written " << main.dram_write_bytes << " B\n\n";

  out << (runtime ? "engines (simulation):\n" : "engines (estimate):\n");
  engine_table(out, w, main);
  out << '\n';

  out << (runtime ? "programs (simulation):\n" : "programs (estimate):\n");
  out << "  " << pad_right("program", 24) << pad_left("start", 12) << pad_left("end", 12)
      << pad_left("cycles", 12) << pad_left("us", 12) << '\n';
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    const ProgramStats& ps = main.programs[p];
    out << "  " << pad_right(std::to_string(p) + " " + w.programs[p].name, 24)
        << pad_left(std::to_string(ps.start), 12) << pad_left(std::to_string(ps.end), 12)
        << pad_left(std::to_string(ps.end - ps.start), 12)
        << pad_left(fixed(clock.to_us(ps.end - ps.start), 3), 12) << '\n';
  }
}

void write_stats_json(std::ostream& out, const Workload& w, const Timeline& estimate,
                      const Timeline* runtime) {
  const DeviceInfo& d = w.device;
  const RunStats est = compute_stats(w, estimate);
  const Bounds bounds = compute_bounds(w);
  Json j = {
      {"format", "npusim-stats"},
      {"version", 1},
      {"model", {{"name", w.model_name}, {"file", w.model_file}}},
      {"device",
       {{"config", d.config_name},
        {"clock_mhz", static_cast<double>(d.clock_khz) / 1000},
        {"slices", d.slices},
        {"array_rows", d.array_rows},
        {"array_cols", d.array_cols},
        {"dataflow", d.dataflow},
        {"lram_bytes", d.lram_bytes},
        {"dram_bandwidth_gbps", static_cast<double>(d.dram_bandwidth_mbps) / 1000}}},
      {"commands", w.commands.size()},
      {"programs", w.programs.size()},
      {"macs", est.macs},
      {"vector_macs", est.vector_macs},
      {"dram_read_bytes", est.dram_read_bytes},
      {"dram_write_bytes", est.dram_write_bytes},
      {"bounds", {{"compute_cycles", bounds.compute_cycles}, {"dram_cycles", bounds.dram_cycles}}},
      {"estimate", run_json(w, est)}};
  if (runtime) j["runtime"] = run_json(w, compute_stats(w, *runtime));
  out << j.dump(2) << '\n';
}

}  // namespace npusim::profiler
