// Emission of spatial layers: Conv, DepthwiseConv, MaxPool, AveragePool (docs/compiler.md,
// "Convolutions and pools").
#include <algorithm>

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
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const std::uint64_t ex = s.in_elem_bytes;
  // A conv reads its input as an image; one that is not laid out as one is read whole.
  const bool x_image = layouts_.is_image(s.input);
  const std::uint64_t x_bytes = g_.tensors[s.input].bytes();
  const std::uint64_t x_row_bytes = s.w * s.c * ex;  // NHWC in DRAM: a row is contiguous
  const std::uint64_t y_row_bytes = s.ow * s.k * s.out_elem_bytes;
  const std::uint64_t row_tiles = ceil_div(s.oh, rows);
  const std::uint64_t col_tiles = ceil_div(s.ow, cols);
  const std::uint32_t weight_tensor =
      g_.layers[group.layers[0]].inputs.size() > 1 ? g_.layers[group.layers[0]].inputs[1] : s.input;
  // The input rows [lo, hi) and columns [wl, wh) that output tile t reads, padding excluded.
  struct Window {
    std::uint64_t r0, r1, c0, c1, lo, hi, wl, wh;
  };
  auto window = [&](std::uint64_t t) {
    Window v{};
    v.r0 = (t / col_tiles) * rows, v.r1 = std::min(s.oh, v.r0 + rows);
    v.c0 = (t % col_tiles) * cols, v.c1 = std::min(s.ow, v.c0 + cols);
    const std::uint64_t last_h = (v.r1 - 1) * s.stride_h + s.span_h;
    v.lo = v.r0 * s.stride_h > s.pad_top ? v.r0 * s.stride_h - s.pad_top : 0;
    v.hi = std::min(s.h, last_h > s.pad_top ? last_h - s.pad_top : 0);
    const std::uint64_t last_w = (v.c1 - 1) * s.stride_w + s.span_w;
    v.wl = v.c0 * s.stride_w > s.pad_left ? v.c0 * s.stride_w - s.pad_left : 0;
    v.wh = std::min(s.w, last_w > s.pad_left ? last_w - s.pad_left : 0);
    // A tile whose windows all lie in the bottom or right padding (SCALE-Sim's output size makes
    // them when the stride passes the filter) reads no input: an empty range, not one that
    // wraps to 2^64 - lo.
    v.lo = std::min(v.lo, v.hi);
    v.wl = std::min(v.wl, v.wh);
    return v;
  };
  // Ranges cover whole rows: a column tile's bytes lie within them.
  auto input_piece = [&](std::uint64_t img, const Window& v, std::uint64_t in_c) {
    return Piece{s.input, x_image ? (img * s.h + v.lo) * x_row_bytes : 0,
                 x_image ? (img * s.h + v.hi) * x_row_bytes : x_bytes,
                 (v.hi - v.lo) * (v.wh - v.wl) * in_c * ex};
  };
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
  if (mapping.order == LoopOrder::kInputOuter) {
    for (std::uint64_t img = 0; img < s.n; ++img) {
      for (std::uint64_t t = 0; t < row_tiles * col_tiles; ++t) {
        const Window v = window(t);
        const Piece block = input_piece(img, v, s.c);
        std::vector<CommandIndex> after;
        reader_deps(block.tensor, block.lo, block.hi, after);
        const CommandIndex shared = load_weights(block.bytes, group, std::move(after));
        std::vector<CommandIndex> computes;
        for (std::uint64_t ch = 0; ch < chunks; ++ch) {
          const std::uint64_t u0 = ch * chunk_units;
          const std::uint64_t cu = std::min(s.units, u0 + chunk_units) - u0;
          const std::uint64_t w_bytes = s.chunk_weight_bytes(cu);
          const Piece weights{weight_tensor, u0 * s.weight_bytes_per_unit,
                              u0 * s.weight_bytes_per_unit + w_bytes, w_bytes};
          emit_tile(img, v, cu, {weights}, shared, computes, ch == chunks - 1);
        }
      }
    }
    return;
  }
  for (std::uint64_t ch = 0; ch < chunks; ++ch) {
    const std::uint64_t u0 = ch * chunk_units;
    const std::uint64_t cu = std::min(s.units, u0 + chunk_units) - u0;
    const CommandIndex weights =
        s.weight_bytes_per_unit > 0 ? load_weights(s.chunk_weight_bytes(cu), group) : kNone;
    std::vector<CommandIndex> computes;
    for (std::uint64_t img = 0; img < s.n; ++img) {
      for (std::uint64_t t = 0; t < row_tiles * col_tiles; ++t) {
        const Window v = window(t);
        const bool last = img == s.n - 1 && t == row_tiles * col_tiles - 1;
        emit_tile(img, v, cu, {input_piece(img, v, s.chunk_in_c(cu))}, weights, computes, last);
      }
    }
  }
}

}  // namespace npusim
