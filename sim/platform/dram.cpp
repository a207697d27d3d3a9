#include "sim/platform/dram.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

namespace {
// The arbiter decides 1 ps into a cycle, after every burst arriving in that cycle is queued.
// (A function, not a constant: no sc_time may exist before the time resolution is set.)
sc_core::sc_time decision_offset() { return sc_core::sc_time::from_value(1); }
}  // namespace

Dram::Dram(const sc_core::sc_module_name& name, const cost::DramTiming& timing,
           profiler::EventSink& sink)
    : sc_core::sc_module(name), state_(timing), sink_(sink) {
  SC_METHOD(arbitrate);
  sensitive << arbitrate_event_;
  dont_initialize();
}

std::uint32_t Dram::add_requester(DramRequester& requester) {
  requesters_.push_back(&requester);
  pending_.emplace_back();
  last_granted_ = static_cast<std::uint32_t>(requesters_.size() - 1);
  return last_granted_;
}

void Dram::request(std::uint32_t requester, std::uint64_t arrival, std::uint64_t bytes) {
  pending_[requester].push_back({arrival, bytes});
  ++pending_count_;
  // Keeps an earlier pending decision if there is one.
  arbitrate_event_.notify(until_cycle(arrival) + decision_offset());
}

void Dram::arbitrate() {
  const std::uint64_t now = now_cycles();
  const cost::Ticks next_cycle_ticks = cost::Ticks{now + 1} * state_.timing().ticks_per_cycle;
  const auto requesters = static_cast<std::uint32_t>(requesters_.size());
  while (pending_count_ > 0) {
    // Only bursts that have arrived compete; the others come back when they arrive.
    std::uint64_t next_arrival = ~std::uint64_t{0};
    bool any_arrived = false;
    for (std::uint32_t r = 0; r < requesters; ++r) {
      if (pending_[r].empty()) continue;
      any_arrived = any_arrived || pending_[r].front().arrival_cycle <= now;
      next_arrival = std::min(next_arrival, pending_[r].front().arrival_cycle);
    }
    if (!any_arrived) {
      arbitrate_event_.notify(until_cycle(next_arrival) + decision_offset());
      return;
    }
    const std::uint32_t channel = state_.earliest_channel();
    const cost::Ticks free_at = state_.channel_free_at(channel);
    if (free_at >= next_cycle_ticks) {
      // Busy through this cycle: decide again in the cycle in which the channel frees, when a
      // burst arriving in that cycle can compete too.
      const auto cycle = static_cast<std::uint64_t>(free_at / state_.timing().ticks_per_cycle);
      arbitrate_event_.notify(until_cycle(cycle) + decision_offset());
      return;
    }
    // Round-robin: the first requester after the last one granted whose burst has arrived.
    std::uint32_t r = last_granted_;
    do {
      r = (r + 1) % requesters;
    } while (pending_[r].empty() || pending_[r].front().arrival_cycle > now);
    last_granted_ = r;
    const Burst burst = pending_[r].front();
    pending_[r].pop_front();
    --pending_count_;
    ++bursts_served_;
    const std::uint64_t done = state_.serve(channel, burst.arrival_cycle, burst.bytes);
    sink_.dram_burst({burst.arrival_cycle, done, burst.bytes});
    requesters_[r]->burst_served(done);
  }
}

}  // namespace npusim::platform
