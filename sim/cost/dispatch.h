// The command processor's dispatch rule for one engine's in-order queue, written once for the
// estimator and the SystemC engine: a command is dispatched once its dependencies are done, the
// command before it in the queue has started and one of the engine's channels is free; it takes
// the lowest-numbered free channel, which is reserved from then on, and starts dispatch_cycles
// later.
#pragma once

#include <cstdint>
#include <vector>

namespace npusim::cost {

class QueueDispatcher {
 public:
  using Cycles = std::uint64_t;
  struct Grant {
    Cycles start = 0;           // the command's first cycle on its channel
    std::uint32_t channel = 0;  // which of the engine's channels runs it
  };

  QueueDispatcher(Cycles dispatch_cycles, std::uint32_t channels);
  // The earliest cycle, no earlier than `ready` (its dependencies' end), at which the next
  // command can be dispatched; kNever while every channel's command is still running.
  Cycles earliest_dispatch(Cycles ready) const;
  // Dispatches the next command at `at` (== earliest_dispatch(at)). Its channel stays busy until
  // release().
  Grant dispatch(Cycles at);
  void release(std::uint32_t channel, Cycles end) { free_at_[channel] = end; }

  static constexpr Cycles kNever = ~Cycles{0};

 private:
  Cycles dispatch_cycles_;
  Cycles previous_start_ = 0;
  std::vector<Cycles> free_at_;  // per channel; kNever while its command runs
};

}  // namespace npusim::cost
