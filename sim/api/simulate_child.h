// The simulation in a child process. SystemC elaborates once per process, so a process that has
// simulated already (a Python session, a scenario that runs several schedules) simulates again in
// a forked child, which sends the timeline back through a pipe. Sweeps go further and run whole
// `npusim run` processes (sim/app/sweep.cpp), one per point.
#pragma once

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim::api {

// As npusim::simulate, with the same results and errors (SimulationError with the partial run),
// in a forked child. Throws std::runtime_error if the child cannot be started or dies.
profiler::Timeline simulate_in_child(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim::api
