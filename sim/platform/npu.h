// One NPU device as a SystemC module: an engine per command queue of the engine table that belongs
// to the device, what runs their commands (compute units, DMA and link channels) and the device's
// own DRAM. A system of several devices is built from several of these, which share the links
// (the host link and the device-to-device links); device 0 also holds the HOST queue.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/config/hw_config.h"
#include "sim/cost/memory.h"
#include "sim/ir/schedule.h"
#include "sim/platform/dram.h"
#include "sim/platform/engine.h"
#include "sim/platform/link_channel.h"
#include "sim/platform/scoreboard.h"

namespace npusim::platform {

class Npu final : public sc_core::sc_module {
 public:
  // `closed_form_dram`: see Dram.
  Npu(const sc_core::sc_module_name& name, const Schedule& schedule, const HwConfig& config,
      Scoreboard& scoreboard, bool closed_form_dram, std::uint32_t device, Links& links);
  Npu(const Npu&) = delete;
  Npu& operator=(const Npu&) = delete;

  // Per engine of the device, the position in its queue of the first command not yet started,
  // written at the engine's index in the engine table.
  void heads(std::vector<std::size_t>& by_engine) const;
  // DRAM bursts not reported to the scoreboard's sink one by one (Dram::closed_form_activity).
  const profiler::DramActivity& closed_form_dram_activity() const {
    return dram_->closed_form_activity();
  }

 private:
  cost::DmaTiming dma_timing_;
  std::unique_ptr<Dram> dram_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<std::uint32_t> engine_index_;  // of engines_[i] in the engine table
};

}  // namespace npusim::platform
