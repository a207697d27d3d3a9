#include "profiler/report_writers.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "profiler/energy.h"
#include "profiler/json_writer.h"
#include "profiler/layer_stats.h"
#include "profiler/op_groups.h"
#include "profiler/report.h"
#include "profiler/stats.h"

#include <algorithm>

namespace npusim::profiler {
namespace {

// Fixed-point text so that the same figures always print the same way.
std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// Rounded to 6 decimals: enough for any report, short in JSON, deterministic.
double round6(double value) { return std::round(value * 1e6) / 1e6; }

// Energy in stats.json: µJ rounded to 6 decimals (1 pJ).
double uj(std::uint64_t fj) { return round6(fj_to_uj(fj)); }

double ratio(Cycles part, Cycles whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// What one port of a DMA engine, times its channels, moves per second, in GB/s.
double dma_port_gbps(const DeviceInfo& d, std::uint32_t channels) {
  return static_cast<double>(channels) * d.dma_bytes_per_cycle * static_cast<double>(d.clock_khz) /
         1e6;
}

double mac_utilization(const Workload& w, const RunStats& s) {
  const double peak = static_cast<double>(w.device.slices) * w.device.array_rows *
                      w.device.array_cols * static_cast<double>(s.total_cycles);
  return peak == 0 ? 0.0 : static_cast<double>(s.macs) / peak;
}

// Peak local-memory occupancy while each program runs, from the occupancy's change points.
std::vector<std::uint64_t> lram_peak_per_program(const Workload& w, const Timeline& t,
                                                 const RunStats& s) {
  const std::vector<LramChange> changes = lram_changes(w, t);
  std::vector<std::pair<Cycles, std::uint64_t>> level;  // occupancy from each change on
  std::uint64_t in_use = 0;
  for (const LramChange& c : changes) {
    const CommandInfo& info = w.commands[c.command];
    in_use = c.is_alloc ? in_use + info.lram_alloc_bytes
                        : in_use - std::min(in_use, info.lram_free_bytes);
    level.emplace_back(c.at, in_use);
  }
  std::vector<std::uint64_t> peaks(w.programs.size(), 0);
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    const ProgramStats& ps = s.programs[p];
    if (ps.commands == 0) continue;
    auto it =
        std::upper_bound(level.begin(), level.end(), std::make_pair(ps.start, ~std::uint64_t{0}));
    std::uint64_t peak =
        it == level.begin() ? 0 : std::prev(it)->second;  // level entering the program
    for (; it != level.end() && it->first < ps.end; ++it) peak = std::max(peak, it->second);
    peaks[p] = peak;
  }
  return peaks;
}

// layers[]: one row per layer, SCALE-Sim's compute report and the tiling against it
// (docs/outputs.md).
void write_layers(JsonWriter& j, const TimelineFigures& f) {
  const Workload& w = f.workload();
  j.key("layers");
  j.begin_array();
  const std::vector<LayerStats> rows = compute_layer_stats(w, f.timeline(), &f.stalls());
  std::map<std::string, std::uint64_t> layer_fj;
  const InternedString* last_layer = nullptr;  // commands come in runs of one layer
  std::uint64_t* fj = nullptr;
  for (const CommandInfo& c : w.commands) {
    if (last_layer == nullptr || *last_layer != c.layer) {
      fj = &layer_fj[c.layer];
      last_layer = &c.layer;
    }
    *fj += c.energy.total_fj();
  }
  for (std::size_t id = 0; id < rows.size(); ++id) {
    const LayerStats& r = rows[id];
    j.begin_object(true);
    j.field("id", static_cast<std::uint64_t>(id));
    j.field("name", r.info.name);
    j.field("commands", r.commands);
    if (r.info.on_array) {
      j.field("gemms", r.info.gemms);
      j.field("sr", r.info.sr);
      j.field("sc", r.info.sc);
      j.field("t", r.info.t);
      j.field("folds", r.info.folds);
      j.field("macs", r.info.macs);
      j.field("ideal_array_cycles", r.info.ideal_cycles);
    }
    j.field("array_cycles", r.array_cycles);
    j.field("stall_cycles", r.stall_cycles);
    j.field("total_cycles", r.total_cycles);
    j.field("vector_cycles", r.vector_cycles);
    j.field("compute_span_cycles", r.span_end - r.span_start);
    j.field("dma_bytes", r.dma_bytes);
    if (r.info.on_array) {
      j.field("tiling_overhead_pct", round6(r.tiling_overhead_pct));
      j.field("overall_utilisation_pct", r.overall_utilisation_pct);
      j.field("mapping_efficiency_pct", r.info.mapping_efficiency_pct);
      j.field("compute_utilisation_pct", r.info.compute_utilisation_pct);
    }
    const auto energy = layer_fj.find(r.info.name);
    j.field("energy_uj", uj(energy == layer_fj.end() ? 0 : energy->second));
    j.end_object();
  }
  j.end_array();
}

// op_groups[]: ops[] summed per layer per engine, for aggregated outputs.
void write_op_groups(JsonWriter& j, const Workload& w, const Timeline& t,
                     const std::vector<CommandStalls>& stalls) {
  j.key("op_groups");
  j.begin_array();
  const std::vector<OpGroup> groups = group_ops(w, t, stalls);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const OpGroup& o = groups[g];
    j.begin_object(true);
    j.field("index", static_cast<std::uint64_t>(g));
    j.field("name", o.name);
    j.field("op", o.op);
    j.field("layer", o.layer);
    j.field("engine", w.engines[o.engine].name);
    j.field("program", o.program);
    j.field("first_index", o.first_index);
    j.field("commands", o.commands);
    j.field("start_cycle", o.start);
    j.field("end_cycle", o.end);
    j.field("cycles", o.cycles);
    j.field("bytes", o.bytes);
    j.field("macs", o.macs);
    j.field("wait_deps_cycles", o.wait_deps);
    j.field("wait_dram_cycles", o.wait_dram);
    j.field("energy_uj", uj(o.energy_fj));
    j.end_object();
  }
  j.end_array();
}

// The interconnect's totals over a run: every DEV_HDMA byte once (as sent), and the EXT_HDMA bytes
// of both directions.
struct InterconnectTotals {
  std::uint64_t device_link_bytes = 0;
  std::uint64_t host_link_bytes = 0;
};
InterconnectTotals interconnect_totals(const std::vector<DeviceStats>& devices) {
  InterconnectTotals t;
  for (const DeviceStats& d : devices) {
    t.device_link_bytes += d.dev_hdma_sent_bytes;
    t.host_link_bytes += d.ext_hdma_to_device_bytes + d.ext_hdma_to_host_bytes;
  }
  return t;
}

// Bytes a device moved over its links, either direction, either link.
std::uint64_t device_link_traffic(const DeviceStats& d) {
  return d.dev_hdma_sent_bytes + d.dev_hdma_received_bytes + d.ext_hdma_to_device_bytes +
         d.ext_hdma_to_host_bytes;
}

// stats.json's `devices[]` and `interconnect` of a run (multi-device runs only).
void write_devices_json(JsonWriter& j, const TimelineFigures& f, Cycles total) {
  const Workload& w = f.workload();
  const std::vector<DeviceStats>& devices = f.devices();
  const std::uint64_t khz = w.device.clock_khz;
  j.key("devices");
  j.begin_array();
  for (std::size_t v = 0; v < devices.size(); ++v) {
    const DeviceStats& d = devices[v];
    j.begin_object(true);
    j.field("device", static_cast<std::uint64_t>(v));
    j.field("commands", d.commands);
    j.field("busy_cycles", d.busy_cycles);
    j.field("utilization", round6(ratio(d.busy_cycles, total)));
    j.field("compute_busy_cycles", d.compute_busy_cycles);
    j.field("collective_cycles", d.collective_cycles);
    j.field("dev_hdma_sent_bytes", d.dev_hdma_sent_bytes);
    j.field("dev_hdma_received_bytes", d.dev_hdma_received_bytes);
    j.field("ext_hdma_to_device_bytes", d.ext_hdma_to_device_bytes);
    j.field("ext_hdma_to_host_bytes", d.ext_hdma_to_host_bytes);
    j.field("link_achieved_gbps", round6(achieved_gbps(device_link_traffic(d), total, khz)));
    j.end_object();
  }
  j.end_array();
  const InterconnectTotals sum = interconnect_totals(devices);
  j.key("interconnect");
  j.begin_object();
  j.field("device_link_bytes", sum.device_link_bytes);
  j.field("device_link_achieved_gbps", round6(achieved_gbps(sum.device_link_bytes, total, khz)));
  j.field("host_link_bytes", sum.host_link_bytes);
  j.field("host_link_achieved_gbps", round6(achieved_gbps(sum.host_link_bytes, total, khz)));
  j.end_object();
}

// summary.txt's per-device table and interconnect line (multi-device runs only).
void device_table(std::ostream& out, const TimelineFigures& f, Cycles total) {
  const Workload& w = f.workload();
  const std::vector<DeviceStats>& devices = f.devices();
  const std::uint64_t khz = w.device.clock_khz;
  out << "  " << pad_right("device", 8) << pad_left("busy cycles", 14) << pad_left("busy %", 9)
      << pad_left("compute", 12) << pad_left("collective", 12) << pad_left("coll. %", 9)
      << pad_left("DH out B", 12) << pad_left("DH in B", 12) << pad_left("EH in B", 12)
      << pad_left("EH out B", 12) << pad_left("link GB/s", 11) << '\n';
  for (std::size_t v = 0; v < devices.size(); ++v) {
    const DeviceStats& d = devices[v];
    out << "  " << pad_right("DEV" + std::to_string(v), 8)
        << pad_left(std::to_string(d.busy_cycles), 14)
        << pad_left(fixed(100.0 * ratio(d.busy_cycles, total), 1), 9)
        << pad_left(std::to_string(d.compute_busy_cycles), 12)
        << pad_left(std::to_string(d.collective_cycles), 12)
        << pad_left(fixed(100.0 * ratio(d.collective_cycles, total), 1), 9)
        << pad_left(std::to_string(d.dev_hdma_sent_bytes), 12)
        << pad_left(std::to_string(d.dev_hdma_received_bytes), 12)
        << pad_left(std::to_string(d.ext_hdma_to_device_bytes), 12)
        << pad_left(std::to_string(d.ext_hdma_to_host_bytes), 12)
        << pad_left(fixed(achieved_gbps(device_link_traffic(d), total, khz), 3), 11) << '\n';
  }
  const InterconnectTotals sum = interconnect_totals(devices);
  out << "interconnect: device links " << sum.device_link_bytes << " B, "
      << fixed(achieved_gbps(sum.device_link_bytes, total, khz), 3) << " GB/s; host link "
      << sum.host_link_bytes << " B, " << fixed(achieved_gbps(sum.host_link_bytes, total, khz), 3)
      << " GB/s\n";
}

void write_run(JsonWriter& j, const TimelineFigures& f, StatsLevel level, bool aggregated) {
  const Workload& w = f.workload();
  const Timeline& t = f.timeline();
  const RunStats& s = f.stats();
  const Clock clock{w.device.clock_khz};
  const bool waits = level >= StatsLevel::kWaits;
  const bool extended = level >= StatsLevel::kExtended;
  static const std::vector<CommandStalls> kNoStalls;
  const std::vector<CommandStalls>& stalls = waits ? f.stalls() : kNoStalls;
  std::vector<Cycles> deps_wait(w.engines.size(), 0), dram_wait(w.engines.size(), 0);
  std::vector<std::uint64_t> read_bytes(w.engines.size(), 0), write_bytes(w.engines.size(), 0);
  for (std::size_t i = 0; i < w.commands.size(); ++i) {
    const CommandInfo& c = w.commands[i];
    read_bytes[c.engine] += c.dram_read_bytes;
    write_bytes[c.engine] += c.dram_write_bytes;
    if (waits) {
      deps_wait[c.engine] += stalls[i].deps;
      dram_wait[c.engine] += stalls[i].dram;
    }
  }
  j.begin_object();
  j.field("total_cycles", s.total_cycles);
  j.field("time_us", round6(clock.to_us(s.total_cycles)));
  j.field("mac_utilization", round6(mac_utilization(w, s)));
  j.field("dram_achieved_gbps", round6(achieved_gbps(s.dram_read_bytes + s.dram_write_bytes,
                                                     s.total_cycles, w.device.clock_khz)));
  j.field("lram_peak_bytes", s.lram.peak_bytes);
  j.field("lram_peak_cycle", s.lram.peak_at);
  const EnergyStats& energy = f.energy();
  j.field("energy_uj", uj(energy.total_fj()));
  j.field("static_energy_uj", uj(energy.static_fj()));
  j.key("engines");
  j.begin_object();
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    const EngineKind kind = w.engines[e].kind;
    const bool dma = kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut;
    j.key(w.engines[e].name);
    j.begin_object();
    j.field("busy_cycles", s.engines[e].busy_cycles);
    j.field("utilization", round6(ratio(s.engines[e].busy_cycles, s.total_cycles)));
    j.field("commands", s.engines[e].commands);
    if (kind == EngineKind::kVector)
      j.field("array_overlap_cycles", s.engines[e].array_overlap_cycles);
    if (kind == EngineKind::kDmaIn) j.field("dram_read_bytes", read_bytes[e]);
    if (kind == EngineKind::kDmaOut) j.field("dram_write_bytes", write_bytes[e]);
    if (waits) {
      j.field("wait_deps_cycles", deps_wait[e]);
      if (dma) j.field("wait_dram_cycles", dram_wait[e]);
    }
    j.field("energy_uj", uj(energy.engine_fj[e]));
    j.end_object();
  }
  j.end_object();
  if (has_multi_device_engines(w)) write_devices_json(j, f, s.total_cycles);
  std::vector<std::uint64_t> peaks;
  if (extended) peaks = lram_peak_per_program(w, t, s);
  j.key("programs");
  j.begin_array();
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    const ProgramStats& ps = s.programs[p];
    j.begin_object();
    j.field("name", w.programs[p].name);
    j.field("start_cycle", ps.start);
    j.field("end_cycle", ps.end);
    j.field("cycles", ps.end - ps.start);
    j.field("commands", ps.commands);
    if (extended) j.field("lram_peak_bytes", peaks[p]);
    j.end_object();
  }
  j.end_array();
  if (extended && t.dram.bursts > 0) {
    j.key("dram");
    j.begin_object();
    j.field("bursts", t.dram.bursts);
    j.field("mean_latency_cycles", round6(static_cast<double>(t.dram.total_latency_cycles) /
                                          static_cast<double>(t.dram.bursts)));
    j.field("max_latency_cycles", t.dram.max_latency_cycles);
    j.key("latency_histogram");
    j.begin_array();
    for (std::size_t b = 0; b < t.dram.latency_histogram.size(); ++b) {
      if (t.dram.latency_histogram[b] == 0) continue;
      j.begin_object(true);
      j.field("min_cycles", b == 0 ? Cycles{0} : Cycles{1} << (b - 1));
      j.field("bursts", t.dram.latency_histogram[b]);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  if (level >= StatsLevel::kOps && aggregated) {
    write_op_groups(j, w, t, stalls);
    write_layers(j, f);
  } else if (level >= StatsLevel::kOps) {
    const double peak_macs_per_cycle =
        static_cast<double>(w.device.array_rows) * w.device.array_cols;
    const std::vector<std::string> names = command_names(w);
    j.key("ops");
    j.begin_array();
    for (std::size_t i = 0; i < w.commands.size(); ++i) {
      const CommandInfo& c = w.commands[i];
      const CommandTiming& ct = t.commands[i];
      j.begin_object(true);
      j.field("index", static_cast<std::uint64_t>(i));
      j.field("id", c.id);
      j.field("name", names[i]);
      j.field("op", c.op_type);
      j.field("layer", c.layer);
      j.field("engine", w.engines[c.engine].name);
      j.field("program", c.program);
      j.field("start_cycle", ct.start);
      j.field("end_cycle", ct.end);
      j.field("cycles", ct.end - ct.start);
      j.field("bytes", c.dram_read_bytes + c.dram_write_bytes + c.link_bytes);
      j.field("macs", c.macs + c.vector_macs);
      j.field("wait_deps_cycles", stalls[i].deps);
      j.field("wait_dram_cycles", stalls[i].dram);
      if (extended && c.macs > 0 && ct.end > ct.start) {
        j.field("mac_utilization",
                round6(static_cast<double>(c.macs) /
                       (peak_macs_per_cycle * static_cast<double>(ct.end - ct.start))));
      }
      j.field("energy_uj", uj(c.energy.total_fj()));
      j.end_object();
    }
    j.end_array();
    write_layers(j, f);
  }
  j.end_object();
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
  // How much of the vector units' work ran while their arrays also worked (depthwise networks:
  // the rest ran alone, and is what a schedule that overlapped them could save).
  Cycles vector_busy = 0;
  Cycles with_array = 0;
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    if (w.engines[e].kind != EngineKind::kVector) continue;
    vector_busy += s.engines[e].busy_cycles;
    with_array += s.engines[e].array_overlap_cycles;
  }
  if (vector_busy > 0) {
    out << "  vector units busy beside their slice's array: " << with_array << " of " << vector_busy
        << " cycles (" << fixed(100.0 * ratio(with_array, vector_busy), 1) << " %)\n";
  }
}

// The main run's energy (docs/outputs.md#statsjson): totals, what spent it, per engine and per op
// type. Per op and per layer it is in `ops[]` and `layers[]`.
void write_energy_json(JsonWriter& j, const Workload& w, const EnergyStats& e,
                       const char* timeline) {
  j.begin_object();
  j.field("timeline", timeline);
  j.field("total_uj", uj(e.total_fj()));
  j.field("dynamic_uj", uj(e.dynamic.total_fj()));
  j.field("static_uj", uj(e.static_fj()));
  j.field("average_power_mw", round6(e.average_power_mw(w.device.clock_khz)));
  j.key("dynamic");
  j.begin_object();
  j.field("mac_uj", uj(e.dynamic.mac_fj));
  j.field("vector_uj", uj(e.dynamic.vector_fj));
  j.field("lram_read_uj", uj(e.dynamic.lram_read_fj));
  j.field("lram_write_uj", uj(e.dynamic.lram_write_fj));
  j.field("dram_uj", uj(e.dynamic.dram_fj));
  j.end_object();
  j.key("static");
  j.begin_object();
  j.field("slices_uj", uj(e.static_slices_fj));
  j.field("dram_uj", uj(e.static_dram_fj));
  j.end_object();
  j.key("engines");
  j.begin_object();
  for (std::size_t k = 0; k < w.engines.size(); ++k) j.field(w.engines[k].name, uj(e.engine_fj[k]));
  j.end_object();
  j.key("op_types");
  j.begin_object();
  for (const auto& [op, fj] : e.op_type_fj) j.field(op, uj(fj));
  j.end_object();
  j.end_object();
}

// summary.txt's energy table: dynamic energy per engine, then the static part and the total.
void energy_table(std::ostream& out, const Workload& w, const EnergyStats& e) {
  const double total = static_cast<double>(e.total_fj());
  auto pct = [&](std::uint64_t fj) {
    return fixed(total == 0 ? 0.0 : 100.0 * static_cast<double>(fj) / total, 1);
  };
  out << "  " << pad_right("engine", 16) << pad_left("uJ", 14) << pad_left("%", 9) << '\n';
  for (std::size_t k = 0; k < w.engines.size(); ++k) {
    out << "  " << pad_right(w.engines[k].name, 16)
        << pad_left(fixed(fj_to_uj(e.engine_fj[k]), 6), 14) << pad_left(pct(e.engine_fj[k]), 9)
        << '\n';
  }
  out << "  " << pad_right("static", 16) << pad_left(fixed(fj_to_uj(e.static_fj()), 6), 14)
      << pad_left(pct(e.static_fj()), 9) << '\n';
  out << "  " << pad_right("total", 16) << pad_left(fixed(fj_to_uj(e.total_fj()), 6), 14)
      << pad_left(pct(e.total_fj()), 9) << '\n';
}

// summary.txt's energy: the total and what spent it, then the per-engine table.
void energy_summary(std::ostream& out, const Workload& w, const EnergyStats& energy,
                    bool simulation) {
  const DynamicEnergy& dyn = energy.dynamic;
  out << "energy:       " << fixed(fj_to_uj(energy.total_fj()), 6) << " uJ: dynamic "
      << fixed(fj_to_uj(dyn.total_fj()), 6) << " (MAC " << fixed(fj_to_uj(dyn.mac_fj), 6)
      << ", vector " << fixed(fj_to_uj(dyn.vector_fj), 6) << ", LRAM read "
      << fixed(fj_to_uj(dyn.lram_read_fj), 6) << ", LRAM write "
      << fixed(fj_to_uj(dyn.lram_write_fj), 6) << ", DRAM " << fixed(fj_to_uj(dyn.dram_fj), 6)
      << "), static " << fixed(fj_to_uj(energy.static_fj()), 6) << "; average power "
      << fixed(energy.average_power_mw(w.device.clock_khz), 3) << " mW\n";
  out << (simulation ? "energy by engine (simulation):\n" : "energy by engine (estimate):\n");
  energy_table(out, w, energy);
}

}  // namespace

std::optional<StatsLevel> stats_level_from(int level) {
  for (StatsLevel l :
       {StatsLevel::kTotals, StatsLevel::kWaits, StatsLevel::kOps, StatsLevel::kExtended}) {
    if (static_cast<int>(l) == level) return l;
  }
  return std::nullopt;
}

std::optional<TraceDetail> trace_detail_from(std::string_view name) {
  if (name == "auto") return TraceDetail::kAuto;
  if (name == "full") return TraceDetail::kFull;
  if (name == "summary") return TraceDetail::kSummary;
  return std::nullopt;
}

bool aggregated(TraceDetail detail, std::uint64_t commands, std::uint64_t auto_threshold) {
  return detail == TraceDetail::kSummary ||
         (detail == TraceDetail::kAuto && commands > auto_threshold);
}

TraceOptions trace_options_for(StatsLevel level) {
  TraceOptions o;
  o.counters = level >= StatsLevel::kWaits;
  o.flows = level >= StatsLevel::kOps;
  o.all_flows = level >= StatsLevel::kExtended;
  o.detailed_args = level >= StatsLevel::kOps;
  return o;
}

// Per inference: its own span (start to end) and its share of the run (end minus the previous
// inference's end), which is what back-to-back throughput is made of.
void write_iterations(JsonWriter& j, const Iterations& it, const Clock& clock) {
  auto spans = [&](const std::vector<Iterations::Span>& list) {
    j.begin_array();
    Cycles previous_end = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      j.begin_object(true);
      j.field("index", static_cast<std::uint64_t>(i));
      j.field("start_cycle", list[i].start);
      j.field("end_cycle", list[i].end);
      j.field("latency_cycles", list[i].end - list[i].start);
      j.field("cycles", list[i].end - previous_end);
      j.field("latency_us", round6(clock.to_us(list[i].end - list[i].start)));
      j.field("profiled", i >= it.first_profiled && i < it.first_profiled + it.profiled);
      j.end_object();
      previous_end = list[i].end;
    }
    j.end_array();
  };
  j.begin_object();
  j.field("count", it.count);
  j.field("first_profiled", it.first_profiled);
  j.field("profiled", it.profiled);
  j.key("estimate");
  spans(it.estimate);
  if (!it.runtime.empty()) {
    j.key("runtime");
    spans(it.runtime);
  }
  j.end_object();
}

namespace {

// summary.txt's lower bounds, the links' only with the multi-device engines.
void bounds_table(std::ostream& out, const Bounds& bounds, Cycles total, bool multi_device) {
  out << pad_right("lower bounds:", 24) << pad_left("cycles", 14) << pad_left("% of total", 12)
      << '\n';
  auto bound_row = [&](BoundResource r) {
    out << "  " << pad_right(bound_name(r), 22) << pad_left(std::to_string(bounds.cycles(r)), 14)
        << pad_left(fixed(100.0 * ratio(bounds.cycles(r), total), 1), 12) << '\n';
  };
  for (BoundResource r : kBoundResources) bound_row(r);
  if (multi_device) {
    for (BoundResource r : kLinkBoundResources) bound_row(r);
  }
}

// summary.txt's table of back-to-back inferences (--iterations).
void iterations_table(std::ostream& out, const Iterations& it, bool simulated, const Clock& clock) {
  out << "inferences:   " << it.count << " back to back, profiled " << it.profiled << " from #"
      << it.first_profiled
      << " (this table counts from the run's start, the rest from the window's)\n";
  const auto& spans = simulated ? it.runtime : it.estimate;
  out << "  " << pad_right("inference", 12) << pad_left("start", 14) << pad_left("end", 14)
      << pad_left("latency", 12) << pad_left("us", 12) << '\n';
  for (std::size_t i = 0; i < spans.size(); ++i) {
    out << "  " << pad_right("#" + std::to_string(i), 12)
        << pad_left(std::to_string(spans[i].start), 14)
        << pad_left(std::to_string(spans[i].end), 14)
        << pad_left(std::to_string(spans[i].end - spans[i].start), 12)
        << pad_left(fixed(clock.to_us(spans[i].end - spans[i].start), 3), 12) << '\n';
  }
  out << '\n';
}

}  // namespace

void write_summary(std::ostream& out, const Workload& w, const Timeline& estimate,
                   const Timeline* runtime, const ReportOptions& options) {
  const StatsLevel level = options.level;
  const Iterations* iterations = options.iterations;
  const DeviceInfo& d = w.device;
  const Clock clock{d.clock_khz};
  std::optional<TimelineFigures> est_local, run_local;
  const TimelineFigures& est_figures = figures_of(options.estimate_figures, w, estimate, est_local);
  const TimelineFigures& main_figures =
      runtime ? figures_of(options.runtime_figures, w, *runtime, run_local) : est_figures;
  const RunStats& est = est_figures.stats();
  const Bounds bounds = compute_bounds(w);
  const RunStats& main = main_figures.stats();

  out << "npusim " << (runtime ? "run" : "estimate") << " summary\n";
  if (!options.incomplete.empty()) {
    out << "INCOMPLETE: the run could not complete; what follows covers the " << w.commands.size()
        << " commands that finished.\n  " << options.incomplete << "\n";
  }
  out << "model:   " << w.model_name << " (" << w.model_file << "), " << w.commands.size()
      << " commands in " << w.programs.size() << " program(s)\n";
  out << "config:  " << d.config_name << ": " << fixed(static_cast<double>(d.clock_khz) / 1000, 3)
      << " MHz, " << d.slices << " slice(s) of " << d.array_rows << "x" << d.array_cols << " "
      << d.dataflow << ", LRAM " << d.lram_bytes << " B, DRAM "
      << fixed(static_cast<double>(d.dram_bandwidth_mbps) / 1000, 3) << " GB/s, DMA_IN port "
      << fixed(dma_port_gbps(d, d.dma_in_channels), 3) << " GB/s (" << d.dma_in_channels << " x "
      << d.dma_bytes_per_cycle << " B/cycle), DMA_OUT port "
      << fixed(dma_port_gbps(d, d.dma_out_channels), 3) << " GB/s (" << d.dma_out_channels << " x "
      << d.dma_bytes_per_cycle << " B/cycle)\n";
  for (const std::string& note : options.detail_notes) out << "detail:  " << note << '\n';
  out << '\n';

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
          : 100.0 *
                (static_cast<double>(main.total_cycles) - static_cast<double>(est.total_cycles)) /
                static_cast<double>(est.total_cycles);
  row("total cycles", std::to_string(est.total_cycles), std::to_string(main.total_cycles),
      fixed(delta_pct, 2));
  row("time (us)", fixed(clock.to_us(est.total_cycles), 3),
      fixed(clock.to_us(main.total_cycles), 3), "");
  row("MAC utilisation %", fixed(100 * mac_utilization(w, est), 2),
      fixed(100 * mac_utilization(w, main), 2), "");
  const std::uint64_t dram_bytes = main.dram_read_bytes + main.dram_write_bytes;
  row("DRAM achieved GB/s", fixed(achieved_gbps(dram_bytes, est.total_cycles, d.clock_khz), 3),
      fixed(achieved_gbps(dram_bytes, main.total_cycles, d.clock_khz), 3), "");
  row("LRAM peak bytes", std::to_string(est.lram.peak_bytes), std::to_string(main.lram.peak_bytes),
      "");
  const EnergyStats& est_energy = est_figures.energy();
  const EnergyStats& energy = main_figures.energy();
  row("energy (uJ)", fixed(fj_to_uj(est_energy.total_fj()), 6),
      fixed(fj_to_uj(energy.total_fj()), 6), "");
  out << '\n';

  if (iterations != nullptr) iterations_table(out, *iterations, runtime != nullptr, clock);
  if (options.llm != nullptr) write_llm_summary(out, *options.llm, clock);
  const bool multi_device = has_multi_device_engines(w);
  bounds_table(out, bounds, main.total_cycles, multi_device);
  out << "binding limit: " << binding_name(bounds) << "\n";
  out << "work:         " << main.macs << " MACs, DRAM read " << main.dram_read_bytes
      << " B, written " << main.dram_write_bytes << " B\n\n";

  out << (runtime ? "engines (simulation):\n" : "engines (estimate):\n");
  engine_table(out, w, main);
  out << '\n';
  if (multi_device) {
    out << (runtime ? "devices (simulation):\n" : "devices (estimate):\n");
    device_table(out, main_figures, main.total_cycles);
    out << '\n';
  }

  if (level >= StatsLevel::kOps) {
    const Timeline& t = runtime ? *runtime : estimate;
    // The same table as `npusim report` prints, from the same function.
    std::vector<OpSpan> ops;
    ops.reserve(w.commands.size());
    Cycles op_cycles = 0;
    for (std::size_t i = 0; i < w.commands.size(); ++i) {
      const CommandInfo& c = w.commands[i];
      ops.push_back({c.op_type, w.engines[c.engine].name, t.commands[i].start, t.commands[i].end});
      op_cycles += t.commands[i].end - t.commands[i].start;
    }
    write_op_type_table(out, op_type_figures(ops), op_cycles, main.total_cycles);
    ops = {};
    // The ten longest, ties in command order (what a stable sort of all would put first).
    std::vector<std::size_t> order(w.commands.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::size_t top = std::min<std::size_t>(10, order.size());
    const auto longer = [&](std::size_t a, std::size_t b) {
      const Cycles da = t.commands[a].end - t.commands[a].start;
      const Cycles db = t.commands[b].end - t.commands[b].start;
      return da != db ? da > db : a < b;
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                      longer);
    order.resize(top);
    out << "\ntop ops by cycles:\n";
    const std::vector<std::string> top_names = command_names(w, order);
    std::size_t name_width = 48;
    for (std::size_t k = 0; k < top; ++k)
      name_width = std::max(name_width, top_names[k].size() + 2);
    for (std::size_t k = 0; k < top; ++k) {
      const std::size_t i = order[k];
      out << "  " << pad_right(top_names[k], name_width)
          << pad_left(std::to_string(t.commands[i].end - t.commands[i].start), 12) << "  "
          << w.engines[w.commands[i].engine].name << '\n';
    }
    out << '\n';
  }

  // After the tables that scripts parse by their first word, so that none of them changed.
  energy_summary(out, w, energy, runtime != nullptr);
  out << '\n';

  out << (runtime ? "programs (simulation):\n" : "programs (estimate):\n");
  // The label column fits the longest "<index> <name>", so long names keep the columns aligned.
  std::size_t label_width = 24;
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    label_width =
        std::max(label_width, std::to_string(p).size() + 1 + w.programs[p].name.size() + 2);
  }
  out << "  " << pad_right("program", label_width) << pad_left("start", 12) << pad_left("end", 12)
      << pad_left("cycles", 12) << pad_left("us", 12) << '\n';
  for (std::size_t p = 0; p < w.programs.size(); ++p) {
    const ProgramStats& ps = main.programs[p];
    out << "  " << pad_right(std::to_string(p) + " " + w.programs[p].name, label_width)
        << pad_left(std::to_string(ps.start), 12) << pad_left(std::to_string(ps.end), 12)
        << pad_left(std::to_string(ps.end - ps.start), 12)
        << pad_left(fixed(clock.to_us(ps.end - ps.start), 3), 12) << '\n';
  }
}

void write_stats_json(std::ostream& out, const Workload& w, const Timeline& estimate,
                      const Timeline* runtime, const ReportOptions& options) {
  const StatsLevel level = options.level;
  const Iterations* iterations = options.iterations;
  const DeviceInfo& d = w.device;
  std::optional<TimelineFigures> est_local, run_local;
  const TimelineFigures& est_figures = figures_of(options.estimate_figures, w, estimate, est_local);
  const TimelineFigures& main_figures =
      runtime ? figures_of(options.runtime_figures, w, *runtime, run_local) : est_figures;
  const RunStats& est = est_figures.stats();
  const Bounds bounds = compute_bounds(w);
  JsonWriter j(out);
  j.begin_object();
  j.field("format", "npusim-stats");
  j.field("version", 1);
  j.field("complete", options.incomplete.empty());
  if (!options.incomplete.empty()) j.field("incomplete_reason", options.incomplete);
  j.key("model");
  j.begin_object();
  j.field("name", w.model_name);
  j.field("file", w.model_file);
  j.end_object();
  j.key("device");
  j.begin_object();
  j.field("config", d.config_name);
  j.field("clock_mhz", static_cast<double>(d.clock_khz) / 1000);
  j.field("slices", d.slices);
  j.field("array_rows", d.array_rows);
  j.field("array_cols", d.array_cols);
  j.field("dataflow", d.dataflow);
  j.field("lram_bytes", d.lram_bytes);
  j.field("dram_bandwidth_gbps", static_cast<double>(d.dram_bandwidth_mbps) / 1000);
  j.field("dma_in_channels", d.dma_in_channels);
  j.field("dma_out_channels", d.dma_out_channels);
  j.field("dma_bytes_per_cycle", d.dma_bytes_per_cycle);
  j.field("dma_in_port_gbps", round6(dma_port_gbps(d, d.dma_in_channels)));
  j.field("dma_out_port_gbps", round6(dma_port_gbps(d, d.dma_out_channels)));
  if (has_multi_device_engines(w)) {
    j.field("devices", device_count(w));
    j.field("host_link_gbps", static_cast<double>(d.host_link_mbps) / 1000);
    j.field("host_link_channels", d.host_link_channels);
    j.field("host_link_latency_cycles", d.host_link_latency_cycles);
    j.field("device_link_gbps", static_cast<double>(d.device_link_mbps) / 1000);
    j.field("device_link_latency_cycles", d.device_link_latency_cycles);
  }
  j.end_object();
  j.field("commands", static_cast<std::uint64_t>(w.commands.size()));
  j.field("programs", static_cast<std::uint64_t>(w.programs.size()));
  j.field("macs", est.macs);
  j.field("vector_macs", est.vector_macs);
  j.field("dram_read_bytes", est.dram_read_bytes);
  j.field("dram_write_bytes", est.dram_write_bytes);
  j.key("bounds");
  j.begin_object();
  for (BoundResource r : kBoundResources) {
    j.field(std::string(bound_name(r)) + "_cycles", bounds.cycles(r));
  }
  if (has_multi_device_engines(w)) {
    for (BoundResource r : kLinkBoundResources) {
      j.field(std::string(bound_name(r)) + "_cycles", bounds.cycles(r));
    }
  }
  j.field("binding", binding_name(bounds));
  j.end_object();
  j.field("stats_level", static_cast<int>(level));
  if (options.aggregated) j.field("aggregated", true);
  j.key("estimate");
  write_run(j, est_figures, level, options.aggregated);
  if (runtime) {
    j.key("runtime");
    write_run(j, main_figures, level, options.aggregated);
  }
  if (iterations != nullptr) {
    j.key("iterations");
    write_iterations(j, *iterations, Clock{d.clock_khz});
  }
  if (options.llm != nullptr) {
    j.key("llm");
    write_llm_json(j, *options.llm, Clock{d.clock_khz});
  }
  j.key("energy");
  write_energy_json(j, w, main_figures.energy(), runtime ? "runtime" : "estimate");
  j.end_object();
}

}  // namespace npusim::profiler
