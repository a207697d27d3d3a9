// Emission of vector layers and global average pools (docs/compiler.md, "Vector layers",
// "Global average pool").
#include <algorithm>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/global_pool.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/util/math.h"

namespace npusim {

// The constants loaded once (if any), then tiles of rows in order, each loading its piece of
// every other operand.
void Emitter::emit_vector(const LayerGroup& group, const Mapping& mapping) {
  const VectorLayer v = describe_vector(g_, group, layouts_);
  const std::uint64_t rows = mapping.tile_rows, pieces_per_row = mapping.row_pieces;
  const std::uint64_t rows_total = v.base_rows * pieces_per_row;
  const CommandIndex weights = v.once_bytes > 0 ? load_weights(v.once_bytes, group) : kNone;
  const std::uint64_t tiles = ceil_div(rows_total, rows);
  std::vector<CommandIndex> computes;
  for (std::uint64_t t = 0; t < tiles; ++t) {
    const std::uint64_t r0 = t * rows, r1 = std::min(rows_total, r0 + rows);
    std::vector<Piece> pieces;
    for (const VectorOperand& operand : v.operands) {
      if (operand.feed != Feed::kOnce) pieces.push_back(v.piece(operand, r0, r1, pieces_per_row));
    }
    const ElementsShape shape{
        std::max<std::uint64_t>(1, VectorLayer::share(v.driver_elements, r0, r1, rows_total))};
    const bool last = t == tiles - 1;
    const std::uint64_t y = v.output_bytes;
    computes.push_back(tile(next_slice(), group, pieces, v.op, shape, weights,
                            VectorLayer::share(y, r0, r1, rows_total),
                            v.output_aligned ? VectorLayer::share(y, 0, r0, rows_total) : 0,
                            v.output_aligned ? VectorLayer::share(y, 0, r1, rows_total) : y,
                            last ? &computes : nullptr, v.then_ops));
  }
}

// For each image, tiles of channels in order; a channel slice of an NHWC image is strided
// across the whole image, so each load waits for every store of its image.
void Emitter::emit_global_pool(const LayerGroup& group, const Mapping& mapping) {
  const GlobalPoolLayer p = describe_global_pool(g_, group);
  const std::uint64_t cc = mapping.tile_channel_units;
  const std::uint64_t ex = p.in_elem_bytes, ey = p.out_elem_bytes;
  const std::uint64_t image_bytes = p.h * p.w * p.c * ex;
  const bool x_image = layouts_.is_image(p.input);
  // The last group's output kept on chip (one image): no loads; each tile waits for its writers'
  // last command on each queue, and the last store frees it.
  const bool reads_kept = kept_ && kept_->tensor == p.input && p.n == 1;
  const std::vector<CommandIndex> kept_last =
      reads_kept ? last_per_queue(kept_->writers) : std::vector<CommandIndex>{};
  for (std::uint64_t img = 0; img < p.n; ++img) {
    for (std::uint64_t c0 = 0; c0 < p.c; c0 += cc) {
      const std::uint64_t k = std::min(p.c, c0 + cc) - c0;
      std::vector<Piece> pieces;
      if (!reads_kept) {
        pieces.push_back({p.input, x_image ? img * image_bytes : 0,
                          x_image ? (img + 1) * image_bytes : p.input_bytes, p.h * p.w * k * ex});
      }
      ConvShape shape;
      shape.in_h = shape.kernel_h = p.h;
      shape.in_w = shape.kernel_w = p.w;
      shape.in_c = shape.out_c = k;
      const CommandIndex compute =
          tile(next_slice(), group, pieces, "GlobalAveragePool", shape, kNone, k * ey,
               (img * p.c + c0) * ey, (img * p.c + c0 + k) * ey, nullptr);
      if (reads_kept) add_deps(compute, kept_last);
    }
  }
  if (reads_kept) release_kept(group, ring_.back().store);
}

}  // namespace npusim
