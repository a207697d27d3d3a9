#include "sim/estimator/estimator.h"

#include <algorithm>

#include "profiler/dependants.h"
#include "sim/cost/dispatch.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const Schedule& schedule,
                          std::uint32_t command) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxCycles) {
    throw InputError(schedule.file, "/commands/" + std::to_string(command),
                     "the schedule runs past " + std::to_string(kMaxCycles) +
                         " cycles, the longest run npusim simulates");
  }
  return r;
}

}  // namespace

std::string describe_deadlock(const Schedule& schedule, const HwConfig& config,
                              const std::vector<bool>& finished,
                              const std::vector<std::size_t>& heads) {
  const EngineLayout layout(config, schedule);
  const auto queues = layout.queues(schedule);
  // Where each command sits: its engine and position in that engine's queue.
  std::vector<std::size_t> position(schedule.commands.size());
  for (const auto& q : queues) {
    for (std::size_t p = 0; p < q.size(); ++p) position[q[p]] = p;
  }
  std::string text = "deadlock: no engine can start its next command";
  for (std::uint32_t e = 0; e < queues.size(); ++e) {
    if (heads[e] >= queues[e].size()) continue;
    const Command& head = schedule.commands[queues[e][heads[e]]];
    std::string waits;
    for (std::uint32_t d : head.deps) {
      if (finished[d]) continue;
      const std::uint32_t de = layout.of(schedule.commands[d]);
      const std::size_t ahead = position[d] - std::min(position[d], heads[de]);
      waits += (waits.empty() ? "" : ", ") + schedule.commands[d].id + " (queued on " +
               layout.info(de).name +
               (ahead == 0 ? ", not started" : " behind " + std::to_string(ahead) + " command(s)") +
               ")";
    }
    text += "\n  " + layout.info(e).name + " holds " + head.id + ", waiting for " +
            (waits.empty() ? "a free channel" : waits);
  }
  return text;
}

profiler::Timeline estimate(const Schedule& schedule, const HwConfig& config) {
  const EngineLayout layout(config, schedule);
  const auto queues = layout.queues(schedule);
  const std::size_t n = schedule.commands.size();

  const profiler::Dependants dependants(schedule.commands);
  std::vector<std::uint32_t> unfinished_deps = dependants.waiting();

  std::vector<cost::QueueDispatcher> dispatchers;
  for (std::uint32_t e = 0; e < layout.count(); ++e) {
    dispatchers.emplace_back(config.dispatch_cycles, layout.info(e).channels);
  }
  std::vector<std::size_t> heads(layout.count(), 0);

  profiler::Timeline timeline;
  timeline.commands.resize(n);
  std::vector<bool> finished(n, false);
  std::vector<std::uint32_t> to_check(layout.count());
  for (std::uint32_t e = 0; e < layout.count(); ++e) to_check[e] = e;

  while (!to_check.empty()) {
    const std::uint32_t e = to_check.back();
    to_check.pop_back();
    while (heads[e] < queues[e].size() && unfinished_deps[queues[e][heads[e]]] == 0) {
      const std::uint32_t i = queues[e][heads[e]++];
      const Command& cmd = schedule.commands[i];
      std::uint64_t ready = 0;
      for (std::uint32_t d : cmd.deps) ready = std::max(ready, timeline.commands[d].end);
      // Ends are at most kMaxCycles (checked below) and dispatch_cycles at most 2^20, so the
      // start cannot wrap; a start past the limit makes the end past it too.
      const cost::QueueDispatcher::Grant grant =
          dispatchers[e].dispatch(dispatchers[e].earliest_dispatch(ready));
      const std::uint64_t end = checked_add(grant.start, cmd.isolated_cycles, schedule, i);
      timeline.commands[i] = {grant.start, end, grant.channel};
      dispatchers[e].release(grant.channel, end);
      finished[i] = true;
      for (const std::uint32_t j : dependants.of(i)) {
        if (--unfinished_deps[j] == 0) to_check.push_back(layout.of(schedule.commands[j]));
      }
    }
  }
  for (std::uint32_t e = 0; e < layout.count(); ++e) {
    if (heads[e] < queues[e].size()) {
      throw SimulationError(
          describe_deadlock(schedule, config, finished, heads),
          std::make_shared<PartialRun>(PartialRun{std::move(timeline), finished}));
    }
  }
  return timeline;
}

}  // namespace npusim
