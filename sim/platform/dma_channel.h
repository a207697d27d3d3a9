// One channel of a DMA engine: moves a transfer in bursts through its port and the shared DRAM.
// Event-driven without a wake-up per burst: the steps are cost::DmaTransfer's (the estimator
// replays the same steps with DRAM to itself); each burst is handed to the DRAM with the cycle it
// will reach it, and each served burst issues the one whose outstanding slot it frees, from the
// DRAM's callback.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/cost/memory.h"
#include "sim/platform/command_unit.h"
#include "sim/platform/dram.h"

namespace npusim::platform {

class DmaChannel final : public CommandUnit, public DramRequester {
 public:
  DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule, Scoreboard& scoreboard,
             cost::QueueDispatcher& dispatcher, std::uint32_t channel, sc_core::sc_event& freed,
             const cost::DmaTiming& timing, Dram& dram);
  void burst_served(std::uint64_t done_cycle) override;

 protected:
  void execute(const Command& command) override;

 private:
  const cost::DmaTiming& timing_;
  Dram& dram_;
  std::uint32_t requester_;
  std::optional<cost::DmaTransfer> transfer_;  // the transfer in progress
  sc_core::sc_event transfer_done_;
};

}  // namespace npusim::platform
