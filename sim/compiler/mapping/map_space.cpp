#include "sim/compiler/mapping/map_space.h"

#include "sim/compiler/mapping/global_pool.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/util/error.h"
#include "sim/util/math.h"

namespace npusim {

Budgets budgets_of(const HwConfig& config) {
  return {config.lram_bytes / 4, config.lram_bytes / (4 * std::uint64_t{config.slices.count})};
}

TileSizes MapSpace::full_sizes() const {
  TileSizes sizes;
  for (const TiledDim& d : dims) sizes.push_back(d.full);
  return sizes;
}

bool halve_until(TileSizes& sizes, const std::vector<TiledDim>& dims,
                 const std::vector<std::size_t>& order,
                 const std::function<bool(const TileSizes&)>& done) {
  while (!done(sizes)) {
    bool shrunk = false;
    for (std::size_t d : order) {
      if (sizes[d] <= 1) continue;
      sizes[d] = dims[d].shrink ? dims[d].shrink(sizes[d]) : ceil_div(sizes[d], 2);
      shrunk = true;
      break;
    }
    if (!shrunk) return false;
  }
  return true;
}

void throw_cannot_fit(const Graph& graph, const LayerGroup& group, std::uint64_t lram_bytes,
                      std::uint64_t need_bytes, const std::string& what) {
  throw InputError(graph.source_file, "layer '" + group.name + "' " + group.loc,
                   what + " needs " + std::to_string(need_bytes) +
                       " bytes of local memory, more than its share of the config's " +
                       std::to_string(lram_bytes) +
                       " bytes (lram_kib) allows; raise lram_kib or use fewer slices");
}

MapSpace make_map_space(const Graph& graph, const LayerGroup& group, const TensorLayouts& layouts,
                        const HwConfig& config) {
  const GroupContext ctx{graph, group, layouts, config, budgets_of(config)};
  MapSpace space;
  switch (group_kind(graph, group)) {
    case GroupKind::kSpatial:
      space = spatial_map_space(ctx);
      break;
    case GroupKind::kMatMul:
      space = matmul_map_space(ctx);
      break;
    case GroupKind::kVector:
      space = vector_map_space(ctx);
      break;
    case GroupKind::kGlobalPool:
      space = global_pool_map_space(ctx);
      break;
    case GroupKind::kView:
    case GroupKind::kHost:
    case GroupKind::kUnknown:  // the emitter names the op in its error
      break;
  }
  space.graph = &graph;
  space.group = &group;
  space.lram_bytes = config.lram_bytes;
  return space;
}

}  // namespace npusim
