// What the tests of the compiler's choices share: reading `npusim compile --explain` lines.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::test {

// The last explain line that starts with `prefix` ("chains\t", "residency\t"); empty if none.
inline std::string explain_line(const std::vector<std::string>& explain,
                                const std::string& prefix) {
  std::string found;
  for (const std::string& line : explain) {
    if (line.rfind(prefix, 0) == 0) found = line;
  }
  return found;
}

// The number right after the first `label` in `line` (a failure, and 0, when it is not there).
inline std::uint64_t figure_after(const std::string& line, const std::string& label) {
  const std::size_t at = line.find(label);
  EXPECT_NE(at, std::string::npos) << "'" << label << "' in " << line;
  return at == std::string::npos ? 0 : std::stoull(line.substr(at + label.size()));
}

}  // namespace npusim::test
