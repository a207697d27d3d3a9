#include "sim/util/json_stream.h"

#include <fstream>
#include <iterator>
#include <vector>

#include "profiler/input_file.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

// Reads a file in fixed chunks into one reused buffer.
class ChunkReader {
 public:
  explicit ChunkReader(std::ifstream& in) : in_(in), buffer_(kChunkBytes) {}
  // Whether all of the file has been consumed; refills the buffer when it runs out.
  bool exhausted() {
    if (at_ < size_) return false;
    if (!in_) return true;
    in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    size_ = static_cast<std::size_t>(in_.gcount());
    at_ = 0;
    if (in_.bad()) throw InputError(path_, "", "cannot read file");
    return size_ == 0;
  }
  char current() const { return buffer_[at_]; }
  void advance() { ++at_; }
  void set_path(const std::string& path) { path_ = path; }

 private:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  std::ifstream& in_;
  std::vector<char> buffer_;
  std::size_t size_ = 0;
  std::size_t at_ = 0;
  std::string path_;
};

// The input iterator nlohmann's parser reads the chunks through; a default-constructed one is the
// end of the file.
class ChunkIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  ChunkIterator() = default;
  explicit ChunkIterator(ChunkReader* reader) : reader_(reader) {}
  char operator*() const { return reader_->current(); }
  ChunkIterator& operator++() {
    reader_->advance();
    return *this;
  }
  bool operator==(const ChunkIterator& other) const { return at_end() == other.at_end(); }
  bool operator!=(const ChunkIterator& other) const { return !(*this == other); }

 private:
  bool at_end() const { return reader_ == nullptr || reader_->exhausted(); }
  ChunkReader* reader_ = nullptr;
};

std::ifstream open_file(const std::string& path) {
  // Not a regular file (a folder, /dev/zero, a FIFO) or too large: refused before reading.
  if (const auto problem = profiler::input_file_problem(path)) throw InputError(path, "", *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  return in;
}

// Where the file first nests past kMaxJsonDepth, if it does.
std::optional<std::size_t> too_deep_in_file(const std::string& path) {
  std::ifstream in = open_file(path);
  std::vector<char> buffer(std::size_t{1} << 20);
  JsonDepthScanner scanner;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (in.bad()) throw InputError(path, "", "cannot read file");
    if (const auto at = scanner.feed(buffer.data(), got)) return at;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::size_t> JsonDepthScanner::feed(const char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    const char ch = data[i];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (ch == '\\') {
        escaped_ = true;
      } else if (ch == '"') {
        in_string_ = false;
      }
    } else if (ch == '"') {
      in_string_ = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth_ > kMaxJsonDepth) return offset_ + i;
    } else if ((ch == ']' || ch == '}') && depth_ > 0) {
      --depth_;
    }
  }
  offset_ += size;
  return std::nullopt;
}

bool JsonSaxHandler::parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                                 const nlohmann::detail::exception& error) {
  failed_ = true;
  error_what_ = error.what();
  // A number too large for a double (1e400) is nlohmann's out_of_range.406, which has no byte.
  if (const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&error)) {
    error_has_byte_ = true;
    error_byte_ = syntax->byte;
  }
  return false;
}

bool JsonSaxHandler::binary(binary_t& /*value*/) { return true; }  // not produced by JSON text

bool JsonSaxHandler::enter() {
  if (++depth_ > kMaxJsonDepth) {
    too_deep_ = true;
    return false;
  }
  return true;
}

bool sax_parse_json_file(const std::string& path, JsonSaxHandler& handler) {
  std::ifstream in = open_file(path);
  ChunkReader reader(in);
  reader.set_path(path);
  const bool parsed = nlohmann::json::sax_parse(ChunkIterator(&reader), ChunkIterator(), &handler);
  if (parsed) return true;
  if (!handler.failed_ && !handler.too_deep_) return false;  // the handler stopped on its own
  // read_json_file checks the nesting of the whole text before it parses; so does this, but
  // only when the parse failed, which every file nesting too deep makes it do.
  if (const auto at = too_deep_in_file(path)) {
    throw InputError(path, "byte " + std::to_string(*at),
                     "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
  }
  if (!handler.failed_) {
    throw InputError(path, "",
                     "JSON nested more than " + std::to_string(kMaxJsonDepth) +
                         " levels deep");  // not reached: the scan finds the nesting
  }
  throw InputError(path,
                   handler.error_has_byte_ ? "byte " + std::to_string(handler.error_byte_) : "",
                   "malformed JSON: " + handler.error_what_);
}

}  // namespace npusim
