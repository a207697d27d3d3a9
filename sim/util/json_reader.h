// Checked reading of JSON objects: every field is read with its type, range and default, every
// problem is recorded with its JSON pointer, and keys nobody read are reported as unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/util/error.h"

namespace npusim {

using Json = nlohmann::json;

// Parses a JSON file; malformed JSON or an unreadable file is an InputError naming the file (and
// the byte offset for syntax errors).
Json read_json_file(const std::string& path);
// The whole file as text; an unreadable file is an InputError naming it.
std::string read_text_file(const std::string& path);
Json parse_json_text(const std::string& text, const std::string& origin);

// A non-negative integer, also when spelled as an integral float such as 1e3; nullopt otherwise.
std::optional<std::uint64_t> json_uint(const Json& value);

// Escapes one JSON pointer reference token (RFC 6901).
std::string pointer_token(const std::string& key);

class JsonObject {
 public:
  // Records a problem (and reads as an empty object) if `value` is not an object.
  JsonObject(const Json& value, std::string pointer, Diagnostics& diag);
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;
  // Reports unknown keys if finish() was not called.
  ~JsonObject();

  bool has(const std::string& key) const;
  std::string pointer(const std::string& key) const { return pointer_ + "/" + pointer_token(key); }
  const std::string& pointer() const { return pointer_; }
  Diagnostics& diagnostics() { return diag_; }

  // Unsigned integer in [min, max]; the default when absent. Records a problem (and returns the
  // default) on a wrong type, a fraction or a value out of range.
  std::uint64_t get_uint(const std::string& key, std::uint64_t fallback, std::uint64_t min,
                         std::uint64_t max);
  std::optional<std::uint64_t> require_uint(const std::string& key, std::uint64_t min,
                                            std::uint64_t max);
  // A decimal number given in `unit` with at most three decimals, returned in thousandths of it
  // (so 12.8 GB/s reads as 12800): units are converted exactly, once.
  std::uint64_t get_milli(const std::string& key, double fallback, double min, double max);
  std::string get_string(const std::string& key, const std::string& fallback);
  std::optional<std::string> require_string(const std::string& key);
  // The raw value of a key (marks it as read); nullptr when absent.
  const Json* get(const std::string& key);
  // An array field, or an empty array (with a problem recorded) when it is not one or, being
  // required, is missing.
  const Json& get_array(const std::string& key, bool required);

  // Records one problem per key that no accessor asked for.
  void finish();

 private:
  const Json* lookup(const std::string& key);
  void mark_read(const std::string& key);
  const Json& value_;
  std::string pointer_;
  Diagnostics& diag_;
  // The keys asked for. A few per object, so a vector (no allocation per key, as a set has): a
  // schedule reads millions of objects.
  std::vector<std::string> read_;
  bool finished_ = false;
  bool is_object_ = false;
};

}  // namespace npusim
