// One channel of a DMA engine: after the setup, hands its transfer to the shared DRAM, which
// steps it through the channel's port in bursts (cost::DmaTransfer, the steps the estimator
// replays) and notifies the channel when its last burst's data has arrived. Event-driven: the
// channel itself wakes twice per transfer.
#pragma once

#include <cstdint>

#include "sim/cost/memory.h"
#include "sim/platform/command_unit.h"
#include "sim/platform/dram.h"

namespace npusim::platform {

class DmaChannel final : public CommandUnit {
 public:
  DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule, Scoreboard& scoreboard,
             cost::QueueDispatcher& dispatcher, std::uint32_t channel, sc_core::sc_event& freed,
             const cost::DmaTiming& timing, Dram& dram);

 protected:
  void execute(const Command& command) override;

 private:
  const cost::DmaTiming& timing_;
  Dram& dram_;
  std::uint32_t requester_;
  sc_core::sc_event transfer_done_;
};

}  // namespace npusim::platform
