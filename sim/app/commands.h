// The npusim subcommands. Each parses its own options and returns an exit code (sim/util/error.h);
// errors propagate as exceptions that main() maps to exit codes.
#pragma once

#include <string>
#include <vector>

namespace npusim::app {

int run_command(const std::vector<std::string>& args);       // npusim run
int estimate_command(const std::vector<std::string>& args);  // npusim estimate
int compile_command(const std::vector<std::string>& args);   // npusim compile
int info_command(const std::vector<std::string>& args);      // npusim info

}  // namespace npusim::app
