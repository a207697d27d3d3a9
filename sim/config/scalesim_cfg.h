// SCALE-Sim v2 hardware configs (.cfg): the INI file SCALE-Sim's scale_config.py reads with
// Python's configparser, mapped onto npusim's raw config layer. docs/config.md
// ("SCALE-Sim configs") has the key mapping and what is ignored.
#pragma once

#include <string>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/config/raw_config.h"

namespace npusim {

// The keys npusim models go into the raw layer, each with its `[section] Key` as the location of
// later problems; every other key is named in one warning (RawHwConfig::warnings). Throws
// InputError naming `origin` and the line or `[section] Key` of every problem: a malformed line
// or section header, a repeated section or key, a missing section or required key, a value that
// is not an integer, an InterfaceBandwidth other than USER or CALC.
RawHwConfig read_scalesim_cfg(const std::string& text, const std::string& origin);

// read_scalesim_cfg, then `overrides` and the checks, as resolve_hw_config() does.
HwConfig parse_scalesim_cfg(const std::string& text, const std::string& origin,
                            const std::vector<std::string>& overrides = {});

}  // namespace npusim
