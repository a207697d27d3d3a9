// Option parsing shared by every subcommand: usage errors become InputError (exit 2) that point
// at the command's --help, abbreviations are refused, and --quiet is seen before parsing.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace npusim::app {

// Parses `args` against `desc`, with up to `max_positional` positional arguments collected under
// `positional` (none when it is null).
boost::program_options::variables_map parse_options(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    const std::string& command, const char* positional = nullptr, int max_positional = 0);

void print_help(const std::string& synopsis, const std::string& text,
                const boost::program_options::options_description& desc);

// Whether --quiet or -q is among `args`.
bool is_quiet(const std::vector<std::string>& args);

}  // namespace npusim::app
