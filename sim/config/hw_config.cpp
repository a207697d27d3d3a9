#include "sim/config/hw_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "sim/config/builtin_configs.h"
#include "sim/config/config_fields.h"
#include "sim/config/raw_config.h"
#include "sim/config/scalesim_cfg.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

// Applies one "key.path=value" override to the raw JSON, before any checking, so that an
// override is checked exactly like the file it overrides. Returns the key path it set.
std::optional<std::string> apply_override(Json& root, const std::string& assignment,
                                          Diagnostics& diag) {
  try {
    // Keys and values end up in JSON (error messages dump values; stats.json holds the name).
    (void)Json(assignment).dump();  // type_error 316 on invalid UTF-8
  } catch (const Json::type_error&) {
    diag.error("--set " + assignment, "not valid UTF-8 text");
    return std::nullopt;
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    diag.error("--set " + assignment, "expected key.path=value");
    return std::nullopt;
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
      return std::nullopt;
    }
    if (!node->is_object()) {
      diag.error("--set " + assignment, pointer + " is not an object");
      return std::nullopt;
    }
    pointer += "/" + pointer_token(key);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return path;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = Json::object();
    from = dot + 1;
  }
}

// The parent of a key path ("" for a top-level key).
std::string parent_of(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

// JSON -> raw, one object at a time: the fields declared in it, then its nested objects, so that
// every object reports its own unknown keys.
void read_object(const Json& value, const std::string& path, Diagnostics& diag, RawHwConfig& raw) {
  JsonObject object(value, path.empty() ? "" : "/" + path, diag);
  std::vector<std::string> children;
  for (const ConfigField& field : config_fields()) {
    const std::string parent = parent_of(field.key());
    if (parent == path) {
      field.read_json(object, raw);
    } else if (parent_of(parent) == path &&
               std::find(children.begin(), children.end(), parent) == children.end()) {
      children.push_back(parent);
    }
  }
  for (const std::string& child : children) {
    const std::string leaf = child.substr(child.rfind('.') + 1);
    if (const Json* v = object.get(leaf)) read_object(*v, child, diag, raw);
  }
  object.finish();
}

RawHwConfig read_raw(const Json& root, Diagnostics& diag) {
  RawHwConfig raw;
  read_object(root, "", diag, raw);
  return raw;
}

Json to_json(const RawHwConfig& raw) {
  Json root = Json::object();
  for (const ConfigField& field : config_fields()) field.write_json(raw, root);
  return root;
}

// Raw -> checked: every field's range or choice, its default, its unit conversion.
HwConfig check(const RawHwConfig& raw, const std::string& source, Diagnostics& diag) {
  HwConfig cfg;
  // Unnamed configs are known by their file's stem ("built-in:server" -> "server").
  cfg.name = std::filesystem::path(source.substr(source.rfind(':') + 1)).stem().string();
  cfg.source = source;
  for (const ConfigField& field : config_fields()) field.check(raw, diag, cfg);
  cfg.warnings = raw.warnings;
  if (cfg.ideal_memory) {
    // Compute alone: no dispatch cost, and a local memory the compiler never tiles for (the
    // largest lram_kib there is), so each layer is one array command, as SCALE-Sim runs it.
    cfg.dispatch_cycles = 0;
    cfg.lram_bytes = std::uint64_t{1} << 40;
  }
  return cfg;
}

std::string label_of(const std::string& origin, const std::vector<std::string>& overrides) {
  return overrides.empty() ? origin : origin + " (with --set)";
}

bool is_scalesim_cfg(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".cfg";
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

std::optional<Dataflow> dataflow_from_name(std::string_view name) {
  for (const Dataflow d :
       {Dataflow::kOutputStationary, Dataflow::kWeightStationary, Dataflow::kInputStationary}) {
    if (name == dataflow_name(d)) return d;
  }
  return std::nullopt;
}

HwConfig::HwConfig() {
  for (const ConfigField& field : config_fields()) field.apply_default(*this);
}

std::uint64_t HwConfig::dram_latency_cycles() const { return ps_to_cycles(dram.latency_ps); }

std::uint64_t HwConfig::ps_to_cycles(std::uint64_t ps) const {
  // ps * 1e-12 s * clock_khz * 1e3 Hz = ps * clock_khz / 1e9 cycles, rounded up.
  __extension__ using U128 = unsigned __int128;
  const U128 num = U128{ps} * clock_khz;
  return static_cast<std::uint64_t>((num + 999'999'999u) / 1'000'000'000u);
}

const char* topology_name(Topology topology) {
  switch (topology) {
    case Topology::kRing:
      return "ring";
    case Topology::kFullyConnected:
      return "full";
    case Topology::kTree:
      return "tree";
  }
  return "?";
}

bool DevicesConfig::linked(std::uint32_t a, std::uint32_t b) const {
  if (a == b || a >= count || b >= count) return false;
  switch (topology) {
    case Topology::kRing:
      return (a + 1) % count == b || (b + 1) % count == a;
    case Topology::kFullyConnected:
      return true;
    case Topology::kTree:
      return a == 0 || b == 0;
  }
  return false;
}

HwConfig parse_hw_config(const std::string& json_text, const std::string& origin,
                         const std::vector<std::string>& overrides) {
  Json root = parse_json_text(json_text, origin);
  Diagnostics diag(label_of(origin, overrides));
  for (const std::string& o : overrides) apply_override(root, o, diag);
  diag.throw_if_any();
  const RawHwConfig raw = read_raw(root, diag);
  HwConfig cfg = check(raw, origin, diag);
  diag.throw_if_any();
  return cfg;
}

HwConfig resolve_hw_config(const RawHwConfig& raw, const std::string& origin,
                           const std::vector<std::string>& overrides) {
  Diagnostics diag(label_of(origin, overrides));
  if (overrides.empty()) {
    HwConfig cfg = check(raw, origin, diag);
    diag.throw_if_any();
    return cfg;
  }
  // Overrides act on JSON, so they behave as on a JSON config. A value they replace is reported
  // at its JSON pointer from then on, not where the source had it.
  Json root = to_json(raw);
  std::vector<std::string> replaced;
  for (const std::string& o : overrides) {
    if (auto path = apply_override(root, o, diag)) replaced.push_back(std::move(*path));
  }
  diag.throw_if_any();
  RawHwConfig overridden = read_raw(root, diag);
  for (const auto& entry : raw.locations) {
    // (No structured binding: C++17 lambdas may not capture one, and clang says so.)
    const std::string& key = entry.first;
    const bool was_replaced =
        std::any_of(replaced.begin(), replaced.end(),
                    [&](const std::string& p) { return key == p || key.rfind(p + ".", 0) == 0; });
    if (!was_replaced) overridden.locations.emplace(key, entry.second);
  }
  overridden.warnings = raw.warnings;
  HwConfig cfg = check(overridden, origin, diag);
  diag.throw_if_any();
  return cfg;
}

HwConfig load_hw_config(const std::string& path_or_name,
                        const std::vector<std::string>& overrides) {
  if (!std::filesystem::exists(path_or_name)) {
    for (const BuiltinConfig& b : builtin_configs()) {
      if (path_or_name == b.name) {
        return parse_hw_config(std::string(b.json), "built-in:" + std::string(b.name), overrides);
      }
    }
    std::string names;
    for (const std::string& n : builtin_config_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(
        path_or_name, "",
        "no such config file, and no built-in config of that name (built-ins: " + names + ")");
  }
  const std::string text = read_text_file(path_or_name);
  if (is_scalesim_cfg(path_or_name)) return parse_scalesim_cfg(text, path_or_name, overrides);
  return parse_hw_config(text, path_or_name, overrides);
}

std::vector<std::string> builtin_config_names() {
  std::vector<std::string> names;
  for (const BuiltinConfig& b : builtin_configs()) names.emplace_back(b.name);
  return names;
}

}  // namespace npusim
