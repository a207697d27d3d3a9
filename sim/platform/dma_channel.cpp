#include "sim/platform/dma_channel.h"

#include <algorithm>

#include "sim/platform/sc_time.h"

namespace npusim::platform {

DmaChannel::DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule,
                       Scoreboard& scoreboard, sc_core::sc_event& freed,
                       const cost::DmaTiming& timing, Dram& dram)
    : CommandUnit(name, schedule, scoreboard, freed),
      timing_(timing),
      dram_(dram),
      requester_(dram.add_requester(*this)) {}

void DmaChannel::issue(std::uint64_t ready) {
  const std::uint64_t size = timing_.burst_bytes(bytes_, next_burst_++);
  port_free_ = std::max(port_free_, ready) + timing_.port_cycles(size);
  dram_.request(requester_, port_free_, size);
}

void DmaChannel::burst_served(std::uint64_t done_cycle) {
  // Bursts are served in the order they were issued; burst `served_` has its data at
  // `done_cycle`, which frees its slot for the burst max_outstanding later.
  last_done_ = std::max(last_done_, done_cycle);
  ++served_;
  if (next_burst_ < bursts_) issue(done_cycle);
  if (served_ == bursts_) transfer_done_.notify(until_cycle(last_done_));
}

void DmaChannel::execute(const Command& command) {
  wait(cycles(timing_.setup_cycles));
  bytes_ = command.bytes;
  bursts_ = timing_.burst_count(command.bytes);
  next_burst_ = 0;
  served_ = 0;
  port_free_ = now_cycles();
  last_done_ = port_free_;
  // The first max_outstanding bursts go out back to back through the port.
  while (next_burst_ < std::min<std::uint64_t>(bursts_, timing_.max_outstanding)) issue(port_free_);
  wait(transfer_done_);
}

}  // namespace npusim::platform
