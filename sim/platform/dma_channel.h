// One channel of a DMA engine: moves a transfer in bursts through its port and the shared DRAM.
// The steps mirror cost::isolated_transfer_cycles, which replays them with DRAM to itself.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/cost_model.h"
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
  // Waits until at least one burst in flight has its data, and returns how many have.
  std::uint64_t await_completions();

  const cost::DmaTiming& timing_;
  Dram& dram_;
  std::uint32_t requester_;
  // Cycles at which bursts in flight complete, earliest first.
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> in_flight_;
  sc_core::sc_event completion_;
};

}  // namespace npusim::platform
