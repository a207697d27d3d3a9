#include "profiler/json_writer.h"

#include <nlohmann/json.hpp>

#include "profiler/input_file.h"

namespace npusim::profiler {

namespace {

// Names reach the outputs from files (a model's path, a topology's file name) whose bytes need
// not be UTF-8; nlohmann would throw type_error.316 on them, so invalid bytes are escaped.
std::string quoted(std::string_view text) {
  if (is_valid_utf8(text)) return nlohmann::json(text).dump();
  return nlohmann::json(escape_invalid_utf8(text)).dump();
}

}  // namespace

void JsonWriter::newline() {
  out_ << '\n';
  for (std::size_t i = 0; i < levels_.size(); ++i) out_ << "  ";
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& l = levels_.back();
  if (!l.empty) out_ << (l.compact ? ", " : ",");
  if (!l.compact) newline();
  l.empty = false;
}

void JsonWriter::key(std::string_view name) {
  before_value();
  out_ << quoted(name) << ": ";
  after_key_ = true;
}

void JsonWriter::begin_object(bool compact) {
  before_value();
  out_ << '{';
  levels_.push_back({compact || (!levels_.empty() && levels_.back().compact)});
}

void JsonWriter::begin_array(bool compact) {
  before_value();
  out_ << '[';
  levels_.push_back({compact || (!levels_.empty() && levels_.back().compact)});
}

void JsonWriter::close(char bracket) {
  const Level l = levels_.back();
  levels_.pop_back();
  if (!l.empty && !l.compact) newline();
  out_ << bracket;
  if (levels_.empty()) out_ << '\n';
}

void JsonWriter::end_object() { close('}'); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::value(std::uint64_t v) {
  before_value();
  out_ << v;
}

void JsonWriter::value(std::int64_t v) {
  before_value();
  out_ << v;
}

void JsonWriter::value(double v) {
  before_value();
  out_ << nlohmann::json(v).dump();
}

void JsonWriter::value(bool v) {
  before_value();
  out_ << (v ? "true" : "false");
}

void JsonWriter::value(std::string_view v) {
  before_value();
  out_ << quoted(v);
}

}  // namespace npusim::profiler
