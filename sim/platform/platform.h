// The runtime simulation: the schedule executed on SystemC models of the NPU. This header is
// SystemC-free so that the CLI and tests can call it without seeing SystemC.
#pragma once

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// Elaborates the platform for `config`, runs `schedule` to completion and returns when each
// command started and ended. SystemC elaborates once per process, so this may be called once per
// process (a second call throws std::logic_error). Throws SimulationError on a deadlock, naming
// the blocked commands.
profiler::Timeline simulate(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim
