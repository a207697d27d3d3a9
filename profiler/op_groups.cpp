#include "profiler/op_groups.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace npusim::profiler {
namespace {

struct GroupKey {
  std::uint32_t iteration;
  std::uint32_t engine;
  std::string_view layer;
  bool operator==(const GroupKey& o) const {
    return iteration == o.iteration && engine == o.engine && layer == o.layer;
  }
};
struct GroupKeyHash {
  std::size_t operator()(const GroupKey& k) const {
    return (std::hash<std::string_view>{}(k.layer) * 31 + k.iteration) * 31 + k.engine;
  }
};

void add_command(OpGroup& g, const CommandInfo& c, const CommandTiming& t,
                 const CommandStalls* stalls) {
  if (g.op != c.op_type) g.op = "mixed";
  g.commands += 1;
  g.cycles += t.end - t.start;
  g.start = std::min(g.start, t.start);
  g.end = std::max(g.end, t.end);
  g.bytes += c.dram_read_bytes + c.dram_write_bytes + c.link_bytes;
  g.macs += c.macs + c.vector_macs;
  g.energy_fj += c.energy.total_fj();
  if (stalls != nullptr) {
    g.wait_deps += stalls->deps;
    g.wait_dram += stalls->dram;
  }
}

}  // namespace

std::vector<OpGroup> group_ops(const Workload& workload, const Timeline& timeline,
                               const std::vector<CommandStalls>& stalls) {
  std::unordered_map<GroupKey, std::uint32_t, GroupKeyHash> index;
  std::vector<OpGroup> groups;
  // Each engine's commands come in runs of one layer: its last group is kept.
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Last {
    std::uint32_t iteration = 0;
    std::string_view layer;
    std::uint32_t group = kNone;
  };
  std::vector<Last> last(workload.engines.size());
  for (std::uint32_t i = 0; i < workload.commands.size(); ++i) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    const std::string_view layer = c.layer.empty() ? c.op_type : c.layer;
    Last* cached = c.engine < last.size() ? &last[c.engine] : nullptr;
    if (cached != nullptr && cached->group != kNone && cached->iteration == c.iteration &&
        cached->layer == layer) {
      add_command(groups[cached->group], c, t, stalls.empty() ? nullptr : &stalls[i]);
      continue;
    }
    const auto [it, added] = index.try_emplace(GroupKey{c.iteration, c.engine, layer},
                                               static_cast<std::uint32_t>(groups.size()));
    if (cached != nullptr) *cached = Last{c.iteration, layer, it->second};
    if (added) {
      OpGroup g;
      g.name = std::to_string(c.iteration) + "_" + std::string(layer);
      g.layer = layer;
      g.op = c.op_type;
      g.iteration = c.iteration;
      g.engine = c.engine;
      g.program = c.program;
      g.first_index = i;
      g.start = t.start;
      g.end = t.end;
      groups.push_back(std::move(g));
    }
    add_command(groups[it->second], c, t, stalls.empty() ? nullptr : &stalls[i]);
  }
  return groups;
}

}  // namespace npusim::profiler
