#include "profiler/report.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "profiler/trace_model.h"

namespace npusim::profiler {
namespace {

__extension__ using U128 = unsigned __int128;
using Json = nlohmann::json;

std::string u128_text(U128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s += static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  return std::string(s.rbegin(), s.rend());
}

U128 pow10(int n) {
  U128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// q / 10^decimals as text with exactly `decimals` decimals.
std::string fixed_point(U128 q, int decimals) {
  if (decimals <= 0) return u128_text(q);
  const U128 scale = pow10(decimals);
  std::string frac = u128_text(q % scale);
  return u128_text(q / scale) + "." +
         std::string(static_cast<std::size_t>(decimals) - frac.size(), '0') + frac;
}

// round(num / den), halves up.
U128 round_div(U128 num, U128 den) { return (2 * num + den) / (2 * den); }

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string num(std::uint64_t v) { return std::to_string(v); }

std::string layer_label(const std::string& layer) { return layer.empty() ? "(none)" : layer; }

// ---- stats.json access with exact messages ----

const Json& member(const Json& j, const std::string& pointer, const char* key,
                   const std::string& file) {
  if (!j.is_object())
    throw ParseError(file, 0, pointer.empty() ? "/" : pointer, "expected an object");
  const auto it = j.find(key);
  if (it == j.end()) throw ParseError(file, 0, pointer + "/" + key, "missing");
  return *it;
}

std::uint64_t uint_at(const Json& j, const std::string& pointer, const char* key,
                      const std::string& file) {
  const Json& v = member(j, pointer, key, file);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    throw ParseError(file, 0, pointer + "/" + key, "expected a non-negative integer");
  }
  return v.get<std::uint64_t>();
}

std::string string_at(const Json& j, const std::string& pointer, const char* key,
                      const std::string& file) {
  const Json& v = member(j, pointer, key, file);
  if (!v.is_string()) throw ParseError(file, 0, pointer + "/" + key, "expected a string");
  return v.get<std::string>();
}

double number_at(const Json& j, const std::string& pointer, const char* key,
                 const std::string& file) {
  const Json& v = member(j, pointer, key, file);
  if (!v.is_number()) throw ParseError(file, 0, pointer + "/" + key, "expected a number");
  return v.get<double>();
}

void check_format(const Json& stats, const std::string& file) {
  if (!stats.is_object())
    throw ParseError(file, 0, "", "expected a JSON object (an npusim stats.json)");
  if (string_at(stats, "", "format", file) != "npusim-stats") {
    throw ParseError(file, 0, "/format", "expected \"npusim-stats\"");
  }
}

// The per-op figures of a section, or the reason they are missing.
const Json* ops_of(const Json& stats, const std::string& section, const std::string& file,
                   std::string& why) {
  const Json& s = member(stats, "", section.c_str(), file);
  if (s.is_object() && s.contains("ops")) return &s["ops"];
  const auto level = stats.find("stats_level");
  const auto aggregated = stats.find("aggregated");
  const bool low_level =
      level != stats.end() && level->is_number_integer() && level->get<std::int64_t>() < 70;
  if (!low_level && aggregated != stats.end() && aggregated->is_boolean() &&
      aggregated->get<bool>()) {
    // Past --trace-detail auto's command threshold the per-op list is summed per layer per
    // engine (op_groups): its spans cannot give the unions the report is made of.
    const auto commands = stats.find("commands");
    why = file + ": its per-op figures were aggregated into /" + section + "/op_groups (" +
          (commands != stats.end() && commands->is_number_unsigned()
               ? std::to_string(commands->get<std::uint64_t>()) + " commands"
               : std::string("a large run")) +
          ", past --trace-detail auto's threshold); rerun with --trace-detail full for them, or "
          "use npusim report --layers";
  } else if (level != stats.end() && level->is_number_integer()) {
    why =
        file + ": written at stats level " + std::to_string(level->get<std::int64_t>()) +
        ", without per-op figures; they need stats level 70 or more (npusim run --stats-level 70)";
  } else {
    why = file + ": /" + section +
          "/ops is missing; per-op figures need stats level 70 or more "
          "(npusim run --stats-level 70)";
  }
  return nullptr;
}

}  // namespace

// ---- interval arithmetic ----

std::vector<Interval> interval_union(std::vector<Interval> intervals) {
  const auto before = [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  };
  // One engine's commands mostly come in order already: checking is far cheaper than sorting.
  if (!std::is_sorted(intervals.begin(), intervals.end(), before)) {
    std::sort(intervals.begin(), intervals.end(), before);
  }
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

std::uint64_t union_length(std::vector<Interval> intervals) {
  std::uint64_t total = 0;
  for (const Interval& i : interval_union(std::move(intervals))) total += i.end - i.start;
  return total;
}

std::uint64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::uint64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::uint64_t from = std::max(a[i].start, b[j].start);
    const std::uint64_t to = std::min(a[i].end, b[j].end);
    if (to > from) total += to - from;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

// ---- exact text ----

std::string percent_text(std::uint64_t part, std::uint64_t whole, int decimals) {
  if (whole == 0) return fixed_point(0, decimals);
  return fixed_point(round_div(U128{part} * 100 * pow10(decimals), whole), decimals);
}

std::string us_text(std::uint64_t cycles, std::uint64_t clock_khz) {
  const U128 khz = clock_khz == 0 ? 1000000 : clock_khz;
  return fixed_point(round_div(U128{cycles} * 1000000, khz), 3);
}

std::optional<EngineKind> engine_kind_of_name(const std::string& full_name) {
  if (full_name == "HOST") return EngineKind::kHost;
  std::string engine = full_name;
  // A device's engine in a multi-device run: "DEV<d>." + its name.
  if (engine.rfind("DEV", 0) == 0) {
    const std::size_t dot = engine.find('.');
    if (dot == std::string::npos || dot == 3 || engine.find_first_not_of("0123456789", 3) != dot) {
      return std::nullopt;
    }
    engine = engine.substr(dot + 1);
  }
  if (engine == "DMA_IN") return EngineKind::kDmaIn;
  if (engine == "DMA_OUT") return EngineKind::kDmaOut;
  if (engine == "EXT_HDMA") return EngineKind::kExtHdma;
  if (engine == "DEV_HDMA") return EngineKind::kDevHdma;
  if (engine == "SYNC") return EngineKind::kSync;
  if (engine.rfind("SLICE", 0) == 0) {
    const std::size_t dot = engine.find('.');
    if (dot != std::string::npos && dot > 5 && engine.find_first_not_of("0123456789", 5) == dot) {
      const std::string unit = engine.substr(dot + 1);
      if (unit == "ARRAY") return EngineKind::kArray;
      if (unit == "VECTOR") return EngineKind::kVector;
    }
  }
  return std::nullopt;
}

// ---- npusim report ----

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ParseError(path, 0, "", std::string("not valid JSON: ") + e.what());
  }
}

namespace {

// <section>.devices of a multi-device run (docs/outputs.md#statsjson).
void read_devices(const Json& section, const std::string& sp, const std::string& file,
                  ReportInput& in) {
  const Json& devices = section.at("devices");
  if (!devices.is_array()) throw ParseError(file, 0, sp + "/devices", "expected an array");
  for (std::size_t v = 0; v < devices.size(); ++v) {
    const Json& d = devices[v];
    const std::string p = sp + "/devices/" + std::to_string(v);
    ReportInput::Device r;
    r.busy_cycles = uint_at(d, p, "busy_cycles", file);
    r.compute_busy_cycles = uint_at(d, p, "compute_busy_cycles", file);
    r.collective_cycles = uint_at(d, p, "collective_cycles", file);
    r.dev_hdma_sent_bytes = uint_at(d, p, "dev_hdma_sent_bytes", file);
    r.dev_hdma_received_bytes = uint_at(d, p, "dev_hdma_received_bytes", file);
    r.ext_hdma_to_device_bytes = uint_at(d, p, "ext_hdma_to_device_bytes", file);
    r.ext_hdma_to_host_bytes = uint_at(d, p, "ext_hdma_to_host_bytes", file);
    in.devices.push_back(r);
  }
}

}  // namespace

ReportInput read_report_input(const nlohmann::json& stats, const std::string& file,
                              bool prefer_estimate) {
  check_format(stats, file);
  ReportInput in;
  in.file = file;
  in.section = !prefer_estimate && stats.contains("runtime") ? "runtime" : "estimate";
  const Json& model = member(stats, "", "model", file);
  in.model_name = string_at(model, "/model", "name", file);
  in.model_file = string_at(model, "/model", "file", file);
  const Json& device = member(stats, "", "device", file);
  in.config = string_at(device, "/device", "config", file);
  const double mhz = number_at(device, "/device", "clock_mhz", file);
  if (!(mhz > 0) || mhz > 1e9)
    throw ParseError(file, 0, "/device/clock_mhz", "expected a clock above 0 MHz");
  in.clock_khz = static_cast<std::uint64_t>(std::llround(mhz * 1000));
  if (in.clock_khz == 0)
    throw ParseError(file, 0, "/device/clock_mhz", "expected a clock of at least 1 kHz");
  in.slices = uint_at(device, "/device", "slices", file);
  in.array_rows = uint_at(device, "/device", "array_rows", file);
  in.array_cols = uint_at(device, "/device", "array_cols", file);
  in.dram_read_bytes = uint_at(stats, "", "dram_read_bytes", file);
  in.dram_write_bytes = uint_at(stats, "", "dram_write_bytes", file);
  const std::string sp = "/" + in.section;
  const Json& section = member(stats, "", in.section.c_str(), file);
  in.total_cycles = uint_at(section, sp, "total_cycles", file);
  in.lram_peak_bytes = uint_at(section, sp, "lram_peak_bytes", file);
  // Energy came with format version 1's later files: read when present.
  auto pj_at = [&](const Json& j, const std::string& pointer, const char* key) {
    const double v = number_at(j, pointer, key, file);
    if (!(v >= 0) || v > 1e12)
      throw ParseError(file, 0, pointer + "/" + key, "expected 0 to 10^12");
    return static_cast<std::uint64_t>(std::llround(v * 1e6));
  };
  if (section.contains("energy_uj")) {
    in.energy_pj = pj_at(section, sp, "energy_uj");
    in.static_energy_pj = pj_at(section, sp, "static_energy_uj");
  }
  std::string why;
  const Json* ops = ops_of(stats, in.section, file, why);
  if (ops == nullptr) throw ParseError("", 0, "", why);
  if (!ops->is_array()) throw ParseError(file, 0, sp + "/ops", "expected an array");
  in.ops.reserve(ops->size());
  for (std::size_t i = 0; i < ops->size(); ++i) {
    const Json& o = (*ops)[i];
    const std::string p = sp + "/ops/" + std::to_string(i);
    OpRecord r;
    r.index = uint_at(o, p, "index", file);
    r.id = string_at(o, p, "id", file);
    r.op = string_at(o, p, "op", file);
    r.layer = string_at(o, p, "layer", file);
    r.engine = string_at(o, p, "engine", file);
    r.program = uint_at(o, p, "program", file);
    r.start = uint_at(o, p, "start_cycle", file);
    r.end = uint_at(o, p, "end_cycle", file);
    if (r.end < r.start) throw ParseError(file, 0, p + "/end_cycle", "is before start_cycle");
    if (r.end > in.total_cycles)
      throw ParseError(file, 0, p + "/end_cycle", "is after " + sp + "/total_cycles");
    r.bytes = uint_at(o, p, "bytes", file);
    r.macs = uint_at(o, p, "macs", file);
    if (o.contains("energy_uj")) r.energy_pj = pj_at(o, p, "energy_uj");
    in.ops.push_back(std::move(r));
  }
  if (section.contains("devices")) read_devices(section, sp, file, in);
  return in;
}

ReportInput read_report_input_file(const std::string& path, bool prefer_estimate) {
  return read_report_input(read_json_file(path), path, prefer_estimate);
}

std::vector<OpTypeFigures> op_type_figures(const std::vector<OpSpan>& ops) {
  std::vector<OpTypeFigures> types;
  std::map<std::string_view, std::size_t> type_index;
  // Per type, per engine: its intervals there.
  std::vector<std::map<std::string_view, std::vector<Interval>>> on_engine;
  std::vector<std::vector<Interval>> all;
  // Ops come in runs of one type on one engine: the last lookups are kept.
  std::size_t type = 0;
  std::vector<Interval>* engine_list = nullptr;
  std::string_view last_op, last_engine;
  for (const OpSpan& op : ops) {
    if (engine_list == nullptr || op.op != last_op) {
      auto [t, added] = type_index.emplace(op.op, types.size());
      if (added) {
        types.push_back({std::string(op.op), 0, 0, 0, "", 0, 0});
        on_engine.emplace_back();
        all.emplace_back();
      }
      type = t->second;
      engine_list = nullptr;
    }
    if (engine_list == nullptr || op.engine != last_engine) {
      engine_list = &on_engine[type][op.engine];
    }
    last_op = op.op;
    last_engine = op.engine;
    OpTypeFigures& f = types[type];
    f.count += 1;
    f.cycles += op.end - op.start;
    all[type].push_back({op.start, op.end});
    engine_list->push_back({op.start, op.end});
  }
  for (std::size_t t = 0; t < types.size(); ++t) {
    OpTypeFigures& f = types[t];
    f.wall = union_length(std::move(all[t]));
    f.engine_count = on_engine[t].size();
    f.engines = f.engine_count == 1 ? std::string(on_engine[t].begin()->first)
                                    : std::to_string(f.engine_count) + " engines";
    for (auto& [engine, list] : on_engine[t]) f.engine_busy += union_length(std::move(list));
  }
  std::stable_sort(types.begin(), types.end(), [](const OpTypeFigures& a, const OpTypeFigures& b) {
    return a.cycles != b.cycles ? a.cycles > b.cycles : a.op < b.op;
  });
  return types;
}

std::vector<OpTypeFigures> op_type_figures(const std::vector<OpRecord>& ops) {
  std::vector<OpSpan> spans;
  spans.reserve(ops.size());
  for (const OpRecord& op : ops) spans.push_back({op.op, op.engine, op.start, op.end});
  return op_type_figures(spans);
}

void write_op_type_table(std::ostream& out, const std::vector<OpTypeFigures>& types,
                         Cycles op_cycles, Cycles invoke_cycles) {
  out << "op types by cycles (share = cycles / all ops' cycles, summing to 100; wall = union / "
         "invoke time; engine busy = union on its engines / (engines x invoke time)):\n";
  out << "  " << pad_right("op type", 22) << pad_left("count", 8) << pad_left("cycles", 16)
      << pad_left("share %", 9) << pad_left("cdf %", 9) << pad_left("wall cycles", 16)
      << pad_left("wall %", 9) << "  " << pad_right("engine", 14) << pad_left("engine busy %", 14)
      << '\n';
  Cycles cumulative = 0;
  for (const OpTypeFigures& t : types) {
    cumulative += t.cycles;
    // engine busy %: engine_busy / (engine_count * invoke), exactly.
    const U128 whole = U128{t.engine_count} * invoke_cycles;
    const std::string busy =
        whole == 0 ? "0.00" : fixed_point(round_div(U128{t.engine_busy} * pow10(4), whole), 2);
    out << "  " << pad_right(t.op, 22) << pad_left(num(t.count), 8) << pad_left(num(t.cycles), 16)
        << pad_left(percent_text(t.cycles, op_cycles), 9)
        << pad_left(percent_text(cumulative, op_cycles), 9) << pad_left(num(t.wall), 16)
        << pad_left(percent_text(t.wall, invoke_cycles), 9) << "  " << pad_right(t.engines, 14)
        << pad_left(busy, 14) << '\n';
  }
}

Report compute_report(const ReportInput& in) {
  Report r;
  ModelFigures& m = r.model;
  m.invoke_cycles = in.total_cycles;
  m.dram_bytes = in.dram_read_bytes + in.dram_write_bytes;
  m.variable_buffer_bytes = in.lram_peak_bytes;
  std::vector<Interval> npu, dma;
  bool any_npu = false;
  Cycles npu_first = 0, npu_last = 0;
  std::unordered_map<std::string, std::size_t> layer_index;
  struct LayerIntervals {
    std::vector<Interval> all, array, vector, dma_in, dma_out, other;
  };
  std::vector<LayerIntervals> layer_intervals;
  for (const OpRecord& op : in.ops) {
    const Interval iv{op.start, op.end};
    const Cycles cycles = op.end - op.start;
    m.op_cycles += cycles;
    const std::optional<EngineKind> kind = engine_kind_of_name(op.engine);
    if (kind && on_slice(*kind)) npu.push_back(iv);
    if (kind && is_dma(*kind)) dma.push_back(iv);
    if (kind && (on_slice(*kind) || is_dma(*kind))) {
      npu_first = any_npu ? std::min(npu_first, op.start) : op.start;
      npu_last = any_npu ? std::max(npu_last, op.end) : op.end;
      any_npu = true;
    }

    auto [l, new_layer] = layer_index.emplace(op.layer, r.layers.size());
    if (new_layer) {
      LayerFigures f;
      f.layer = op.layer;
      f.first_start = op.start;
      f.last_end = op.end;
      r.layers.push_back(f);
      layer_intervals.emplace_back();
    }
    if (new_layer) r.layer_ops.push_back({op.layer, 0, op.start, op.end, 0});
    LayerOpFigures& lo = r.layer_ops[l->second];
    lo.commands += 1;
    lo.first_start = std::min(lo.first_start, op.start);
    lo.last_end = std::max(lo.last_end, op.end);
    lo.cycles += cycles;
    LayerFigures& f = r.layers[l->second];
    f.commands += 1;
    f.first_start = std::min(f.first_start, op.start);
    f.last_end = std::max(f.last_end, op.end);
    LayerIntervals& li = layer_intervals[l->second];
    li.all.push_back(iv);
    switch (kind.value_or(EngineKind::kHost)) {  // HOST and unknown engines count as other
      case EngineKind::kArray:
        li.array.push_back(iv);
        break;
      case EngineKind::kVector:
        li.vector.push_back(iv);
        break;
      case EngineKind::kDmaIn:
        li.dma_in.push_back(iv);
        break;
      case EngineKind::kDmaOut:
        li.dma_out.push_back(iv);
        break;
      case EngineKind::kHost:
      case EngineKind::kExtHdma:
      case EngineKind::kDevHdma:
      case EngineKind::kSync:
        li.other.push_back(iv);
        break;
    }
  }
  m.npu_cycles = npu_last - npu_first;
  const std::vector<Interval> compute_union = interval_union(std::move(npu));
  const std::vector<Interval> dma_union = interval_union(std::move(dma));
  for (const Interval& i : compute_union) m.compute_cycles += i.end - i.start;
  for (const Interval& i : dma_union) m.dma_cycles += i.end - i.start;
  m.overlap_cycles = intersection_length(compute_union, dma_union);
  r.op_types = op_type_figures(in.ops);
  for (std::size_t l = 0; l < r.layers.size(); ++l) {
    LayerIntervals& li = layer_intervals[l];
    LayerFigures& f = r.layers[l];
    f.cycles = union_length(std::move(li.all));
    f.array = union_length(std::move(li.array));
    f.vector = union_length(std::move(li.vector));
    f.dma_in = union_length(std::move(li.dma_in));
    f.dma_out = union_length(std::move(li.dma_out));
    f.other = union_length(std::move(li.other));
  }
  return r;
}

// Dynamic energy of the ops by `key_of` (op type, layer), largest first (ties by name), with its
// share of all ops' dynamic energy; static energy belongs to no op.
template <class Key>
void write_energy_table(std::ostream& out, const std::vector<OpRecord>& ops, const char* what,
                        Key key_of) {
  std::map<std::string, std::uint64_t> by_key;
  std::uint64_t total = 0;
  for (const OpRecord& op : ops) {
    by_key[key_of(op)] += op.energy_pj;
    total += op.energy_pj;
  }
  std::vector<std::pair<std::string, std::uint64_t>> rows(by_key.begin(), by_key.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "\nenergy by " << what << " (dynamic; share of all ops' dynamic energy):\n";
  out << "  " << pad_right(what, 28) << pad_left("uJ", 16) << pad_left("share %", 9) << '\n';
  for (const auto& [key, pj] : rows) {
    out << "  " << pad_right(key, 28) << pad_left(fixed_point(pj, 6), 16)
        << pad_left(percent_text(pj, total), 9) << '\n';
  }
}

namespace {

// Multi-device runs: per device its busy time, time in collectives and link traffic, as
// summary.txt's devices table, with the % exact as everywhere in the report.
void write_devices(std::ostream& out, const ReportInput& in) {
  const Cycles total = in.total_cycles;
  out << "devices (busy and collective % of invoke time; link bytes: DH = Device HDMA, EH = "
         "External HDMA):\n";
  out << "  " << pad_right("device", 8) << pad_left("busy cycles", 14) << pad_left("busy %", 9)
      << pad_left("compute", 14) << pad_left("collective", 14) << pad_left("coll. %", 9)
      << pad_left("DH out B", 14) << pad_left("DH in B", 14) << pad_left("EH in B", 14)
      << pad_left("EH out B", 14) << '\n';
  for (std::size_t v = 0; v < in.devices.size(); ++v) {
    const ReportInput::Device& d = in.devices[v];
    out << "  " << pad_right("DEV" + std::to_string(v), 8) << pad_left(num(d.busy_cycles), 14)
        << pad_left(percent_text(d.busy_cycles, total), 9)
        << pad_left(num(d.compute_busy_cycles), 14) << pad_left(num(d.collective_cycles), 14)
        << pad_left(percent_text(d.collective_cycles, total), 9)
        << pad_left(num(d.dev_hdma_sent_bytes), 14) << pad_left(num(d.dev_hdma_received_bytes), 14)
        << pad_left(num(d.ext_hdma_to_device_bytes), 14)
        << pad_left(num(d.ext_hdma_to_host_bytes), 14) << '\n';
  }
  out << '\n';
}

}  // namespace

void write_report(std::ostream& out, const ReportInput& in, const Report& r, ReportMode mode) {
  const ModelFigures& m = r.model;
  const std::uint64_t khz = in.clock_khz;
  out << "npusim report: " << in.file << " ("
      << (in.section == "runtime" ? "runtime simulation" : "compile-time estimate") << ")\n";
  out << "model:   " << in.model_name << " (" << in.model_file << "), " << in.ops.size()
      << " commands\n";
  out << "config:  " << in.config << ": " << fixed_point(khz, 3) << " MHz, " << in.slices
      << " slice(s) of " << in.array_rows << "x" << in.array_cols << "\n\n";

  out << "totals:\n";
  out << "  " << pad_right("invoke time", 22) << pad_left(us_text(m.invoke_cycles, khz), 16)
      << " us" << pad_left(num(m.invoke_cycles), 16) << " cycles\n";
  out << "  " << pad_right("NPU time", 22) << pad_left(us_text(m.npu_cycles, khz), 16) << " us"
      << pad_left(num(m.npu_cycles), 16) << " cycles  "
      << percent_text(m.npu_cycles, m.invoke_cycles)
      << " % of invoke time  (first to last NPU command, DMA included)\n";
  // The breakdown of NPU time: compute only + DMA only + both + idle = NPU time.
  const Cycles compute_only = m.compute_cycles - m.overlap_cycles;
  const Cycles dma_only = m.dma_cycles - m.overlap_cycles;
  const Cycles busy = compute_only + dma_only + m.overlap_cycles;
  const Cycles idle = m.npu_cycles > busy ? m.npu_cycles - busy : 0;
  for (const auto& [label, cycles] :
       std::vector<std::pair<const char*, Cycles>>{{"  compute only", compute_only},
                                                   {"  DMA only", dma_only},
                                                   {"  compute and DMA", m.overlap_cycles},
                                                   {"  neither", idle}}) {
    out << "  " << pad_right(label, 22) << pad_left(us_text(cycles, khz), 16) << " us"
        << pad_left(num(cycles), 16) << " cycles  " << percent_text(cycles, m.npu_cycles)
        << " % of NPU time\n";
  }
  out << "  " << pad_right("compute time", 22) << pad_left(us_text(m.compute_cycles, khz), 16)
      << " us" << pad_left(num(m.compute_cycles), 16) << " cycles  "
      << percent_text(m.compute_cycles, m.invoke_cycles) << " % of invoke time\n";
  out << "  " << pad_right("DMA time", 22) << pad_left(us_text(m.dma_cycles, khz), 16) << " us"
      << pad_left(num(m.dma_cycles), 16) << " cycles  "
      << percent_text(m.dma_cycles, m.invoke_cycles) << " % of invoke time\n";
  out << "  " << pad_right("DRAM bytes moved", 22) << pad_left(num(m.dram_bytes), 16)
      << " B   (read " << in.dram_read_bytes << " B, written " << in.dram_write_bytes << " B)\n";
  out << "  " << pad_right("variable buffer size", 22) << pad_left(num(m.variable_buffer_bytes), 16)
      << " B   (peak local memory)\n";
  if (in.energy_pj) {
    out << "  " << pad_right("energy", 22) << pad_left(fixed_point(*in.energy_pj, 6), 16)
        << " uJ  (dynamic " << fixed_point(*in.energy_pj - in.static_energy_pj, 6) << ", static "
        << fixed_point(in.static_energy_pj, 6) << ")\n";
  }
  out << '\n';
  if (!in.devices.empty()) write_devices(out, in);

  if (mode == ReportMode::kTotal) {
    write_op_type_table(out, r.op_types, m.op_cycles, m.invoke_cycles);
    if (in.energy_pj)
      write_energy_table(out, in.ops, "op type", [](const OpRecord& op) { return op.op; });
  } else if (mode == ReportMode::kEach) {
    out << "ops by layer, one row per model operator (share = its ops' cycles / all ops' "
           "cycles; --by command lists every command):\n";
    out << "  " << pad_left("commands", 8) << pad_left("first start", 14)
        << pad_left("last end", 14) << pad_left("cycles", 14) << pad_left("share %", 9)
        << "  layer\n";
    for (const LayerOpFigures& f : r.layer_ops) {
      out << "  " << pad_left(num(f.commands), 8) << pad_left(num(f.first_start), 14)
          << pad_left(num(f.last_end), 14) << pad_left(num(f.cycles), 14)
          << pad_left(percent_text(f.cycles, m.op_cycles), 9) << "  " << layer_label(f.layer)
          << '\n';
    }
    if (in.energy_pj)
      write_energy_table(out, in.ops, "layer",
                         [](const OpRecord& op) { return layer_label(op.layer); });
  } else {
    out << "ops by index (share = cycles / all ops' cycles):\n";
    out << "  " << pad_left("index", 7) << "  " << pad_right("id", 10) << pad_right("op", 20)
        << pad_right("engine", 15) << pad_left("start", 14) << pad_left("end", 14)
        << pad_left("cycles", 12) << pad_left("share %", 9) << "  layer\n";
    for (const OpRecord& op : in.ops) {
      out << "  " << pad_left(num(op.index), 7) << "  " << pad_right(op.id, 9) << ' '
          << pad_right(op.op, 19) << ' ' << pad_right(op.engine, 14) << ' '
          << pad_left(num(op.start), 14) << pad_left(num(op.end), 14)
          << pad_left(num(op.end - op.start), 12)
          << pad_left(percent_text(op.end - op.start, m.op_cycles), 9) << "  "
          << layer_label(op.layer) << '\n';
    }
  }
  out << '\n';

  const bool other = std::any_of(r.layers.begin(), r.layers.end(),
                                 [](const LayerFigures& f) { return f.other > 0; });
  out << "layers (cycles = union of the layer's commands; shares of those cycles, overlapping):\n";
  out << "  " << pad_left("commands", 8) << pad_left("cycles", 14) << pad_left("us", 14)
      << pad_left("array %", 10) << pad_left("vector %", 10) << pad_left("DMA load %", 12)
      << pad_left("DMA store %", 13) << (other ? pad_left("other %", 10) : "") << "  layer\n";
  for (const LayerFigures& f : r.layers) {
    out << "  " << pad_left(num(f.commands), 8) << pad_left(num(f.cycles), 14)
        << pad_left(us_text(f.cycles, khz), 14) << pad_left(percent_text(f.array, f.cycles), 10)
        << pad_left(percent_text(f.vector, f.cycles), 10)
        << pad_left(percent_text(f.dma_in, f.cycles), 12)
        << pad_left(percent_text(f.dma_out, f.cycles), 13)
        << (other ? pad_left(percent_text(f.other, f.cycles), 10) : "") << "  "
        << layer_label(f.layer) << '\n';
  }
}

// ---- npusim diff ----

std::optional<Tolerance> parse_tolerance(const std::string& text) {
  const std::size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(whole) || whole.size() > 12) return std::nullopt;
  if (dot != std::string::npos && (!digits(frac) || frac.size() > 6)) return std::nullopt;
  Tolerance t;
  t.micro_pct = std::stoull(whole) * 1000000 +
                (frac.empty() ? 0 : std::stoull(frac + std::string(6 - frac.size(), '0')));
  return t;
}

std::string tolerance_text(const Tolerance& t) {
  std::string text = fixed_point(t.micro_pct, 6);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

bool past_tolerance(std::uint64_t a, std::uint64_t b, const Tolerance& t) {
  if (a == 0) return b > 0;
  const U128 diff = b > a ? b - a : a - b;
  return diff * 100 * 1000000 > U128{t.micro_pct} * a;
}

std::string delta_percent_text(std::uint64_t a, std::uint64_t b) {
  if (a == 0) return b == 0 ? "0.00" : "n/a";
  if (a == b) return "0.00";
  const U128 diff = b > a ? b - a : a - b;
  return (b > a ? "+" : "-") + fixed_point(round_div(diff * 10000, a), 2);
}

std::string delta_text(std::uint64_t a, std::uint64_t b) {
  if (a == b) return "0";
  return b > a ? "+" + num(b - a) : "-" + num(a - b);
}

std::optional<std::map<std::string, std::string>> read_layer_map(const nlohmann::json& stats,
                                                                 const std::string& file,
                                                                 std::string& why) {
  check_format(stats, file);
  const Json* ops = ops_of(stats, "estimate", file, why);
  if (ops == nullptr) return std::nullopt;
  if (!ops->is_array()) throw ParseError(file, 0, "/estimate/ops", "expected an array");
  std::map<std::string, std::string> layers;
  for (std::size_t i = 0; i < ops->size(); ++i) {
    const std::string p = "/estimate/ops/" + std::to_string(i);
    layers[string_at((*ops)[i], p, "id", file)] = string_at((*ops)[i], p, "layer", file);
  }
  return layers;
}

namespace {

// |b - a|, the sort key of a delta; a missing side counts as 0.
std::uint64_t magnitude(std::uint64_t a, std::uint64_t b) { return b > a ? b - a : a - b; }

std::map<std::string, std::vector<Interval>> layer_intervals(const DiffSide& side,
                                                             std::vector<std::string>& order) {
  std::map<std::string, std::vector<Interval>> by_layer;
  for (const TimelineRow& row : side.rows) {
    const auto it = side.layer_of->find(row.id);
    const std::string layer = it == side.layer_of->end() ? "(unknown)" : layer_label(it->second);
    auto [entry, inserted] = by_layer.try_emplace(layer);
    if (inserted && std::find(order.begin(), order.end(), layer) == order.end())
      order.push_back(layer);
    entry->second.push_back({row.start, row.end});
  }
  return by_layer;
}

}  // namespace

DiffResult compute_diff(const DiffSide& a, const DiffSide& b, const Tolerance& tolerance) {
  DiffResult r;
  for (const TimelineRow& row : a.rows) r.total_a = std::max(r.total_a, row.end);
  for (const TimelineRow& row : b.rows) r.total_b = std::max(r.total_b, row.end);
  r.total_past = past_tolerance(r.total_a, r.total_b, tolerance);

  std::unordered_map<std::string, const TimelineRow*> in_b;
  for (const TimelineRow& row : b.rows) in_b.emplace(row.id, &row);
  std::unordered_map<std::string, bool> in_a;
  for (const TimelineRow& row : a.rows) {
    in_a.emplace(row.id, true);
    CommandDelta d{row.id, row.end - row.start, std::nullopt};
    const auto it = in_b.find(row.id);
    if (it != in_b.end()) {
      d.b = it->second->end - it->second->start;
      r.matched += 1;
    } else {
      r.only_a.push_back(row.id);
    }
    r.commands.push_back(std::move(d));
  }
  for (const TimelineRow& row : b.rows) {
    if (in_a.count(row.id)) continue;
    r.only_b.push_back(row.id);
    r.commands.push_back({row.id, std::nullopt, row.end - row.start});
  }
  std::stable_sort(r.commands.begin(), r.commands.end(),
                   [](const CommandDelta& x, const CommandDelta& y) {
                     return magnitude(x.a.value_or(0), x.b.value_or(0)) >
                            magnitude(y.a.value_or(0), y.b.value_or(0));
                   });

  r.has_layers = a.layer_of.has_value() && b.layer_of.has_value();
  if (r.has_layers) {
    std::vector<std::string> order;
    auto la = layer_intervals(a, order);
    auto lb = layer_intervals(b, order);
    for (const std::string& layer : order) {
      LayerDelta d;
      d.layer = layer;
      if (auto it = la.find(layer); it != la.end()) d.a = union_length(std::move(it->second));
      if (auto it = lb.find(layer); it != lb.end()) d.b = union_length(std::move(it->second));
      d.past = past_tolerance(d.a, d.b, tolerance);
      r.any_layer_past = r.any_layer_past || d.past;
      r.layers.push_back(std::move(d));
    }
    std::stable_sort(r.layers.begin(), r.layers.end(),
                     [](const LayerDelta& x, const LayerDelta& y) {
                       return magnitude(x.a, x.b) > magnitude(y.a, y.b);
                     });
  }
  return r;
}

bool diff_in_time(DiffSide& a, DiffSide& b) {
  if (a.clock_khz == 0 || b.clock_khz == 0 || a.clock_khz == b.clock_khz) return false;
  for (DiffSide* side : {&a, &b}) {
    for (TimelineRow& row : side->rows) {
      row.start = trace_ns(row.start, side->clock_khz);
      row.end = trace_ns(row.end, side->clock_khz);
    }
  }
  return true;
}

bool write_diff(std::ostream& out, const DiffSide& a, const DiffSide& b, const DiffResult& r,
                const Tolerance& tolerance, const DiffPrintOptions& options) {
  const std::string tol = tolerance_text(tolerance);
  // Values are cycles, or ns printed as µs with 3 decimals (options.in_time).
  const std::string unit = options.in_time ? "us" : "cycles";
  auto value = [&](std::uint64_t v) {
    return options.in_time ? trace_us_text(v) : std::to_string(v);
  };
  auto delta = [&](std::uint64_t x, std::uint64_t y) {
    if (!options.in_time) return profiler::delta_text(x, y);
    return x == y ? std::string("0") : (y > x ? "+" : "-") + trace_us_text(y > x ? y - x : x - y);
  };
  auto clock_text = [](const DiffSide& s) {
    return s.clock_khz == 0 ? std::string("unknown") : fixed_point(s.clock_khz, 3) + " MHz";
  };
  out << "npusim diff (tolerance " << tol << " %)\n";
  out << "  A: " << a.label << " (" << a.rows.size() << " commands, clock " << clock_text(a)
      << ")\n";
  out << "  B: " << b.label << " (" << b.rows.size() << " commands, clock " << clock_text(b)
      << ")\n";
  if (options.in_time) {
    out << "  the clocks differ: times are compared in us (cycles x 1000 / clock in kHz), not "
           "cycles\n";
  }
  out << '\n';
  out << "total " << unit << " (last End): A " << value(r.total_a) << ", B " << value(r.total_b)
      << ", delta " << delta(r.total_a, r.total_b) << " ("
      << delta_percent_text(r.total_a, r.total_b) << " %)\n";
  out << "commands: " << r.matched << " matched, " << r.only_a.size() << " only in A, "
      << r.only_b.size() << " only in B\n";
  auto id_list = [&](const char* label, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    out << "  " << label << ": ";
    for (std::size_t i = 0; i < ids.size() && i < 10; ++i) out << (i ? ", " : "") << ids[i];
    if (ids.size() > 10) out << ", ... (" << ids.size() - 10 << " more)";
    out << '\n';
  };
  id_list("only in A", r.only_a);
  id_list("only in B", r.only_b);
  out << '\n';

  auto shown = [&](std::size_t n) { return options.top == 0 ? n : std::min(n, options.top); };
  auto heading = [&](std::size_t n) {
    return shown(n) < n ? "top " + std::to_string(shown(n)) + " of " + std::to_string(n)
                        : "all " + std::to_string(n);
  };
  auto mark = [](bool past) { return past ? "! " : "  "; };
  auto opt = [&](const std::optional<Cycles>& v) { return v ? value(*v) : std::string("-"); };

  std::size_t layers_past = 0;
  if (r.has_layers) {
    for (const LayerDelta& d : r.layers) layers_past += d.past ? 1 : 0;
    out << "layers by |delta| (" << unit
        << " = union of the layer's commands; ! = past the tolerance), " << heading(r.layers.size())
        << ":\n";
    out << "  " << pad_left("A " + unit, 14) << pad_left("B " + unit, 14) << pad_left("delta", 14)
        << pad_left("delta %", 10) << "  layer\n";
    for (std::size_t i = 0; i < shown(r.layers.size()); ++i) {
      const LayerDelta& d = r.layers[i];
      out << mark(d.past) << pad_left(value(d.a), 14) << pad_left(value(d.b), 14)
          << pad_left(delta(d.a, d.b), 14) << pad_left(delta_percent_text(d.a, d.b), 10) << "  "
          << d.layer << '\n';
    }
  } else {
    std::string why = a.layer_of ? b.no_layers_reason : a.no_layers_reason;
    out << "layers: not compared: " << (why.empty() ? "no stats.json with per-op figures" : why)
        << '\n';
  }
  out << '\n';

  out << "commands by |delta| (" << unit << " = End - Start; ! = past the tolerance), "
      << heading(r.commands.size()) << ":\n";
  out << "  " << pad_right("id", 12) << pad_left("A " + unit, 14) << pad_left("B " + unit, 14)
      << pad_left("delta", 14) << pad_left("delta %", 10) << '\n';
  for (std::size_t i = 0; i < shown(r.commands.size()); ++i) {
    const CommandDelta& d = r.commands[i];
    const bool both = d.a && d.b;
    out << mark(both && past_tolerance(*d.a, *d.b, tolerance)) << pad_right(d.id, 12)
        << pad_left(opt(d.a), 14) << pad_left(opt(d.b), 14)
        << pad_left(delta(d.a.value_or(0), d.b.value_or(0)), 14)
        << pad_left(both ? delta_percent_text(*d.a, *d.b) : "n/a", 10) << '\n';
  }
  out << '\n';

  const bool failed = r.total_past || (options.fail_on_layer && r.has_layers && r.any_layer_past);
  out << "result: " << (failed ? "FAIL" : "OK") << " (total "
      << delta_percent_text(r.total_a, r.total_b) << " %";
  if (options.fail_on_layer && r.has_layers) out << ", " << layers_past << " layer(s) past";
  out << ", tolerance " << tol << " %)\n";
  return failed;
}

}  // namespace npusim::profiler
