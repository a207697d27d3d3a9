#include "profiler/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace npusim::profiler {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a folder, not a file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a regular file";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

std::string too_large(std::uint64_t bytes) {
  return "is " + std::to_string(bytes) + " bytes, more than the " +
         std::to_string(kMaxInputFileBytes) + " bytes (2 GiB) an input file may have";
}

// Opens without blocking (a FIFO with no writer would block open()), then checks what was opened,
// so that the file checked is the file read. Returns the descriptor, or -1 with `problem` set.
int open_checked(const std::string& path, std::string& problem, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    // A folder opens read-only on Linux, but say what it is for the other cases too.
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      problem = kind_of(st.st_mode);
    } else {
      problem = std::string("cannot open file: ") + std::strerror(err);
    }
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem = std::string("cannot read file: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    problem = kind_of(st.st_mode);
    ::close(fd);
    return -1;
  }
  size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxInputFileBytes) {
    problem = too_large(size);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<std::string> input_file_problem(const std::string& path) {
  std::string problem;
  std::uint64_t size = 0;
  const int fd = open_checked(path, problem, size);
  if (fd < 0) return problem;
  ::close(fd);
  return std::nullopt;
}

std::optional<std::string> read_input_file(const std::string& path, std::string& bytes) {
  std::string problem;
  std::uint64_t size = 0;
  const int fd = open_checked(path, problem, size);
  if (fd < 0) return problem;
  // Regular files never block; clear O_NONBLOCK anyway so that reads behave plainly.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  bytes.clear();
  // The size is a hint (files in /proc report 0, a file may change while read): read to the end,
  // never past the limit.
  bytes.resize(static_cast<std::size_t>(size) + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size()) {
      if (used > kMaxInputFileBytes) {
        ::close(fd);
        bytes.clear();
        return too_large(used);
      }
      bytes.resize(std::min<std::size_t>(std::max<std::size_t>(bytes.size() * 2, 4096),
                                         kMaxInputFileBytes + 1));
    }
    const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      bytes.clear();
      return std::string("cannot read file: ") + std::strerror(err);
    }
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (used > kMaxInputFileBytes) {
    bytes.clear();
    return too_large(used);
  }
  bytes.resize(used);
  return std::nullopt;
}

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when there is none.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02X",
                    static_cast<unsigned>(static_cast<unsigned char>(text[i])));
      out += hex;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace npusim::profiler
