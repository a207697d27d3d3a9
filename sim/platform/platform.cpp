#include "sim/platform/platform.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "sim/estimator/estimator.h"
#include "sim/ir/engines.h"
#include "sim/platform/npu.h"
#include "sim/platform/scoreboard.h"
#include "sim/util/error.h"

// libsystemc.so calls sc_main from its own main(). npusim's programs bring their own main(), so
// this is never called; it exists to satisfy the library's reference.
int sc_main(int, char**) { return 0; }

namespace npusim {
namespace {
bool g_configured = false;
bool g_elaborated = false;
DramModel g_dram_model = DramModel::kClosedForm;
}  // namespace

void set_dram_model(DramModel model) { g_dram_model = model; }

bool systemc_elaborated() { return g_elaborated; }

void configure_systemc_process() {
  if (g_configured) return;
  g_configured = true;
  // Before the first SystemC call: no banner on stdout, and picosecond resolution for the
  // arbiter's offset; SystemC warnings are errors.
  ::setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_THROW);
}

profiler::Timeline simulate(const Schedule& schedule, const HwConfig& config) {
  if (!g_configured) {
    throw std::logic_error("npusim::simulate: configure_systemc_process() was not called");
  }
  if (g_elaborated) {
    throw std::logic_error("npusim::simulate: SystemC elaborates once per process");
  }
  g_elaborated = true;

  profiler::TimelineRecorder recorder(schedule.commands.size());
  platform::Scoreboard scoreboard(schedule.commands.size(), recorder);
  platform::Links links(config);
  std::vector<std::unique_ptr<platform::Npu>> devices;
  for (std::uint32_t d = 0; d < config.devices.count; ++d) {
    const std::string name = config.devices.count == 1 ? "npu" : "npu" + std::to_string(d);
    devices.push_back(std::make_unique<platform::Npu>(name.c_str(), schedule, config, scoreboard,
                                                      g_dram_model == DramModel::kClosedForm, d,
                                                      links));
  }
  // Runs until no event is left: every command done, or a deadlock with nothing to wake.
  sc_core::sc_start();
  profiler::Timeline timeline = recorder.take();
  for (const auto& npu : devices) {
    platform::add_activity(timeline.dram, npu->closed_form_dram_activity());
  }
  if (scoreboard.finished_count() < schedule.commands.size()) {
    std::vector<std::size_t> heads(EngineLayout(config, schedule).count(), 0);
    for (const auto& npu : devices) npu->heads(heads);
    throw SimulationError(
        describe_deadlock(schedule, config, scoreboard.all_finished(), heads),
        std::make_shared<PartialRun>(PartialRun{std::move(timeline), scoreboard.all_finished()}));
  }
  return timeline;
}

}  // namespace npusim
