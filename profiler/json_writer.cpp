#include "profiler/json_writer.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "profiler/input_file.h"

namespace npusim::profiler {

namespace {

// The bytes of a word that are below 0x20, a quote or a backslash (and, with `high`, at or
// above 0x80), as the high bit of each ("Bit Twiddling Hacks": "Determine if a word has a byte
// less than n"). A borrow can also mark a byte above a marked one, never below it: the lowest mark
// is exact. Names are long runs of plain text, and a word at a time keeps the scan off the
// writers' profiles.
std::uint64_t escape_marks(std::uint64_t w, bool high) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  const auto zero_bytes = [](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  return ((w - kOnes * 0x20) & ~w & kHighs) | zero_bytes(w ^ (kOnes * '"')) |
         zero_bytes(w ^ (kOnes * '\\')) | (high ? w & kHighs : 0);
}

bool byte_stops(char ch, bool high) {
  const auto u = static_cast<unsigned char>(ch);
  return u < 0x20 || ch == '"' || ch == '\\' || (high && u >= 0x80);
}

// Where the first byte at or after `i` that needs escaping (or, with `high`, is at or above 0x80)
// is; text.size() if none.
std::size_t next_stop(std::string_view text, std::size_t i, bool high) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; text.size() - i >= 8; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    const std::uint64_t marks = escape_marks(w, high);
    if (marks != 0) return i + static_cast<std::size_t>(__builtin_ctzll(marks)) / 8;
  }
#endif
  while (i < text.size() && !byte_stops(text[i], high)) ++i;
  return i;
}

// `text` escaped as nlohmann::json::dump() escapes valid UTF-8. With `stop_at_high`, only up to
// its first byte at or above 0x80 (whose text must be checked first); returns where it stopped.
std::size_t put_escaped(TextOut& out, std::string_view text, bool stop_at_high) {
  std::size_t plain_from = 0;
  std::size_t i = next_stop(text, 0, stop_at_high);
  for (; i < text.size(); i = next_stop(text, plain_from, stop_at_high)) {
    const char ch = text[i];
    if (static_cast<unsigned char>(ch) >= 0x80) break;  // only with stop_at_high
    out.put(text.substr(plain_from, i - plain_from));
    plain_from = i + 1;
    switch (ch) {
      case '"':
        out.put("\\\"");
        break;
      case '\\':
        out.put("\\\\");
        break;
      case '\n':
        out.put("\\n");
        break;
      case '\r':
        out.put("\\r");
        break;
      case '\t':
        out.put("\\t");
        break;
      case '\b':
        out.put("\\b");
        break;
      case '\f':
        out.put("\\f");
        break;
      default: {
        static const char* const kHex = "0123456789abcdef";
        const auto u = static_cast<unsigned char>(ch);
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 0xf]};
        out.put(std::string_view(escaped, 6));
      }
    }
  }
  out.put(text.substr(plain_from, i - plain_from));
  return i;
}

}  // namespace

// Names reach the outputs from files (a model's path, a topology's file name) whose bytes need
// not be UTF-8; nlohmann would throw type_error.316 on them, so invalid bytes are escaped. One scan
// for ASCII text: it is escaped up to its first byte at or above 0x80, and only the rest, from
// there, is checked as UTF-8 (an ASCII prefix ends on a character boundary).
void put_json_string(TextOut& out, std::string_view text) {
  out.put('"');
  const std::size_t high = put_escaped(out, text, true);
  if (high < text.size()) {
    const std::string_view rest = text.substr(high);
    if (is_valid_utf8(rest)) {
      put_escaped(out, rest, false);
    } else {
      put_escaped(out, escape_invalid_utf8(rest), false);
    }
  }
  out.put('"');
}

void JsonWriter::quoted(std::string_view text) { put_json_string(out_, text); }

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
