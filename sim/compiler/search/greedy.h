// The greedy search, the compiler's only one so far: start from the whole layer as one tile,
// halve dimensions in the map space's order until every local-memory budget is met, then halve
// the spread dimension (rows) while the group has fewer tiles than the config has slices.
// No candidate is costed: the first that fits wins (docs/compiler.md, "Tiling").
#pragma once

#include "sim/compiler/search/search.h"

namespace npusim {

class GreedySearch final : public Search {
 public:
  Mapping choose(const MapSpace& space, const HwConfig& config) const override;
};

}  // namespace npusim
