#include "sim/cost/dispatch.h"

#include <algorithm>

namespace npusim::cost {

QueueDispatcher::QueueDispatcher(Cycles dispatch_cycles, std::uint32_t channels)
    : dispatch_cycles_(dispatch_cycles), free_at_(channels, 0) {}

QueueDispatcher::Cycles QueueDispatcher::earliest_dispatch(Cycles ready) const {
  const Cycles channel_free = *std::min_element(free_at_.begin(), free_at_.end());
  if (channel_free == kNever) return kNever;
  return std::max({ready, previous_start_, channel_free});
}

QueueDispatcher::Grant QueueDispatcher::dispatch(Cycles at) {
  const auto channel = static_cast<std::uint32_t>(
      std::find_if(free_at_.begin(), free_at_.end(), [&](Cycles free) { return free <= at; }) -
      free_at_.begin());
  free_at_[channel] = kNever;
  previous_start_ = at + dispatch_cycles_;
  return {previous_start_, channel};
}

}  // namespace npusim::cost
