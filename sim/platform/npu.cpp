#include "sim/platform/npu.h"

#include <algorithm>
#include <string>

#include "sim/ir/engines.h"
#include "sim/platform/dma_channel.h"

namespace npusim::platform {

Npu::Npu(const sc_core::sc_module_name& name, const Schedule& schedule, const HwConfig& config,
         Scoreboard& scoreboard, bool closed_form_dram)
    : sc_core::sc_module(name),
      dma_timing_(config),
      dram_(std::make_unique<Dram>("dram", cost::DramTiming(config), dma_timing_, scoreboard.sink(),
                                   closed_form_dram)) {
  const EngineLayout layout(config);
  auto queues = layout.queues(schedule);
  for (std::uint32_t e = 0; e < layout.count(); ++e) {
    const profiler::EngineInfo& info = layout.info(e);
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
      return std::make_unique<ComputeUnit>(unit_name, schedule, scoreboard, dispatcher, channel,
                                           freed);
    };
    engines_.push_back(std::make_unique<Engine>(module_name.c_str(), schedule, std::move(queues[e]),
                                                scoreboard, config.dispatch_cycles, info.channels,
                                                make_unit));
  }
}

std::vector<std::size_t> Npu::heads() const {
  std::vector<std::size_t> heads;
  for (const auto& e : engines_) heads.push_back(e->head());
  return heads;
}

}  // namespace npusim::platform
