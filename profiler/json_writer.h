// A streaming JSON writer: values go straight to the stream, so a report with a million per-op
// entries never exists as a document in memory. Output is deterministic and pretty-printed with
// two-space indents; `compact` containers go on one line (used for per-op entries).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/interned_string.h"

#include "profiler/text_out.h"

namespace npusim::profiler {

// `text` as a quoted JSON string, exactly as nlohmann::json::dump() prints it (no ASCII
// escaping): quote, backslash and control characters escaped, the rest as it is. Bytes that are
// not valid UTF-8 are first written as \xNN (escape_invalid_utf8), where nlohmann would throw.
// The one JSON string writer of stats.json, trace.json and schedule files.
void put_json_string(TextOut& out, std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  ~JsonWriter() = default;  // out_ hands what is buffered to the stream
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  void begin_object(bool compact = false);
  void end_object();
  void begin_array(bool compact = false);
  void end_array();
  void key(std::string_view name);  // inside an object, before each value
  void value(std::uint64_t v);
  void value(std::int64_t v);
  void value(std::uint32_t v) { value(std::uint64_t{v}); }
  void value(int v) { value(std::int64_t{v}); }
  void value(double v);  // shortest text that reads back the same, as nlohmann::json prints
  void value(bool v);
  void value(std::string_view v);
  void value(const char* v) { value(std::string_view(v)); }
  void value(const std::string& v) { value(std::string_view(v)); }
  void value(const InternedString& v) { value(v.str()); }
  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

 private:
  struct Level {
    bool compact;
    bool empty = true;
  };
  void before_value();
  void close(char bracket);
  void newline();
  void quoted(std::string_view text);
  TextOut out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace npusim::profiler
