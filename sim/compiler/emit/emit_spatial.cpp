// Emission of spatial layers: Conv, DepthwiseConv, MaxPool, AveragePool (docs/compiler.md,
// "Convolutions and pools").
#include <algorithm>
#include <stdexcept>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"

namespace npusim {

// Weights outer: for each chunk, its weight load, then for each image the tiles row by row and,
// within a row of tiles, column by column; each tile loads its input rows and columns (padding
// excluded). Input outer: for each image, row tile and column tile, one shared load of the input
// block, then one tile per chunk, each loading its chunk's weights. Either way a tile computes
// with the padding folded into its shape, so that its output is exactly its pixels.
void Emitter::emit_spatial(const LayerGroup& group, const Mapping& mapping) {
  const SpatialLayer s = describe_spatial(g_, group, budgets_);
  if (mapping.k_parts > 1 && (!s.k_split_allowed() || mapping.order != LoopOrder::kInputOuter)) {
    throw std::logic_error("emit_spatial: group '" + group.name +
                           "' cannot split its reduction over slices");
  }
  if (mapping.k_step > 0) {
    if (!s.k_split_allowed() || mapping.k_parts > 1) {
      throw std::logic_error("emit_spatial: group '" + group.name +
                             "' cannot accumulate its reduction in steps");
    }
    return emit_spatial_ksplit(group, s, mapping);
  }
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const std::uint64_t y_row_bytes = s.ow * s.k * s.out_elem_bytes;
  const std::uint64_t tiles_per_image = ceil_div(s.oh, rows) * ceil_div(s.ow, cols);
  using Window = TileWindow;
  auto window = [&](std::uint64_t t) { return s.window(t, rows, cols); };
  auto emit_tile = [&](std::uint64_t img, const Window& v, std::uint64_t cu,
                       const std::vector<Piece>& pieces, CommandIndex shared,
                       std::vector<CommandIndex>& computes, bool last) {
    const ConvShape shape = s.tile_shape(v.r1 - v.r0, v.c1 - v.c0, cu);
    // A fused residual adds its piece to the tile's loads (emit/epilogue.h).
    const std::vector<Piece> loads = with_residual(g_, group, layouts_, s, pieces, img, v.r0, v.r1,
                                                   v.c0, v.c1, cu * s.out_per_unit);
    computes.push_back(tile(next_slice(), group, loads, s.op, shape, shared,
                            s.output_bytes(v.r1 - v.r0, v.c1 - v.c0, cu),
                            (img * s.oh + v.r0) * y_row_bytes, (img * s.oh + v.r1) * y_row_bytes,
                            last ? &computes : nullptr));
  };
  if (mapping.order == LoopOrder::kInputOuter) return emit_spatial_input_outer(group, s, mapping);
  // Reading the last group's output kept on chip (each tile reads all its pixels): no input load;
  // each compute waits for the writers' last command on each queue, and the last store frees it,
  // waiting for every writer.
  const bool reads_kept = kept_ && kept_->tensor == s.input && s.reads_input_whole(mapping);
  // Loading from DRAM an image's overlapping windows, into tiles whose stores free what they read.
  if (s.reuses_halo(mapping) && !reads_kept && !on_chip(s.input) && !keeping_ &&
      layouts_.is_image(s.input)) {
    return emit_spatial_halo(group, s, mapping);
  }
  const std::vector<CommandIndex> kept_last =
      reads_kept ? last_per_queue(kept_->writers) : std::vector<CommandIndex>{};
  for (std::uint64_t ch = 0; ch < chunks; ++ch) {
    const std::uint64_t u0 = ch * chunk_units;
    const std::uint64_t cu = std::min(s.units, u0 + chunk_units) - u0;
    const CommandIndex weights =
        s.weight_bytes_per_unit > 0 ? load_weights(s.chunk_weight_bytes(cu), group) : kNone;
    std::vector<CommandIndex> computes;
    for (std::uint64_t img = 0; img < s.n; ++img) {
      for (std::uint64_t t = 0; t < tiles_per_image; ++t) {
        const Window v = window(t);
        const bool last = img == s.n - 1 && t == tiles_per_image - 1;
        std::vector<Piece> pieces;
        if (!reads_kept) pieces.push_back(spatial_input(s, img, v, s.chunk_in_c(cu)));
        emit_tile(img, v, cu, pieces, weights, computes, last);
        if (reads_kept) add_deps(computes.back(), kept_last);
      }
    }
  }
  if (reads_kept) release_kept(group, ring_.back().store);
}

}  // namespace npusim
