#include "sim/app/cli_options.h"

#include <iostream>

#include "sim/util/error.h"

namespace po = boost::program_options;

namespace npusim::app {

po::variables_map parse_options(const std::vector<std::string>& args,
                                const po::options_description& desc, const std::string& command,
                                const char* positional, int max_positional) {
  try {
    po::variables_map vm;
    po::positional_options_description positionals;
    if (positional != nullptr) positionals.add(positional, max_positional);
    po::store(
        po::command_line_parser(args)
            .options(desc)
            .positional(positionals)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        vm);
    po::notify(vm);
    return vm;
  } catch (const po::error& e) {
    throw InputError("", "", std::string(e.what()) + " (see npusim " + command + " --help)");
  }
}

void print_help(const std::string& synopsis, const std::string& text,
                const po::options_description& desc) {
  std::cout << "usage: " << synopsis << "\n\n" << text << "\n\n" << desc << '\n';
}

bool is_quiet(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--quiet" || a == "-q") return true;
  }
  return false;
}

}  // namespace npusim::app
