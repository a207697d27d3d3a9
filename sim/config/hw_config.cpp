#include "sim/config/hw_config.h"

#include <filesystem>

#include "sim/config/builtin_configs.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

// Applies one "key.path=value" override to the raw JSON, before any checking, so that an
// override is checked exactly like the file it overrides.
void apply_override(Json& root, const std::string& assignment, Diagnostics& diag) {
  try {
    // Keys and values end up in JSON (error messages dump values; stats.json holds the name).
    (void)Json(assignment).dump();  // type_error 316 on invalid UTF-8
  } catch (const Json::type_error&) {
    diag.error("--set " + assignment, "not valid UTF-8 text");
    return;
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    diag.error("--set " + assignment, "expected key.path=value");
    return;
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  Json value;
  try {
    value = parse_json_text(text, "--set");
  } catch (const InputError&) {
    // A bare word such as os or ws, or what is no JSON value npusim reads (1e400, deep nesting):
    // a string, which the check then reports if it expected something else.
    value = text;
  }
  Json* node = &root;
  std::string pointer;
  std::size_t from = 0;
  while (true) {
    const auto dot = path.find('.', from);
    const std::string key = path.substr(from, dot == std::string::npos ? dot : dot - from);
    if (key.empty()) {
      diag.error("--set " + assignment, "empty key in path '" + path + "'");
      return;
    }
    if (!node->is_object()) {
      diag.error("--set " + assignment, pointer + " is not an object");
      return;
    }
    pointer += "/" + pointer_token(key);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = Json::object();
    from = dot + 1;
  }
}

Dataflow parse_dataflow(JsonObject& obj, Dataflow fallback) {
  const std::string text = obj.get_string("dataflow", dataflow_name(fallback));
  if (text == "os") return Dataflow::kOutputStationary;
  if (text == "ws") return Dataflow::kWeightStationary;
  if (text == "is") return Dataflow::kInputStationary;
  obj.diagnostics().error(obj.pointer("dataflow"),
                          "unknown dataflow '" + text + "' (expected os, ws or is)");
  return fallback;
}

void parse_vector_op_cycles(JsonObject& slices, SliceConfig& out) {
  const auto& table = op_table();
  out.vector_op_cycles.resize(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) out.vector_op_cycles[i] = table[i].cycles_per_element;
  const Json* v = slices.get("vector_op_cycles");
  if (!v) return;
  JsonObject ops(*v, slices.pointer("vector_op_cycles"), slices.diagnostics());
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].unit != Unit::kVector) continue;
    out.vector_op_cycles[i] = static_cast<std::uint32_t>(
        ops.get_uint(std::string(table[i].name), out.vector_op_cycles[i], 1, 1u << 16));
  }
  ops.finish();
}

HwConfig check(const Json& root, Diagnostics& diag, std::string source) {
  HwConfig cfg;
  // Unnamed configs are known by their file's stem ("built-in:server" -> "server").
  const std::string stem = std::filesystem::path(source.substr(source.rfind(':') + 1)).stem().string();
  cfg.source = std::move(source);
  JsonObject top(root, "", diag);
  cfg.name = top.get_string("name", stem);
  // Integer kHz keeps every conversion between clock domains exact.
  cfg.clock_khz = top.get_milli("clock_mhz", 800, 0.001, 100000);
  cfg.lram_bytes = top.get_uint("lram_kib", 512, 1, std::uint64_t{1} << 30) * 1024;
  cfg.dispatch_cycles =
      static_cast<std::uint32_t>(top.get_uint("dispatch_cycles", cfg.dispatch_cycles, 0, 1u << 20));

  static const Json kEmpty = Json::object();
  const Json* slices_json = top.get("slices");
  JsonObject slices(slices_json ? *slices_json : kEmpty, "/slices", diag);
  SliceConfig& s = cfg.slices;
  s.count = static_cast<std::uint32_t>(slices.get_uint("count", s.count, 1, 1024));
  s.rows = static_cast<std::uint32_t>(slices.get_uint("rows", s.rows, 1, 4096));
  s.cols = static_cast<std::uint32_t>(slices.get_uint("cols", s.cols, 1, 4096));
  s.dataflow = parse_dataflow(slices, s.dataflow);
  s.vector_lanes = static_cast<std::uint32_t>(slices.get_uint("vector_lanes", s.vector_lanes, 1, 1u << 16));
  parse_vector_op_cycles(slices, s);
  slices.finish();

  const Json* dma_json = top.get("dma");
  JsonObject dma(dma_json ? *dma_json : kEmpty, "/dma", diag);
  DmaConfig& d = cfg.dma;
  d.in_channels = static_cast<std::uint32_t>(dma.get_uint("in_channels", d.in_channels, 1, 64));
  d.out_channels = static_cast<std::uint32_t>(dma.get_uint("out_channels", d.out_channels, 1, 64));
  d.burst_bytes = dma.get_uint("burst_bytes", d.burst_bytes, 1, std::uint64_t{1} << 24);
  d.bytes_per_cycle = static_cast<std::uint32_t>(dma.get_uint("bytes_per_cycle", d.bytes_per_cycle, 1, 1u << 20));
  d.setup_cycles = static_cast<std::uint32_t>(dma.get_uint("setup_cycles", d.setup_cycles, 0, 1u << 20));
  d.max_outstanding = static_cast<std::uint32_t>(dma.get_uint("max_outstanding", d.max_outstanding, 1, 4096));
  dma.finish();

  const Json* dram_json = top.get("dram");
  JsonObject dram(dram_json ? *dram_json : kEmpty, "/dram", diag);
  // 0.001 GB/s is the smallest bandwidth representable; zero would never move a byte.
  cfg.dram.bandwidth_mbps = dram.get_milli("bandwidth_gbps", 12.8, 0.001, 1e6);
  cfg.dram.latency_ps = dram.get_milli("latency_ns", 100, 0, 1e6);
  cfg.dram.channels = static_cast<std::uint32_t>(dram.get_uint("channels", cfg.dram.channels, 1, 64));
  dram.finish();

  const Json* host_json = top.get("host");
  JsonObject host(host_json ? *host_json : kEmpty, "/host", diag);
  cfg.host.call_cycles = host.get_uint("call_cycles", cfg.host.call_cycles, 0, std::uint64_t{1} << 32);
  cfg.host.cycles_per_element = static_cast<std::uint32_t>(host.get_uint("cycles_per_element", cfg.host.cycles_per_element, 0, 1u << 20));
  host.finish();

  top.finish();
  return cfg;
}

}  // namespace

const char* dataflow_name(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      return "os";
    case Dataflow::kWeightStationary:
      return "ws";
    case Dataflow::kInputStationary:
      return "is";
  }
  return "?";
}

std::uint64_t HwConfig::dram_latency_cycles() const {
  // latency_ps * 1e-12 s * clock_khz * 1e3 Hz = latency_ps * clock_khz / 1e9 cycles, rounded up.
  __extension__ using U128 = unsigned __int128;
  const U128 num = U128{dram.latency_ps} * clock_khz;
  return static_cast<std::uint64_t>((num + 999'999'999u) / 1'000'000'000u);
}

HwConfig parse_hw_config(const std::string& json_text, const std::string& origin,
                         const std::vector<std::string>& overrides) {
  Json root = parse_json_text(json_text, origin);
  const std::string label = overrides.empty() ? origin : origin + " (with --set)";
  Diagnostics diag(label);
  for (const std::string& o : overrides) apply_override(root, o, diag);
  diag.throw_if_any();
  HwConfig cfg = check(root, diag, origin);
  diag.throw_if_any();
  return cfg;
}

HwConfig load_hw_config(const std::string& path_or_name, const std::vector<std::string>& overrides) {
  if (!std::filesystem::exists(path_or_name)) {
    for (const BuiltinConfig& b : builtin_configs()) {
      if (path_or_name == b.name) {
        return parse_hw_config(std::string(b.json), "built-in:" + std::string(b.name), overrides);
      }
    }
    std::string names;
    for (const std::string& n : builtin_config_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(path_or_name, "",
                     "no such config file, and no built-in config of that name (built-ins: " +
                         names + ")");
  }
  return parse_hw_config(read_text_file(path_or_name), path_or_name, overrides);
}

std::vector<std::string> builtin_config_names() {
  std::vector<std::string> names;
  for (const BuiltinConfig& b : builtin_configs()) names.emplace_back(b.name);
  return names;
}

}  // namespace npusim
