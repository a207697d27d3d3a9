// The NPU as a SystemC module: one engine per command queue of the engine table, what runs their
// commands (compute units, DMA channels) and the DRAM they share. A system of several NPUs is
// built from several of these.
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
#include "sim/platform/scoreboard.h"

namespace npusim::platform {

class Npu final : public sc_core::sc_module {
 public:
  // `closed_form_dram`: see Dram.
  Npu(const sc_core::sc_module_name& name, const Schedule& schedule, const HwConfig& config,
      Scoreboard& scoreboard, bool closed_form_dram);
  Npu(const Npu&) = delete;
  Npu& operator=(const Npu&) = delete;

  // Per engine, the position in its queue of the first command not yet started.
  std::vector<std::size_t> heads() const;
  // DRAM bursts not reported to the scoreboard's sink one by one (Dram::closed_form_activity).
  const profiler::DramActivity& closed_form_dram_activity() const {
    return dram_->closed_form_activity();
  }

 private:
  cost::DmaTiming dma_timing_;
  std::unique_ptr<Dram> dram_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

}  // namespace npusim::platform
