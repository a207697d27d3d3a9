#include "profiler/stats.h"

#include <algorithm>
#include <tuple>

namespace npusim::profiler {
namespace {

__extension__ using U128 = unsigned __int128;

U128 ceil_div(U128 num, U128 den) { return (num + den - 1) / den; }

// The fewest cycles in which `channels` DMA channels move `bytes` with at most
// max_outstanding bursts in flight each (docs/cost-model.md, "DMA transfers and DRAM"): a burst of
// b bytes is in flight for at least its DRAM service, b x clock_khz x dram channels /
// (mbps x 1000) cycles, plus the latency, and there are at least ceil(bytes / burst_bytes) of
// them, so the in-flight time summed over all bursts, shared by channels x max_outstanding
// slots, is at least bytes x clock_khz x dram channels / (mbps x 1000) + bursts x latency.
// 0 when the config does not say (ideal memory).
Cycles in_flight_cycles(U128 bytes, std::uint32_t channels, const DeviceInfo& d) {
  if (bytes == 0 || d.dma_burst_bytes == 0 || d.dma_max_outstanding == 0 || d.dram_channels == 0 ||
      d.dram_bandwidth_mbps == 0) {
    return 0;
  }
  const U128 tick_den = U128{d.dram_bandwidth_mbps} * 1000u;  // ticks per cycle, for exactness
  const U128 in_flight_ticks =
      bytes * d.clock_khz * d.dram_channels +
      ceil_div(bytes, d.dma_burst_bytes) * d.dram_latency_cycles * tick_den;
  const U128 cycles = ceil_div(in_flight_ticks, tick_den * channels * d.dma_max_outstanding);
  return static_cast<Cycles>(std::min<U128>(cycles, ~Cycles{0}));
}

// The union of [start, end) intervals as disjoint intervals in order (empty ones left out).
// (Any order by start gives the same union; an engine's commands mostly come in order already.)
std::vector<CommandTiming> merged(std::vector<CommandTiming>& intervals) {
  const auto before = [](const CommandTiming& a, const CommandTiming& b) {
    return a.start < b.start;
  };
  if (!std::is_sorted(intervals.begin(), intervals.end(), before)) {
    std::sort(intervals.begin(), intervals.end(), before);
  }
  std::vector<CommandTiming> out;
  for (const CommandTiming& t : intervals) {
    if (t.end <= t.start) continue;
    if (!out.empty() && t.start <= out.back().end) {
      out.back().end = std::max(out.back().end, t.end);
    } else {
      out.push_back({t.start, t.end, 0});
    }
  }
  return out;
}

Cycles total_length(const std::vector<CommandTiming>& disjoint) {
  Cycles total = 0;
  for (const CommandTiming& t : disjoint) total += t.end - t.start;
  return total;
}

// Length of the union of [start, end) intervals.
Cycles union_length(std::vector<CommandTiming>& intervals) {
  return total_length(merged(intervals));
}

// Cycles covered by both lists of disjoint, ordered intervals.
Cycles overlap_length(const std::vector<CommandTiming>& a, const std::vector<CommandTiming>& b) {
  Cycles total = 0;
  std::size_t i = 0;
  std::size_t k = 0;
  while (i < a.size() && k < b.size()) {
    const Cycles from = std::max(a[i].start, b[k].start);
    const Cycles to = std::min(a[i].end, b[k].end);
    if (to > from) total += to - from;
    if (a[i].end < b[k].end) {
      ++i;
    } else {
      ++k;
    }
  }
  return total;
}

// ceil(bytes / (lanes x mbps * 1000 / khz bytes per cycle)) + latency; 0 without bytes or a rate.
Cycles link_bound(U128 bytes, std::uint64_t mbps, std::uint32_t lanes, std::uint64_t khz,
                  Cycles latency) {
  if (bytes == 0 || mbps == 0 || lanes == 0) return 0;
  const U128 cycles = ceil_div(bytes * khz, U128{mbps} * 1000u * lanes) + latency;
  return static_cast<Cycles>(std::min<U128>(cycles, ~Cycles{0}));
}

}  // namespace

// Each device has its own local memory: occupancy is counted per device, and the peak and the
// first overflow are those of any device.
LramStats lram_occupancy(const Workload& workload, const Timeline& timeline) {
  const std::vector<LramChange> changes = lram_changes(workload, timeline);
  LramStats stats;
  const std::uint32_t devices = device_count(workload);
  std::vector<std::uint64_t> in_use(devices, 0);
  for (const LramChange& ch : changes) {
    const CommandInfo& c = workload.commands[ch.command];
    std::uint64_t& used = in_use[workload.engines[c.engine].device];
    if (ch.is_alloc) {
      used += c.lram_alloc_bytes;
      if (used > stats.peak_bytes) {
        stats.peak_bytes = used;
        stats.peak_at = ch.at;
      }
      if (!stats.overflow && used > workload.device.lram_bytes) {
        stats.overflow = LramStats::Overflow{ch.command, ch.at, used};
      }
    } else {
      // The schedule loader guarantees every free matches an earlier allocation.
      used -= std::min(used, c.lram_free_bytes);
    }
  }
  return stats;
}

std::uint32_t device_count(const Workload& workload) {
  std::uint32_t devices = 1;
  for (const EngineInfo& e : workload.engines) devices = std::max(devices, e.device + 1);
  return devices;
}

bool has_multi_device_engines(const Workload& workload) {
  return std::any_of(workload.engines.begin(), workload.engines.end(),
                     [](const EngineInfo& e) { return is_multi_device(e.kind); });
}

bool is_collective(const Workload& workload, const CommandInfo& command) {
  const EngineKind kind = workload.engines[command.engine].kind;
  return kind == EngineKind::kDevHdma || kind == EngineKind::kSync ||
         command.layer.str().rfind("collective.", 0) == 0;
}

std::vector<DeviceStats> compute_device_stats(const Workload& workload, const Timeline& timeline) {
  const std::uint32_t devices = device_count(workload);
  std::vector<DeviceStats> stats(devices);
  std::vector<std::vector<CommandTiming>> all(devices), compute(devices), collective(devices);
  for (std::uint32_t i = 0; i < workload.commands.size(); ++i) {
    const CommandInfo& c = workload.commands[i];
    const EngineInfo& e = workload.engines[c.engine];
    if (e.kind == EngineKind::kHost) continue;
    const CommandTiming& t = timeline.commands[i];
    DeviceStats& d = stats[e.device];
    d.commands += 1;
    all[e.device].push_back(t);
    if (on_slice(e.kind)) compute[e.device].push_back(t);
    if (is_collective(workload, c)) collective[e.device].push_back(t);
    if (e.kind == EngineKind::kDevHdma) {
      d.dev_hdma_sent_bytes += c.link_bytes;
      if (c.peer < devices) stats[c.peer].dev_hdma_received_bytes += c.link_bytes;
    } else if (e.kind == EngineKind::kExtHdma) {
      (c.to_device ? d.ext_hdma_to_device_bytes : d.ext_hdma_to_host_bytes) += c.link_bytes;
    }
  }
  for (std::uint32_t v = 0; v < devices; ++v) {
    stats[v].busy_cycles = union_length(all[v]);
    stats[v].compute_busy_cycles = union_length(compute[v]);
    stats[v].collective_cycles = union_length(collective[v]);
  }
  return stats;
}

std::vector<LramChange> lram_changes(const Workload& workload, const Timeline& timeline) {
  // A total order, so that the sort is well defined, that keeps the rule: by cycle; then the
  // frees; then each command that takes no cycles and allocates and frees there, its allocation
  // just before its own free; then the other allocations; each rank by command. (Comparing such
  // a free with other commands' allocations as a free, and with its own as coming after, was not
  // transitive.)
  std::vector<LramChange> changes;
  for (std::uint32_t i = 0; i < workload.commands.size(); ++i) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    const bool pair = t.start == t.end && c.lram_alloc_bytes > 0 && c.lram_free_bytes > 0;
    if (c.lram_alloc_bytes > 0)
      changes.push_back({t.start, true, i, static_cast<std::uint8_t>(pair ? 1 : 2)});
    if (c.lram_free_bytes > 0)
      changes.push_back({t.end, false, i, static_cast<std::uint8_t>(pair ? 1 : 0)});
  }
  std::sort(changes.begin(), changes.end(), [](const LramChange& a, const LramChange& b) {
    return std::tie(a.at, a.rank, a.command, b.is_alloc) <
           std::tie(b.at, b.rank, b.command, a.is_alloc);
  });
  return changes;
}

RunStats compute_stats(const Workload& workload, const Timeline& timeline) {
  RunStats stats;
  stats.total_cycles = timeline.total_cycles();
  stats.engines.resize(workload.engines.size());
  stats.programs.resize(workload.programs.size());

  std::vector<std::vector<CommandTiming>> per_engine(workload.engines.size());
  for (std::uint32_t i = 0; i < workload.commands.size(); ++i) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    per_engine[c.engine].push_back(t);
    stats.engines[c.engine].commands += 1;
    ProgramStats& p = stats.programs[c.program];
    p.start = p.commands == 0 ? t.start : std::min(p.start, t.start);
    p.end = std::max(p.end, t.end);
    p.commands += 1;
    stats.dram_read_bytes += c.dram_read_bytes;
    stats.dram_write_bytes += c.dram_write_bytes;
    stats.macs += c.macs;
    stats.vector_macs += c.vector_macs;
  }
  std::vector<std::vector<CommandTiming>> busy(per_engine.size());
  for (std::size_t e = 0; e < per_engine.size(); ++e) {
    busy[e] = merged(per_engine[e]);
    stats.engines[e].busy_cycles = total_length(busy[e]);
  }
  // Each vector unit against the array of its slice (same device, same slice).
  for (std::size_t v = 0; v < workload.engines.size(); ++v) {
    const EngineInfo& vector = workload.engines[v];
    if (vector.kind != EngineKind::kVector) continue;
    for (std::size_t a = 0; a < workload.engines.size(); ++a) {
      const EngineInfo& array = workload.engines[a];
      if (array.kind == EngineKind::kArray && array.device == vector.device &&
          array.slice == vector.slice) {
        stats.engines[v].array_overlap_cycles = overlap_length(busy[v], busy[a]);
        break;
      }
    }
  }
  stats.lram = lram_occupancy(workload, timeline);
  return stats;
}

const char* bound_name(BoundResource resource) {
  switch (resource) {
    case BoundResource::kArray:
      return "array";
    case BoundResource::kVector:
      return "vector";
    case BoundResource::kMacPeak:
      return "mac_peak";
    case BoundResource::kDmaInPort:
      return "dma_in_port";
    case BoundResource::kDmaOutPort:
      return "dma_out_port";
    case BoundResource::kDram:
      return "dram";
    case BoundResource::kHost:
      return "host";
    case BoundResource::kDeviceLink:
      return "device_link";
    case BoundResource::kHostLink:
      return "host_link";
  }
  return "?";
}

Cycles Bounds::cycles(BoundResource resource) const {
  switch (resource) {
    case BoundResource::kArray:
      return array_cycles;
    case BoundResource::kVector:
      return vector_cycles;
    case BoundResource::kMacPeak:
      return mac_peak_cycles;
    case BoundResource::kDmaInPort:
      return dma_in_port_cycles;
    case BoundResource::kDmaOutPort:
      return dma_out_port_cycles;
    case BoundResource::kDram:
      return dram_cycles;
    case BoundResource::kHost:
      return host_cycles;
    case BoundResource::kDeviceLink:
      return device_link_cycles;
    case BoundResource::kHostLink:
      return host_link_cycles;
  }
  return 0;
}

void add_bounds(Bounds& sum, const Bounds& part, std::uint64_t n) {
  sum.array_cycles += part.array_cycles * n;
  sum.vector_cycles += part.vector_cycles * n;
  sum.mac_peak_cycles += part.mac_peak_cycles * n;
  sum.dma_in_port_cycles += part.dma_in_port_cycles * n;
  sum.dma_out_port_cycles += part.dma_out_port_cycles * n;
  sum.dram_cycles += part.dram_cycles * n;
  sum.host_cycles += part.host_cycles * n;
  sum.device_link_cycles += part.device_link_cycles * n;
  sum.host_link_cycles += part.host_link_cycles * n;
}

std::optional<BoundResource> Bounds::binding() const {
  std::optional<BoundResource> best;
  auto consider = [&](BoundResource r) {
    if (cycles(r) > 0 && (!best || cycles(r) > cycles(*best))) best = r;
  };
  for (BoundResource r : kBoundResources) consider(r);
  for (BoundResource r : kLinkBoundResources) consider(r);
  return best;
}

const char* binding_name(const Bounds& bounds) {
  const std::optional<BoundResource> b = bounds.binding();
  return b ? bound_name(*b) : "none";
}

Bounds compute_bounds(const Workload& workload) {
  const DeviceInfo& d = workload.device;
  // Per device (each has its own slices, DMA ports and DRAM): the bound is its busiest device's.
  const std::uint32_t devices = device_count(workload);
  std::vector<U128> macs(devices, 0);
  std::vector<U128> read_bytes(devices, 0);
  std::vector<U128> write_bytes(devices, 0);
  // Isolated cycles queued on each engine: a unit runs one command at a time and none of them can
  // take less than its isolated figure.
  std::vector<U128> engine_cycles(workload.engines.size(), 0);
  // DEV_HDMA bytes per direction of a device pair (sender x devices + receiver); EXT_HDMA bytes.
  std::vector<U128> device_link_bytes(std::size_t{devices} * devices, 0);
  U128 host_link_bytes = 0;
  for (const CommandInfo& c : workload.commands) {
    const EngineInfo& engine = workload.engines[c.engine];
    const std::uint32_t device = engine.device;
    macs[device] += c.macs;
    read_bytes[device] += c.dram_read_bytes;
    write_bytes[device] += c.dram_write_bytes;
    engine_cycles[c.engine] += c.isolated_cycles;
    if (engine.kind == EngineKind::kDevHdma && c.peer < devices) {
      device_link_bytes[std::size_t{device} * devices + c.peer] += c.link_bytes;
    } else if (engine.kind == EngineKind::kExtHdma) {
      host_link_bytes += c.link_bytes;
    }
  }
  Bounds b;
  auto saturate = [](U128 v) { return static_cast<Cycles>(std::min<U128>(v, ~Cycles{0})); };
  for (std::size_t e = 0; e < workload.engines.size(); ++e) {
    const EngineInfo& engine = workload.engines[e];
    // Engines of more than one unit share their work among them.
    const Cycles per_unit =
        saturate(ceil_div(engine_cycles[e], std::max<std::uint32_t>(engine.channels, 1)));
    switch (engine.kind) {
      case EngineKind::kArray:
        b.array_cycles = std::max(b.array_cycles, per_unit);
        break;
      case EngineKind::kVector:
        b.vector_cycles = std::max(b.vector_cycles, per_unit);
        break;
      case EngineKind::kHost:
        b.host_cycles = std::max(b.host_cycles, per_unit);
        break;
      // DMA engines are bounded by their ports and DRAM, links by their rates, below.
      case EngineKind::kDmaIn:
      case EngineKind::kDmaOut:
      case EngineKind::kExtHdma:
      case EngineKind::kDevHdma:
      case EngineKind::kSync:
        break;
    }
  }
  const U128 peak_macs_per_cycle = U128{d.slices} * d.array_rows * d.array_cols;
  for (std::uint32_t v = 0; v < devices; ++v) {
    if (peak_macs_per_cycle > 0) {
      b.mac_peak_cycles =
          std::max(b.mac_peak_cycles, saturate(ceil_div(macs[v], peak_macs_per_cycle)));
    }
    // With ideal memory DMA and DRAM take no cycles: no memory bound.
    if (d.ideal_memory) continue;
    // Each DMA channel pushes at most bytes_per_cycle through its port every cycle, and keeps at
    // most max_outstanding bursts in flight (in_flight_cycles).
    if (d.dma_bytes_per_cycle > 0 && d.dma_in_channels > 0) {
      b.dma_in_port_cycles = std::max(
          {b.dma_in_port_cycles,
           saturate(ceil_div(read_bytes[v], U128{d.dma_in_channels} * d.dma_bytes_per_cycle)),
           in_flight_cycles(read_bytes[v], d.dma_in_channels, d)});
    }
    if (d.dma_bytes_per_cycle > 0 && d.dma_out_channels > 0) {
      b.dma_out_port_cycles = std::max(
          {b.dma_out_port_cycles,
           saturate(ceil_div(write_bytes[v], U128{d.dma_out_channels} * d.dma_bytes_per_cycle)),
           in_flight_cycles(write_bytes[v], d.dma_out_channels, d)});
    }
    // DRAM moves mbps * 10^6 bytes/s and the clock ticks khz * 10^3 times/s, so one cycle moves
    // mbps * 1000 / khz bytes: cycles = ceil(bytes * khz / (mbps * 1000)).
    if (d.dram_bandwidth_mbps > 0) {
      b.dram_cycles =
          std::max(b.dram_cycles, saturate(ceil_div((read_bytes[v] + write_bytes[v]) * d.clock_khz,
                                                    U128{d.dram_bandwidth_mbps} * 1000u)));
    }
  }
  for (const U128 bytes : device_link_bytes) {
    b.device_link_cycles = std::max(
        b.device_link_cycles,
        link_bound(bytes, d.device_link_mbps, 1, d.clock_khz, d.device_link_latency_cycles));
  }
  b.host_link_cycles = link_bound(host_link_bytes, d.host_link_mbps, d.host_link_channels,
                                  d.clock_khz, d.host_link_latency_cycles);
  return b;
}

double achieved_gbps(std::uint64_t bytes, Cycles cycles, std::uint64_t clock_khz) {
  if (cycles == 0) return 0.0;
  // bytes / (cycles / (khz * 1e3)) / 1e9 = bytes * khz / (cycles * 1e6)
  return static_cast<double>(bytes) * static_cast<double>(clock_khz) /
         (static_cast<double>(cycles) * 1e6);
}

std::vector<CommandStalls> command_stalls(const Workload& workload, const Timeline& timeline) {
  const std::size_t n = workload.commands.size();
  std::vector<CommandStalls> stalls(n);
  // Each (engine, unit)'s commands in order of start, ties in schedule order: only the command
  // before on the same unit matters. They mostly come in that order already.
  std::vector<std::vector<std::vector<std::uint32_t>>> on_unit(workload.engines.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    const CommandTiming& t = timeline.commands[i];
    auto& units = on_unit[workload.commands[i].engine];
    if (units.size() <= t.unit) units.resize(std::size_t{t.unit} + 1);
    units[t.unit].push_back(i);
  }
  const auto earlier = [&](std::uint32_t a, std::uint32_t b) {
    return timeline.commands[a].start < timeline.commands[b].start;
  };
  for (auto& units : on_unit) {
    for (std::vector<std::uint32_t>& order : units) {
      if (!std::is_sorted(order.begin(), order.end(), earlier)) {
        std::stable_sort(order.begin(), order.end(), earlier);
      }
      Cycles ready = 0;  // the end of the unit's command before
      for (std::uint32_t i : order) {
        const CommandInfo& c = workload.commands[i];
        const CommandTiming& t = timeline.commands[i];
        Cycles deps_done = 0;
        for (std::uint32_t d : c.deps) deps_done = std::max(deps_done, timeline.commands[d].end);
        stalls[i].deps = deps_done > ready ? deps_done - ready : 0;
        ready = t.end;
        const EngineKind kind = workload.engines[c.engine].kind;
        if (kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut) {
          const Cycles took = t.end - t.start;
          stalls[i].dram = took > c.isolated_cycles ? took - c.isolated_cycles : 0;
        }
      }
    }
  }
  return stalls;
}

}  // namespace npusim::profiler
