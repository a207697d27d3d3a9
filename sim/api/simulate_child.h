// The simulation in a child process. SystemC elaborates once per process, so a process that
// simulates more than once (a Python session, a scenario that runs several schedules) simulates
// each time in a forked child, which sends the timeline back through a pipe. The parent must
// never have elaborated itself: a forked child inherits that state. Sweeps go further and run whole
// `npusim run` processes (sim/app/sweep.cpp), one per point.
#pragma once

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim::api {

// As npusim::simulate, with the same results and errors (SimulationError with the partial run),
// in a forked child. Throws std::runtime_error if the child cannot be started or dies, and
// std::logic_error if this process has simulated in-process already.
profiler::Timeline simulate_in_child(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim::api
