// summary.txt (for people) and stats.json (for scripts, sweeps and budgets).
#pragma once

#include <ostream>

#include "profiler/timeline.h"

namespace npusim::profiler {

// `runtime` is null when only the compile-time estimate was made (`npusim estimate`).
void write_summary(std::ostream& out, const Workload& workload, const Timeline& estimate,
                   const Timeline* runtime);
void write_stats_json(std::ostream& out, const Workload& workload, const Timeline& estimate,
                      const Timeline* runtime);

}  // namespace npusim::profiler
