// One channel of a DMA engine: moves a transfer in bursts through its port and the shared DRAM.
// Event-driven without a wake-up per burst: bursts are handed to the DRAM with the cycle they
// will reach it, and each served burst schedules the one whose outstanding slot it frees, from
// the DRAM's callback. The steps are cost::isolated_transfer_cycles's, which replays them with
// DRAM to itself.
#pragma once

#include <cstdint>

#include "sim/cost/cost_model.h"
#include "sim/platform/command_unit.h"
#include "sim/platform/dram.h"

namespace npusim::platform {

class DmaChannel final : public CommandUnit, public DramRequester {
 public:
  DmaChannel(const sc_core::sc_module_name& name, const Schedule& schedule, Scoreboard& scoreboard,
             sc_core::sc_event& freed, const cost::DmaTiming& timing, Dram& dram);
  void burst_served(std::uint64_t done_cycle) override;

 protected:
  void execute(const Command& command) override;

 private:
  // Passes burst `next_burst_` through the port from cycle `ready` on and hands it to the DRAM.
  void issue(std::uint64_t ready);

  const cost::DmaTiming& timing_;
  Dram& dram_;
  std::uint32_t requester_;
  // The transfer in progress.
  std::uint64_t bytes_ = 0;
  std::uint64_t bursts_ = 0;
  std::uint64_t next_burst_ = 0;  // next to issue
  std::uint64_t served_ = 0;      // bursts the DRAM has scheduled, in issue order
  std::uint64_t port_free_ = 0;   // cycle the port finishes its last issued burst
  std::uint64_t last_done_ = 0;   // latest completion so far
  sc_core::sc_event transfer_done_;
};

}  // namespace npusim::platform
