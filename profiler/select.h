// Part of a run: the commands of a profiling window (--profile-start-iter, --profile-samples),
// with dependencies and programs renumbered and times counted from the window's start.
#pragma once

#include <vector>

#include "profiler/timeline.h"

namespace npusim::profiler {

struct Selection {
  Workload workload;
  std::vector<Timeline> timelines;  // one per input timeline, same order
};

// Keeps the commands with keep[i]; drops dependencies on commands not kept and programs with no
// command kept; subtracts `origin` cycles from every kept time (none may start before it). DRAM
// burst activity is not attributed to commands, so it is kept only when every command is.
Selection select_commands(const Workload& workload, const std::vector<const Timeline*>& timelines,
                          const std::vector<bool>& keep, Cycles origin);

}  // namespace npusim::profiler
