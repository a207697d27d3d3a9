// What the end-to-end tests share: running a command line and reading what it wrote.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace npusim::test {

// What a finished process left: its exit code and what it printed.
struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One argument for /bin/sh, single-quoted.
inline std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace npusim::test
