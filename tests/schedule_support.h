// What tests of emitted schedules share: walking their dependencies.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/ir/schedule.h"

namespace npusim::test {

// Whether command `from` reaches command `to` through dependencies.
inline bool reaches(const std::vector<Command>& cmds, std::uint32_t from, std::uint32_t to) {
  std::vector<std::uint32_t> stack = {from};
  std::vector<bool> seen(cmds.size());
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (c == to) return true;
    if (seen[c]) continue;
    seen[c] = true;
    for (std::uint32_t d : cmds[c].deps) stack.push_back(d);
  }
  return false;
}

}  // namespace npusim::test
