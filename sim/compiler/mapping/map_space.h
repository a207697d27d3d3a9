// The map space of one layer group: the dimensions its tiles are cut along, the local-memory
// budgets a choice of tile sizes must meet, and how a choice becomes a Mapping. The generators
// per kind (spatial.h, matmul.h, vector.h, global_pool.h) build it; a Search (search/search.h)
// chooses a point in it. halve_until is the one greedy halving step every choice is made with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/mapping/work.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"

namespace npusim {

// The local-memory budgets that keep a schedule within capacity by construction
// (docs/compiler.md, "Memory budgets"): two weight chunks live, two tiles per slice.
struct Budgets {
  std::uint64_t weight_chunk_bytes = 0;  // W = capacity / 4
  std::uint64_t tile_bytes = 0;          // T = capacity / (4 * slices): a tile's inputs and output
  // A DMA burst (0 with ideal memory): a strided read whose runs are at least this long moves its
  // bytes as a contiguous one would (SpatialLayer::skips_cols).
  std::uint64_t dma_burst_bytes = 0;
  // DMA_IN channels a shared chunk is loaded over, in pieces (shared_pieces; 1 with ideal memory).
  std::uint32_t dma_in_channels = 1;
};
// `slices`: the slices a group's tiles use (0: all); fewer slices share the same half of local
// memory, so each gets larger tiles.
Budgets budgets_of(const HwConfig& config, std::uint32_t slices = 0, std::uint32_t shared_live = 2);

// What a map-space generator reads about the group it maps.
struct GroupContext {
  const Graph& graph;
  const LayerGroup& group;
  const TensorLayouts& layouts;
  const HwConfig& config;
  Budgets budgets;
};

// Sizes of a map space's dimensions, in the order MapSpace::dims lists them.
using TileSizes = std::vector<std::uint64_t>;

struct TiledDim {
  std::string name;        // "rows", "columns", "channel units", "k"
  std::uint64_t full = 1;  // the largest size: one tile covers the whole dimension
  // The size one halving step gives; empty for ceil(size / 2). A grouped conv's channel chunk
  // shrinks to sizes that divide its group.
  std::function<std::uint64_t(std::uint64_t)> shrink;
};

// A budget a point must meet: bytes(sizes) <= budget_bytes. The greedy search meets it by
// halving the dims of shrink_order, first to last.
struct FitRule {
  std::vector<std::size_t> shrink_order;  // indices into MapSpace::dims
  std::function<std::uint64_t(const TileSizes&)> bytes;
  std::uint64_t budget_bytes = 0;
  std::string what;               // names the smallest tile in the error: "one output element"
  std::uint64_t need_factor = 1;  // the error's "needs": need_factor * bytes of the smallest tile
};

// What a group finds on chip when it runs under a residency plan (passes/plan_residency), for
// costing its candidates as that plan will emit them: which of its inputs it reads from local
// memory, whether its own output stays there (its tiles store nothing), and the bytes other
// resident tensors hold meanwhile (less room for its tiles).
struct OnChipContext {
  std::vector<std::uint32_t> resident_inputs;
  bool output_resident = false;
  std::uint64_t other_bytes = 0;
  bool any() const { return !resident_inputs.empty() || output_resident; }
};

struct MapSpace {
  // For errors: the group and the capacity it did not fit.
  const Graph* graph = nullptr;
  const LayerGroup* group = nullptr;
  const TensorLayouts* layouts = nullptr;  // for emitting a candidate alone (cost search)
  std::uint64_t lram_bytes = 0;

  MappingKind kind = MappingKind::kNone;  // kNone: nothing to choose (views, host layers)
  std::vector<TiledDim> dims;
  std::vector<FitRule> fit_rules;  // a point must meet all of them; greedy meets them in order
  // Tiles a point makes, and the dim that more tiles come from (halving it) when there are
  // fewer tiles than slices.
  std::function<std::uint64_t(const TileSizes&)> tiles;
  std::size_t spread_dim = 0;
  std::function<Mapping(const TileSizes&)> to_mapping;

  // For the cost search (search/cost_search.h), on kinds that have them: every mapping worth
  // costing, each meeting its budgets, and what a mapping makes the group do. Empty functions:
  // the kind is mapped greedily.
  std::function<std::vector<Mapping>()> candidates;
  std::function<GroupWork(const Mapping&)> work;
  // For kinds whose input may be the last group's output kept on chip (spatial): the input
  // tensor, and whether a mapping reads it whole, as one block.
  std::optional<std::uint32_t> input_tensor;
  std::function<bool(const Mapping&)> reads_input_whole;
  std::function<GroupWork(const Mapping&)> work_on_chip;  // `work` with the input not loaded
  // Set by the driver: the last group's output, which it may keep on chip for this group.
  std::optional<std::uint32_t> on_chip_input;
  // Set by the driver when remapping under a residency plan; the candidates are then only those
  // that plan can keep (plan_residency's reads_through_tiles).
  OnChipContext resident;
  // Whether `m` reads its input from the last group's output kept on chip.
  bool input_on_chip(const Mapping& m) const {
    return on_chip_input && input_tensor == on_chip_input && reads_input_whole &&
           reads_input_whole(m);
  }

  TileSizes full_sizes() const;
};

// The greedy halving step: while done(sizes) is false, shrinks the first dim of `order` whose
// size is above 1 (TiledDim::shrink). Returns false when every dim of `order` is at 1 and done
// is still false.
bool halve_until(TileSizes& sizes, const std::vector<TiledDim>& dims,
                 const std::vector<std::size_t>& order,
                 const std::function<bool(const TileSizes&)>& done);

// Sizes of a dimension of `full` worth costing, largest first: full and its halvings (rounded up)
// down to 1, and the multiples of `align` (an array's rows or columns) times powers of two below
// full, so that a chunk can fill whole folds.
std::vector<std::uint64_t> size_options(std::uint64_t full, std::uint64_t align);
// A dimension of `full` cut into tiles of `size`: (count, size) of the full tiles, then of the
// last, shorter one if any.
std::vector<std::pair<std::uint64_t, std::uint64_t>> tile_cuts(std::uint64_t full,
                                                               std::uint64_t size);
// Slice counts worth costing for a config of `slices`: all of them, then halvings down to 1.
std::vector<std::uint32_t> slice_options(std::uint32_t slices);

// The sizes of `options` balanced over a dimension of `total` (ceil(total / pieces) for the
// pieces each makes), without repeats, in the order of `options`.
std::vector<std::uint64_t> balanced_sizes(std::uint64_t total,
                                          const std::vector<std::uint64_t>& options);

// What a spatial or MatMul candidate is costed under besides its tile sizes: the slices it uses,
// the shared chunks live, its loop order, and the budgets those give.
struct ResourceOption {
  std::uint32_t slices = 1;
  std::uint32_t shared_live = 2;
  LoopOrder order = LoopOrder::kWeightsOuter;
  Budgets budgets;
  // A Mapping of `kind` with these choices, for the caller to give its sizes.
  Mapping mapping(MappingKind kind) const;
};
// For each of slice_options: 2 shared chunks live, and one per slice where there are more than
// 2; each with weights outer, then input outer.
std::vector<ResourceOption> resource_options(const HwConfig& config);

// InputError naming the group: `what` needs `need_bytes` of local memory, more than its share.
[[noreturn]] void throw_cannot_fit(const Graph& graph, const LayerGroup& group,
                                   std::uint64_t lram_bytes, std::uint64_t need_bytes,
                                   const std::string& what);

// The map space of the group, by its kind. Throws InputError when even the smallest weight chunk
// or the constants of the group do not fit (those sizes are not chosen).
MapSpace make_map_space(const Graph& graph, const LayerGroup& group, const TensorLayouts& layouts,
                        const HwConfig& config);

}  // namespace npusim
