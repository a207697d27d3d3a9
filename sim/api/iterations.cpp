#include "sim/api/iterations.h"

#include <string>

namespace npusim {

Schedule repeat_schedule(const Schedule& schedule, std::uint32_t count) {
  if (count <= 1) return schedule;
  Schedule out = schedule;
  out.commands.clear();
  out.programs.clear();
  const std::size_t n = schedule.commands.size();
  // How many ids each prefix uses: copy k adds k times that to its numbers.
  std::uint64_t di = 0, dout = 0, s = 0, h = 0;
  auto counter_of = [&](const std::string& prefix) -> std::uint64_t& {
    return prefix == "DI" ? di : prefix == "DO" ? dout : prefix == "H" ? h : s;
  };
  for (const Command& c : schedule.commands) {
    const auto [prefix, number] = split_id(c.id);
    std::uint64_t& counter = counter_of(prefix);
    counter = std::max(counter, number + 1);
  }
  std::vector<bool> has_dependant(n, false);
  for (const Command& c : schedule.commands) {
    for (std::uint32_t d : c.deps) has_dependant[d] = true;
  }
  std::vector<std::uint32_t> sinks;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!has_dependant[i]) sinks.push_back(i);
  }
  out.commands.reserve(n * count);
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::string suffix = "#" + std::to_string(k);
    const auto base = static_cast<std::uint32_t>(k * n);
    for (const Program& p : schedule.programs) out.programs.push_back({p.name + suffix, p.loc});
    for (std::uint32_t i = 0; i < n; ++i) {
      Command c = schedule.commands[i];
      const auto [prefix, number] = split_id(c.id);
      const std::uint64_t per_copy = counter_of(prefix);
      c.id = prefix + std::to_string(number + k * per_copy);
      c.program += static_cast<std::uint32_t>(k * schedule.programs.size());
      for (std::uint32_t& d : c.deps) d += base;
      if (c.deps.empty() && k > 0) {
        for (std::uint32_t sink : sinks)
          c.deps.push_back(base - static_cast<std::uint32_t>(n) + sink);
      }
      for (BufferAlloc& a : c.alloc) a.buffer += suffix;
      for (std::string& f : c.free) f += suffix;
      out.commands.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace npusim
