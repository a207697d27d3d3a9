#include "sim/ir/schedule_append.h"

#include <algorithm>

namespace npusim {

std::pair<std::string, std::uint64_t> split_id(const std::string& id) {
  std::size_t digits = id.size();
  while (digits > 0 && id[digits - 1] >= '0' && id[digits - 1] <= '9') --digits;
  return {id.substr(0, digits), digits < id.size() ? std::stoull(id.substr(digits)) : 0};
}

AppendedPart ScheduleAppender::append(const Schedule& part, const AppendOptions& options) {
  const auto rename = [&](const std::string& s) { return options.rename ? options.rename(s) : s; };
  // Buffers are unique across a schedule; a part's names may repeat in another part (compilers
  // number buffers alike).
  const std::string suffix = "@" + std::to_string(copies_++);
  AppendedPart placed;
  placed.first = static_cast<std::uint32_t>(out_.commands.size());
  placed.program_base =
      options.program_base.value_or(static_cast<std::uint32_t>(out_.programs.size()));
  if (!options.program_base) {
    for (const Program& p : part.programs) out_.programs.push_back({rename(p.name), rename(p.loc)});
  }
  std::map<std::string, std::uint64_t> used;  // per id prefix, the numbers this copy takes
  for (const Command& source : part.commands) {
    Command c = source;
    const auto [prefix, number] = split_id(c.id);
    c.id = prefix + std::to_string(next_[prefix] + number);
    used[prefix] = std::max(used[prefix], number + 1);
    if (options.device) c.device = *options.device;
    c.program += placed.program_base;
    for (std::uint32_t& d : c.deps) d += placed.first;
    if (c.deps.empty()) c.deps = options.root_deps;
    c.layer = options.layer.empty() ? rename(c.layer) : options.layer;
    c.loc = options.loc.empty() ? rename(c.loc) : options.loc;
    for (BufferAlloc& a : c.alloc) a.buffer = rename(a.buffer).append(suffix);
    for (std::string& f : c.free) f = rename(f).append(suffix);
    out_.commands.push_back(std::move(c));
  }
  for (const auto& [prefix, count] : used) next_[prefix] += count;
  if (options.add_layer_views) {
    for (const LayerView& v : part.layers) {
      LayerView copy = v;
      copy.name = rename(v.name);
      out_.layers.push_back(std::move(copy));
    }
  }
  std::vector<bool> has_dependant(part.commands.size(), false);
  for (const Command& c : part.commands) {
    for (std::uint32_t d : c.deps) has_dependant[d] = true;
  }
  for (std::uint32_t i = 0; i < part.commands.size(); ++i) {
    if (!has_dependant[i]) placed.sinks.push_back(placed.first + i);
  }
  return placed;
}

std::uint32_t ScheduleAppender::add(Command command) {
  command.id += std::to_string(next_[command.id]++);
  out_.commands.push_back(std::move(command));
  return static_cast<std::uint32_t>(out_.commands.size() - 1);
}

std::uint32_t ScheduleAppender::add_program(Program program) {
  out_.programs.push_back(std::move(program));
  return static_cast<std::uint32_t>(out_.programs.size() - 1);
}

}  // namespace npusim
