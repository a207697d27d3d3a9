// The profiler's own commands, reading outputs npusim (or a vendor toolchain) wrote:
// `report` (op-type and per-layer breakdowns of a run), `convert` (timeline/runtime CSVs into one
// Perfetto trace) and `diff` (two runs, or a run's estimate against its simulation).
#pragma once

#include <string>
#include <vector>

namespace npusim::app {

int report_command(const std::vector<std::string>& args);   // npusim report
int convert_command(const std::vector<std::string>& args);  // npusim convert
int diff_command(const std::vector<std::string>& args);     // npusim diff

}  // namespace npusim::app
