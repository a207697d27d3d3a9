#include "sim/compiler/passes/plan_prefetch.h"

#include <algorithm>
#include <tuple>

namespace npusim {

namespace {

bool in_plan_order(const Prefetch& x, const Prefetch& y) {
  return std::tie(x.at, x.target, x.load) < std::tie(y.at, y.target, y.load);
}

}  // namespace

std::vector<Prefetch> plan_prefetch(const std::vector<PrefetchSlot>& slots,
                                    std::uint64_t lram_bytes, std::uint64_t held_cap_bytes,
                                    const std::vector<std::size_t>& first_load) {
  // Room for one more load held at group g.
  auto fits = [&](std::size_t g, const std::vector<std::uint64_t>& held, std::uint64_t bytes) {
    return slots[g].need_bytes + held[g] + bytes <= lram_bytes &&
           slots[g].held_bytes + held[g] + bytes <= held_cap_bytes;
  };
  std::vector<Prefetch> plan;
  std::vector<std::uint64_t> idle(slots.size()), held(slots.size(), 0);
  for (std::size_t i = 0; i < slots.size(); ++i) idle[i] = slots[i].idle_bytes;
  for (std::size_t b = 0; b < slots.size(); ++b) {
    const PrefetchSlot& target = slots[b];
    if (!target.dma_bound || target.in_chain) continue;
    for (std::size_t k = 0; k < target.load_bytes.size(); ++k) {
      const std::uint64_t bytes = target.load_bytes[k];
      // Walk back from the target while every group passed still fits with the load held.
      std::size_t at = b;
      bool placed = false;
      std::uint64_t fits_through = b;  // groups [fits_through, b] fit with it
      if (!fits(b, held, bytes)) break;
      while (at > 0) {
        const std::size_t a = at - 1;
        if (slots[a].in_chain) break;
        if (!fits(a, held, bytes)) break;
        fits_through = a;
        at = a;
        if (slots[a].position && !slots[a].dma_bound && idle[a] >= bytes) {
          placed = true;
          break;
        }
      }
      if (!placed) break;  // its later loads are not prefetched either: a group's are a prefix
      idle[at] -= bytes;
      for (std::size_t g = fits_through; g <= b; ++g) held[g] += bytes;
      plan.push_back({at, b, (first_load.empty() ? 0 : first_load[b]) + k, bytes});
    }
  }
  std::sort(plan.begin(), plan.end(), in_plan_order);
  return plan;
}

std::vector<std::size_t> continue_after(std::vector<PrefetchSlot>& slots,
                                        const std::vector<Prefetch>& earlier) {
  std::vector<std::size_t> first_load(slots.size(), 0);
  for (const Prefetch& p : earlier) {
    first_load[p.target] = std::max(first_load[p.target], p.load + 1);
    for (std::size_t g = p.at; g <= p.target; ++g) slots[g].held_bytes += p.bytes;
  }
  for (std::size_t g = 0; g < slots.size(); ++g) {
    std::vector<std::uint64_t>& loads = slots[g].load_bytes;
    const std::size_t taken = std::min(first_load[g], loads.size());
    loads.erase(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(taken));
  }
  return first_load;
}

std::vector<Prefetch> merge_plans(std::vector<Prefetch> earlier,
                                  const std::vector<Prefetch>& more) {
  earlier.insert(earlier.end(), more.begin(), more.end());
  std::sort(earlier.begin(), earlier.end(), in_plan_order);
  return earlier;
}

std::uint64_t prefetched_bytes(const std::vector<Prefetch>& plan) {
  std::uint64_t bytes = 0;
  for (const Prefetch& p : plan) bytes += p.bytes;
  return bytes;
}

std::string describe_plan(const std::vector<Prefetch>& plan) {
  return std::to_string(plan.size()) + " weight load(s), " +
         std::to_string(prefetched_bytes(plan)) + " bytes";
}

}  // namespace npusim
