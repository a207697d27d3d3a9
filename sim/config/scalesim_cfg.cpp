#include "sim/config/scalesim_cfg.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <set>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

// --- The INI layer, as Python's configparser reads it with SCALE-Sim's settings (the defaults):
// `key = value` or `key: value` split at the first '=' or ':', keys case-insensitive, section
// names case-sensitive, whole-line comments starting with '#' or ';' (no inline comments), a
// more indented line continues the previous value, [DEFAULT] keys visible in every section, a
// repeated section or key is an error. Values are taken literally (no %-interpolation).

struct IniKey {
  std::string name;  // as written
  std::string value;
  std::size_t line = 0;
  bool used = false;  // mapped onto an npusim field
};

struct IniSection {
  std::string name;
  std::size_t line = 0;
  std::vector<IniKey> keys;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

std::string trim(const std::string& text) {
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && is_space(text[b])) ++b;
  while (e > b && is_space(text[e - 1])) --e;
  return text.substr(b, e - b);
}

std::string line_of(std::size_t line) { return "line " + std::to_string(line); }

std::vector<IniSection> parse_ini(const std::string& text, Diagnostics& diag) {
  std::vector<IniSection> sections;
  IniKey* last = nullptr;  // the key a more indented line continues
  std::size_t last_indent = 0;
  std::size_t from = 0;
  for (std::size_t number = 1; from <= text.size(); ++number) {
    const std::size_t end = std::min(text.find('\n', from), text.size());
    std::string line = text.substr(from, end - from);
    from = end + 1;
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    const std::string stripped = trim(line);
    if (stripped.empty() || stripped[0] == '#' || stripped[0] == ';') continue;
    const std::size_t indent = line.find_first_not_of(" \t\f\v");
    if (last != nullptr && indent > last_indent) {
      last->value += "\n" + stripped;
      continue;
    }
    last = nullptr;
    if (stripped[0] == '[') {
      if (stripped.size() < 3 || stripped.back() != ']') {
        diag.error(line_of(number),
                   "malformed section header '" + stripped + "' (expected [name])");
        continue;
      }
      const std::string name = stripped.substr(1, stripped.size() - 2);
      const auto same = std::find_if(sections.begin(), sections.end(),
                                     [&](const IniSection& s) { return s.name == name; });
      if (same != sections.end()) {
        diag.error(line_of(number), "section [" + name + "] appears twice (first on line " +
                                        std::to_string(same->line) + ")");
      }
      sections.push_back({name, number, {}});
      continue;
    }
    if (sections.empty()) {
      diag.error(line_of(number), "'" + stripped + "' before the first [section] header");
      continue;
    }
    const std::size_t delimiter = stripped.find_first_of("=:");
    if (delimiter == std::string::npos) {
      diag.error(line_of(number),
                 "expected 'key = value' or 'key: value', found '" + stripped + "'");
      continue;
    }
    const std::string name = trim(stripped.substr(0, delimiter));
    if (name.empty()) {
      diag.error(line_of(number), "no key before '" + std::string(1, stripped[delimiter]) + "'");
      continue;
    }
    IniSection& section = sections.back();
    const auto same = std::find_if(section.keys.begin(), section.keys.end(),
                                   [&](const IniKey& k) { return lower(k.name) == lower(name); });
    if (same != section.keys.end()) {
      diag.error("[" + section.name + "] " + name, "appears twice (lines " +
                                                       std::to_string(same->line) + " and " +
                                                       std::to_string(number) + ")");
      continue;
    }
    section.keys.push_back({name, trim(stripped.substr(delimiter + 1)), number, false});
    last = &section.keys.back();
    last_indent = indent;
  }
  return sections;
}

// Python's int() on a stripped string: an optional sign, then digits, single '_' allowed
// between digits.
enum class IntSpelling : std::uint8_t { kNonNegative, kNegative, kTooLarge, kNotInteger };

IntSpelling parse_int(const std::string& text, std::uint64_t& value) {
  value = 0;
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  bool digit_before = false;
  bool too_large = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_' && digit_before && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return IntSpelling::kNotInteger;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) too_large = true;
    value = value * 10 + digit;
    digit_before = true;
  }
  if (!digit_before) return IntSpelling::kNotInteger;
  if (negative && value != 0) return IntSpelling::kNegative;
  return too_large ? IntSpelling::kTooLarge : IntSpelling::kNonNegative;
}

// The SCALE-Sim keys, looked up as SCALE-Sim's scale_config.read_conf_file() does.
class CfgReader {
 public:
  CfgReader(std::vector<IniSection>& sections, Diagnostics& diag)
      : sections_(sections), diag_(diag) {}

  static std::string where(const std::string& section, const std::string& key) {
    return "[" + section + "] " + key;
  }

  // A key SCALE-Sim requires; records a problem (once per missing section) if it is absent.
  // `mapped`: npusim uses its value (else it is named in the warning of ignored keys).
  IniKey* require(const std::string& section, const std::string& key, bool mapped) {
    IniSection* s = find_section(section);
    if (s == nullptr) {
      if (missing_sections_.insert(section).second)
        diag_.error("[" + section + "]", "missing section");
      return nullptr;
    }
    IniKey* k = find_key(*s, key);
    if (k == nullptr) {
      if (IniSection* defaults = find_section("DEFAULT")) k = find_key(*defaults, key);
    }
    if (k == nullptr) {
      diag_.error(where(section, key), "missing required key");
    } else {
      k->used = k->used || mapped;
    }
    return k;
  }

  // A non-negative integer that npusim uses (a size, a count).
  std::optional<std::uint64_t> require_size(const std::string& section, const std::string& key) {
    IniKey* k = require(section, key, true);
    if (k == nullptr) return std::nullopt;
    return size_of(k->value, where(section, key));
  }

  std::optional<std::uint64_t> size_of(const std::string& text, const std::string& where) {
    std::uint64_t value = 0;
    switch (parse_int(text, value)) {
      case IntSpelling::kNonNegative:
        return value;
      case IntSpelling::kTooLarge:
        diag_.error(where, "value " + text + " too large (at most 2^64 - 1)");
        return std::nullopt;
      case IntSpelling::kNegative:
      case IntSpelling::kNotInteger:
        break;
    }
    diag_.error(where, "expected a non-negative integer, found '" + text + "'");
    return std::nullopt;
  }

  // An integer of any sign and size, which SCALE-Sim requires and npusim does not use.
  void require_integer(const std::string& section, const std::string& key) {
    IniKey* k = require(section, key, false);
    std::uint64_t value = 0;
    if (k != nullptr && parse_int(k->value, value) == IntSpelling::kNotInteger) {
      diag_.error(where(section, key), "expected an integer, found '" + k->value + "'");
    }
  }

  // "[architecture_presets] IfmapOffset, MemoryBanks; [layout] ..." for the keys not mapped.
  std::string unused_keys() const {
    std::string text;
    for (const IniSection& s : sections_) {
      std::string keys;
      for (const IniKey& k : s.keys) {
        if (!k.used) keys += (keys.empty() ? "" : ", ") + k.name;
      }
      if (!keys.empty()) text += (text.empty() ? "[" : "; [") + s.name + "] " + keys;
    }
    return text;
  }

 private:
  IniSection* find_section(const std::string& name) {
    for (IniSection& s : sections_) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
  static IniKey* find_key(IniSection& section, const std::string& key) {
    for (IniKey& k : section.keys) {
      if (lower(k.name) == lower(key)) return &k;
    }
    return nullptr;
  }

  std::vector<IniSection>& sections_;
  Diagnostics& diag_;
  std::set<std::string> missing_sections_;
};

}  // namespace

RawHwConfig read_scalesim_cfg(const std::string& text, const std::string& origin) {
  Diagnostics diag(origin);
  try {
    (void)Json(text).dump();  // type_error 316 on invalid UTF-8; run_name ends up in JSON outputs
  } catch (const Json::type_error&) {
    throw InputError(origin, "", "not valid UTF-8 text");
  }
  std::vector<IniSection> sections = parse_ini(text, diag);
  diag.throw_if_any();  // a malformed file's keys are not looked up

  CfgReader cfg(sections, diag);
  RawHwConfig raw;
  const auto located = [&raw](const std::string& field, const std::string& location) {
    raw.locations[field] = location;
  };
  const std::string arch = "architecture_presets";

  if (IniKey* k = cfg.require("general", "run_name", true)) {
    raw.name = k->value;
    located("name", CfgReader::where("general", "run_name"));
  }

  std::optional<bool> user_bandwidth;
  if (IniKey* k = cfg.require("run_presets", "InterfaceBandwidth", true)) {
    if (k->value == "USER" || k->value == "CALC") {
      user_bandwidth = k->value == "USER";
    } else {
      diag.error(CfgReader::where("run_presets", "InterfaceBandwidth"),
                 "unknown mode '" + k->value + "' (expected USER or CALC)");
    }
  }

  // One array: SCALE-Sim simulates a single systolic array and no vector unit.
  raw.slices.count = 1;
  if ((raw.slices.rows = cfg.require_size(arch, "ArrayHeight"))) {
    located("slices.rows", CfgReader::where(arch, "ArrayHeight"));
  }
  if ((raw.slices.cols = cfg.require_size(arch, "ArrayWidth"))) {
    located("slices.cols", CfgReader::where(arch, "ArrayWidth"));
  }

  // The three operand SRAMs become one local memory of their total size.
  std::optional<std::uint64_t> lram_kib = 0;
  for (const char* key : {"IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB"}) {
    const auto kib = cfg.require_size(arch, key);
    if (!kib || !lram_kib || *kib > std::numeric_limits<std::uint64_t>::max() - *lram_kib) {
      lram_kib = std::nullopt;
    } else {
      *lram_kib += *kib;
    }
  }
  if ((raw.lram_kib = lram_kib)) {
    located("lram_kib", "[" + arch + "] IfmapSramSzkB + FilterSramSzkB + OfmapSramSzkB");
  }

  // Checked as SCALE-Sim does, but npusim places buffers itself: reported as ignored.
  for (const char* key : {"IfmapOffset", "FilterOffset", "OfmapOffset"}) {
    cfg.require_integer(arch, key);
  }

  if (IniKey* k = cfg.require(arch, "Dataflow", true)) {
    raw.slices.dataflow = k->value;  // os, ws or is: checked with the field
    located("slices.dataflow", CfgReader::where(arch, "Dataflow"));
  }

  if (user_bandwidth == true) {
    // Words per cycle, one value per memory bank. SCALE-Sim's words are 1 byte
    // (single_layer_sim.py: word_size = 1) and it uses the first value for every operand.
    if (IniKey* k = cfg.require(arch, "Bandwidth", true)) {
      const std::string where = CfgReader::where(arch, "Bandwidth");
      std::vector<std::optional<std::uint64_t>> words;
      std::size_t from = 0;
      while (true) {
        const std::size_t comma = k->value.find(',', from);
        const std::size_t size = comma == std::string::npos ? comma : comma - from;
        words.push_back(cfg.size_of(trim(k->value.substr(from, size)), where));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      if (std::all_of(words.begin(), words.end(), [](const auto& w) { return w.has_value(); })) {
        raw.dma.bytes_per_cycle = words.front();
        located("dma.bytes_per_cycle", where);
      }
    }
  } else if (user_bandwidth == false) {
    // CALC: SCALE-Sim sizes the interface bandwidth so that compute never stalls.
    raw.ideal_memory = true;
    located("ideal_memory", CfgReader::where("run_presets", "InterfaceBandwidth"));
  }
  diag.throw_if_any();

  if (const std::string unused = cfg.unused_keys(); !unused.empty()) {
    raw.warnings.push_back(origin +
                           ": SCALE-Sim keys that npusim does not model, ignored: " + unused);
  }
  return raw;
}

HwConfig parse_scalesim_cfg(const std::string& text, const std::string& origin,
                            const std::vector<std::string>& overrides) {
  return resolve_hw_config(read_scalesim_cfg(text, origin), origin, overrides);
}

}  // namespace npusim
