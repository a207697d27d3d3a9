// Emission of a conv in loop order input outer (docs/compiler.md, "Convolutions and pools"):
// each input block is loaded once and shared by the block's tiles, one per chunk of output
// channels, or per chunk and part of its input channels when the reduction is split over slices
// (Mapping::k_parts, "Splitting the reduction over slices"). Late layers have few output pixels
// and many input channels: cutting their output over the slices leaves each a few pixels per
// fold, and cutting output channels leaves the array's columns idle; cutting the input channels
// gives each slice fewer folds of full width, at the price of adding the partial sums.
#include <algorithm>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/util/math.h"

namespace npusim {

// Per input block (image, row tile, column tile), the chunks in waves of at most one tile or
// part per slice (so each one's wait for its slice's tile two back is known when it is emitted):
//  1. the weights of every tile or part of the wave, first, so that the DMA_IN queue brings them
//     in while the previous layer still computes;
//  2. before the first wave, the input block;
//  3. per chunk, either one Conv per tile (a fused residual loaded with it) and its store; or,
//     split, each part's Conv into partial sums (one buffer per reduction piece), then per piece
//     (whole output rows, at most one per part) an Add of the partials (and of the residual,
//     loaded there) on that part's slice's vector unit, and the stores: at most one per DMA_OUT
//     channel, each waiting for all the tile's Adds. A tile whose output stays on chip and
//     whose block no other tile reads (one chunk) stores nothing: its last Add frees the block.
//     Each piece's ring entry is its store, or, not stored, its own Add (emit_split_tile).
void Emitter::emit_spatial_input_outer(const LayerGroup& group, const SpatialLayer& s,
                                       const Mapping& mapping) {
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunk_units = mapping.tile_channel_units;
  const std::uint64_t chunks = ceil_div(s.units, chunk_units);
  const bool split = mapping.k_parts > 1;
  const std::uint64_t part_c = split ? s.part_channels(mapping.k_parts) : s.c;
  const std::uint64_t per_chunk = split ? s.part_count(mapping.k_parts) : 1;
  const std::uint64_t wave_chunks = std::max<std::uint64_t>(1, group_slices_ / per_chunk);
  const std::uint64_t y_row_bytes = s.ow * s.k * s.out_elem_bytes;
  const std::uint64_t tiles_per_image = ceil_div(s.oh, rows) * ceil_div(s.ow, cols);
  auto chunk_size = [&](std::uint64_t ch) {
    return std::min(s.units, (ch + 1) * chunk_units) - ch * chunk_units;
  };
  for (std::uint64_t img = 0; img < s.n; ++img) {
    for (std::uint64_t t = 0; t < tiles_per_image; ++t) {
      const TileWindow v = s.window(t, rows, cols);
      const std::uint64_t tr = v.r1 - v.r0, tc = v.c1 - v.c0;
      std::vector<CommandIndex> computes;  // every Conv that read the block
      const bool reads_kept = kept_ && kept_->tensor == s.input;
      for (std::uint64_t first = 0; first < chunks; first += wave_chunks) {
        const std::uint64_t last = std::min(chunks, first + wave_chunks);
        // 1. The weights of the wave. Its parts claim the ring together (as a K-split batch
        // does): none of them is on the ring yet when the next one asks for room.
        std::vector<BlockPart> parts;
        std::uint64_t wave_bytes = 0;
        for (std::uint64_t ch = first; ch < last; ++ch) {
          for (std::uint64_t c0 = 0; c0 < s.c; c0 += part_c) {
            const std::uint64_t cu = chunk_size(ch);
            const std::uint64_t in_c = std::min(s.c, c0 + part_c) - c0;
            const std::uint64_t weights = s.part_weight_bytes(cu, in_c);
            // What the tile or part holds on its slice until its store: its weights and output,
            // its residual share, and, split, its partial sums. Prefetched weights are on chip
            // already, in the chunks' half until this part's ring entry frees them
            // (settle_prefetch): not in its ring bytes.
            std::optional<Prefetched> pre = take_prefetched(group, weights);
            BlockPart p =
                wave_part(ch, in_c,
                          weights + s.output_bytes(tr, tc, cu) + s.residual_bytes(tr, tc, cu) +
                              (split ? s.partial_bytes(tr, tc, cu) : 0) - (pre ? pre->bytes : 0),
                          wave_bytes);
            if (pre) {
              p.prefetched = pre->bytes;
              p.weights_buffer = std::move(pre->buffer);
              p.load = pre->load;
            } else {
              load_part(group, p, weights, p.waits);
            }
            parts.push_back(std::move(p));
          }
        }
        // 2. The input block, or the last group's output kept on chip.
        if (first == 0 && reads_kept) {
          weights_pieces_ = last_per_queue(kept_->writers);
          weights_buffers_.clear();  // release_kept frees them
        } else if (first == 0) {
          const Piece block = spatial_input(s, img, v, s.c);
          load_shared_input(group, s.input, block.lo, block.hi, block.bytes);
        }
        // 3. The wave's computes and stores.
        for (std::uint64_t ch = first; ch < last; ++ch) {
          std::vector<const BlockPart*> chunk_parts;
          for (const BlockPart& p : parts) {
            if (p.chunk == ch) chunk_parts.push_back(&p);
          }
          const bool frees_block = ch == chunks - 1;
          if (split) {
            const std::uint64_t cu = chunk_size(ch), out_c = cu * s.out_per_unit;
            SplitTile split_tile;
            split_tile.op = s.op;
            split_tile.part_shape = [&](const BlockPart& p) {
              ConvShape shape = s.tile_shape(tr, tc, cu);
              shape.in_c = p.in_c;
              return Shape{shape};
            };
            split_tile.rows = tr;
            split_tile.piece_rows = s.reduce_piece_rows(tr, mapping.k_parts);
            split_tile.out_row_bytes = s.output_bytes(1, tc, cu);
            split_tile.partial_row_bytes = s.partial_bytes(1, tc, cu);
            split_tile.residual_row_bytes = s.residual_bytes(1, tc, cu);
            split_tile.reduce_row_elements = s.reduce_elements(1, tc, cu, mapping.k_parts);
            split_tile.y_first_row = img * s.oh + v.r0;
            split_tile.y_row_bytes = y_row_bytes;
            split_tile.residual = [&](std::uint64_t r0, std::uint64_t r1) {
              return with_residual(g_, group, layouts_, s, {}, img, v.r0 + r0, v.r0 + r1, v.c0,
                                   v.c1, out_c);
            };
            emit_split_tile(group, split_tile, chunk_parts, computes, frees_block);
            continue;
          }
          const BlockPart& p = *chunk_parts.front();
          const std::uint64_t cu = chunk_size(ch);
          std::vector<CommandIndex> deps = p.waits;
          deps.push_back(p.load);
          std::vector<std::string> frees = {p.weights_buffer};
          for (const Piece& piece : with_residual(g_, group, layouts_, s, {}, img, v.r0, v.r1, v.c0,
                                                  v.c1, cu * s.out_per_unit)) {
            load_piece(group, piece, p.waits, frees, deps);
          }
          deps.insert(deps.end(), weights_pieces_.begin(), weights_pieces_.end());
          Command conv = compute(s.op, p.slice, s.tile_shape(tr, tc, cu));
          const std::uint64_t out_bytes = s.output_bytes(tr, tc, cu);
          const std::string out_buffer = buffer_name();
          conv.alloc.push_back({out_buffer, std::max<std::uint64_t>(out_bytes, 1)});
          conv.free = std::move(frees);
          computes.push_back(emit(std::move(conv), "S", s_, group, std::move(deps)));
          const CommandIndex store = store_tile(
              group, {computes.back()}, out_buffer, out_bytes, (img * s.oh + v.r0) * y_row_bytes,
              (img * s.oh + v.r1) * y_row_bytes, frees_block ? &computes : nullptr);
          push_ring(store, p.bytes);
          if (p.prefetched > 0) settle_prefetch(store, p.prefetched);
        }
      }
      // The kept output is freed with the block, by its last store.
      if (reads_kept) release_kept(group, weight_frees_.back());
    }
  }
}

Emitter::BlockPart Emitter::wave_part(std::uint64_t chunk, std::uint64_t in_c, std::uint64_t bytes,
                                      std::uint64_t& wave_bytes) {
  BlockPart p;
  p.slice = next_slice();
  p.in_c = in_c;
  p.chunk = chunk;
  p.bytes = bytes;
  wave_bytes += bytes;
  const CommandIndex wait = ring_wait(wave_bytes);
  if (wait != kNone) p.waits.push_back(wait);
  return p;
}

void Emitter::load_part(const LayerGroup& group, BlockPart& p, std::uint64_t bytes,
                        std::vector<CommandIndex> deps) {
  Command load = dma(EngineKind::kDmaIn, bytes);
  p.weights_buffer = buffer_name();
  load.alloc.push_back({p.weights_buffer, load.bytes});
  p.load = emit(std::move(load), "DI", di_, group, std::move(deps));
}

// One tile split over `parts` (their weights loaded): their computes into partial sums, the
// reduction pieces and the stores, as emit_spatial_input_outer describes.
void Emitter::emit_split_tile(const LayerGroup& group, const SplitTile& t,
                              const std::vector<const BlockPart*>& parts,
                              std::vector<CommandIndex>& computes, bool frees_block) {
  const std::uint64_t pieces = ceil_div(t.rows, t.piece_rows);
  // Rows [r0, r1) of the tile in reduction piece i.
  auto piece_rows_of = [&](std::uint64_t i) {
    const std::uint64_t r0 = i * t.piece_rows;
    return std::pair<std::uint64_t, std::uint64_t>{r0, std::min(t.rows, r0 + t.piece_rows)};
  };
  auto y_lo = [&](std::uint64_t r) { return (t.y_first_row + r) * t.y_row_bytes; };
  // partial_buffers[piece]: one buffer per part.
  std::vector<std::vector<std::string>> partial_buffers(pieces);
  std::vector<CommandIndex> convs;
  for (const BlockPart* p : parts) {
    Command part = compute(t.op, p->slice, t.part_shape(*p));
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const auto [r0, r1] = piece_rows_of(i);
      partial_buffers[i].push_back(buffer_name());
      part.alloc.push_back({partial_buffers[i].back(), (r1 - r0) * t.partial_row_bytes});
    }
    // (A part of a resident operand loads nothing: its waits hold the operand's writers.)
    if (!p->weights_buffer.empty()) part.free = {p->weights_buffer};
    std::vector<CommandIndex> deps = p->waits;
    if (p->load != kNone) deps.push_back(p->load);
    deps.insert(deps.end(), weights_pieces_.begin(), weights_pieces_.end());
    convs.push_back(emit(std::move(part), "S", s_, group, std::move(deps)));
  }
  computes.insert(computes.end(), convs.begin(), convs.end());
  std::vector<CommandIndex> adds;
  std::vector<std::string> out_buffers;
  for (std::uint64_t i = 0; i < pieces; ++i) {
    const BlockPart& reducer = *parts[i];
    const auto [r0, r1] = piece_rows_of(i);
    std::vector<CommandIndex> deps = convs;
    std::vector<std::string> frees = partial_buffers[i];
    if (t.residual) {
      for (const Piece& piece : t.residual(r0, r1)) {
        load_piece(group, piece, reducer.waits, frees, deps);
      }
    }
    Command add =
        compute("PartialSum", reducer.slice, ElementsShape{(r1 - r0) * t.reduce_row_elements});
    out_buffers.push_back(buffer_name());
    add.alloc.push_back(
        {out_buffers.back(), std::max<std::uint64_t>((r1 - r0) * t.out_row_bytes, 1)});
    add.free = std::move(frees);
    adds.push_back(emit(std::move(add), "S", s_, group, std::move(deps)));
  }
  // The stores: the pieces in at most one group per DMA_OUT channel, each freeing its pieces'
  // outputs; the last also frees the block when asked.
  const std::uint64_t per_store =
      ceil_div(pieces, std::min<std::uint64_t>(pieces, cfg_.dma.out_channels));
  std::vector<CommandIndex> store_of_piece(pieces);
  for (std::uint64_t i0 = 0; i0 < pieces; i0 += per_store) {
    const std::uint64_t i1 = std::min(pieces, i0 + per_store);
    const std::uint64_t r0 = piece_rows_of(i0).first;
    const std::uint64_t r1 = piece_rows_of(i1 - 1).second;
    const bool last = i1 == pieces;
    const CommandIndex store =
        store_tile(group, adds, out_buffers[i0], (r1 - r0) * t.out_row_bytes, y_lo(r0), y_lo(r1),
                   last && frees_block ? &computes : nullptr);
    for (std::uint64_t i = i0 + 1; i < i1; ++i) release_output(store, group, out_buffers[i], adds);
    for (std::uint64_t i = i0; i < i1; ++i) store_of_piece[i] = store;
  }
  // The ring entries, one per piece: its store, which waits for every PartialSum, or, kept on
  // chip (nothing stored), its own PartialSum, which frees its partials of every part and its
  // residual piece. Each counts what is free once it ends: its piece's output, residual and
  // partials, once per part as the parts hold them; the first also the parts' weights, which
  // their computes freed before any PartialSum began.
  const std::uint64_t n_parts = parts.size();
  auto held = [&](std::uint64_t r) {  // by each part, for r rows of the tile
    return r * (t.out_row_bytes + t.residual_row_bytes + t.partial_row_bytes);
  };
  std::uint64_t left = 0;
  for (const BlockPart* p : parts) left += p->bytes;
  const std::uint64_t weights = left - std::min(left, n_parts * held(t.rows));
  for (std::uint64_t i = 0; i < pieces; ++i) {
    const auto [r0, r1] = piece_rows_of(i);
    const CommandIndex entry = sched_.commands[store_of_piece[i]].engine == EngineKind::kDmaOut
                                   ? store_of_piece[i]
                                   : adds[i];
    const std::uint64_t bytes =
        i + 1 == pieces ? left : std::min(left, n_parts * held(r1 - r0) + (i == 0 ? weights : 0));
    push_ring(entry, bytes);
    left -= bytes;
    if (i == 0) {
      for (const BlockPart* p : parts) {
        if (p->prefetched > 0) settle_prefetch(entry, p->prefetched);
      }
    }
  }
  // One entry per part, as before pieces had their own: the ring's depth (8 entries a slice)
  // counts parts, so parts past the pieces take empty entries at the last one.
  for (std::uint64_t j = pieces; j < n_parts; ++j) push_ring(ring_.back().store, 0);
}

}  // namespace npusim
