// The CSV outputs of DESIGN.md's table: timeline.csv / runtime_timeline.csv and runtime.csv.
#pragma once

#include <ostream>
#include <string>

#include "profiler/timeline.h"

namespace npusim::profiler {

// One field, quoted as RFC 4180 requires when it holds the separator, a quote or a line break.
std::string csv_field(const std::string& value, char separator = ',');

// `ID,Start,End,Location,Op Type`, then one row per command in order of start cycle (ties in
// schedule order). Used for the compile-time estimate and the simulated execution alike.
void write_timeline_csv(std::ostream& out, const Workload& workload, const Timeline& timeline);

// `id;time_since_open;time_since_start;location`, one row per program: its index, its end in
// integer microseconds since the run began (cycle 0), its duration in integer microseconds
// (both rounded to nearest, halves up), and its location.
void write_runtime_csv(std::ostream& out, const Workload& workload, const Timeline& timeline);

}  // namespace npusim::profiler
