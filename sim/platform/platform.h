// The runtime simulation: the schedule executed on SystemC models of the NPU. This header is
// SystemC-free so that the CLI and tests can call it without seeing SystemC.
#pragma once

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// Sets SystemC's process-wide state once: no banner, picosecond resolution, warnings thrown.
// The process that simulates calls it first (the CLI's main, a test main, a simulation child);
// libraries never do.
void configure_systemc_process();
// Whether this process has elaborated (and so can no longer simulate in-process).
bool systemc_elaborated();

// How the simulation times DMA transfers; both give the same cycles and DRAM activity, to the
// burst. kClosedForm (the default) serves a transfer that meets no other in one step, and falls
// back to burst-by-burst arbitration from the cycle another transfer starts; kPerBurst
// arbitrates every burst, the reference that tests compare the closed form against.
enum class DramModel { kClosedForm, kPerBurst };
// Process-wide: for the simulations that start after the call, here or in a child forked later.
void set_dram_model(DramModel model);

// Elaborates the platform for `config`, runs `schedule` to completion and returns when each
// command started and ended. SystemC elaborates once per process, so this may be called once per
// process (a second call throws std::logic_error, as does a call before
// configure_systemc_process()). Throws SimulationError on a deadlock, naming
// the blocked commands.
profiler::Timeline simulate(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim
