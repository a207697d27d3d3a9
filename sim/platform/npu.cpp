#include "sim/platform/npu.h"

#include <algorithm>
#include <string>

#include "sim/ir/engines.h"
#include "sim/platform/dma_channel.h"

namespace npusim::platform {

Npu::Npu(const sc_core::sc_module_name& name, const Schedule& schedule, const HwConfig& config,
         Scoreboard& scoreboard, bool closed_form_dram, std::uint32_t device, Links& links)
    : sc_core::sc_module(name),
      dma_timing_(config),
      dram_(std::make_unique<Dram>("dram", cost::DramTiming(config), dma_timing_, scoreboard.sink(),
                                   closed_form_dram)) {
  const EngineLayout layout(config, schedule);
  auto queues = layout.queues(schedule);
  for (std::uint32_t e = 0; e < layout.count(); ++e) {
    const profiler::EngineInfo& info = layout.info(e);
    if (info.device != device) continue;
    std::string module_name = info.name;  // SystemC names may not contain '.'
    std::replace(module_name.begin(), module_name.end(), '.', '_');
    const bool dma = profiler::is_dma(info.kind);
    auto make_unit = [&](const char* unit_name, cost::QueueDispatcher& dispatcher,
                         std::uint32_t channel,
                         sc_core::sc_event& freed) -> std::unique_ptr<CommandUnit> {
      if (dma) {
        return std::make_unique<DmaChannel>(unit_name, schedule, scoreboard, dispatcher, channel,
                                            freed, dma_timing_, *dram_);
      }
      if (profiler::is_link(info.kind)) {
        return std::make_unique<LinkChannel>(unit_name, schedule, scoreboard, dispatcher, channel,
                                             freed, links);
      }
      return std::make_unique<ComputeUnit>(unit_name, schedule, scoreboard, dispatcher, channel,
                                           freed);
    };
    engines_.push_back(std::make_unique<Engine>(module_name.c_str(), schedule, std::move(queues[e]),
                                                scoreboard, config.dispatch_cycles, info.channels,
                                                make_unit));
    engine_index_.push_back(e);
  }
}

void Npu::heads(std::vector<std::size_t>& by_engine) const {
  for (std::size_t i = 0; i < engines_.size(); ++i)
    by_engine[engine_index_[i]] = engines_[i]->head();
}

}  // namespace npusim::platform
