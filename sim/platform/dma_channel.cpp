#include "sim/platform/dma_channel.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

DmaChannel::DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule,
                       Scoreboard& scoreboard, sc_core::sc_event& freed,
                       const cost::DmaTiming& timing, Dram& dram)
    : CommandUnit(name, schedule, scoreboard, freed),
      timing_(timing),
      dram_(dram),
      requester_(dram.add_requester(*this)) {}

void DmaChannel::burst_served(std::uint64_t done_cycle) {
  in_flight_.push(done_cycle);
  completion_.notify(until_cycle(in_flight_.top()));
}

std::uint64_t DmaChannel::await_completions() {
  while (true) {
    std::uint64_t done = 0;
    const std::uint64_t now = now_cycles();
    while (!in_flight_.empty() && in_flight_.top() <= now) {
      in_flight_.pop();
      ++done;
    }
    if (done > 0) return done;
    // A burst still queued at the DRAM is not in in_flight_ yet; burst_served will notify.
    if (!in_flight_.empty()) completion_.notify(until_cycle(in_flight_.top()));
    wait(completion_);
  }
}

void DmaChannel::execute(const Command& command) {
  wait(cycles(timing_.setup_cycles));
  const std::uint64_t bursts = timing_.burst_count(command.bytes);
  std::uint64_t issued = 0;
  std::uint64_t completed = 0;
  for (std::uint64_t b = 0; b < bursts; ++b) {
    while (issued - completed >= timing_.max_outstanding) completed += await_completions();
    const std::uint64_t size = timing_.burst_bytes(command.bytes, b);
    wait(cycles(timing_.port_cycles(size)));
    dram_.request(requester_, size);
    ++issued;
  }
  while (completed < bursts) completed += await_completions();
}

}  // namespace npusim::platform
