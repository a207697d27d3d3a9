#include "profiler/trace_model.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "profiler/dependants.h"
#include "profiler/stats.h"

namespace npusim::profiler {
namespace {

__extension__ using U128 = unsigned __int128;

// A topological rank of the commands (dependencies first; among ready commands, lowest index
// first), so that zero-length commands at one timestamp can be ordered after their dependencies.
// Commands on a dependency cycle (no timeline can contain them) get ranks in index order at the
// end.
std::vector<std::uint32_t> topological_rank(const Workload& w) {
  const std::size_t n = w.commands.size();
  const Dependants dependants(w.commands);
  std::vector<std::uint32_t> indegree = dependants.waiting();
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (indegree[c] == 0) ready.push(c);
  }
  constexpr std::uint32_t kUnranked = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> rank(n, kUnranked);
  std::uint32_t next = 0;
  while (!ready.empty()) {
    const std::uint32_t c = ready.top();
    ready.pop();
    rank[c] = next++;
    for (const std::uint32_t s : dependants.of(c)) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  for (std::uint32_t c = 0; c < n; ++c) {
    if (rank[c] == kUnranked) rank[c] = next++;
  }
  return rank;
}

// Window counters: a sample at the start of each window whose value differs from the previous
// window's (a counter is a step function: repeating a value adds nothing), then 0 at the end of
// the run.
std::vector<TraceCounterSample> window_samples(const std::vector<double>& values, Cycles window,
                                               Cycles total, std::uint64_t khz) {
  std::vector<TraceCounterSample> samples;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k > 0 && values[k] == values[k - 1]) continue;
    samples.push_back({trace_ns(window * k, khz), values[k]});
  }
  if (!values.empty()) samples.push_back({trace_ns(total, khz), 0.0});
  return samples;
}

// Cycle length of window k (the last one may be shorter).
Cycles window_length(std::size_t k, Cycles window, Cycles total) {
  const Cycles from = window * k;
  return std::min(total, from + window) - from;
}

// Two samples at one nanosecond (possible above 1 GHz): the later one wins, so that timestamps
// strictly increase.
void coalesce(std::vector<TraceCounterSample>& samples) {
  std::vector<TraceCounterSample> out;
  out.reserve(samples.size());
  for (const TraceCounterSample& s : samples) {
    if (!out.empty() && out.back().ts_ns == s.ts_ns) {
      out.back().value = s.value;
    } else {
      out.push_back(s);
    }
  }
  samples = std::move(out);
}

// Per window, the sum of each command's `amount` spread evenly over its duration (all of it in
// the window where it happens when it takes no cycles).
template <class Amount>
std::vector<double> spread_over_windows(const Workload& w, const Timeline& t, Cycles window,
                                        Cycles total, Amount amount) {
  const std::size_t windows = static_cast<std::size_t>((total + window - 1) / window);
  std::vector<double> sums(windows, 0.0);
  if (windows == 0) return sums;
  for (std::size_t i = 0; i < w.commands.size(); ++i) {
    const double a = amount(w.commands[i]);
    if (a == 0) continue;
    const Cycles s = t.commands[i].start;
    const Cycles e = t.commands[i].end;
    if (e <= s) {
      sums[std::min<std::size_t>(static_cast<std::size_t>(s / window), windows - 1)] += a;
      continue;
    }
    const auto first = static_cast<std::size_t>(s / window);
    const auto last =
        std::min<std::size_t>(static_cast<std::size_t>((e - 1) / window), windows - 1);
    for (std::size_t k = first; k <= last; ++k) {
      const Cycles from = std::max<Cycles>(s, window * k);
      const Cycles to = std::min<Cycles>(e, window * (k + 1));
      if (to <= from) continue;
      sums[k] += a * static_cast<double>(to - from) / static_cast<double>(e - s);
    }
  }
  return sums;
}

// `in(c)`: whether command c is one of the process's (all of them with one process per run).
template <class In>
std::vector<double> dram_gbps(const Workload& w, const Timeline& t, Cycles window, Cycles total,
                              In in) {
  std::vector<double> bytes = spread_over_windows(w, t, window, total, [&](const CommandInfo& c) {
    return in(c) && is_dma(w.engines[c.engine].kind)
               ? static_cast<double>(c.dram_read_bytes + c.dram_write_bytes)
               : 0.0;
  });
  const std::size_t windows = bytes.size();
  // GB/s = bytes / (len / (khz * 10^3) s) / 10^9 = bytes * khz / (len * 10^6).
  const auto khz = static_cast<double>(w.device.clock_khz == 0 ? 1000000 : w.device.clock_khz);
  for (std::size_t k = 0; k < windows; ++k) {
    bytes[k] = bytes[k] * khz / (static_cast<double>(window_length(k, window, total)) * 1e6);
  }
  return bytes;
}

// Power in W per window: the commands' dynamic energy spread over their durations, plus the
// static power (profiler/energy.h).
// Each device has the static power of its slices and DRAM.
template <class In>
std::vector<double> power_watts(const Workload& w, const Timeline& t, Cycles window, Cycles total,
                                In in) {
  std::vector<double> fj = spread_over_windows(w, t, window, total, [&](const CommandInfo& c) {
    return in(c) ? static_cast<double>(c.energy.total_fj()) : 0.0;
  });
  const DeviceInfo& d = w.device;
  const double static_w =
      static_cast<double>(std::uint64_t{d.slices} * d.slice_static_uw + d.dram_static_uw) / 1e6;
  // W = fJ / (len / (khz * 10^3) s) / 10^15 = fJ * khz / (len * 10^12).
  const auto khz = static_cast<double>(d.clock_khz == 0 ? 1000000 : d.clock_khz);
  for (std::size_t k = 0; k < fj.size(); ++k) {
    fj[k] = fj[k] * khz / (static_cast<double>(window_length(k, window, total)) * 1e12) + static_w;
  }
  return fj;
}

// Busy % per window of one engine: the union of its units' intervals, as in EngineStats.
std::vector<double> utilisation(std::vector<std::pair<Cycles, Cycles>> intervals, Cycles window,
                                Cycles total) {
  const std::size_t windows = static_cast<std::size_t>((total + window - 1) / window);
  std::vector<Cycles> busy(windows, 0);
  std::sort(intervals.begin(), intervals.end());
  Cycles covered = 0;
  for (const auto& [start, end] : intervals) {
    const Cycles s = std::max(start, covered);
    if (end <= s) continue;
    covered = end;
    for (auto k = static_cast<std::size_t>(s / window); k < windows && window * k < end; ++k) {
      const Cycles from = std::max<Cycles>(s, window * k);
      const Cycles to = std::min<Cycles>(end, window * (k + 1));
      if (to > from) busy[k] += to - from;
    }
  }
  std::vector<double> pct(windows);
  for (std::size_t k = 0; k < windows; ++k) {
    pct[k] =
        100.0 * static_cast<double>(busy[k]) / static_cast<double>(window_length(k, window, total));
  }
  return pct;
}

// Local memory in use, exactly: at each cycle where it changes, the value after that cycle's
// frees and then its allocations (frees first, as in LramStats); `changes` are the process's.
std::vector<TraceCounterSample> lram_samples(const Workload& w,
                                             const std::vector<LramChange>& changes) {
  const std::uint64_t khz = w.device.clock_khz;
  std::vector<TraceCounterSample> samples;
  if (changes.empty() || changes.front().at > 0) samples.push_back({0, 0.0});
  std::uint64_t in_use = 0;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const LramChange& ch = changes[i];
    const CommandInfo& c = w.commands[ch.command];
    if (ch.is_alloc) {
      in_use += c.lram_alloc_bytes;
    } else {
      in_use -= std::min(in_use, c.lram_free_bytes);
    }
    if (i + 1 < changes.size() && changes[i + 1].at == ch.at) continue;  // same cycle
    const auto value = static_cast<double>(in_use);
    if (!samples.empty() && samples.back().value == value) continue;  // no change
    samples.push_back({trace_ns(ch.at, khz), value});
  }
  return samples;
}

// Aggregated traces: local memory as its peak in each counter window (the exact step function has
// a sample per allocation and free, as many as the commands).
std::vector<double> lram_window_peaks(const Workload& w, const std::vector<LramChange>& changes,
                                      Cycles window, Cycles total) {
  const std::size_t windows = static_cast<std::size_t>((total + window - 1) / window);
  std::vector<double> peaks(windows, 0.0);
  if (windows == 0) return peaks;
  std::uint64_t in_use = 0;
  std::size_t k = 0;  // the window of the last change; later ones start at its occupancy
  auto hold_until = [&](std::size_t last) {  // windows k+1 .. last-1 are at `in_use` throughout
    for (; k + 1 < last; ++k) peaks[k + 1] = std::max(peaks[k + 1], static_cast<double>(in_use));
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const LramChange& ch = changes[i];
    if (i == 0 || changes[i - 1].at != ch.at) {
      const auto at = std::min<std::size_t>(static_cast<std::size_t>(ch.at / window), windows - 1);
      if (at > k) {
        hold_until(at);
        k = at;
        // The occupancy before the change holds from the window's start up to it.
        if (ch.at > window * at) peaks[k] = std::max(peaks[k], static_cast<double>(in_use));
      }
    }
    const CommandInfo& c = w.commands[ch.command];
    if (ch.is_alloc) {
      in_use += c.lram_alloc_bytes;
    } else {
      in_use -= std::min(in_use, c.lram_free_bytes);
    }
    if (i + 1 < changes.size() && changes[i + 1].at == ch.at) continue;  // same cycle
    peaks[k] = std::max(peaks[k], static_cast<double>(in_use));
  }
  hold_until(windows);
  return peaks;
}

// How a run's engines map to its processes: one process per run; or, with several devices, one
// per device (its engines, EXT_HDMA included: the RBLN profiler shows External HDMA under the
// device it serves) and then a Host process (the HOST engine).
struct ProcessLayout {
  bool per_device = false;
  std::uint32_t devices = 1;
  std::uint32_t per_run = 1;             // processes per run
  std::vector<std::uint32_t> of_engine;  // the engine's process, counted within its run
};

ProcessLayout process_layout(const Workload& w) {
  ProcessLayout l;
  l.devices = device_count(w);
  l.per_device = l.devices > 1;
  l.per_run = l.per_device ? l.devices + 1 : 1;
  l.of_engine.assign(w.engines.size(), 0);
  if (!l.per_device) return l;
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    l.of_engine[e] = w.engines[e].kind == EngineKind::kHost ? l.devices : w.engines[e].device;
  }
  return l;
}

// "Device 1 (runtime simulation)", "Host (runtime simulation)"; the run's name alone with one
// process per run.
std::string process_name(const ProcessLayout& l, std::uint32_t q, const std::string& run) {
  if (!l.per_device) return run;
  return (q < l.devices ? "Device " + std::to_string(q) : std::string("Host")) + " (" + run + ")";
}

// An engine's name inside its device's process, without the redundant "DEV<d>." prefix.
std::string engine_name_in_process(const EngineInfo& e, const ProcessLayout& l) {
  const std::string prefix = device_prefix(e.device);
  if (l.per_device && e.name.rfind(prefix, 0) == 0) return e.name.substr(prefix.size());
  return e.name;
}

// Where the next track's tid, uuid and sort index come from.
struct TrackIds {
  std::int32_t& next_tid;
  std::uint64_t& next_uuid;
  std::int32_t& sort_index;
};

// Slices of one (engine, unit) that would overlap go to extra lanes, so that slices on a track
// never overlap: each item goes to the first lane whose last item has ended by its start.
struct Lane {
  std::uint32_t engine, unit, lane;
  Cycles last_end;
  std::vector<std::uint32_t> items;
};
struct LaneItem {
  std::uint32_t engine, unit;
  Cycles start, end;
};
// `order` lists the items by (engine, unit, start, ...); `item(i)` describes item i.
template <typename Item>
std::vector<Lane> assign_lanes(const std::vector<std::uint32_t>& order, Item item) {
  std::vector<Lane> lanes;  // in (engine, unit, lane) order
  std::size_t group_begin = 0;
  for (std::uint32_t i : order) {
    const LaneItem it = item(i);
    if (lanes.empty() || lanes[group_begin].engine != it.engine ||
        lanes[group_begin].unit != it.unit) {
      group_begin = lanes.size();
      lanes.push_back({it.engine, it.unit, 0, 0, {}});
    }
    std::size_t l = group_begin;
    while (l < lanes.size() && lanes[l].last_end > it.start) ++l;
    if (l == lanes.size()) {
      lanes.push_back({it.engine, it.unit, static_cast<std::uint32_t>(l - group_begin), 0, {}});
    }
    lanes[l].last_end = it.end;
    lanes[l].items.push_back(i);
  }
  return lanes;
}

// A track for a lane in the run whose first process is `first`: `{group}: {engine}`, ` ch<unit>`
// when `per_unit` and the engine has channels, ` lane <k>` for an extra lane. Returns its index.
std::uint32_t add_track(TraceModel& m, std::uint32_t first, const ProcessLayout& layout,
                        const Lane& lane, bool per_unit, TrackIds& ids) {
  TraceTrack track;
  track.process = first + layout.of_engine[lane.engine];
  track.engine = lane.engine;
  track.unit = lane.unit;
  track.lane = lane.lane;
  const EngineInfo& e = m.workload->engines[lane.engine];
  const std::string name = engine_name_in_process(e, layout);
  track.name = e.trace_category.empty() ? name : e.trace_category + ": " + name;
  if (per_unit && e.channels > 1) track.name += " ch" + std::to_string(lane.unit);
  if (lane.lane > 0) track.name += " lane " + std::to_string(lane.lane);
  track.tid = ids.next_tid++;
  track.sort_index = ids.sort_index++;
  track.uuid = ids.next_uuid++;
  m.tracks.push_back(std::move(track));
  return static_cast<std::uint32_t>(m.tracks.size() - 1);
}

// One track per (engine, unit, lane) of run r, whose first process is `first`, and one slice per
// command.
void add_command_tracks(TraceModel& m, std::uint32_t r, std::uint32_t first,
                        const ProcessLayout& layout, const Timeline& t,
                        const std::vector<CommandStalls>& stalls,
                        const std::vector<std::uint32_t>& rank, TrackIds& ids) {
  const Workload& w = *m.workload;
  const auto n = static_cast<std::uint32_t>(w.commands.size());
  const std::uint64_t khz = w.device.clock_khz;
  // Commands of each (engine, unit) in track order: start, end, dependency rank.
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  auto key = [&](std::uint32_t i) {
    const CommandTiming& ct = t.commands[i];
    return std::make_tuple(w.commands[i].engine, ct.unit, ct.start, ct.end, rank[i]);
  };
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  const std::vector<Lane> lanes = assign_lanes(order, [&](std::uint32_t i) {
    return LaneItem{w.commands[i].engine, t.commands[i].unit, t.commands[i].start,
                    t.commands[i].end};
  });
  for (const Lane& lane : lanes) {
    const std::uint32_t track = add_track(m, first, layout, lane, true, ids);
    for (std::uint32_t i : lane.items) {
      TraceSlice& s = m.slices[std::size_t{r} * n + i];
      s.process = m.tracks[track].process;
      s.command = i;
      s.track = track;
      s.begin_ns = trace_ns(t.commands[i].start, khz);
      s.end_ns = trace_ns(t.commands[i].end, khz);
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    m.slices[std::size_t{r} * n + i].stall_deps = stalls[i].deps;
    m.slices[std::size_t{r} * n + i].stall_dram = stalls[i].dram;
  }
}

// Aggregated: one track per (engine, lane) of the run whose first process is `first_process` and
// one slice per OpGroup, appended to m.groups and m.slices in group order.
void add_group_tracks(TraceModel& m, std::uint32_t first_process, const ProcessLayout& layout,
                      const Timeline& t, const std::vector<CommandStalls>& stalls, TrackIds& ids) {
  const Workload& w = *m.workload;
  const std::uint64_t khz = w.device.clock_khz;
  const auto first = static_cast<std::uint32_t>(m.groups.size());
  std::vector<OpGroup> groups = group_ops(w, t, stalls);
  for (OpGroup& g : groups) m.groups.push_back(std::move(g));
  const auto count = static_cast<std::uint32_t>(m.groups.size()) - first;
  std::vector<std::uint32_t> order(count);
  for (std::uint32_t i = 0; i < count; ++i) order[i] = first + i;
  auto key = [&](std::uint32_t i) {
    const OpGroup& g = m.groups[i];
    return std::make_tuple(g.engine, g.start, g.end, g.first_index);
  };
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  const std::vector<Lane> lanes = assign_lanes(order, [&](std::uint32_t i) {
    return LaneItem{m.groups[i].engine, 0, m.groups[i].start, m.groups[i].end};
  });
  m.slices.resize(m.groups.size());
  for (const Lane& lane : lanes) {
    const std::uint32_t track = add_track(m, first_process, layout, lane, false, ids);
    for (std::uint32_t i : lane.items) {
      TraceSlice& s = m.slices[i];
      s.process = m.tracks[track].process;
      s.command = i;
      s.track = track;
      s.begin_ns = trace_ns(m.groups[i].start, khz);
      s.end_ns = trace_ns(m.groups[i].end, khz);
      s.stall_deps = m.groups[i].wait_deps;
      s.stall_dram = m.groups[i].wait_dram;
    }
  }
}

// The counters of process p, the run's process q: DRAM GB/s, LRAM bytes and the engines'
// utilisation, and its Power W into `power` (added after every other counter). A Host process
// (several devices) has only its engine's utilisation.
void add_counters(TraceModel& m, std::uint32_t p, std::uint32_t q, const ProcessLayout& layout,
                  std::int32_t& sort_index, std::uint64_t& next_uuid,
                  std::vector<TraceCounter>& power) {
  const Workload& w = *m.workload;
  const Timeline& t = *m.processes[p].timeline;
  const std::uint64_t khz = w.device.clock_khz;
  const Cycles total = m.processes[p].total_cycles;
  const Cycles window = m.processes[p].window_cycles;
  auto in = [&](const CommandInfo& c) { return layout.of_engine[c.engine] == q; };
  const bool device = q < layout.devices;
  auto add_counter = [&](const std::string& group, TraceCounter::Unit unit,
                         std::vector<TraceCounterSample> samples) {
    TraceCounter c;
    c.process = p;
    c.group = group;
    c.series = unit == TraceCounter::Unit::kGbps    ? "GB/s"
               : unit == TraceCounter::Unit::kBytes ? "bytes"
                                                    : "%";
    c.name = c.group + " " + c.series;
    c.unit = unit;
    c.sort_index = sort_index++;
    c.uuid = next_uuid++;
    coalesce(samples);
    c.samples = std::move(samples);
    m.counters.push_back(std::move(c));
  };
  if (device) {
    add_counter("DRAM", TraceCounter::Unit::kGbps,
                window_samples(dram_gbps(w, t, window, total, in), window, total, khz));
    std::vector<LramChange> changes = lram_changes(w, t);
    if (layout.per_device) {
      changes.erase(
          std::remove_if(changes.begin(), changes.end(),
                         [&](const LramChange& ch) { return !in(w.commands[ch.command]); }),
          changes.end());
    }
    if (m.options.aggregate) {
      add_counter("LRAM", TraceCounter::Unit::kBytes,
                  window_samples(lram_window_peaks(w, changes, window, total), window, total, khz));
    } else {
      add_counter("LRAM", TraceCounter::Unit::kBytes, lram_samples(w, changes));
    }
  }
  std::vector<std::vector<std::pair<Cycles, Cycles>>> per_engine(w.engines.size());
  for (std::uint32_t i = 0; i < w.commands.size(); ++i) {
    if (!in(w.commands[i])) continue;
    per_engine[w.commands[i].engine].emplace_back(t.commands[i].start, t.commands[i].end);
  }
  for (std::size_t e = 0; e < w.engines.size(); ++e) {
    if (per_engine[e].empty()) continue;  // like tracks: only engines that ran something
    add_counter(
        engine_name_in_process(w.engines[e], layout) + " utilisation", TraceCounter::Unit::kPercent,
        window_samples(utilisation(std::move(per_engine[e]), window, total), window, total, khz));
  }
  if (!device) return;
  // Power comes last and takes its track id after every other track of the file, so that
  // adding it left the other counters as they were.
  TraceCounter c;
  c.process = p;
  c.group = "Power";
  c.series = "W";
  c.name = "Power W";
  c.unit = TraceCounter::Unit::kWatts;
  c.sort_index = sort_index++;
  std::vector<TraceCounterSample> samples =
      window_samples(power_watts(w, t, window, total, in), window, total, khz);
  coalesce(samples);
  c.samples = std::move(samples);
  power.push_back(std::move(c));
}

// Flows, per run; ids in (run, dependant, dependency order) order. Every edge with all_flows;
// otherwise each command's binding dependency: the one that ended last (ties: the first listed),
// since that is when it could start. A critical path walked back from the last command follows
// either such an edge or its engine's queue, so its dependency edges are all drawn. With several
// devices, every edge between two processes is drawn too: a Device HDMA to the commands on its
// peer that wait for it, a Device Sync to and from its peers' commands.
void add_flows(TraceModel& m, const std::vector<TraceRun>& runs, const ProcessLayout& layout) {
  const Workload& w = *m.workload;
  const auto n = static_cast<std::uint32_t>(w.commands.size());
  std::uint64_t next_flow = 1;
  for (std::uint32_t r = 0; r < runs.size(); ++r) {
    const Timeline& t = *runs[r].timeline;
    for (std::uint32_t c = 0; c < n; ++c) {
      const IndexList& deps = w.commands[c].deps;
      auto repeated = [&](std::size_t k) {  // a repeated edge draws one arrow
        const auto at = deps.begin() + static_cast<std::ptrdiff_t>(k);
        return std::find(deps.begin(), at, deps[k]) != at;
      };
      std::uint32_t binding = n;
      for (std::size_t k = 0; k < deps.size(); ++k) {
        const std::uint32_t d = deps[k];
        if (d >= n || d == c || repeated(k)) continue;
        if (binding == n || t.commands[d].end > t.commands[binding].end) binding = d;
      }
      const std::uint32_t process = layout.of_engine[w.commands[c].engine];
      for (std::size_t k = 0; k < deps.size(); ++k) {
        const std::uint32_t d = deps[k];
        if (d >= n || d == c || repeated(k)) continue;
        if (m.options.all_flows || d == binding ||
            layout.of_engine[w.commands[d].engine] != process) {
          m.flows.push_back({next_flow++, static_cast<std::uint32_t>(std::size_t{r} * n + d),
                             static_cast<std::uint32_t>(std::size_t{r} * n + c)});
        }
      }
    }
  }
}

}  // namespace

std::uint64_t trace_ns(Cycles cycles, std::uint64_t clock_khz) {
  if (clock_khz == 0) return cycles;
  const U128 ns = U128{cycles} * 1000000u / clock_khz;
  constexpr U128 kMax = std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(ns > kMax ? kMax : ns);
}

std::string trace_us_text(std::uint64_t ns) {
  std::string frac = std::to_string(ns % 1000);
  return std::to_string(ns / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

std::vector<TraceArg> TraceModel::slice_args(const TraceSlice& slice) const {
  std::vector<TraceArg> args;
  slice_args(slice, args);
  return args;
}

void TraceModel::slice_args(const TraceSlice& slice, std::vector<TraceArg>& args) const {
  if (options.aggregate) {
    group_args(groups[slice.command], args);
    return;
  }
  const Workload& w = *workload;
  const CommandInfo& c = w.commands[slice.command];
  const CommandTiming& t = processes[slice.process].timeline->commands[slice.command];
  const Cycles cycles = t.end - t.start;
  args.clear();
  auto uint_arg = [&](const char* name, std::uint64_t v) {
    TraceArg a;
    a.name = name;
    a.kind = TraceArg::Kind::kUint;
    a.uint_value = v;
    args.push_back(std::move(a));
  };
  auto string_arg = [&](const char* name, std::string_view v) {
    TraceArg a;
    a.name = name;
    a.kind = TraceArg::Kind::kString;
    a.string_value = v;
    args.push_back(std::move(a));
  };
  string_arg("id", c.id);
  uint_arg("index", slice.command);
  if (!options.detailed_args) {
    uint_arg("cycles", cycles);
    return;
  }
  const EngineInfo& engine = w.engines[c.engine];
  string_arg("engine", engine.name);
  string_arg("group", engine.trace_category);
  string_arg("op", c.op_type);
  uint_arg("cycles", cycles);
  uint_arg("start_cycle", t.start);
  uint_arg("end_cycle", t.end);
  uint_arg("unit", t.unit);
  const std::uint64_t dram_bytes = c.dram_read_bytes + c.dram_write_bytes;
  uint_arg("bytes", dram_bytes + c.link_bytes);
  uint_arg("macs", c.macs);
  const EngineKind kind = engine.kind;
  double util = -1;
  if (cycles > 0 && kind == EngineKind::kArray) {
    const double peak = static_cast<double>(w.device.array_rows) *
                        static_cast<double>(w.device.array_cols) * static_cast<double>(cycles);
    if (peak > 0) util = 100.0 * static_cast<double>(c.macs) / peak;
  } else if (cycles > 0 && is_dma(kind) && w.device.dram_bandwidth_mbps > 0 &&
             w.device.clock_khz > 0) {
    // DRAM moves mbps * 1000 / khz bytes per cycle.
    const double peak = static_cast<double>(w.device.dram_bandwidth_mbps) * 1000.0 /
                        static_cast<double>(w.device.clock_khz) * static_cast<double>(cycles);
    util = 100.0 * static_cast<double>(dram_bytes) / peak;
  }
  if (util >= 0) {
    TraceArg a;
    a.name = "utilisation_pct";
    a.kind = TraceArg::Kind::kDouble;
    a.double_value = util;
    args.push_back(std::move(a));
  }
  string_arg("layer", c.layer);
  string_arg("location", c.location);
  uint_arg("program", c.program);
  string_arg("program_name", c.program < w.programs.size()
                                 ? std::string_view(w.programs[c.program].name)
                                 : std::string_view());
  uint_arg("stall_deps_cycles", slice.stall_deps);
  uint_arg("stall_dram_cycles", slice.stall_dram);
}

void TraceModel::group_args(const OpGroup& g, std::vector<TraceArg>& args) const {
  const Workload& w = *workload;
  args.clear();
  auto uint_arg = [&](const char* name, std::uint64_t v) {
    TraceArg a;
    a.name = name;
    a.uint_value = v;
    args.push_back(a);
  };
  auto string_arg = [&](const char* name, std::string_view v) {
    TraceArg a;
    a.name = name;
    a.kind = TraceArg::Kind::kString;
    a.string_value = v;
    args.push_back(a);
  };
  string_arg("layer", g.layer);
  if (options.detailed_args) {
    string_arg("engine", w.engines[g.engine].name);
    string_arg("group", w.engines[g.engine].trace_category);
    string_arg("op", g.op);
  }
  uint_arg("commands", g.commands);
  uint_arg("cycles", g.cycles);
  if (!options.detailed_args) return;
  uint_arg("start_cycle", g.start);
  uint_arg("end_cycle", g.end);
  uint_arg("bytes", g.bytes);
  uint_arg("macs", g.macs);
  uint_arg("first_index", g.first_index);
  uint_arg("program", g.program);
  string_arg("program_name", g.program < w.programs.size()
                                 ? std::string_view(w.programs[g.program].name)
                                 : std::string_view());
  uint_arg("stall_deps_cycles", g.wait_deps);
  uint_arg("stall_dram_cycles", g.wait_dram);
}

std::vector<std::uint64_t> TraceModel::flows_out(std::uint32_t slice) const {
  std::vector<std::uint64_t> ids;
  if (slice + 1 >= out_offsets.size()) return ids;
  for (std::uint32_t i = out_offsets[slice]; i < out_offsets[slice + 1]; ++i) {
    ids.push_back(flows[out_flows[i]].id);
  }
  return ids;
}

std::vector<std::uint64_t> TraceModel::flows_in(std::uint32_t slice) const {
  std::vector<std::uint64_t> ids;
  if (slice + 1 >= in_offsets.size()) return ids;
  for (std::uint32_t i = in_offsets[slice]; i < in_offsets[slice + 1]; ++i) {
    ids.push_back(flows[in_flows[i]].id);
  }
  return ids;
}

TraceModel build_trace_model(const Workload& workload, const std::vector<TraceRun>& runs,
                             const TraceOptions& options, std::vector<std::string> names) {
  const Workload& w = workload;
  const auto n = static_cast<std::uint32_t>(w.commands.size());
  TraceModel m;
  m.workload = &workload;
  m.options = options;
  if (!options.aggregate) {
    m.names = names.empty() ? command_names(w) : std::move(names);
    if (m.names.size() != n) {
      throw std::invalid_argument("trace: " + std::to_string(m.names.size()) + " names for " +
                                  std::to_string(n) + " commands");
    }
  }
  const std::vector<std::uint32_t> rank =
      options.aggregate ? std::vector<std::uint32_t>() : topological_rank(w);
  const ProcessLayout layout = process_layout(w);

  // Tids: unique in the file, above every pid, increasing in track order.
  std::int32_t next_tid = static_cast<std::int32_t>(runs.size() * layout.per_run) + 1;
  std::uint64_t next_uuid = 1;
  if (!options.aggregate) m.slices.resize(std::size_t{n} * runs.size());
  std::vector<TraceCounter> power;  // one per device process, appended after every other counter

  for (std::uint32_t r = 0; r < runs.size(); ++r) {
    if (runs[r].timeline == nullptr) {
      throw std::invalid_argument("trace: run '" + runs[r].name + "' has no timeline");
    }
    const Timeline& t = *runs[r].timeline;
    if (t.commands.size() != n) {
      throw std::invalid_argument("trace: timeline of run '" + runs[r].name + "' has " +
                                  std::to_string(t.commands.size()) + " commands, the workload " +
                                  std::to_string(n));
    }
    const auto first = static_cast<std::uint32_t>(m.processes.size());
    for (std::uint32_t q = 0; q < layout.per_run; ++q) {
      TraceProcess proc;
      proc.pid = static_cast<std::int32_t>(first + q) + 1;
      proc.name = process_name(layout, q, runs[r].name);
      proc.uuid = next_uuid++;
      proc.timeline = &t;
      proc.total_cycles = t.total_cycles();
      proc.window_cycles = std::max<Cycles>(
          1, (proc.total_cycles + kTraceCounterWindows - 1) / kTraceCounterWindows);
      m.processes.push_back(proc);
    }

    std::int32_t sort_index = 0;
    TrackIds ids{next_tid, next_uuid, sort_index};
    std::optional<TimelineFigures> local;
    const std::vector<CommandStalls>& stalls =
        figures_of(runs[r].figures, workload, t, local).stalls();
    if (options.aggregate) {
      add_group_tracks(m, first, layout, t, stalls, ids);
    } else {
      add_command_tracks(m, r, first, layout, t, stalls, rank, ids);
    }
    if (options.counters) {
      for (std::uint32_t q = 0; q < layout.per_run; ++q) {
        add_counters(m, first + q, q, layout, sort_index, next_uuid, power);
      }
    }
  }

  for (TraceCounter& c : power) {
    c.uuid = next_uuid++;
    m.counters.push_back(std::move(c));
  }
  if (options.flows && !options.aggregate) add_flows(m, runs, layout);

  const std::size_t slice_count = m.slices.size();
  auto build_csr = [&](bool by_source, std::vector<std::uint32_t>& offsets,
                       std::vector<std::uint32_t>& items) {
    offsets.assign(slice_count + 1, 0);
    for (const TraceFlow& f : m.flows) offsets[(by_source ? f.from : f.to) + 1] += 1;
    for (std::size_t s = 0; s < slice_count; ++s) offsets[s + 1] += offsets[s];
    items.assign(m.flows.size(), 0);
    std::vector<std::uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (std::uint32_t f = 0; f < m.flows.size(); ++f) {
      items[fill[by_source ? m.flows[f].from : m.flows[f].to]++] = f;
    }
  };
  build_csr(true, m.out_offsets, m.out_flows);
  build_csr(false, m.in_offsets, m.in_flows);

  // Events in one total order (see TraceModel::events).
  m.events.reserve(slice_count * 2);
  for (std::uint32_t s = 0; s < slice_count; ++s) {
    m.events.push_back({TraceEvent::Kind::kBegin, s, 0, m.slices[s].begin_ns});
    m.events.push_back({TraceEvent::Kind::kEnd, s, 0, m.slices[s].end_ns});
  }
  for (std::uint32_t c = 0; c < m.counters.size(); ++c) {
    for (std::uint32_t k = 0; k < m.counters[c].samples.size(); ++k) {
      m.events.push_back({TraceEvent::Kind::kCounter, c, k, m.counters[c].samples[k].ts_ns});
    }
  }
  auto event_key = [&](const TraceEvent& e) -> std::array<std::uint64_t, 7> {
    if (e.kind == TraceEvent::Kind::kCounter) return {e.ts_ns, 3, e.index, e.sample, 0, 0, 0};
    const TraceSlice& s = m.slices[e.index];
    const bool is_end = e.kind == TraceEvent::Kind::kEnd;
    if (s.begin_ns == s.end_ns && m.options.aggregate) {  // zero-length, in group order
      const OpGroup& g = m.groups[s.command];
      return {e.ts_ns, 1, g.start, g.end, e.index, 0, is_end ? 1u : 0u};
    }
    if (s.begin_ns == s.end_ns) {  // zero-length: begin and end together, in dependency order
      const CommandTiming& ct = m.processes[s.process].timeline->commands[s.command];
      return {e.ts_ns, 1, ct.start, ct.end, rank[s.command], s.process, is_end ? 1u : 0u};
    }
    return {e.ts_ns, is_end ? 0u : 2u, s.track, e.index, 0, 0, 0};
  };
  // Sorted as (timestamp, index) pairs: most comparisons differ in the timestamp, the first
  // element of every event_key, and need no key; equal ones compare the whole keys. The outcomes
  // are event_key's, so the order is the one sorting by event_key gives, for 16 bytes an event.
  struct ByTime {
    std::uint64_t ts_ns;
    std::uint32_t event;
  };
  std::vector<ByTime> order;
  order.reserve(m.events.size());
  for (std::uint32_t i = 0; i < m.events.size(); ++i) order.push_back({m.events[i].ts_ns, i});
  std::sort(order.begin(), order.end(), [&](const ByTime& a, const ByTime& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    return event_key(m.events[a.event]) < event_key(m.events[b.event]);
  });
  // Event j of the sorted list is old event order[j].event: moved into place cycle by cycle,
  // without a second list of events.
  constexpr std::uint32_t kPlaced = std::numeric_limits<std::uint32_t>::max();
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    if (order[i].event == kPlaced) continue;
    const TraceEvent first = m.events[i];
    for (std::uint32_t j = i;;) {
      const std::uint32_t from = std::exchange(order[j].event, kPlaced);
      if (from == i) {
        m.events[j] = first;
        break;
      }
      m.events[j] = m.events[from];
      j = from;
    }
  }
  return m;
}

}  // namespace npusim::profiler
