// A write buffer for the output writers: text and bytes go into a 1 MiB block that is handed to
// the stream when full, numbers are formatted with std::to_chars straight into it. Nothing is
// allocated per call, and the stream sees a few large writes instead of millions of small ones.
//
// An optional byte limit lets a writer give up on a file that would grow past what a person can
// open (the trace.json and per-command CSV rules of docs/outputs.md): over_limit() turns true once
// more than `limit` bytes were written, and the writer stops.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string_view>

namespace npusim::profiler {

class TextOut {
 public:
  explicit TextOut(std::ostream& out,
                   std::uint64_t limit_bytes = std::numeric_limits<std::uint64_t>::max())
      : out_(out), buf_(new char[kSize]), limit_(limit_bytes) {}
  ~TextOut() { flush(); }
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;

  TextOut& put(char ch) {
    if (used_ == kSize) flush();
    buf_[used_++] = ch;
    return *this;
  }
  TextOut& put(std::string_view text) {
    if (text.size() > kSize - used_) {
      flush();
      if (text.size() > kSize) {
        write_through(text);
        return *this;
      }
    }
    std::memcpy(buf_.get() + used_, text.data(), text.size());
    used_ += text.size();
    return *this;
  }
  TextOut& put(const char* text) { return put(std::string_view(text)); }

  // Any integer, in decimal.
  template <typename Int>
  TextOut& num(Int value) {
    static_assert(std::numeric_limits<Int>::is_integer, "num() takes integers");
    if (kSize - used_ < 24) flush();
    used_ = static_cast<std::size_t>(
        std::to_chars(buf_.get() + used_, buf_.get() + kSize, value).ptr - buf_.get());
    return *this;
  }
  // The shortest text that reads back as the same double (std::to_chars).
  TextOut& shortest(double value) {
    if (kSize - used_ < 64) flush();
    used_ = static_cast<std::size_t>(
        std::to_chars(buf_.get() + used_, buf_.get() + kSize, value).ptr - buf_.get());
    return *this;
  }
  // Integer nanoseconds as microseconds with exactly three decimals: 1234567 -> "1234.567".
  TextOut& us(std::uint64_t ns) {
    num(ns / 1000);
    const auto frac = static_cast<unsigned>(ns % 1000);
    const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                            static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    return put(std::string_view(digits, 4));
  }

  // Hands the buffered bytes to the stream.
  void flush() {
    if (used_ == 0) return;
    write_through(std::string_view(buf_.get(), used_));
    used_ = 0;
  }
  // Bytes written so far, buffered or not.
  std::uint64_t bytes() const { return flushed_ + used_; }
  bool over_limit() const { return bytes() > limit_; }

 private:
  static constexpr std::size_t kSize = std::size_t{1} << 20;
  void write_through(std::string_view text) {
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
    flushed_ += text.size();
  }
  std::ostream& out_;
  std::unique_ptr<char[]> buf_;
  std::size_t used_ = 0;
  std::uint64_t flushed_ = 0;
  std::uint64_t limit_;
};

}  // namespace npusim::profiler
