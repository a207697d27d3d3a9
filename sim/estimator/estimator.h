// The compile-time estimate: static list scheduling of a schedule over the command processor's
// in-order queues and the dependencies, each command costed by the cost model with no
// contention (a DMA transfer has DRAM to itself).
#pragma once

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// Throws SimulationError naming the blocked commands if the queues deadlock.
profiler::Timeline estimate(const Schedule& schedule, const HwConfig& config);

// Explains a deadlock: for each engine that still has commands, the command at its head and the
// dependencies it waits for (with where those are queued). `finished[i]` says whether command i
// completed; `heads[e]` is the position in engine e's queue of its first unstarted command.
std::string describe_deadlock(const Schedule& schedule, const HwConfig& config,
                              const std::vector<bool>& finished,
                              const std::vector<std::size_t>& heads);

}  // namespace npusim
