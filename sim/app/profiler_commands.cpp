#include "sim/app/profiler_commands.h"

#include "sim/error.h"

namespace npusim::app {

int report_command(const std::vector<std::string>&) {
  throw InputError("", "", "npusim report is not implemented yet");
}

int convert_command(const std::vector<std::string>&) {
  throw InputError("", "", "npusim convert is not implemented yet");
}

int diff_command(const std::vector<std::string>&) {
  throw InputError("", "", "npusim diff is not implemented yet");
}

}  // namespace npusim::app
