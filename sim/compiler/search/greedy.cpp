#include "sim/compiler/search/greedy.h"

namespace npusim {

Mapping GreedySearch::choose(const MapSpace& space, const HwConfig& config) const {
  if (space.kind == MappingKind::kNone) return Mapping{};
  TileSizes sizes = space.full_sizes();
  for (const FitRule& rule : space.fit_rules) {
    const auto fits = [&rule](const TileSizes& t) { return rule.bytes(t) <= rule.budget_bytes; };
    if (!halve_until(sizes, space.dims, rule.shrink_order, fits)) {
      throw_cannot_fit(*space.graph, *space.group, space.lram_bytes,
                       rule.need_factor * rule.bytes(sizes), rule.what);
    }
  }
  // Enough tiles to keep every slice busy, where the spread dimension can give them.
  const std::uint64_t slices = config.slices.count;
  halve_until(sizes, space.dims, {space.spread_dim},
              [&space, slices](const TileSizes& t) { return space.tiles(t) >= slices; });
  return space.to_mapping(sizes);
}

}  // namespace npusim
