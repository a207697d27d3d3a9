// Halo reuse (docs/compiler.md, "Halo reuse"): a weights-outer spatial layer whose windows overlap
// goes down each column band of tiles, and each tile loads only the input rows the tiles above it
// did not. Rows that later tiles read too stay in local memory until the store of the last of
// them, which waits for every tile that read them.
#include <algorithm>
#include <string>
#include <vector>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"

namespace npusim {

Emitter::HaloRows Emitter::halo_rows(const SpatialLayer& s, std::uint64_t img, const TileWindow& v,
                                     std::uint64_t in_c,
                                     const std::vector<SpatialLayer::HaloPiece>& pieces,
                                     std::uint64_t tile) const {
  const std::uint64_t row_bytes = s.cols_read(v.c0, v.c1, in_c) * in_c * s.in_elem_bytes;
  const std::uint64_t image_row_bytes = s.w * s.c * s.in_elem_bytes;  // addresses in the image
  HaloRows out;
  for (const SpatialLayer::HaloPiece& h : pieces) {
    const Piece p{s.input, (img * s.h + h.lo) * image_row_bytes,
                  (img * s.h + h.hi) * image_row_bytes, (h.hi - h.lo) * row_bytes};
    if (p.bytes == 0) continue;  // a band wholly in the padding reads nothing
    if (h.last == tile) {
      out.own.push_back(p);
    } else {
      out.lend.push_back({p, h.last});
      out.lent_bytes += p.bytes;
    }
  }
  return out;
}

void Emitter::lend_rows(const LayerGroup& group, const HaloRows& rows, CommandIndex wait,
                        std::vector<LentRows>& live, std::vector<CommandIndex>& loads) {
  for (const auto& [p, last] : rows.lend) {
    std::vector<std::string> buffers;
    std::vector<CommandIndex> loaded;
    load_piece(group, p,
               wait != kNone ? std::vector<CommandIndex>{wait} : std::vector<CommandIndex>{},
               buffers, loaded);
    live.push_back({last, p.bytes, loaded.back(), buffers.back(), {}});
    loads.push_back(loaded.back());
  }
}

void Emitter::emit_spatial_halo(const LayerGroup& group, const SpatialLayer& s,
                                const Mapping& mapping) {
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const std::uint64_t row_tiles = ceil_div(s.oh, rows), col_tiles = ceil_div(s.ow, cols);
  const std::uint64_t y_row_bytes = s.ow * s.k * s.out_elem_bytes;
  const std::vector<std::vector<SpatialLayer::HaloPiece>> halo = s.halo_pieces(rows);
  for (std::uint64_t ch = 0; ch < chunks; ++ch) {
    const std::uint64_t u0 = ch * chunk_units;
    const std::uint64_t cu = std::min(s.units, u0 + chunk_units) - u0;
    const std::uint64_t in_c = s.chunk_in_c(cu);
    const CommandIndex weights =
        s.weight_bytes_per_unit > 0 ? load_weights(s.chunk_weight_bytes(cu), group) : kNone;
    std::vector<CommandIndex> computes;
    for (std::uint64_t img = 0; img < s.n; ++img) {
      for (std::uint64_t j = 0; j < col_tiles; ++j) {
        std::vector<LentRows> live;
        for (std::uint64_t i = 0; i < row_tiles; ++i) {
          const TileWindow v = s.window(i * col_tiles + j, rows, cols);
          const HaloRows rows_in = halo_rows(s, img, v, in_c, halo[i], i);
          const std::vector<Piece> pieces =
              with_residual(g_, group, layouts_, s, rows_in.own, img, v.r0, v.r1, v.c0, v.c1,
                            cu * s.out_per_unit);
          const std::uint64_t out_bytes = s.output_bytes(v.r1 - v.r0, v.c1 - v.c0, cu);
          // What the tile holds besides its pieces: the rows lent to it and those it lends.
          Held held;
          for (const LentRows& l : live) {
            held.bytes += l.bytes;
            held.loads.push_back(l.load);
          }
          held.bytes += rows_in.lent_bytes;
          // The lent rows load after the same ring wait as the tile's own pieces (tile() computes
          // the same wait: the ring has not changed).
          std::uint64_t tile_bytes = std::max<std::uint64_t>(out_bytes, 1) + held.bytes;
          for (const Piece& p : pieces) tile_bytes += p.bytes;
          const CommandIndex wait = ring_wait(tile_bytes);
          lend_rows(group, rows_in, wait, live, held.loads);
          const bool last_tile = img == s.n - 1 && j == col_tiles - 1 && i == row_tiles - 1;
          const CommandIndex compute =
              tile(next_slice(), group, pieces, s.op, s.tile_shape(v.r1 - v.r0, v.c1 - v.c0, cu),
                   weights, out_bytes, (img * s.oh + v.r0) * y_row_bytes,
                   (img * s.oh + v.r1) * y_row_bytes, last_tile ? &computes : nullptr, {}, &held);
          computes.push_back(compute);
          // Its store (not kept on chip: a real DMA_OUT) frees the rows it is the last to read,
          // once every tile that read them is done.
          const CommandIndex store = ring_.back().store;
          for (auto l = live.begin(); l != live.end();) {
            l->readers.push_back(compute);
            if (l->last != i) {
              ++l;
              continue;
            }
            add_deps(store, last_per_queue(l->readers));
            sched_.commands[store].free.push_back(l->buffer);
            l = live.erase(l);
          }
        }
      }
    }
  }
}

}  // namespace npusim
