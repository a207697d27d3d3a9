#include "profiler/select.h"

#include <algorithm>
#include <stdexcept>

namespace npusim::profiler {

Selection select_commands(const Workload& workload, const std::vector<const Timeline*>& timelines,
                          const std::vector<bool>& keep, Cycles origin) {
  constexpr std::uint32_t kDropped = ~std::uint32_t{0};
  Selection out;
  out.workload.model_name = workload.model_name;
  out.workload.model_file = workload.model_file;
  out.workload.device = workload.device;
  out.workload.engines = workload.engines;
  out.workload.layers = workload.layers;
  std::vector<std::uint32_t> command_index(workload.commands.size(), kDropped);
  std::vector<std::uint32_t> program_index(workload.programs.size(), kDropped);
  for (std::size_t i = 0; i < workload.commands.size(); ++i) {
    if (!keep[i]) continue;
    command_index[i] = static_cast<std::uint32_t>(out.workload.commands.size());
    const std::uint32_t p = workload.commands[i].program;
    if (program_index[p] == kDropped) {
      program_index[p] = static_cast<std::uint32_t>(out.workload.programs.size());
      out.workload.programs.push_back(workload.programs[p]);
    }
    CommandInfo c = workload.commands[i];
    c.program = program_index[p];
    c.deps.clear();
    for (std::uint32_t d : workload.commands[i].deps) {
      if (command_index[d] != kDropped) c.deps.push_back(command_index[d]);
    }
    out.workload.commands.push_back(std::move(c));
  }
  for (const Timeline* t : timelines) {
    Timeline sub;
    // Bursts are not attributed to commands: only a selection of everything keeps them.
    if (std::find(keep.begin(), keep.end(), false) == keep.end()) sub.dram = t->dram;
    for (std::size_t i = 0; i < workload.commands.size(); ++i) {
      if (!keep[i]) continue;
      CommandTiming ct = t->commands[i];
      if (ct.start < origin)
        throw std::invalid_argument("select_commands: a command starts before the origin");
      ct.start -= origin;
      ct.end -= origin;
      sub.commands.push_back(ct);
    }
    out.timelines.push_back(std::move(sub));
  }
  return out;
}

}  // namespace npusim::profiler
