#include "sim/config/config_fields.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "sim/config/hw_config.h"
#include "sim/ir/ops.h"

namespace npusim {
namespace {

using R = RawHwConfig;

// A raw field's accessors from its member pointers: top-level, or inside a section.
template <class T>
ConfigField::RawSlot<T> raw(std::optional<T> R::*member) {
  return {[member](R& r) -> std::optional<T>& { return r.*member; },
          [member](const R& r) -> const std::optional<T>& { return r.*member; }};
}
template <class S, class T>
ConfigField::RawSlot<T> raw(S R::*section, std::optional<T> S::*member) {
  return {
      [section, member](R& r) -> std::optional<T>& { return (r.*section).*member; },
      [section, member](const R& r) -> const std::optional<T>& { return (r.*section).*member; }};
}

// Stores a checked number in a HwConfig member of narrower type: the declared range fits it.
template <class M>
ConfigField::Setter<std::uint64_t> to(M HwConfig::*member) {
  return [member](HwConfig& c, std::uint64_t v) { c.*member = static_cast<M>(v); };
}
template <class S, class M>
ConfigField::Setter<std::uint64_t> to(S HwConfig::*section, M S::*member) {
  return
      [section, member](HwConfig& c, std::uint64_t v) { (c.*section).*member = static_cast<M>(v); };
}

std::string leaf_of(const std::string& key) { return key.substr(key.rfind('.') + 1); }

// "slices.rows" -> "/slices/rows".
std::string json_pointer_of(const std::string& key) {
  std::string pointer;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = key.find('.', from);
    pointer += "/" + pointer_token(key.substr(from, dot == std::string::npos ? dot : dot - from));
    if (dot == std::string::npos) return pointer;
    from = dot + 1;
  }
}

// A decimal as a JSON value would print it (integral values without ".0").
std::string format_number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return Json(v).dump();
}

// Thousandths as a decimal with no trailing zeros: 12800 -> "12.8".
std::string format_milli(std::uint64_t milli) {
  std::string text = std::to_string(milli / 1000);
  if (const std::uint64_t frac = milli % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits = std::string(3 - digits.size(), '0') + digits;
    text += "." + digits.substr(0, digits.find_last_not_of('0') + 1);
  }
  return text;
}

// Where problems with a field are reported: where its source had it, else its JSON pointer.
std::string where(const RawHwConfig& raw, const std::string& key) {
  const auto it = raw.locations.find(key);
  return it != raw.locations.end() ? it->second : json_pointer_of(key);
}

std::uint64_t to_milli(double value) {
  return static_cast<std::uint64_t>(std::llround(value * 1000));
}

std::string code(const std::string& text) { return "`" + text + "`"; }

std::string range_text(std::uint64_t min, std::uint64_t max) {
  return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

// The host link and the devices (docs/config.md#devices).
std::vector<ConfigField> link_fields() {
  using F = ConfigField;
  return {
      // PCIe 4.0 x16 moves about 32 GB/s per direction, with a DMA round trip near 1 us.
      F::decimal("host.link_gbps", raw(&R::host, &R::Host::link_gbps),
                 to(&HwConfig::host, &HostConfig::link_mbps))
          .unit("GB/s (10^9 B/s)")
          .decimal_range(0.001, 1e6)
          .decimal_default(32)
          .desc("Bandwidth of one channel of the host link (EXT_HDMA: host DRAM <-> device "
                "DRAM), shared by every device (see [Devices](#devices))."),
      F::decimal("host.link_latency_ns", raw(&R::host, &R::Host::link_latency_ns),
                 to(&HwConfig::host, &HostConfig::link_latency_ps))
          .unit("ns")
          .decimal_range(0, 1e6)
          .decimal_default(1000)
          .desc("Added to every EXT_HDMA transfer after its data has crossed the link."),
      F::integer("host.link_channels", raw(&R::host, &R::Host::link_channels),
                 to(&HwConfig::host, &HostConfig::link_channels))
          .unit("channels")
          .range(1, 64)
          .default_val(2)
          .desc("Transfers the host link carries at once, over all devices; each channel has "
                "`host.link_gbps`. Also the channels of each device's EXT_HDMA engine."),
      F::boolean("host.upload_weights", raw(&R::host, &R::Host::upload_weights),
                 [](HwConfig& c, bool v) { c.host.upload_weights = v; })
          .bool_default(false)
          .desc("Compiled models load each device's weights from the host over EXT_HDMA before "
                "the first neural-engine command, as in a first inference; otherwise weights "
                "are already in DRAM (see [Devices](#devices))."),
      F::integer("devices.count", raw(&R::devices, &R::Devices::count),
                 to(&HwConfig::devices, &DevicesConfig::count))
          .unit("devices")
          .range(1, 64)
          .default_val(1)
          .desc("Identical NPUs, each with the slices, DMA, local memory and DRAM above (see "
                "[Devices](#devices))."),
      F::choice("devices.topology", raw(&R::devices, &R::Devices::topology),
                {"ring", "full", "tree"},
                [](HwConfig& c, const std::string& v) {
                  c.devices.topology = v == "ring"   ? Topology::kRing
                                       : v == "full" ? Topology::kFullyConnected
                                                     : Topology::kTree;
                })
          .choice_default("ring")
          .desc("Which devices have a direct link: `ring` (d and d+1 mod count), `full` (every "
                "pair) or `tree` (device 0, the root, and every other device)."),
      F::decimal("devices.link_gbps", raw(&R::devices, &R::Devices::link_gbps),
                 to(&HwConfig::devices, &DevicesConfig::link_mbps))
          .unit("GB/s (10^9 B/s)")
          .decimal_range(0.001, 1e6)
          .decimal_default(32)
          .desc("Bandwidth of one device-to-device link in each direction (DEV_HDMA)."),
      F::decimal("devices.link_latency_ns", raw(&R::devices, &R::Devices::link_latency_ns),
                 to(&HwConfig::devices, &DevicesConfig::link_latency_ps))
          .unit("ns")
          .decimal_range(0, 1e6)
          .decimal_default(500)
          .desc("Added to every DEV_HDMA transfer; also the cost of a SYNC (one message)."),
      F::integer("devices.dma_channels", raw(&R::devices, &R::Devices::dma_channels),
                 to(&HwConfig::devices, &DevicesConfig::dma_channels))
          .unit("channels")
          .range(1, 64)
          .default_val(2)
          .desc("Channels of each device's DEV_HDMA engine: transfers it runs at once."),
  };
}

// The energy section (docs/config.md#energy). Decimals in pJ and mW arrive as exact fJ and uW.
// The defaults are the `default` preset: Horowitz's 45 nm figures (ISSCC 2014).
std::vector<ConfigField> energy_fields() {
  using F = ConfigField;
  return {
      F::decimal("energy.mac_int8_pj", raw(&R::energy, &R::Energy::mac_int8_pj),
                 to(&HwConfig::energy, &EnergyConfig::mac_int8_fj))
          .unit("pJ per MAC")
          .decimal_range(0, 1e6)
          .decimal_default(0.23)
          .desc("One array MAC on 8-bit operands (int8, uint8): 8-bit multiply 0.2 + 8-bit add "
                "0.03 pJ at 45 nm (Horowitz 2014)."),
      F::decimal("energy.mac_fp16_pj", raw(&R::energy, &R::Energy::mac_fp16_pj),
                 to(&HwConfig::energy, &EnergyConfig::mac_fp16_fj))
          .unit("pJ per MAC")
          .decimal_range(0, 1e6)
          .decimal_default(1.5)
          .desc("One array MAC on 16-bit operands (float16, bfloat16, int16): 16-bit float "
                "multiply 1.1 + add 0.4 pJ at 45 nm (Horowitz 2014)."),
      F::decimal("energy.mac_fp32_pj", raw(&R::energy, &R::Energy::mac_fp32_pj),
                 to(&HwConfig::energy, &EnergyConfig::mac_fp32_fj))
          .unit("pJ per MAC")
          .decimal_range(0, 1e6)
          .decimal_default(4.6)
          .desc("One array MAC on 32-bit or wider operands: 32-bit float multiply 3.7 + add "
                "0.9 pJ at 45 nm (Horowitz 2014)."),
      F::decimal("energy.vector_op_pj", raw(&R::energy, &R::Energy::vector_op_pj),
                 to(&HwConfig::energy, &EnergyConfig::vector_op_fj))
          .unit("pJ per element per cycle")
          .decimal_range(0, 1e6)
          .decimal_default(1.5)
          .desc("One unit of work of a vector op for each of its `vector_op_cycles` (a lane "
                "cycle): a 16-bit float multiply-add, 1.5 pJ at 45 nm (Horowitz 2014)."),
      F::decimal("energy.lram_read_pj_per_byte", raw(&R::energy, &R::Energy::lram_read_pj_per_byte),
                 to(&HwConfig::energy, &EnergyConfig::lram_read_fj_per_byte))
          .unit("pJ per byte")
          .decimal_range(0, 1e6)
          .decimal_default(2.5)
          .desc("Reading local memory: a 64-bit access to a 32 KB SRAM bank, 20 pJ at 45 nm "
                "(Horowitz 2014), over 8 bytes."),
      F::decimal("energy.lram_write_pj_per_byte",
                 raw(&R::energy, &R::Energy::lram_write_pj_per_byte),
                 to(&HwConfig::energy, &EnergyConfig::lram_write_fj_per_byte))
          .unit("pJ per byte")
          .decimal_range(0, 1e6)
          .decimal_default(2.5)
          .desc("Writing local memory; Horowitz gives one figure per access, so as a read."),
      F::decimal("energy.dram_pj_per_byte", raw(&R::energy, &R::Energy::dram_pj_per_byte),
                 to(&HwConfig::energy, &EnergyConfig::dram_fj_per_byte))
          .unit("pJ per byte")
          .decimal_range(0, 1e6)
          .decimal_default(160)
          .desc("A byte moved between DRAM and local memory by DMA, either way: DDR3-class "
                "DRAM at 20 pJ/bit (Horowitz 2014: 1.3 to 2.6 nJ per 64-bit access), × 8."),
      F::decimal("energy.slice_static_mw", raw(&R::energy, &R::Energy::slice_static_mw),
                 to(&HwConfig::energy, &EnergyConfig::slice_static_uw))
          .unit("mW per slice")
          .decimal_range(0, 1e6)
          .decimal_default(2)
          .desc("Static (leakage) power of one slice, drawn for the whole run. An assumption, "
                "not a published figure (see [Energy](#energy))."),
      F::decimal("energy.dram_static_mw", raw(&R::energy, &R::Energy::dram_static_mw),
                 to(&HwConfig::energy, &EnergyConfig::dram_static_uw))
          .unit("mW")
          .decimal_range(0, 1e6)
          .decimal_default(20)
          .desc("DRAM background power (refresh, standby), drawn for the whole run. An "
                "assumption, not a published figure (see [Energy](#energy))."),
  };
}

}  // namespace

ConfigField ConfigField::integer(std::string key, RawSlot<std::uint64_t> raw,
                                 Setter<std::uint64_t> set) {
  ConfigField f(std::move(key), Type::kInteger);
  f.raw_integer_ = std::move(raw);
  f.set_number_ = std::move(set);
  return f;
}

ConfigField ConfigField::decimal(std::string key, RawSlot<double> raw, Setter<std::uint64_t> set) {
  ConfigField f(std::move(key), Type::kDecimal);
  f.raw_decimal_ = std::move(raw);
  f.set_number_ = std::move(set);
  return f;
}

ConfigField ConfigField::text(std::string key, RawSlot<std::string> raw, Setter<std::string> set) {
  ConfigField f(std::move(key), Type::kString);
  f.raw_string_ = std::move(raw);
  f.set_string_ = std::move(set);
  return f;
}

ConfigField ConfigField::choice(std::string key, RawSlot<std::string> raw,
                                std::vector<std::string> choices, Setter<std::string> set) {
  ConfigField f(std::move(key), Type::kChoice);
  f.raw_string_ = std::move(raw);
  f.choices_ = std::move(choices);
  f.set_string_ = std::move(set);
  return f;
}

ConfigField ConfigField::boolean(std::string key, RawSlot<bool> raw, Setter<bool> set) {
  ConfigField f(std::move(key), Type::kBoolean);
  f.raw_boolean_ = std::move(raw);
  f.set_boolean_ = std::move(set);
  return f;
}

ConfigField ConfigField::op_cycles(std::string key) {
  return ConfigField(std::move(key), Type::kOpCycles);
}

void ConfigField::expect(bool ok, const char* what) const {
  if (!ok) throw std::logic_error("config field " + key_ + ": " + what);
}

ConfigField& ConfigField::unit(std::string unit) {
  unit_ = std::move(unit);
  return *this;
}

ConfigField& ConfigField::desc(std::string doc) {
  doc_ = std::move(doc);
  return *this;
}

ConfigField& ConfigField::range(std::uint64_t min, std::uint64_t max) {
  expect(type_ == Type::kInteger || type_ == Type::kOpCycles, "range() needs an integer field");
  min_ = min;
  max_ = max;
  return *this;
}

ConfigField& ConfigField::default_val(std::uint64_t value) {
  expect(type_ == Type::kInteger, "default_val() needs an integer field");
  default_number_ = value;
  return *this;
}

ConfigField& ConfigField::decimal_range(double min, double max) {
  expect(type_ == Type::kDecimal, "decimal_range() needs a decimal field");
  min_ = to_milli(min);
  max_ = to_milli(max);
  return *this;
}

ConfigField& ConfigField::decimal_default(double value) {
  expect(type_ == Type::kDecimal, "decimal_default() needs a decimal field");
  default_number_ = to_milli(value);
  return *this;
}

ConfigField& ConfigField::choice_default(std::string value) {
  expect(type_ == Type::kChoice, "choice_default() needs a choice field");
  default_string_ = std::move(value);
  return *this;
}

ConfigField& ConfigField::bool_default(bool value) {
  expect(type_ == Type::kBoolean, "bool_default() needs a boolean field");
  default_number_ = value ? 1 : 0;
  return *this;
}

ConfigField& ConfigField::computed_default(std::string doc) {
  expect(type_ == Type::kString || type_ == Type::kOpCycles,
         "computed_default() needs a string or op-cycles field");
  computed_default_ = std::move(doc);
  return *this;
}

void ConfigField::validate() const {
  expect(!doc_.empty(), "no desc()");
  switch (type_) {
    case Type::kInteger:
    case Type::kDecimal:
      expect(min_ <= max_ && max_ > 0, "no range");
      expect(default_number_ && *default_number_ >= min_ && *default_number_ <= max_,
             "no default, or the default is out of range");
      break;
    case Type::kChoice:
      expect(std::find(choices_.begin(), choices_.end(), default_string_) != choices_.end(),
             "the default is not one of the choices");
      break;
    case Type::kBoolean:
      expect(default_number_.has_value(), "no default");
      break;
    case Type::kString:
      expect(!computed_default_.empty(), "no computed_default()");
      break;
    case Type::kOpCycles:
      expect(min_ <= max_ && max_ > 0 && !computed_default_.empty(),
             "no range or no computed_default()");
      break;
  }
}

std::string ConfigField::table_row() const {
  std::string key = code(type_ == Type::kOpCycles ? key_ + ".<Op>" : key_);
  std::string type;
  std::string default_value;
  std::string range;
  switch (type_) {
    case Type::kInteger:
    case Type::kOpCycles:
      type = "integer";
      if (default_number_) default_value = code(std::to_string(*default_number_));
      range = range_text(min_, max_);
      break;
    case Type::kDecimal:
      type = "number, ≤ 3 decimals";
      default_value = code(format_milli(default_number_.value_or(0)));
      range = "[" + format_milli(min_) + ", " + format_milli(max_) + "]";
      break;
    case Type::kString:
      type = "string";
      range = "any string";
      break;
    case Type::kChoice:
      type = "string";
      default_value = code("\"" + default_string_ + "\"");
      for (const std::string& c : choices_) range += (range.empty() ? "" : ", ") + code(c);
      break;
    case Type::kBoolean:
      type = "boolean";
      default_value = code(default_number_.value_or(0) != 0 ? "true" : "false");
      range = code("true") + ", " + code("false");
      break;
  }
  if (!computed_default_.empty()) default_value = computed_default_;
  return "| " + key + " | " + type + " | " + (unit_.empty() ? "—" : unit_) + " | " + default_value +
         " | " + range + " | " + doc_ + " |";
}

void ConfigField::read_json(JsonObject& parent, RawHwConfig& raw) const {
  const std::string leaf = leaf_of(key_);
  const Json* v = parent.get(leaf);
  if (!v) return;
  Diagnostics& diag = parent.diagnostics();
  const std::string pointer = parent.pointer(leaf);
  switch (type_) {
    case Type::kInteger:
      if (const auto value = json_uint(*v)) {
        raw_integer_.ref(raw) = *value;
      } else {
        diag.error(pointer, "expected a non-negative integer, found " + v->dump());
      }
      return;
    case Type::kDecimal:
      if (v->is_number()) {
        raw_decimal_.ref(raw) = v->get<double>();
      } else {
        diag.error(pointer, "expected a number, found " + v->dump());
      }
      return;
    case Type::kString:
    case Type::kChoice:
      if (v->is_string()) {
        raw_string_.ref(raw) = v->get<std::string>();
      } else {
        diag.error(pointer, "expected a string, found " + v->dump());
      }
      return;
    case Type::kBoolean:
      if (v->is_boolean()) {
        raw_boolean_.ref(raw) = v->get<bool>();
      } else {
        diag.error(pointer, "expected a boolean, found " + v->dump());
      }
      return;
    case Type::kOpCycles: {
      JsonObject ops(*v, pointer, diag);
      for (const OpInfo& op : op_table()) {
        if (op.unit != EngineKind::kVector)
          continue;  // Gemm and Conv run on the array: unknown keys
        const std::string name(op.name);
        const Json* cycles = ops.get(name);
        if (!cycles) continue;
        if (const auto value = json_uint(*cycles)) {
          raw.slices.vector_op_cycles[name] = *value;
        } else {
          diag.error(ops.pointer(name), "expected a non-negative integer, found " + cycles->dump());
        }
      }
      ops.finish();
      return;
    }
  }
}

void ConfigField::write_json(const RawHwConfig& raw, Json& root) const {
  const Json::json_pointer pointer(json_pointer_of(key_));
  switch (type_) {
    case Type::kInteger:
      if (const auto& v = raw_integer_.get(raw)) root[pointer] = *v;
      return;
    case Type::kDecimal:
      if (const auto& v = raw_decimal_.get(raw)) root[pointer] = *v;
      return;
    case Type::kString:
    case Type::kChoice:
      if (const auto& v = raw_string_.get(raw)) root[pointer] = *v;
      return;
    case Type::kBoolean:
      if (const auto& v = raw_boolean_.get(raw)) root[pointer] = *v;
      return;
    case Type::kOpCycles:
      for (const auto& [name, cycles] : raw.slices.vector_op_cycles) root[pointer][name] = cycles;
      return;
  }
}

bool ConfigField::check_integer(std::uint64_t value, const std::string& where,
                                Diagnostics& diag) const {
  if (value >= min_ && value <= max_) return true;
  diag.error(where, "value " + std::to_string(value) + " out of range " + range_text(min_, max_));
  return false;
}

void ConfigField::check(const RawHwConfig& raw, Diagnostics& diag, HwConfig& out) const {
  switch (type_) {
    case Type::kInteger:
      if (const auto& v = raw_integer_.get(raw); v && check_integer(*v, where(raw, key_), diag)) {
        set_number_(out, *v);
      }
      return;
    case Type::kDecimal: {
      const auto& v = raw_decimal_.get(raw);
      if (!v) return;
      const double min = static_cast<double>(min_) / 1000;
      const double max = static_cast<double>(max_) / 1000;
      if (!(*v >= min && *v <= max)) {
        std::ostringstream msg;
        msg << "value " << format_number(*v) << " out of range [" << min << ", " << max << "]";
        diag.error(where(raw, key_), msg.str());
        return;
      }
      // Units are converted exactly, once: the value in thousandths of its unit. The absolute
      // tolerance is far above double rounding noise at these magnitudes (< 1e9) and far below
      // the 1e-3 step that a fourth decimal would add.
      const double milli = *v * 1000;
      const double rounded = std::round(milli);
      if (std::fabs(milli - rounded) > 1e-4) {
        diag.error(where(raw, key_),
                   "value " + format_number(*v) + " has more than three decimals");
        return;
      }
      set_number_(out, static_cast<std::uint64_t>(rounded));
      return;
    }
    case Type::kString:
      if (const auto& v = raw_string_.get(raw)) set_string_(out, *v);
      return;
    case Type::kChoice: {
      const auto& v = raw_string_.get(raw);
      if (!v) return;
      if (std::find(choices_.begin(), choices_.end(), *v) != choices_.end()) {
        set_string_(out, *v);
        return;
      }
      std::string expected;
      for (std::size_t i = 0; i < choices_.size(); ++i) {
        expected += (i == 0 ? "" : i + 1 == choices_.size() ? " or " : ", ") + choices_[i];
      }
      diag.error(where(raw, key_),
                 "unknown " + leaf_of(key_) + " '" + *v + "' (expected " + expected + ")");
      return;
    }
    case Type::kBoolean:
      if (const auto& v = raw_boolean_.get(raw)) set_boolean_(out, *v);
      return;
    case Type::kOpCycles:
      for (const auto& [name, cycles] : raw.slices.vector_op_cycles) {
        const OpId op = find_op(name);
        if (op >= op_table().size() || op_table()[op].unit != EngineKind::kVector) {
          diag.error(where(raw, key_ + "." + name), "not a vector op");
        } else if (check_integer(cycles, where(raw, key_ + "." + name), diag)) {
          out.slices.vector_op_cycles[op] = static_cast<std::uint32_t>(cycles);
        }
      }
      return;
  }
}

void ConfigField::apply_default(HwConfig& out) const {
  switch (type_) {
    case Type::kInteger:
    case Type::kDecimal:
      set_number_(out, *default_number_);
      return;
    case Type::kChoice:
      set_string_(out, default_string_);
      return;
    case Type::kBoolean:
      set_boolean_(out, *default_number_ != 0);
      return;
    case Type::kString:
      return;  // computed by the loader (the name: the file's stem)
    case Type::kOpCycles: {
      const auto& table = op_table();
      out.slices.vector_op_cycles.resize(table.size());
      for (std::size_t i = 0; i < table.size(); ++i) {
        out.slices.vector_op_cycles[i] = table[i].cycles_per_element;
      }
      return;
    }
  }
}

// The declarations. Each field's key, type, unit, default, range and doc exist here and nowhere
// else: HwConfig() applies these defaults, and docs/config.md's table is checked against them.
const std::vector<ConfigField>& config_fields() {
  using F = ConfigField;
  static const std::vector<ConfigField> fields = [] {
    std::vector<ConfigField> f = {
        F::text("name", raw(&R::name), [](HwConfig& c, std::string v) { c.name = std::move(v); })
            .computed_default("the file's stem")
            .desc("Name shown in `summary.txt` and `stats.json` (`device.config`). It is also "
                  "compared with a schedule's `target.config`."),
        // Integer kHz keeps every conversion between clock domains exact.
        F::decimal("clock_mhz", raw(&R::clock_mhz), to(&HwConfig::clock_khz))
            .unit("MHz")
            .decimal_range(0.001, 100000)
            .decimal_default(800)
            .desc("The one NPU clock. Every time is counted in cycles of this clock."),
        F::integer("lram_kib", raw(&R::lram_kib),
                   [](HwConfig& c, std::uint64_t kib) { c.lram_bytes = kib * 1024; })
            .unit("KiB (1024 B)")
            .range(1, std::uint64_t{1} << 30)
            .default_val(512)
            .desc("Local memory (scratchpad) capacity per NPU. It is checked against the "
                  "schedule's `alloc`/`free` (see [schedule.md](schedule.md#local-memory))."),
        F::integer("dispatch_cycles", raw(&R::dispatch_cycles), to(&HwConfig::dispatch_cycles))
            .unit("cycles")
            .range(0, 1u << 20)
            .default_val(4)
            .desc("The command processor's cost to dispatch one command, paid after the command "
                  "is ready and before it starts."),
        F::boolean("ideal_memory", raw(&R::ideal_memory),
                   [](HwConfig& c, bool v) { c.ideal_memory = v; })
            .bool_default(false)
            .desc("DMA transfers, DRAM and dispatch take no cycles and the compiler treats local "
                  "memory as unbounded, so runs measure compute alone, like SCALE-Sim's compute "
                  "report."),

        F::integer("slices.count", raw(&R::slices, &R::Slices::count),
                   to(&HwConfig::slices, &SliceConfig::count))
            .unit("slices")
            .range(1, 1024)
            .default_val(2)
            .desc("Number of slices (neural engine clusters). Each slice has one systolic array "
                  "and one vector unit."),
        F::integer("slices.rows", raw(&R::slices, &R::Slices::rows),
                   to(&HwConfig::slices, &SliceConfig::rows))
            .unit("PEs")
            .range(1, 4096)
            .default_val(16)
            .desc("Rows of the systolic array (PEs per column)."),
        F::integer("slices.cols", raw(&R::slices, &R::Slices::cols),
                   to(&HwConfig::slices, &SliceConfig::cols))
            .unit("PEs")
            .range(1, 4096)
            .default_val(16)
            .desc("Columns of the systolic array (PEs per row)."),
        F::choice(
            "slices.dataflow", raw(&R::slices, &R::Slices::dataflow), {"os", "ws", "is"},
            [](HwConfig& c, const std::string& v) { c.slices.dataflow = *dataflow_from_name(v); })
            .choice_default("ws")
            .desc("Systolic dataflow: output, weight or input stationary (see "
                  "[cost-model.md](cost-model.md#systolic-gemm))."),
        F::integer("slices.vector_lanes", raw(&R::slices, &R::Slices::vector_lanes),
                   to(&HwConfig::slices, &SliceConfig::vector_lanes))
            .unit("lanes")
            .range(1, 1u << 16)
            .default_val(16)
            .desc("Lanes of the vector unit."),
        F::op_cycles("slices.vector_op_cycles")
            .unit("cycles per element per lane")
            .range(1, 1u << 16)
            .computed_default("per op, see below")
            .desc("Cost of one unit of work of a vector op on one lane."),

        F::integer("dma.in_channels", raw(&R::dma, &R::Dma::in_channels),
                   to(&HwConfig::dma, &DmaConfig::in_channels))
            .unit("channels")
            .range(1, 64)
            .default_val(1)
            .desc("Channels of the DMA_IN engine (DRAM → LRAM). Each channel runs one transfer at "
                  "a time."),
        F::integer("dma.out_channels", raw(&R::dma, &R::Dma::out_channels),
                   to(&HwConfig::dma, &DmaConfig::out_channels))
            .unit("channels")
            .range(1, 64)
            .default_val(1)
            .desc("Channels of the DMA_OUT engine (LRAM → DRAM)."),
        F::integer("dma.burst_bytes", raw(&R::dma, &R::Dma::burst_bytes),
                   to(&HwConfig::dma, &DmaConfig::burst_bytes))
            .unit("bytes")
            .range(1, 1u << 24)
            .default_val(256)
            .desc("Largest burst. A transfer is split into bursts of this size. The last burst "
                  "may be shorter."),
        F::integer("dma.bytes_per_cycle", raw(&R::dma, &R::Dma::bytes_per_cycle),
                   to(&HwConfig::dma, &DmaConfig::bytes_per_cycle))
            .unit("bytes/cycle")
            .range(1, 1u << 20)
            .default_val(8)
            .desc("Port rate of one DMA channel."),
        F::integer("dma.setup_cycles", raw(&R::dma, &R::Dma::setup_cycles),
                   to(&HwConfig::dma, &DmaConfig::setup_cycles))
            .unit("cycles")
            .range(0, 1u << 20)
            .default_val(32)
            .desc("Per-transfer setup cost, paid before the first burst."),
        F::integer("dma.max_outstanding", raw(&R::dma, &R::Dma::max_outstanding),
                   to(&HwConfig::dma, &DmaConfig::max_outstanding))
            .unit("bursts")
            .range(1, 4096)
            .default_val(8)
            .desc("Bursts per channel that may have left the port and still wait for their data."),

        // 0.001 GB/s is the smallest bandwidth representable; zero would never move a byte.
        F::decimal("dram.bandwidth_gbps", raw(&R::dram, &R::Dram::bandwidth_gbps),
                   to(&HwConfig::dram, &DramConfig::bandwidth_mbps))
            .unit("GB/s (10^9 B/s)")
            .decimal_range(0.001, 1e6)
            .decimal_default(12.8)
            .desc("Total DRAM bandwidth over all channels. It does not depend on the NPU clock."),
        F::decimal("dram.latency_ns", raw(&R::dram, &R::Dram::latency_ns),
                   to(&HwConfig::dram, &DramConfig::latency_ps))
            .unit("ns")
            .decimal_range(0, 1e6)
            .decimal_default(100)
            .desc("Added to every burst after its DRAM service ends."),
        F::integer("dram.channels", raw(&R::dram, &R::Dram::channels),
                   to(&HwConfig::dram, &DramConfig::channels))
            .unit("channels")
            .range(1, 64)
            .default_val(1)
            .desc("DRAM channels. Each one has 1/`channels` of the bandwidth."),

        F::integer("host.call_cycles", raw(&R::host, &R::Host::call_cycles),
                   to(&HwConfig::host, &HostConfig::call_cycles))
            .unit("cycles")
            .range(0, std::uint64_t{1} << 32)
            .default_val(5000)
            .desc("Fixed cost of one call to the host CPU, paid by every HOST command (see "
                  "[Host](#host))."),
        F::integer("host.cycles_per_element", raw(&R::host, &R::Host::cycles_per_element),
                   to(&HwConfig::host, &HostConfig::cycles_per_element))
            .unit("cycles per element")
            .range(0, 1u << 20)
            .default_val(4)
            .desc("Host cost per element of a HOST command's `shape.elements`."),
    };
    for (ConfigField& field : link_fields()) f.push_back(std::move(field));
    for (ConfigField& field : energy_fields()) f.push_back(std::move(field));
    for (const ConfigField& field : f) field.validate();
    return f;
  }();
  return fields;
}

std::string config_field_table() {
  std::string table =
      "| key | type | unit | default | allowed range | what it models |\n"
      "|---|---|---|---|---|---|\n";
  for (const ConfigField& f : config_fields()) table += f.table_row() + "\n";
  return table;
}

}  // namespace npusim
