#include "sim/platform/dma_channel.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

DmaChannel::DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule,
                       Scoreboard& scoreboard, cost::QueueDispatcher& dispatcher,
                       std::uint32_t channel, sc_core::sc_event& freed,
                       const cost::DmaTiming& timing, Dram& dram)
    : CommandUnit(name, schedule, scoreboard, dispatcher, channel, freed),
      timing_(timing),
      dram_(dram),
      requester_(dram.add_requester()) {}

void DmaChannel::execute(const Command& command) {
  if (timing_.ideal) return;  // ideal memory: the data is simply there
  wait(cycles(timing_.setup_cycles));
  dram_.start_transfer(requester_, command.bytes, transfer_done_);
  wait(transfer_done_);
  dram_.end_transfer(requester_);
}

}  // namespace npusim::platform
