// Readers for the CSV files npusim writes (csv_writers.h) and vendor toolchains write in the same
// forms: timeline.csv / runtime_timeline.csv and runtime.csv. Strict: RFC 4180 records (quoted
// fields with doubled quotes, CRLF or LF line breaks), the exact header, the exact field count and
// integer times; the first problem found is thrown as a ParseError naming the file, the row and
// the field (docs/report.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/timeline.h"

namespace npusim::profiler {

// A malformed input file. The profiler cannot use sim/util/error.h; the CLI maps this to exit
// code 2. what() is `FILE: row N, field 'NAME': MESSAGE`; `row N (line L)` when a quoted line break
// earlier in the file makes the record start on another line than its number; without a row,
// `FILE: FIELD: MESSAGE` (FIELD may be a JSON pointer) or `FILE: MESSAGE`.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::string file, std::size_t row, std::string field, std::string message,
             std::size_t line = 0);
  const std::string& file() const { return file_; }
  std::size_t row() const { return row_; }    // 1-based record number, header = row 1; 0: none
  std::size_t line() const { return line_; }  // 1-based line the record starts on; 0: as row
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::size_t row_;
  std::size_t line_;
  std::string field_;
  std::string message_;
};

// The largest time value accepted: 2^53, so that every value is exact as a JSON number too.
inline constexpr std::uint64_t kMaxCsvInteger = std::uint64_t{1} << 53;

// One RFC 4180 record.
struct CsvRecord {
  std::size_t row = 0;   // 1-based record number (the header is row 1)
  std::size_t line = 0;  // 1-based line on which it starts
  std::vector<std::string> fields;
};

// Splits `text` into records. A leading UTF-8 byte order mark is skipped. Records end with CRLF or
// LF (the last one may have none); a field is quoted when it starts with `"`, and then holds
// anything up to the next lone `"`, with `""` standing for one quote. Rejected: a quote inside an
// unquoted field, anything but the separator or a line break after a closing quote, an
// unterminated quoted field, a CR not followed by LF outside quotes, and an empty line (a record
// with one empty field). `field_names` name fields in error messages (by position otherwise).
std::vector<CsvRecord> parse_csv(std::string_view text, char separator, const std::string& file,
                                 const std::vector<std::string>& field_names = {});

// A file's whole content; ParseError (no row) if it cannot be read.
std::string read_text_file(const std::string& path);

// One row of a timeline.csv (`ID,Start,End,Location,Op Type`).
struct TimelineRow {
  std::size_t row = 0;  // record number in the file (the header is row 1)
  std::string id;
  Cycles start = 0;
  Cycles end = 0;  // >= start
  std::string location;
  std::string op_type;
};

// Header exactly `ID,Start,End,Location,Op Type`; then rows of exactly five fields: a non-empty
// ID, unique in the file; Start and End decimal integers (digits only) from 0 to kMaxCsvInteger
// with End >= Start; any Location; a non-empty Op Type.
std::vector<TimelineRow> read_timeline_csv(std::string_view text, const std::string& file);
std::vector<TimelineRow> read_timeline_csv_file(const std::string& path);

// One row of a runtime.csv (`id;time_since_open;time_since_start;location`), times in µs.
struct RuntimeRow {
  std::size_t row = 0;
  std::uint64_t id = 0;           // program index
  std::uint64_t end_us = 0;       // time_since_open: the program's end since the run began
  std::uint64_t duration_us = 0;  // time_since_start: its duration; <= end_us
  std::string location;
  std::uint64_t start_us() const { return end_us - duration_us; }
};

// Header exactly `id;time_since_open;time_since_start;location`; then rows of exactly four
// `;`-separated fields: id, time_since_open and time_since_start decimal integers from 0 to
// kMaxCsvInteger, the id unique in the file, time_since_start <= time_since_open; any location.
std::vector<RuntimeRow> read_runtime_csv(std::string_view text, const std::string& file);
std::vector<RuntimeRow> read_runtime_csv_file(const std::string& path);

}  // namespace npusim::profiler
