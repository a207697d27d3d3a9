#include "sim/platform/dma_channel.h"

#include <algorithm>

#include "sim/platform/sc_time.h"

namespace npusim::platform {

DmaChannel::DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule,
                       Scoreboard& scoreboard, cost::QueueDispatcher& dispatcher,
                       std::uint32_t channel, sc_core::sc_event& freed,
                       const cost::DmaTiming& timing, Dram& dram)
    : CommandUnit(name, schedule, scoreboard, dispatcher, channel, freed),
      timing_(timing),
      dram_(dram),
      requester_(dram.add_requester(*this)) {}

void DmaChannel::burst_served(std::uint64_t done_cycle) {
  const cost::DmaTransfer::Burst next = transfer_->served(done_cycle);
  if (next.bytes != 0) dram_.request(requester_, next.arrival, next.bytes);
  if (transfer_->finished()) transfer_done_.notify(until_cycle(transfer_->end()));
}

void DmaChannel::execute(const Command& command) {
  if (timing_.ideal) return;  // ideal memory: the data is simply there
  wait(cycles(timing_.setup_cycles));
  transfer_.emplace(timing_, command.bytes, now_cycles());
  for (const cost::DmaTransfer::Burst& b : transfer_->start_bursts()) {
    dram_.request(requester_, b.arrival, b.bytes);
  }
  wait(transfer_done_);
}

}  // namespace npusim::platform
