// The shipped configs (configs/*.json), compiled into the binary so that `--config default`
// works from any folder. Generated from the files at build time: the files stay the one source.
#pragma once

#include <string_view>
#include <vector>

namespace npusim {

struct BuiltinConfig {
  std::string_view name;  // file name without .json
  std::string_view json;
};

const std::vector<BuiltinConfig>& builtin_configs();

}  // namespace npusim
