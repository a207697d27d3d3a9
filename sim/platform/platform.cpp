#include "sim/platform/platform.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "sim/cost/cost_model.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"
#include "sim/estimator/estimator.h"
#include "sim/platform/dma_channel.h"
#include "sim/platform/dram.h"
#include "sim/platform/engine.h"
#include "sim/platform/scoreboard.h"

// libsystemc.so calls sc_main from its own main(). npusim's programs bring their own main(), so
// this is never called; it exists to satisfy the library's reference.
int sc_main(int, char**) { return 0; }

namespace npusim {
namespace platform {
namespace {

// The NPU: one engine per command queue, their units, and the shared DRAM.
class Npu final : public sc_core::sc_module {
 public:
  Npu(const sc_core::sc_module_name& name, const Schedule& schedule, const HwConfig& config,
      Scoreboard& scoreboard)
      : sc_core::sc_module(name),
        dma_timing_(config),
        dram_(std::make_unique<Dram>("dram", cost::DramTiming(config), scoreboard.sink())) {
    const EngineLayout layout(config);
    auto queues = layout.queues(schedule);
    for (std::uint32_t e = 0; e < layout.count(); ++e) {
      const profiler::EngineInfo& info = layout.info(e);
      std::string module_name = info.name;  // SystemC names may not contain '.'
      std::replace(module_name.begin(), module_name.end(), '.', '_');
      const bool is_dma = info.kind == profiler::EngineKind::kDmaIn ||
                          info.kind == profiler::EngineKind::kDmaOut;
      auto make_unit = [&](const char* unit_name, sc_core::sc_event& freed)
          -> std::unique_ptr<CommandUnit> {
        if (is_dma) {
          return std::make_unique<DmaChannel>(unit_name, schedule, scoreboard, freed, dma_timing_,
                                              *dram_);
        }
        return std::make_unique<ComputeUnit>(unit_name, schedule, scoreboard, freed);
      };
      auto engine = std::make_unique<Engine>(module_name.c_str(), schedule, std::move(queues[e]),
                                             scoreboard, config.dispatch_cycles, info.channels,
                                             make_unit);
      engines_.push_back(std::move(engine));
    }
  }

  std::vector<std::size_t> heads() const {
    std::vector<std::size_t> heads;
    for (const auto& e : engines_) heads.push_back(e->head());
    return heads;
  }

 private:
  cost::DmaTiming dma_timing_;
  std::unique_ptr<Dram> dram_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

bool g_elaborated = false;

}  // namespace
}  // namespace platform

profiler::Timeline simulate(const Schedule& schedule, const HwConfig& config) {
  if (platform::g_elaborated) {
    throw std::logic_error("npusim::simulate: SystemC elaborates once per process");
  }
  platform::g_elaborated = true;
  // Before the first SystemC call: no banner on stdout, and picosecond resolution for the
  // arbiter's offset.
  ::setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_THROW);

  profiler::TimelineRecorder recorder(schedule.commands.size());
  platform::Scoreboard scoreboard(schedule.commands.size(), recorder);
  platform::Npu npu("npu", schedule, config, scoreboard);
  // Runs until no event is left: every command done, or a deadlock with nothing to wake.
  sc_core::sc_start();
  if (scoreboard.finished_count() < schedule.commands.size()) {
    throw SimulationError(
        describe_deadlock(schedule, config, scoreboard.all_finished(), npu.heads()),
        std::make_shared<PartialRun>(PartialRun{recorder.take(), scoreboard.all_finished()}));
  }
  return recorder.take();
}

}  // namespace npusim
