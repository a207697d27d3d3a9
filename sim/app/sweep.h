// npusim sweep (docs/sweep.md) and npusim check (docs/budgets.md): both run `npusim run` as child
// processes (sim/app/process_runner.h) and read each run's stats.json.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace npusim::app {

int sweep_command(const std::vector<std::string>& args);  // npusim sweep
int check_command(const std::vector<std::string>& args);  // npusim check

// Shared by sweep and check.

// The arguments of `npusim run` for one simulation: model, config, overrides (--set, in order),
// extra run options, output folder, --quiet.
std::vector<std::string> run_child_args(const std::string& model, const std::string& config,
                                        const std::vector<std::string>& overrides,
                                        const std::vector<std::string>& extra,
                                        const std::filesystem::path& out);

// What a failed child said: its stderr file with trailing white space removed and lines joined
// with " | "; a note when it said nothing.
std::string child_error_text(const std::filesystem::path& stderr_file, int exit_code);

// A config argument as a child process should get it: an existing file as an absolute path,
// anything else (a built-in name) unchanged.
std::string absolute_config(const std::string& config);

}  // namespace npusim::app
