#include "sim/compiler/mapping/map_space.h"

#include <algorithm>
#include <functional>

#include "sim/compiler/mapping/global_pool.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/util/error.h"
#include "sim/util/math.h"

namespace npusim {

Budgets budgets_of(const HwConfig& config, std::uint32_t slices, std::uint32_t shared_live) {
  const std::uint64_t used = slices == 0 ? config.slices.count : slices;
  return {config.lram_bytes / (2 * std::uint64_t{std::max<std::uint32_t>(shared_live, 2)}),
          config.lram_bytes / (4 * used), config.ideal_memory ? 0 : config.dma.burst_bytes,
          config.ideal_memory ? 1 : config.dma.in_channels};
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

std::vector<std::uint64_t> size_options(std::uint64_t full, std::uint64_t align) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t x = full; x >= 1; x = ceil_div(x, 2)) {
    sizes.push_back(x);
    if (x == 1) break;
  }
  for (std::uint64_t a = align; align > 1 && a < full; a *= 2) sizes.push_back(a);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> tile_cuts(std::uint64_t full,
                                                               std::uint64_t size) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> c;
  if (full / size > 0) c.push_back({full / size, size});
  if (full % size > 0) c.push_back({1, full % size});
  return c;
}

std::vector<std::uint32_t> slice_options(std::uint32_t slices) {
  std::vector<std::uint32_t> counts;
  for (std::uint32_t s = slices; s >= 1; s = (s + 1) / 2) {
    counts.push_back(s);
    if (s == 1) break;
  }
  return counts;
}

std::vector<std::uint64_t> balanced_sizes(std::uint64_t total,
                                          const std::vector<std::uint64_t>& options) {
  std::vector<std::uint64_t> sizes;
  for (const std::uint64_t size : options) {
    const std::uint64_t balanced = ceil_div(total, ceil_div(total, size));
    if (std::find(sizes.begin(), sizes.end(), balanced) == sizes.end()) sizes.push_back(balanced);
  }
  return sizes;
}

SharedPieces shared_pieces(std::uint64_t bytes, const HwConfig& config) {
  const std::uint64_t burst = config.dma.burst_bytes;
  const std::uint64_t bursts = ceil_div(std::max<std::uint64_t>(bytes, 1), burst);
  const std::uint64_t most =
      config.ideal_memory ? 1 : std::min<std::uint64_t>(config.dma.in_channels, bursts);
  const std::uint64_t piece_bytes =
      std::min(std::max<std::uint64_t>(bytes, 1), ceil_div(bursts, most) * burst);
  return {ceil_div(std::max<std::uint64_t>(bytes, 1), piece_bytes), piece_bytes};
}

Mapping ResourceOption::mapping(MappingKind kind) const {
  Mapping m;
  m.kind = kind;
  m.order = order;
  m.slices = slices;
  m.shared_live = shared_live;
  return m;
}

std::vector<ResourceOption> resource_options(const HwConfig& config) {
  std::vector<ResourceOption> options;
  for (const std::uint32_t slices : slice_options(config.slices.count)) {
    for (const std::uint32_t live : {2u, slices}) {
      if (live != 2 && slices <= 2) continue;  // one per slice is the double buffer there
      for (const LoopOrder order : {LoopOrder::kWeightsOuter, LoopOrder::kInputOuter}) {
        options.push_back({slices, live, order, budgets_of(config, slices, live)});
      }
    }
  }
  return options;
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
  space.layouts = &layouts;
  space.lram_bytes = config.lram_bytes;
  return space;
}

}  // namespace npusim
