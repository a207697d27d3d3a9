// Emission of K-split convolutions (Mapping::k_step; docs/compiler.md, "K-split convolutions"):
// an output tile accumulates on its slice over steps of input channels, so that a chunk of output
// channels as wide as the array fits in local memory even when its whole reduction does not.
#include <algorithm>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"

namespace npusim {

// The tiles, chunk by chunk of output channels and within a chunk by image, then row tile, then
// column tile, go round-robin over the slices in batches of one per slice: a batch may take tiles
// of several chunks (each step loads its own share of the weights, so no chunk is shared), and a
// layer with fewer tiles per chunk than slices still fills them. A batch is emitted step-major, as
// K-split MatMuls are: the weights of every tile's step, then their input channels, then the
// Convs, so the in-order DMA_IN queue feeds every slice of the batch at once. Each step loads its
// input channels of the tile's window and their share of the chunk's weights, and its Conv waits
// for the tile's previous step (it accumulates onto it). A fused residual is loaded with the last
// step. A tile holds its accumulator and two steps' operands; its store frees them.
void Emitter::emit_spatial_ksplit(const LayerGroup& group, const SpatialLayer& s,
                                  const Mapping& mapping) {
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units, step_c = mapping.k_step;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const std::uint64_t y_row_bytes = s.ow * s.k * s.out_elem_bytes;
  const std::uint64_t tiles_per_image = ceil_div(s.oh, rows) * ceil_div(s.ow, cols);
  struct OutTile : KSplitTile {
    std::uint64_t cu = 0;  // its chunk's channel units
    std::uint64_t img = 0;
    TileWindow v;
  };
  const std::uint64_t per_chunk = s.n * tiles_per_image;
  const std::uint64_t total = chunks * per_chunk;
  // A batch that passes the tiles' half takes the whole memory (begin_whole_memory).
  const std::uint64_t cu_max = std::min(s.units, chunk_units);
  begin_whole_memory(group_slices_ * (s.accumulator_bytes(rows, cols, cu_max) +
                                      2 * s.step_bytes(rows, cols, cu_max, step_c)));
  for (std::uint64_t first = 0, next = 0; first < total; first = next) {
    std::vector<OutTile> batch;
    std::uint64_t batch_bytes = 0;  // the batch's earlier tiles, not on the ring yet
    for (next = first; next < total && next < first + group_slices_; ++next) {
      const std::uint64_t u0 = next / per_chunk * chunk_units, i = next % per_chunk;
      OutTile o;
      o.cu = std::min(s.units, u0 + chunk_units) - u0;
      o.img = i / tiles_per_image;
      o.v = s.window(i % tiles_per_image, rows, cols);
      const std::uint64_t tr = o.v.r1 - o.v.r0, tc = o.v.c1 - o.v.c0;
      o.bytes = s.accumulator_bytes(tr, tc, o.cu) + 2 * s.step_bytes(tr, tc, o.cu, step_c);
      if (!join_ksplit_batch(o, batch_bytes, batch.empty())) break;
      batch.push_back(std::move(o));
    }
    for (std::uint64_t c0 = 0; c0 < s.c; c0 += step_c) {
      const std::uint64_t kn = std::min(s.c, c0 + step_c) - c0;
      const bool last_step = c0 + kn == s.c;
      std::vector<std::vector<CommandIndex>> deps_of(batch.size());
      std::vector<std::vector<std::string>> frees_of(batch.size());
      for (std::size_t t = 0; t < batch.size(); ++t) {
        const std::vector<CommandIndex> waits = ksplit_step_waits(batch[t]);
        Command load = dma(EngineKind::kDmaIn, s.part_weight_bytes(batch[t].cu, kn));
        frees_of[t].push_back(buffer_name());
        load.alloc.push_back({frees_of[t].back(), load.bytes});
        deps_of[t].push_back(emit(std::move(load), "DI", di_, group, waits));
      }
      for (std::size_t t = 0; t < batch.size(); ++t) {
        const OutTile& o = batch[t];
        const std::vector<CommandIndex> waits = ksplit_step_waits(o);
        std::vector<Piece> pieces = {spatial_input(s, o.img, o.v, kn)};
        if (last_step) {
          pieces = with_residual(g_, group, layouts_, s, pieces, o.img, o.v.r0, o.v.r1, o.v.c0,
                                 o.v.c1, o.cu * s.out_per_unit);
        }
        for (const Piece& p : pieces) {
          if (p.bytes > 0) load_piece(group, p, waits, frees_of[t], deps_of[t]);
        }
      }
      for (std::size_t t = 0; t < batch.size(); ++t) {
        OutTile& o = batch[t];
        std::vector<CommandIndex> deps = std::move(deps_of[t]);
        if (!o.steps.empty()) deps.push_back(o.steps.back());  // accumulates onto it
        if (o.steps.empty() && o.ring_wait != kNone) deps.push_back(o.ring_wait);
        const std::uint64_t tr = o.v.r1 - o.v.r0, tc = o.v.c1 - o.v.c0;
        ConvShape shape = s.tile_shape(tr, tc, o.cu);
        shape.in_c = kn;
        Command conv = compute(s.op, o.slice, shape);
        if (o.steps.empty()) conv.alloc.push_back({o.out_buffer, s.partial_bytes(tr, tc, o.cu)});
        conv.free = std::move(frees_of[t]);
        o.steps.push_back(emit(std::move(conv), "S", s_, group, std::move(deps)));
      }
    }
    for (const OutTile& o : batch) {
      const std::uint64_t tr = o.v.r1 - o.v.r0, tc = o.v.c1 - o.v.c0;
      const CommandIndex store = store_tile(
          group, {o.steps.back()}, o.out_buffer, s.output_bytes(tr, tc, o.cu),
          (o.img * s.oh + o.v.r0) * y_row_bytes, (o.img * s.oh + o.v.r1) * y_row_bytes, nullptr);
      push_ring(store, o.bytes);
    }
  }
  end_whole_memory();
}

}  // namespace npusim
