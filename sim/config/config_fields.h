// The one declaration of every hardware-config field (config_fields()): key path, type, unit,
// default, allowed range, a line of documentation, and where the field lives in the raw layer
// (RawHwConfig) and in the checked one (HwConfig). The loader reads, checks, defaults and converts
// every field through its declaration, and docs/config.md's field table is rendered from it
// (config_field_table(); a test fails when the two differ).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/raw_config.h"
#include "sim/util/json_reader.h"

namespace npusim {

struct HwConfig;

class ConfigField {
 public:
  enum class Type : std::uint8_t {
    kInteger,  // unsigned, in [min, max] of its unit
    kDecimal,  // at most three decimals, in [min, max]; HwConfig gets thousandths of the unit
    kString,
    kChoice,  // one string out of a fixed list
    kBoolean,
    kOpCycles,  // slices.vector_op_cycles: a vector op's name -> an integer in [min, max]
  };

  // Where a raw value lives (both accessors from the same member pointers, see config_fields.cpp).
  template <class T>
  struct RawSlot {
    std::function<std::optional<T>&(RawHwConfig&)> ref;
    std::function<const std::optional<T>&(const RawHwConfig&)> get;
  };
  // Where the checked value goes, after conversion (decimals arrive in thousandths).
  template <class T>
  using Setter = std::function<void(HwConfig&, T)>;

  // The field kinds. `key` is the dotted path in the JSON tree ("dma.bytes_per_cycle").
  static ConfigField integer(std::string key, RawSlot<std::uint64_t> raw,
                             Setter<std::uint64_t> set);
  static ConfigField decimal(std::string key, RawSlot<double> raw, Setter<std::uint64_t> set);
  static ConfigField text(std::string key, RawSlot<std::string> raw, Setter<std::string> set);
  static ConfigField choice(std::string key, RawSlot<std::string> raw,
                            std::vector<std::string> choices, Setter<std::string> set);
  static ConfigField boolean(std::string key, RawSlot<bool> raw, Setter<bool> set);
  static ConfigField op_cycles(std::string key);  // RawHwConfig/HwConfig::slices.vector_op_cycles

  // The declaration, fluently (Ramulator 2's param<T>(name).desc().default_val()). A method that
  // does not fit the field's type throws std::logic_error when the table is built.
  ConfigField& unit(std::string unit);
  ConfigField& desc(std::string doc);
  ConfigField& range(std::uint64_t min, std::uint64_t max);  // kInteger, kOpCycles
  ConfigField& default_val(std::uint64_t value);             // kInteger
  ConfigField& decimal_range(double min, double max);        // kDecimal
  ConfigField& decimal_default(double value);                // kDecimal
  ConfigField& choice_default(std::string value);            // kChoice
  ConfigField& bool_default(bool value);                     // kBoolean
  // A default that depends on the source or on another table ("the file's stem"): shown in the
  // docs; applied by the loader (kString) or by apply_default (kOpCycles).
  ConfigField& computed_default(std::string doc);
  // Throws std::logic_error if the declaration is incomplete or its default is out of range.
  void validate() const;

  const std::string& key() const { return key_; }
  Type type() const { return type_; }
  // The row of docs/config.md's field table: | key | type | unit | default | range | doc |
  std::string table_row() const;

  // JSON -> raw: reads this field's key of its (already opened) parent object and checks only
  // its JSON type.
  void read_json(JsonObject& parent, RawHwConfig& raw) const;
  // Raw -> JSON (a present value only), so that --set applies to a config that was not JSON.
  void write_json(const RawHwConfig& raw, Json& root) const;
  // Raw -> checked: range and choice checks and unit conversion of a present value. Problems are
  // recorded at the field's JSON pointer, or at raw.locations[key] when the source was not JSON.
  void check(const RawHwConfig& raw, Diagnostics& diag, HwConfig& out) const;
  void apply_default(HwConfig& out) const;

 private:
  ConfigField(std::string key, Type type) : key_(std::move(key)), type_(type) {}
  void expect(bool ok, const char* what) const;
  bool check_integer(std::uint64_t value, const std::string& where, Diagnostics& diag) const;

  std::string key_;
  Type type_;
  std::string unit_;
  std::string doc_;
  std::uint64_t min_ = 0;  // kDecimal: thousandths
  std::uint64_t max_ = 0;
  std::optional<std::uint64_t> default_number_;  // kInteger; kDecimal: thousandths; kBoolean: 0/1
  std::string default_string_;                   // kChoice
  std::string computed_default_;
  std::vector<std::string> choices_;

  RawSlot<std::uint64_t> raw_integer_;
  RawSlot<double> raw_decimal_;
  RawSlot<std::string> raw_string_;
  RawSlot<bool> raw_boolean_;
  Setter<std::uint64_t> set_number_;
  Setter<std::string> set_string_;
  Setter<bool> set_boolean_;
};

// Every field, in the order of docs/config.md's table.
const std::vector<ConfigField>& config_fields();

// docs/config.md's field table (header, separator, one row per field), each line ending in '\n'.
std::string config_field_table();

}  // namespace npusim
