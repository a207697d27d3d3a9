// Streaming (SAX) reading of JSON files: the file is read in chunks and handed to nlohmann's SAX
// parser, so a large file never exists in memory as one string or one document. Malformed JSON,
// nesting too deep and unreadable files give exactly the errors of read_json_file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace npusim {

// Far deeper than any npusim format nests. nlohmann's dump() and copies recurse once per level,
// so a file of a few hundred thousand '[' would overflow the stack where a value is printed.
inline constexpr std::size_t kMaxJsonDepth = 512;

// Counts nesting over text given piece by piece, as read_json_file checks it before parsing:
// brackets outside strings, with no regard to the rest of the syntax.
class JsonDepthScanner {
 public:
  // The offset (from the start of all text fed) at which nesting first passes kMaxJsonDepth.
  std::optional<std::size_t> feed(const char* data, std::size_t size);

 private:
  std::size_t offset_ = 0;
  std::size_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// A SAX handler for sax_parse_json_file. It records a syntax error rather than throwing, and
// sets too_deep when it stops because the document nests deeper than kMaxJsonDepth.
class JsonSaxHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) override;
  bool binary(binary_t& value) override;

 protected:
  // Call on each start_object / start_array; false (and too_deep) past kMaxJsonDepth.
  bool enter();
  void leave() { --depth_; }
  std::size_t depth() const { return depth_; }

 private:
  friend bool sax_parse_json_file(const std::string& path, JsonSaxHandler& handler);
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  bool failed_ = false;
  std::size_t error_byte_ = 0;
  bool error_has_byte_ = false;
  std::string error_what_;
};

// Parses the file with `handler`. Returns true if the whole file was parsed and false if the
// handler stopped early on its own. Throws InputError, as read_json_file does, for an unreadable
// file, malformed JSON or nesting past kMaxJsonDepth (the nesting is checked over the whole
// file, so it is reported even where a syntax error comes first, as read_json_file reports it).
bool sax_parse_json_file(const std::string& path, JsonSaxHandler& handler);

}  // namespace npusim
