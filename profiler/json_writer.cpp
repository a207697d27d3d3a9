#include "profiler/json_writer.h"

#include <nlohmann/json.hpp>

#include "profiler/input_file.h"

namespace npusim::profiler {

namespace {

// Text that nlohmann::json would print as it is between its quotes: printable ASCII, no quote
// or backslash. Nearly every name is; the others go through nlohmann for the exact escapes.
bool plain(std::string_view text) {
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u > 0x7e || ch == '"' || ch == '\\') return false;
  }
  return true;
}

}  // namespace

// Names reach the outputs from files (a model's path, a topology's file name) whose bytes need
// not be UTF-8; nlohmann would throw type_error.316 on them, so invalid bytes are escaped.
void JsonWriter::quoted(std::string_view text) {
  if (plain(text)) {
    out_.put('"').put(text).put('"');
  } else if (is_valid_utf8(text)) {
    out_.put(nlohmann::json(text).dump());
  } else {
    out_.put(nlohmann::json(escape_invalid_utf8(text)).dump());
  }
}

void JsonWriter::newline() {
  out_.put('\n');
  for (std::size_t i = 0; i < levels_.size(); ++i) out_.put("  ");
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& l = levels_.back();
  if (!l.empty) out_.put(l.compact ? ", " : ",");
  if (!l.compact) newline();
  l.empty = false;
}

void JsonWriter::key(std::string_view name) {
  before_value();
  quoted(name);
  out_.put(": ");
  after_key_ = true;
}

void JsonWriter::begin_object(bool compact) {
  before_value();
  out_.put('{');
  levels_.push_back({compact || (!levels_.empty() && levels_.back().compact)});
}

void JsonWriter::begin_array(bool compact) {
  before_value();
  out_.put('[');
  levels_.push_back({compact || (!levels_.empty() && levels_.back().compact)});
}

void JsonWriter::close(char bracket) {
  const Level l = levels_.back();
  levels_.pop_back();
  if (!l.empty && !l.compact) newline();
  out_.put(bracket);
  if (levels_.empty()) out_.put('\n');
}

void JsonWriter::end_object() { close('}'); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::value(std::uint64_t v) {
  before_value();
  out_.num(v);
}

void JsonWriter::value(std::int64_t v) {
  before_value();
  out_.num(v);
}

void JsonWriter::value(double v) {
  before_value();
  out_.put(nlohmann::json(v).dump());
}

void JsonWriter::value(bool v) {
  before_value();
  out_.put(v ? "true" : "false");
}

void JsonWriter::value(std::string_view v) {
  before_value();
  quoted(v);
}

}  // namespace npusim::profiler
