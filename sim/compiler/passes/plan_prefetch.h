// Pass: which weight loads of DMA-bound groups are brought in early, while the DMA_IN channels
// idle under earlier, compute-bound groups (docs/compiler.md, "Weight prefetch"). It runs on the
// model the driver chose, from that model's estimated timeline; the driver emits the plan, and
// keeps it when the estimate is faster and local memory holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npusim {

// What the planner knows of one group of the chosen model, in emission order.
struct PrefetchSlot {
  // Prefetches may be emitted at the group's start (a tiled group that is no chain member).
  bool position = false;
  // The group's weight loads that can be prefetched, in the order it loads them (an input-outer
  // conv's first input block: one load per chunk, or per chunk and part when split).
  std::vector<std::uint64_t> load_bytes;
  // Bytes of the tiles' half of local memory the group needs while it runs: its ring_need and
  // the kept and resident tensors live meanwhile. A prefetched load is held from its position
  // through its group, and every group between must still fit the half with it.
  std::uint64_t need_bytes = 0;
  // Estimated, from the group's first DMA_IN to the next group's: bytes its DMA_IN channels could
  // still have moved (idle channel cycles × a channel's rate), and whether they were nearly always
  // busy (DMA-bound: its loads are worth moving away).
  std::uint64_t idle_bytes = 0;
  bool dma_bound = false;
  // A chain member: nothing may be held across it (its steps reserve their room apart).
  bool in_chain = false;
  // Bytes an earlier round's plan already holds across the group (counted in need_bytes, which
  // its estimate measured, but not yet against the held cap).
  std::uint64_t held_bytes = 0;
};

// One prefetch: group `target`'s load number `load` (in its order), emitted at group `at`'s start.
struct Prefetch {
  std::size_t at = 0;
  std::size_t target = 0;
  std::size_t load = 0;
  std::uint64_t bytes = 0;
};

// Greedy, in emission order: every DMA-bound group's loads, first to last, each emitted at the
// latest earlier position that is not DMA-bound, still has `bytes` of idle DMA_IN time, and
// leaves every group from there through the target within the local memory beside its need, and
// within `held_cap_bytes` with what is held there, this plan's and an earlier round's (no chain
// member between). A group's loads are taken in order and stop at the first that finds
// no place, so what is prefetched of a group is always its first loads. Sorted by position, then
// target, then load.
// `first_load[g]` (when given): how many of group g's loads an earlier round took, left out of
// its load_bytes (continue_after): the plan numbers its loads from there.
std::vector<Prefetch> plan_prefetch(const std::vector<PrefetchSlot>& slots,
                                    std::uint64_t lram_bytes, std::uint64_t held_cap_bytes,
                                    const std::vector<std::size_t>& first_load = {});

// A later round, on `slots` of the schedule that already prefetches `earlier` (from its
// estimate): leaves out of each group's load_bytes the loads `earlier` takes (a prefix), adds
// what `earlier` holds across each group to its held_bytes, and returns, per group, how many
// loads it left out (plan_prefetch's first_load).
std::vector<std::size_t> continue_after(std::vector<PrefetchSlot>& slots,
                                        const std::vector<Prefetch>& earlier);

// `earlier` and `more` as one plan, in plan_prefetch's order.
std::vector<Prefetch> merge_plans(std::vector<Prefetch> earlier, const std::vector<Prefetch>& more);

// The bytes `plan` loads early, and "N weight load(s), B bytes" for --explain.
std::uint64_t prefetched_bytes(const std::vector<Prefetch>& plan);
std::string describe_plan(const std::vector<Prefetch>& plan);

}  // namespace npusim
