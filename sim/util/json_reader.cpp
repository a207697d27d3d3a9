#include "sim/util/json_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "profiler/input_file.h"
#include "sim/util/json_stream.h"

namespace npusim {

Json parse_json_text(const std::string& text, const std::string& origin) {
  if (const auto at = JsonDepthScanner().feed(text.data(), text.size())) {
    throw InputError(origin, "byte " + std::to_string(*at),
                     "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InputError(origin, "byte " + std::to_string(e.byte),
                     std::string("malformed JSON: ") + e.what());
  } catch (const Json::out_of_range& e) {
    // A number too large for a double (1e400): nlohmann reports it as out_of_range.406.
    throw InputError(origin, "", std::string("malformed JSON: ") + e.what());
  }
}

std::string read_text_file(const std::string& path) {
  std::string text;
  if (const auto problem = profiler::read_input_file(path, text))
    throw InputError(path, "", *problem);
  return text;
}

Json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~') {
      out += "~0";
    } else if (ch == '/') {
      out += "~1";
    } else {
      out += ch;
    }
  }
  return out;
}

JsonObject::JsonObject(const Json& value, std::string pointer, Diagnostics& diag)
    : value_(value), pointer_(std::move(pointer)), diag_(diag), is_object_(value.is_object()) {
  read_.reserve(16);  // more keys than any npusim object has: one allocation
  if (!is_object_) {
    diag_.error(pointer_.empty() ? "/" : pointer_,
                std::string("expected an object, found ") + value.type_name());
  }
}

JsonObject::~JsonObject() {
  if (!finished_) finish();
}

bool JsonObject::has(const std::string& key) const { return is_object_ && value_.contains(key); }

void JsonObject::mark_read(const std::string& key) {
  if (std::find(read_.begin(), read_.end(), key) == read_.end()) read_.push_back(key);
}

const Json* JsonObject::lookup(const std::string& key) {
  mark_read(key);
  if (!is_object_) return nullptr;
  auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const Json* JsonObject::get(const std::string& key) { return lookup(key); }

const Json& JsonObject::get_array(const std::string& key, bool required) {
  static const Json kEmptyArray = Json::array();
  const Json* v = lookup(key);
  if (!v) {
    if (required && is_object_) diag_.error(pointer(key), "missing required field");
    return kEmptyArray;
  }
  if (!v->is_array()) {
    diag_.error(pointer(key), std::string("expected an array, found ") + v->type_name());
    return kEmptyArray;
  }
  return *v;
}

std::optional<std::uint64_t> json_uint(const Json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    if (i >= 0) return static_cast<std::uint64_t>(i);
    return std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^64 itself does not fit; anything below it with no fraction does.
    if (d >= 0 && d < 18446744073709551616.0 && std::floor(d) == d) {
      return static_cast<std::uint64_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> JsonObject::require_uint(const std::string& key, std::uint64_t min,
                                                      std::uint64_t max) {
  const Json* v = lookup(key);
  if (!v) {
    if (is_object_) diag_.error(pointer(key), "missing required field");
    return std::nullopt;
  }
  const auto value = json_uint(*v);
  if (!value) {
    diag_.error(pointer(key), "expected a non-negative integer, found " + v->dump());
    return std::nullopt;
  }
  if (*value < min || *value > max) {
    diag_.error(pointer(key), "value " + std::to_string(*value) + " out of range [" +
                                  std::to_string(min) + ", " + std::to_string(max) + "]");
    return std::nullopt;
  }
  return value;
}

std::uint64_t JsonObject::get_uint(const std::string& key, std::uint64_t fallback,
                                   std::uint64_t min, std::uint64_t max) {
  if (!has(key)) {
    mark_read(key);
    return fallback;
  }
  return require_uint(key, min, max).value_or(fallback);
}

std::uint64_t JsonObject::get_milli(const std::string& key, double fallback, double min,
                                    double max) {
  const Json* v = lookup(key);
  const double value = v ? (v->is_number() ? v->get<double>() : std::nan("")) : fallback;
  if (v && !v->is_number()) {
    diag_.error(pointer(key), "expected a number, found " + v->dump());
    return static_cast<std::uint64_t>(std::llround(fallback * 1000));
  }
  if (!(value >= min && value <= max)) {
    std::ostringstream msg;
    msg << "value " << (v ? v->dump() : std::to_string(value)) << " out of range [" << min << ", "
        << max << "]";
    diag_.error(pointer(key), msg.str());
    return static_cast<std::uint64_t>(std::llround(fallback * 1000));
  }
  const double milli = value * 1000;
  const double rounded = std::round(milli);
  // Absolute tolerance: far above double rounding noise at these magnitudes (< 1e9), far below
  // the 1e-3 step that a fourth decimal would add.
  if (std::fabs(milli - rounded) > 1e-4) {
    diag_.error(pointer(key), "value " + v->dump() + " has more than three decimals");
  }
  return static_cast<std::uint64_t>(rounded);
}

std::optional<std::string> JsonObject::require_string(const std::string& key) {
  const Json* v = lookup(key);
  if (!v) {
    if (is_object_) diag_.error(pointer(key), "missing required field");
    return std::nullopt;
  }
  if (!v->is_string()) {
    diag_.error(pointer(key), "expected a string, found " + v->dump());
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::string JsonObject::get_string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    mark_read(key);
    return fallback;
  }
  return require_string(key).value_or(fallback);
}

void JsonObject::finish() {
  finished_ = true;
  if (!is_object_) return;
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (std::find(read_.begin(), read_.end(), it.key()) == read_.end()) {
      std::vector<std::string> sorted = read_;
      std::sort(sorted.begin(), sorted.end());
      std::string known;
      for (const std::string& k : sorted) known += (known.empty() ? "" : ", ") + k;
      diag_.error(pointer(it.key()), "unknown key (expected one of: " + known + ")");
    }
  }
}

}  // namespace npusim
