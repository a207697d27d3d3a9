// A mapping search: chooses, for one layer group, a point of its map space
// (mapping/map_space.h) for a hardware config. Strategies implement Search and are made by name,
// so a better one drops in without touching the map spaces or the emitter.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/config/hw_config.h"

namespace npusim {

class Search {
 public:
  virtual ~Search() = default;
  // The mapping of the space's group; a kNone space gives a kNone mapping. Throws InputError
  // naming the group when no point fits local memory. Deterministic.
  virtual Mapping choose(const MapSpace& space, const HwConfig& config) const = 0;
};

// The strategies make_search knows, in the order it lists them in errors.
std::vector<std::string> search_names();

// "greedy" (greedy.h). Throws std::invalid_argument for any other name.
std::unique_ptr<Search> make_search(std::string_view name);

}  // namespace npusim
