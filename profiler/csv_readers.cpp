#include "profiler/csv_readers.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "profiler/input_file.h"

namespace npusim::profiler {
namespace {

std::string describe(const std::string& file, std::size_t row, std::size_t line,
                     const std::string& field, const std::string& message) {
  std::string text = file;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ": ") + part; };
  if (row > 0) {
    std::string where = "row " + std::to_string(row);
    if (line > 0 && line != row) where += " (line " + std::to_string(line) + ")";
    if (!field.empty())
      where +=
          ", field " +
          (field.find_first_not_of("0123456789") == std::string::npos ? field : "'" + field + "'");
    add(where);
  } else if (!field.empty()) {
    add(field);
  }
  add(message);
  return text;
}

// A character as it reads in a message.
std::string shown(char ch) {
  if (ch == '\t') return "a tab";
  if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x",
                  static_cast<unsigned>(static_cast<unsigned char>(ch)));
    return buf;
  }
  return std::string("'") + ch + "'";
}

// A field as it reads in a message: quoted, cut after 80 characters.
std::string quote_value(const std::string& value) {
  return "'" + (value.size() > 80 ? value.substr(0, 80) + "..." : value) + "'";
}

std::string join(const std::vector<std::string>& fields, char separator) {
  std::string text;
  for (std::size_t i = 0; i < fields.size(); ++i)
    text += (i ? std::string(1, separator) : "") + fields[i];
  return text;
}

std::uint64_t parse_integer(const CsvRecord& r, std::size_t k, const std::string& file,
                            const std::vector<std::string>& names, const char* unit) {
  const std::string& value = r.fields[k];
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    throw ParseError(
        file, r.row, names[k],
        std::string("expected a non-negative integer (") + unit + "), found " + quote_value(value),
        r.line);
  }
  std::uint64_t v = 0;
  for (char ch : value) {
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
    if (v > kMaxCsvInteger) {
      throw ParseError(file, r.row, names[k],
                       quote_value(value) + " is larger than " + std::to_string(kMaxCsvInteger),
                       r.line);
    }
  }
  return v;
}

// The header row, exactly; `other_header` names the other format for a hint.
void check_header(const std::vector<CsvRecord>& records, const std::vector<std::string>& names,
                  char separator, const std::string& file, const char* what,
                  const std::string& other_header, const char* other_what) {
  if (records.empty()) {
    throw ParseError(file, 0, "",
                     std::string("empty file; a ") + what + " starts with the header '" +
                         join(names, separator) + "'");
  }
  const CsvRecord& h = records.front();
  if (h.fields != names) {
    const std::string found = join(h.fields, separator);
    std::string message = std::string("expected the ") + what + " header '" +
                          join(names, separator) + "', found " + quote_value(found);
    if (found.find(other_header) == 0) message += std::string(" (that is a ") + other_what + ")";
    throw ParseError(file, h.row, "", message, h.line);
  }
}

void check_field_count(const CsvRecord& r, std::size_t count, const std::string& file) {
  if (r.fields.size() != count) {
    throw ParseError(
        file, r.row, "",
        "expected " + std::to_string(count) + " fields, found " + std::to_string(r.fields.size()),
        r.line);
  }
}

const std::vector<std::string> kTimelineHeader = {"ID", "Start", "End", "Location", "Op Type"};
const std::vector<std::string> kRuntimeHeader = {"id", "time_since_open", "time_since_start",
                                                 "location"};

}  // namespace

ParseError::ParseError(std::string file, std::size_t row, std::string field, std::string message,
                       std::size_t line)
    : std::runtime_error(describe(file, row, line, field, message)),
      file_(std::move(file)),
      row_(row),
      line_(line),
      field_(std::move(field)),
      message_(std::move(message)) {}

namespace {

// Where a record may hold a vendor's unquoted free-text field: field `index` (the location) runs
// to the last `after` separators of its line, quotes and separators included, unless it is a
// well-formed quoted field. Vendor toolchains (Torq's compile profile) write MLIR locations such
// as `loc(callsite("/x/fc.mlir":3:10 at "/x/fc.mlir":1:1))` that way, and their own readers take
// the fields around it by position.
struct FreeField {
  std::size_t index = static_cast<std::size_t>(-1);
  std::size_t after = 0;
};

// One line (no line break in it) split into RFC 4180 fields; nullopt if it is not well-formed.
std::optional<std::vector<std::string>> strict_split(std::string_view line, char separator) {
  std::vector<std::string> fields;
  std::size_t pos = 0;
  for (;;) {
    std::string field;
    if (pos < line.size() && line[pos] == '"') {
      for (++pos;; ++pos) {
        if (pos >= line.size()) return std::nullopt;
        if (line[pos] == '"') {
          if (pos + 1 < line.size() && line[pos + 1] == '"') {
            field += '"';
            ++pos;
            continue;
          }
          ++pos;
          break;
        }
        field += line[pos];
      }
      if (pos < line.size() && line[pos] != separator) return std::nullopt;
    } else {
      while (pos < line.size() && line[pos] != separator) {
        if (line[pos] == '"') return std::nullopt;
        field += line[pos++];
      }
    }
    fields.push_back(std::move(field));
    if (pos >= line.size()) return fields;
    ++pos;  // the separator
  }
}

// The rest of a line from the free field on: as RFC 4180 fields when that gives the free field
// and exactly `after` more; else the free field is everything up to the last `after`
// separators, and each field after it is unquoted if it is quoted.
std::vector<std::string> split_free(std::string_view line, char separator, std::size_t after) {
  if (auto strict = strict_split(line, separator); strict && strict->size() == after + 1) {
    return *strict;
  }
  std::vector<std::string> tail;
  std::size_t end = line.size();
  for (std::size_t k = 0; k < after && end > 0; ++k) {
    const std::size_t at = line.rfind(separator, end - 1);
    if (at == std::string_view::npos) break;
    std::string_view field = line.substr(at + 1, end - at - 1);
    auto unquoted = strict_split(field, separator);
    tail.push_back(unquoted && unquoted->size() == 1 ? unquoted->front() : std::string(field));
    end = at;
  }
  std::vector<std::string> fields = {std::string(line.substr(0, end))};
  fields.insert(fields.end(), tail.rbegin(), tail.rend());
  return fields;
}

// Whether the field at `pos` is an RFC 4180 quoted field whose closing quote is followed by the
// separator, a line break or the end: then it is read as one, as npusim writes it.
bool strict_quoted_field(std::string_view text, std::size_t pos, char separator) {
  if (pos >= text.size() || text[pos] != '"') return false;
  for (std::size_t i = pos + 1; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    if (i + 1 < text.size() && text[i + 1] == '"') {
      ++i;
      continue;
    }
    if (i + 1 >= text.size()) return true;
    const char next = text[i + 1];
    return next == separator || next == '\r' || next == '\n';
  }
  return false;  // unterminated: the line is read as free text
}

// At most `limit` records.
std::vector<CsvRecord> parse_records(std::string_view text, char separator, const std::string& file,
                                     const std::vector<std::string>& field_names, std::size_t limit,
                                     FreeField free = {}) {
  std::vector<CsvRecord> records;
  std::size_t pos = 0;
  const std::size_t n = text.size();
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;
  std::size_t line = 1;
  auto name = [&](std::size_t k) {
    return k < field_names.size() ? field_names[k] : std::to_string(k + 1);
  };
  while (pos < n && records.size() < limit) {
    CsvRecord rec;
    rec.row = records.size() + 1;
    rec.line = line;
    bool last_quoted = false;
    for (bool more = true; more;) {
      const std::size_t k = rec.fields.size();
      std::string field;
      if (k == free.index && !strict_quoted_field(text, pos, separator)) {
        // The free field and what follows it, to the end of the line.
        std::size_t eol = pos;
        while (eol < n && text[eol] != '\n') ++eol;
        std::size_t content_end = eol;
        if (content_end > pos && text[content_end - 1] == '\r') --content_end;
        if (text.substr(pos, content_end - pos).find('\r') != std::string_view::npos) {
          throw ParseError(file, rec.row, name(k),
                           "a CR not followed by LF (line breaks are CRLF or LF)", rec.line);
        }
        for (std::string& f :
             split_free(text.substr(pos, content_end - pos), separator, free.after))
          rec.fields.push_back(std::move(f));
        pos = eol < n ? eol + 1 : eol;
        if (eol < n) ++line;
        last_quoted = false;
        break;
      }
      last_quoted = pos < n && text[pos] == '"';
      if (last_quoted) {
        ++pos;
        for (;;) {
          if (pos >= n)
            throw ParseError(file, rec.row, name(k), "unterminated quoted field", rec.line);
          const char ch = text[pos];
          if (ch == '"') {
            if (pos + 1 < n && text[pos + 1] == '"') {
              field += '"';
              pos += 2;
              continue;
            }
            ++pos;
            break;
          }
          if (ch == '\n') ++line;
          field += ch;
          ++pos;
        }
        if (pos < n && text[pos] != separator && text[pos] != '\r' && text[pos] != '\n') {
          throw ParseError(file, rec.row, name(k),
                           "unexpected " + shown(text[pos]) + " after the closing quote", rec.line);
        }
      } else {
        while (pos < n && text[pos] != separator && text[pos] != '\r' && text[pos] != '\n') {
          if (text[pos] == '"') {
            throw ParseError(file, rec.row, name(k),
                             "a quote inside an unquoted field (quote the whole field and double "
                             "the quotes in it)",
                             rec.line);
          }
          field += text[pos++];
        }
      }
      rec.fields.push_back(std::move(field));
      // The field ends at the separator, a line break or the end of the text.
      if (pos >= n) {
        more = false;
      } else if (text[pos] == separator) {
        ++pos;
      } else if (text[pos] == '\n') {
        ++pos;
        ++line;
        more = false;
      } else {  // '\r'
        if (pos + 1 >= n || text[pos + 1] != '\n') {
          throw ParseError(file, rec.row, name(k),
                           "a CR not followed by LF (line breaks are CRLF or LF)", rec.line);
        }
        pos += 2;
        ++line;
        more = false;
      }
    }
    if (rec.fields.size() == 1 && rec.fields[0].empty() && !last_quoted) {
      throw ParseError(file, rec.row, "", "empty line", rec.line);
    }
    records.push_back(std::move(rec));
  }
  return records;
}

// The header, checked before the rest is parsed (a file of the other format fails on its header,
// not on a quote further on); then every record.
std::vector<CsvRecord> parse_checked(std::string_view text, char separator, const std::string& file,
                                     const std::vector<std::string>& names, const char* what,
                                     const std::string& other_header, const char* other_what,
                                     FreeField free) {
  check_header(parse_records(text, separator, file, names, 1), names, separator, file, what,
               other_header, other_what);
  return parse_records(text, separator, file, names, static_cast<std::size_t>(-1), free);
}

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view text, char separator, const std::string& file,
                                 const std::vector<std::string>& field_names) {
  return parse_records(text, separator, file, field_names, static_cast<std::size_t>(-1));
}

std::string read_text_file(const std::string& path) {
  std::string text;
  if (const auto problem = read_input_file(path, text)) throw ParseError(path, 0, "", *problem);
  return text;
}

std::vector<TimelineRow> read_timeline_csv(std::string_view text, const std::string& file) {
  const std::vector<CsvRecord> records = parse_checked(
      text, ',', file, kTimelineHeader, "timeline.csv", "id;time_since_open", "runtime.csv header",
      FreeField{3, 1});  // ID, Start, End, then Location up to the last field, Op Type
  std::vector<TimelineRow> rows;
  rows.reserve(records.size() - 1);
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& r = records[i];
    check_field_count(r, kTimelineHeader.size(), file);
    TimelineRow row;
    row.row = r.row;
    row.id = r.fields[0];
    if (row.id.empty()) throw ParseError(file, r.row, "ID", "empty", r.line);
    const auto [it, inserted] = seen.emplace(row.id, r.row);
    if (!inserted) {
      throw ParseError(file, r.row, "ID",
                       "duplicate ID " + quote_value(row.id) + " (also in row " +
                           std::to_string(it->second) + ")",
                       r.line);
    }
    row.start = parse_integer(r, 1, file, kTimelineHeader, "cycles");
    row.end = parse_integer(r, 2, file, kTimelineHeader, "cycles");
    if (row.end < row.start) {
      throw ParseError(file, r.row, "End",
                       std::to_string(row.end) + " is before Start " + std::to_string(row.start),
                       r.line);
    }
    row.location = r.fields[3];
    row.op_type = r.fields[4];
    if (row.op_type.empty()) throw ParseError(file, r.row, "Op Type", "empty", r.line);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<TimelineRow> read_timeline_csv_file(const std::string& path) {
  return read_timeline_csv(read_text_file(path), path);
}

std::vector<RuntimeRow> read_runtime_csv(std::string_view text, const std::string& file) {
  const std::vector<CsvRecord> records = parse_checked(
      text, ';', file, kRuntimeHeader, "runtime.csv", "ID,Start,End", "timeline.csv header",
      FreeField{3, 0});  // id, time_since_open, time_since_start, then the rest is the location
  std::vector<RuntimeRow> rows;
  rows.reserve(records.size() - 1);
  std::unordered_map<std::uint64_t, std::size_t> seen;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& r = records[i];
    check_field_count(r, kRuntimeHeader.size(), file);
    RuntimeRow row;
    row.row = r.row;
    row.id = parse_integer(r, 0, file, kRuntimeHeader, "program index");
    const auto [it, inserted] = seen.emplace(row.id, r.row);
    if (!inserted) {
      throw ParseError(file, r.row, "id",
                       "duplicate id " + std::to_string(row.id) + " (also in row " +
                           std::to_string(it->second) + ")",
                       r.line);
    }
    row.end_us = parse_integer(r, 1, file, kRuntimeHeader, "microseconds");
    row.duration_us = parse_integer(r, 2, file, kRuntimeHeader, "microseconds");
    if (row.duration_us > row.end_us) {
      throw ParseError(file, r.row, "time_since_start",
                       "duration " + std::to_string(row.duration_us) +
                           " us exceeds time_since_open " + std::to_string(row.end_us) +
                           " us (the program's end)",
                       r.line);
    }
    row.location = r.fields[3];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<RuntimeRow> read_runtime_csv_file(const std::string& path) {
  return read_runtime_csv(read_text_file(path), path);
}

}  // namespace npusim::profiler
