#include "sim/compiler/passes/order_dma_queues.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

#include "profiler/dependants.h"
#include "sim/cost/dispatch.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule_append.h"

namespace npusim {
namespace {

using Cycles = std::uint64_t;

}  // namespace

std::vector<std::uint64_t> ready_first_starts(const Schedule& schedule, const HwConfig& config,
                                              std::size_t window) {
  const EngineLayout layout(config, schedule);
  const std::vector<std::vector<std::uint32_t>> queues = layout.queues(schedule);
  const std::vector<Command>& cmds = schedule.commands;
  const std::size_t n = cmds.size();
  const profiler::Dependants dependants(cmds);
  std::vector<std::uint32_t> waiting = dependants.waiting();  // dependencies not yet scheduled
  std::vector<Cycles> ready(n, 0), start(n, 0);
  const std::uint32_t engines = layout.count();
  std::vector<bool> passes(engines);
  std::vector<cost::QueueDispatcher> dispatchers;
  for (std::uint32_t e = 0; e < engines; ++e) {
    const EngineKind kind = layout.info(e).kind;
    passes[e] = kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut;
    dispatchers.emplace_back(config.dispatch_cycles, layout.info(e).channels);
  }
  // Per queue, the first position at or after p that may be unscheduled (path-compressed), so
  // that a window never walks over the commands that passed its first one.
  std::vector<std::vector<std::uint32_t>> skip(engines);
  std::vector<std::uint32_t> position_in_queue(n, 0);
  for (std::uint32_t e = 0; e < engines; ++e) {
    skip[e].resize(queues[e].size() + 1);
    std::iota(skip[e].begin(), skip[e].end(), 0u);
    for (std::uint32_t p = 0; p < queues[e].size(); ++p) position_in_queue[queues[e][p]] = p;
  }
  const auto unscheduled_from = [&](std::uint32_t e, std::size_t p) {
    std::vector<std::uint32_t>& s = skip[e];
    std::size_t root = p;
    while (s[root] != root) root = s[root];
    while (s[p] != root) p = std::exchange(s[p], static_cast<std::uint32_t>(root));
    return root;
  };

  // What engine e would dispatch next and when, if nothing else happened first.
  struct Next {
    Cycles at = cost::QueueDispatcher::kNever;
    std::uint32_t command = 0;
  };
  const auto next_of = [&](std::uint32_t e) {
    Next next;
    const std::vector<std::uint32_t>& q = queues[e];
    std::size_t p = unscheduled_from(e, 0);
    if (!passes[e]) {
      if (p < q.size() && waiting[q[p]] == 0) {
        next = {dispatchers[e].earliest_dispatch(ready[q[p]]), q[p]};
      }
      return next;
    }
    // The first unscheduled command, ready by the time a channel is: it goes, as in order.
    const Cycles floor = dispatchers[e].earliest_dispatch(0);
    if (floor == cost::QueueDispatcher::kNever) return next;
    if (p < q.size() && waiting[q[p]] == 0 && ready[q[p]] <= floor) return Next{floor, q[p]};
    // Else the earliest any of the window's ready commands can go, then the first that is ready
    // by then: a later transfer goes first only when every one before it still waits.
    Cycles earliest_ready = cost::QueueDispatcher::kNever;
    for (std::size_t seen = 0; p < q.size() && seen < window; p = unscheduled_from(e, p + 1)) {
      ++seen;
      if (waiting[q[p]] == 0) earliest_ready = std::min(earliest_ready, ready[q[p]]);
      if (!cmds[q[p]].free.empty()) break;  // nothing passes a command that frees memory
    }
    if (earliest_ready == cost::QueueDispatcher::kNever) return next;
    const Cycles at = dispatchers[e].earliest_dispatch(earliest_ready);
    if (at == cost::QueueDispatcher::kNever) return next;
    p = unscheduled_from(e, 0);
    for (std::size_t seen = 0; p < q.size() && seen < window; p = unscheduled_from(e, p + 1)) {
      ++seen;
      if (waiting[q[p]] == 0 && ready[q[p]] <= at) return Next{at, q[p]};
      if (!cmds[q[p]].free.empty()) break;
    }
    return next;
  };

  // Engines by when they dispatch next (then by engine); an entry is stale once its engine has
  // dispatched or gained a ready command since (version).
  using Entry = std::tuple<Cycles, std::uint32_t, std::uint64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<std::uint64_t> version(engines, 0);
  const auto refresh = [&](std::uint32_t e) {
    const Next next = next_of(e);
    ++version[e];
    if (next.at != cost::QueueDispatcher::kNever) heap.emplace(next.at, e, version[e]);
  };
  for (std::uint32_t e = 0; e < engines; ++e) refresh(e);
  std::vector<std::uint32_t> touched;  // engines whose next dispatch may have changed
  while (!heap.empty()) {
    const auto [at, e, v] = heap.top();
    heap.pop();
    if (v != version[e]) continue;
    const Next next = next_of(e);
    const std::uint32_t i = next.command;
    const cost::QueueDispatcher::Grant grant = dispatchers[e].dispatch(next.at);
    const Cycles end = grant.start + cmds[i].isolated_cycles;
    dispatchers[e].release(grant.channel, end);
    start[i] = grant.start;
    skip[e][position_in_queue[i]] = position_in_queue[i] + 1;
    touched.assign(1, e);
    for (const std::uint32_t j : dependants.of(i)) {
      ready[j] = std::max(ready[j], end);
      if (--waiting[j] == 0) touched.push_back(layout.of(cmds[j]));
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::uint32_t t : touched) refresh(t);
  }
  return start;
}

QueueReorder reorder_dma_queues(Schedule& schedule, const HwConfig& config) {
  std::vector<Command>& old = schedule.commands;
  const std::size_t n = old.size();
  QueueReorder reorder;
  {
    const std::vector<std::uint64_t> key = ready_first_starts(schedule, config);
    reorder.order.resize(n);
    std::iota(reorder.order.begin(), reorder.order.end(), 0u);
    std::stable_sort(reorder.order.begin(), reorder.order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return key[a] < key[b]; });
  }
  std::vector<std::uint32_t> position(n);
  for (std::uint32_t j = 0; j < n; ++j) position[reorder.order[j]] = j;

  // Each engine prefix's numbers, in the old order, handed out again in the new one (a handful
  // of prefixes: DI, DO, S, H, ...).
  struct Ids {
    std::string prefix;
    std::vector<std::uint64_t> numbers;
    std::size_t next = 0;
  };
  std::vector<Ids> ids;
  std::vector<std::uint32_t> id_of(n);  // index into ids
  for (std::size_t i = 0; i < n; ++i) {
    const std::pair<std::string, std::uint64_t> split = split_id(old[i].id);
    const std::string& prefix = split.first;
    auto it =
        std::find_if(ids.begin(), ids.end(), [&](const Ids& x) { return x.prefix == prefix; });
    if (it == ids.end()) it = ids.insert(ids.end(), Ids{prefix, {}, 0});
    it->numbers.push_back(split.second);
    id_of[i] = static_cast<std::uint32_t>(it - ids.begin());
  }
  for (Ids& x : ids) std::sort(x.numbers.begin(), x.numbers.end());

  // Everything that allocates comes first, so that the schedule is changed only once nothing
  // can throw: it is either reordered whole or untouched. The new ids go where the old ones will
  // be kept, and are swapped in.
  reorder.ids.resize(n);
  for (const std::uint32_t i : reorder.order) {
    Ids& x = ids[id_of[i]];
    reorder.ids[i] = x.prefix + std::to_string(x.numbers[x.next++]);
  }
  std::vector<Command> commands;
  commands.reserve(n);
  for (const std::uint32_t i : reorder.order) {
    Command& c = old[i];
    for (std::uint32_t& d : c.deps) d = position[d];
    std::swap(reorder.ids[i], c.id);
    commands.push_back(std::move(c));
  }
  old = std::move(commands);
  return reorder;
}

void undo_reorder(Schedule& schedule, QueueReorder&& reorder) {
  std::vector<Command>& now = schedule.commands;
  std::vector<Command> commands(now.size());  // allocated before anything moves
  for (std::size_t j = 0; j < now.size(); ++j) {
    Command& c = now[j];
    for (std::uint32_t& d : c.deps) d = reorder.order[d];
    c.id = std::move(reorder.ids[reorder.order[j]]);
    commands[reorder.order[j]] = std::move(c);
  }
  now = std::move(commands);
}

}  // namespace npusim
