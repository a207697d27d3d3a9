#include "profiler/layer_stats.h"

#include <algorithm>
#include <unordered_map>

#include "profiler/csv_readers.h"
#include "profiler/stats.h"

#include <cstdio>

namespace npusim::profiler {
namespace {

// Adds command `c` to its layer's row; `seen_on_engine`: whether an array command of the layer
// ran on each engine already.
void add_command(LayerStats& r, std::vector<bool>& seen_on_engine, const Workload& w,
                 const CommandInfo& c, const CommandTiming& ct, const CommandStalls& stalls) {
  const EngineKind kind = w.engines[c.engine].kind;
  ++r.commands;
  r.dma_bytes += c.dram_read_bytes + c.dram_write_bytes;
  if (kind == EngineKind::kArray || kind == EngineKind::kVector) {
    r.span_start = std::min(r.span_start, ct.start);
    r.span_end = std::max(r.span_end, ct.end);
  }
  if (kind == EngineKind::kArray) {
    r.array_cycles += c.isolated_cycles;
    if (seen_on_engine[c.engine]) r.stall_cycles += stalls.deps;
    seen_on_engine[c.engine] = true;
  } else if (kind == EngineKind::kVector) {
    r.vector_cycles += c.isolated_cycles;
  }
}

}  // namespace

std::vector<LayerStats> compute_layer_stats(const Workload& w, const Timeline& t,
                                            const std::vector<CommandStalls>* given_stalls) {
  std::vector<LayerStats> rows;
  std::unordered_map<std::string, std::size_t> row_of;
  std::unordered_map<std::string, const LayerInfo*> info_of;
  for (const LayerInfo& l : w.layers) info_of.emplace(l.name, &l);
  std::vector<CommandStalls> computed;
  if (given_stalls == nullptr) computed = command_stalls(w, t);
  const std::vector<CommandStalls>& stalls = given_stalls != nullptr ? *given_stalls : computed;
  // Per layer and engine, whether an array command of it ran there already.
  std::vector<std::vector<bool>> seen_on_engine;
  // Commands come in runs of one layer: the last lookup is kept.
  const InternedString* last_layer = nullptr;
  std::size_t row = 0;
  for (std::size_t i = 0; i < w.commands.size(); ++i) {
    const CommandInfo& c = w.commands[i];
    if (last_layer != nullptr && *last_layer == c.layer) {
      add_command(rows[row], seen_on_engine[row], w, c, t.commands[i], stalls[i]);
      continue;
    }
    last_layer = &c.layer;
    auto [it, added] = row_of.try_emplace(c.layer, rows.size());
    row = it->second;
    if (added) {
      LayerStats fresh;
      const auto info = info_of.find(c.layer);
      if (info != info_of.end()) fresh.info = *info->second;
      fresh.info.name = c.layer;
      fresh.span_start = ~Cycles{0};
      rows.push_back(fresh);
      seen_on_engine.emplace_back(w.engines.size(), false);
    }
    add_command(rows[row], seen_on_engine[row], w, c, t.commands[i], stalls[i]);
  }
  const double pes = static_cast<double>(w.device.array_rows) * w.device.array_cols;
  for (LayerStats& r : rows) {
    if (r.span_start == ~Cycles{0}) r.span_start = 0;
    r.total_cycles = r.array_cycles + r.stall_cycles;
    if (r.info.on_array && r.info.ideal_cycles > 0) {
      r.tiling_overhead_pct =
          100.0 * (static_cast<double>(r.array_cycles) - static_cast<double>(r.info.ideal_cycles)) /
          static_cast<double>(r.info.ideal_cycles);
    }
    if (r.info.on_array && r.total_cycles > 0 && pes > 0) {
      r.overall_utilisation_pct =
          100.0 * static_cast<double>(r.info.macs) / (static_cast<double>(r.total_cycles) * pes);
    }
  }
  return rows;
}

}  // namespace npusim::profiler

namespace npusim::profiler {
namespace {

struct LayerRow {
  std::string name;
  bool on_array = false;
  std::uint64_t sr = 0, sc = 0, t = 0, folds = 0, ideal = 0, array = 0, stall = 0, total = 0;
  std::uint64_t span = 0, dma_bytes = 0;
  double overall = 0, mapping = 0, compute = 0, tiling = 0;
};

std::vector<LayerRow> read_rows(const nlohmann::json& run, const std::string& file,
                                const std::string& pointer) {
  const auto layers = run.find("layers");
  if (layers == run.end() || !layers->is_array()) {
    throw ParseError(file, 0, pointer + "/layers",
                     "no per-layer figures (written by npusim run and estimate at --stats-level "
                     "70 or more)");
  }
  std::vector<LayerRow> rows;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const nlohmann::json& l = (*layers)[i];
    const std::string at = pointer + "/layers/" + std::to_string(i);
    auto uint_of = [&](const char* key) -> std::uint64_t {
      const auto v = l.find(key);
      if (v == l.end() || !v->is_number_unsigned()) {
        throw ParseError(file, 0, at + "/" + key, "expected a non-negative integer");
      }
      return v->get<std::uint64_t>();
    };
    auto number_of = [&](const char* key) -> double {
      const auto v = l.find(key);
      if (v == l.end() || !v->is_number())
        throw ParseError(file, 0, at + "/" + key, "expected a number");
      return v->get<double>();
    };
    if (!l.is_object() || !l.contains("name") || !l["name"].is_string()) {
      throw ParseError(file, 0, at + "/name", "expected a string");
    }
    LayerRow r;
    r.name = l["name"].get<std::string>();
    r.on_array = l.contains("sr");
    r.array = uint_of("array_cycles");
    r.stall = uint_of("stall_cycles");
    r.total = uint_of("total_cycles");
    r.span = uint_of("compute_span_cycles");
    r.dma_bytes = uint_of("dma_bytes");
    if (r.on_array) {
      r.sr = uint_of("sr"), r.sc = uint_of("sc"), r.t = uint_of("t"), r.folds = uint_of("folds");
      r.ideal = uint_of("ideal_array_cycles");
      r.overall = number_of("overall_utilisation_pct");
      r.mapping = number_of("mapping_efficiency_pct");
      r.compute = number_of("compute_utilisation_pct");
      r.tiling = number_of("tiling_overhead_pct");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// As Python's str(float), which SCALE-Sim's report uses: the shortest text that reads back.
std::string py_float(double v) { return nlohmann::json(v).dump(); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string pad(const std::string& s, std::size_t width, bool left) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? fill + s : s + fill;
}

std::string fixed2(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

}  // namespace

void write_layer_report(std::ostream& out, const nlohmann::json& run, const std::string& file,
                        const std::string& run_pointer, bool csv) {
  const std::vector<LayerRow> rows = read_rows(run, file, run_pointer);
  if (csv) {
    out << "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, "
           "Compute Util %, Layer, Sr, Sc, T, Folds, Ideal Array Cycles, Array Cycles, "
           "Tiling Overhead %, Compute Span Cycles, DMA Bytes,\n";
    for (std::size_t id = 0; id < rows.size(); ++id) {
      const LayerRow& r = rows[id];
      auto num = [&](std::uint64_t v) { return r.on_array ? std::to_string(v) : std::string(); };
      auto real = [&](double v) { return r.on_array ? py_float(v) : std::string(); };
      out << id << ", " << r.total << ", " << r.stall << ", " << real(r.overall) << ", "
          << real(r.mapping) << ", " << real(r.compute) << ", " << csv_field(r.name) << ", "
          << num(r.sr) << ", " << num(r.sc) << ", " << num(r.t) << ", " << num(r.folds) << ", "
          << num(r.ideal) << ", " << r.array << ", " << real(r.tiling) << ", " << r.span << ", "
          << r.dma_bytes << ",\n";
    }
    return;
  }
  std::size_t name_width = 5;
  for (const LayerRow& r : rows) name_width = std::max(name_width, r.name.size());
  name_width = std::min<std::size_t>(name_width, 48);
  out << pad("id", 4, true) << "  " << pad("layer", name_width, false) << pad("ideal", 12, true)
      << pad("array", 12, true) << pad("tiling %", 10, true) << pad("stall", 10, true)
      << pad("span", 12, true) << pad("map eff %", 10, true) << pad("util %", 8, true)
      << pad("DMA bytes", 13, true) << '\n';
  for (std::size_t id = 0; id < rows.size(); ++id) {
    const LayerRow& r = rows[id];
    const std::string dash = "-";
    out << pad(std::to_string(id), 4, true) << "  " << pad(r.name, name_width, false)
        << pad(r.on_array ? std::to_string(r.ideal) : dash, 12, true)
        << pad(std::to_string(r.array), 12, true)
        << pad(r.on_array ? fixed2(r.tiling) : dash, 10, true)
        << pad(std::to_string(r.stall), 10, true) << pad(std::to_string(r.span), 12, true)
        << pad(r.on_array ? fixed2(r.mapping) : dash, 10, true)
        << pad(r.on_array ? fixed2(r.overall) : dash, 8, true)
        << pad(std::to_string(r.dma_bytes), 13, true) << '\n';
  }
}

}  // namespace npusim::profiler
