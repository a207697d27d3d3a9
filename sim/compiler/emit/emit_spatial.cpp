// Emission of spatial layers: Conv, DepthwiseConv, MaxPool, AveragePool (docs/compiler.md,
// "Convolutions and pools").
#include <algorithm>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"

namespace npusim {

// For each chunk, its weight load, then for each image the tiles row by row and, within a row of
// tiles, column by column. Each tile loads its input rows and columns (padding excluded) and
// computes with the padding folded into its shape, so that its output is exactly its pixels.
void Emitter::emit_spatial(const LayerGroup& group, const Mapping& mapping) {
  const SpatialLayer s = describe_spatial(g_, group, budgets_);
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const std::uint64_t ex = s.in_elem_bytes, ey = s.out_elem_bytes;
  // A conv reads its input as an image; one that is not laid out as one is read whole.
  const bool x_image = layouts_.is_image(s.input);
  const std::uint64_t x_bytes = g_.tensors[s.input].bytes();
  const std::uint64_t x_row_bytes = s.w * s.c * ex;  // NHWC in DRAM: a row is contiguous
  const std::uint64_t y_row_bytes = s.ow * s.k * ey;
  const std::uint64_t row_tiles = ceil_div(s.oh, rows);
  const std::uint64_t col_tiles = ceil_div(s.ow, cols);
  for (std::uint64_t ch = 0; ch < chunks; ++ch) {
    const std::uint64_t u0 = ch * chunk_units;
    const std::uint64_t cu = std::min(s.units, u0 + chunk_units) - u0;
    const CommandIndex weights =
        s.weight_bytes_per_unit > 0 ? load_weights(cu * s.weight_bytes_per_unit, group) : kNone;
    std::vector<CommandIndex> computes;
    for (std::uint64_t img = 0; img < s.n; ++img) {
      for (std::uint64_t t = 0; t < row_tiles * col_tiles; ++t) {
        const std::uint64_t r0 = (t / col_tiles) * rows, r1 = std::min(s.oh, r0 + rows);
        const std::uint64_t c0 = (t % col_tiles) * cols, c1 = std::min(s.ow, c0 + cols);
        const std::uint64_t last_h = (r1 - 1) * s.stride_h + s.span_h;
        const std::uint64_t lo = r0 * s.stride_h > s.pad_top ? r0 * s.stride_h - s.pad_top : 0;
        const std::uint64_t hi = std::min(s.h, last_h > s.pad_top ? last_h - s.pad_top : 0);
        const std::uint64_t last_w = (c1 - 1) * s.stride_w + s.span_w;
        const std::uint64_t wl = c0 * s.stride_w > s.pad_left ? c0 * s.stride_w - s.pad_left : 0;
        const std::uint64_t wh = std::min(s.w, last_w > s.pad_left ? last_w - s.pad_left : 0);
        const std::uint64_t in_c = s.chunk_in_c(cu);
        // Ranges cover whole rows: a column tile's bytes lie within them.
        const Piece piece{s.input, x_image ? (img * s.h + lo) * x_row_bytes : 0,
                          x_image ? (img * s.h + hi) * x_row_bytes : x_bytes,
                          (hi - lo) * (wh - wl) * in_c * ex};
        ConvShape shape;
        const std::uint64_t out_c = cu * s.out_per_unit;
        // The rows read, padding folded in, so the output is exactly the tile's rows.
        shape.in_h = (r1 - r0 - 1) * s.stride_h + s.kernel_h;
        shape.in_w = (c1 - c0 - 1) * s.stride_w + s.kernel_w;
        shape.in_c = s.conv ? in_c : out_c;
        shape.out_c = out_c;
        shape.kernel_h = s.kernel_h;
        shape.kernel_w = s.kernel_w;
        shape.stride_h = s.stride_h;
        shape.stride_w = s.stride_w;
        if (s.conv && !s.depthwise && s.group_count > 1 && !s.within_group) shape.groups = cu;
        const bool last = img == s.n - 1 && t == row_tiles * col_tiles - 1;
        const std::vector<Piece> pieces =
            with_residual(g_, group, layouts_, s, piece, img, r0, r1, c0, c1, out_c);
        computes.push_back(tile(next_slice(), group, pieces, s.op, shape, weights,
                                (r1 - r0) * (c1 - c0) * out_c * ey, (img * s.oh + r0) * y_row_bytes,
                                (img * s.oh + r1) * y_row_bytes, last ? &computes : nullptr));
      }
    }
  }
}

}  // namespace npusim
