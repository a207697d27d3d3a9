// Emission of MatMul: row tiles over column chunks of B, and K-split tiles (docs/compiler.md,
// "MatMul", "K-split MatMul").
#include <algorithm>
#include <optional>
#include <vector>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/util/math.h"

namespace npusim {
namespace {

// Where each pass of a MatMul reads and writes. An operand batched other than the output (mixed
// broadcasting, [2,1] x [1,3]) has no simple pass -> batch map: its loads wait for all of its
// writers.
struct PassRanges {
  bool a_exact = false;  // pass p reads A's batch p (or A's only batch)
  bool b_exact = false;  // pass p reads B's batch p (or B's only batch), B not an image
  bool a_rows = false;   // a tile's A range is its own rows

  PassRanges(const MatMulLayer& mm, const TensorLayouts& layouts) {
    a_exact = mm.shared_b || mm.a_batch == 1 || mm.a_batch == mm.out_batch;
    b_exact =
        (mm.shared_b || mm.b_batch == 1 || mm.b_batch == mm.out_batch) && !layouts.is_image(mm.b);
    a_rows = !layouts.is_image(mm.a) && a_exact;
  }
  // A's first row for pass p.
  std::uint64_t a_base(const MatMulLayer& mm, std::uint64_t p) const {
    return mm.shared_b || mm.a_batch == 1 || !a_exact ? 0 : p * mm.m;
  }
  // B's batch for pass p.
  std::uint64_t b_base(const MatMulLayer& mm, std::uint64_t p) const {
    return mm.shared_b || mm.b_batch == 1 || !b_exact ? 0 : p;
  }
  // The output's first row for pass p.
  static std::uint64_t y_base(const MatMulLayer& mm, std::uint64_t p) {
    return mm.shared_b ? 0 : p * mm.m;
  }
};

}  // namespace

// Weights outer: for each pass, for each column chunk, its load, then each row tile: one DMA_IN
// of its A rows, one Gemm, one DMA_OUT. Input outer: for each pass, for each row tile, one shared
// load of its A rows, then per column chunk one DMA_IN of the chunk of B, one Gemm, one DMA_OUT.
void Emitter::emit_matmul(const LayerGroup& group, const Mapping& mapping) {
  const MatMulLayer mm = describe_matmul(g_, group);
  const PassRanges ranges(mm, layouts_);
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols;
  const std::uint64_t chunks = ceil_div(mm.n, cols);
  const std::uint64_t a_row_bytes = mm.k * mm.a_elem_bytes, y_row_bytes = mm.n * mm.out_elem_bytes;
  const std::uint64_t b_batch_bytes = mm.b_bytes(mm.k * mm.n);
  const Tensor& a = g_.tensors[mm.a];
  const Tensor& b = g_.tensors[mm.b];
  if (mapping.order == LoopOrder::kInputOuter) {
    for (std::uint64_t p = 0; p < mm.passes; ++p) {
      const std::uint64_t a_base = ranges.a_base(mm, p), b_base = ranges.b_base(mm, p);
      const std::uint64_t y_base = PassRanges::y_base(mm, p);
      // B's chunks are read from its batch: an activation's readers wait for its writers.
      const std::uint64_t b_lo = ranges.b_exact ? b_base * b_batch_bytes : 0;
      const std::uint64_t b_hi = ranges.b_exact ? (b_base + 1) * b_batch_bytes : b.bytes();
      for (std::uint64_t r0 = 0; r0 < mm.rows_total; r0 += rows) {
        const std::uint64_t r1 = std::min(mm.rows_total, r0 + rows);
        if (mapping.k_parts > 1) {
          emit_matmul_split(group, mapping, p, r0, r1);
          continue;
        }
        const CommandIndex shared = load_shared_input(
            group, mm.a, ranges.a_rows ? (a_base + r0) * a_row_bytes : 0,
            ranges.a_rows ? (a_base + r1) * a_row_bytes : a.bytes(), (r1 - r0) * a_row_bytes);
        std::vector<CommandIndex> computes;
        for (std::uint64_t ch = 0; ch < chunks; ++ch) {
          const std::uint64_t c0 = ch * cols, nc = std::min(mm.n, c0 + cols) - c0;
          const Piece b_chunk{mm.b, b.constant ? 0 : b_lo, b.constant ? 0 : b_hi,
                              nc * mm.bytes_per_col};
          // The first row tile's chunks of constant weights may have been prefetched
          // (first_row_tile_weight_loads): taken in the order they were planned.
          std::optional<Prefetched> pre;
          if (b.constant && p == 0 && r0 == 0) pre = take_prefetched(group, b_chunk.bytes);
          std::vector<Piece> pieces;
          if (!pre) pieces.push_back(b_chunk);
          computes.push_back(
              tile(next_slice(), group, pieces, "Gemm", GemmShape{1, r1 - r0, nc, mm.k}, shared,
                   (r1 - r0) * nc * mm.out_elem_bytes, (y_base + r0) * y_row_bytes,
                   (y_base + r1) * y_row_bytes, ch == chunks - 1 ? &computes : nullptr, {}, nullptr,
                   pre ? &*pre : nullptr));
        }
      }
    }
    return;
  }
  for (std::uint64_t p = 0; p < mm.passes; ++p) {
    const std::uint64_t a_base = ranges.a_base(mm, p), b_base = ranges.b_base(mm, p);
    for (std::uint64_t ch = 0; ch < chunks; ++ch) {
      const std::uint64_t c0 = ch * cols, nc = std::min(mm.n, c0 + cols) - c0;
      // An activation as right operand (attention) loads like weights, after its writers.
      std::vector<CommandIndex> after;
      if (!b.constant) {
        reader_deps(mm.b, ranges.b_exact ? b_base * b_batch_bytes : 0,
                    ranges.b_exact ? (b_base + 1) * b_batch_bytes : b.bytes(), after);
      }
      const CommandIndex weights = load_weights(nc * mm.bytes_per_col, group, after);
      std::vector<CommandIndex> computes;
      const std::uint64_t tiles = ceil_div(mm.rows_total, rows);
      for (std::uint64_t t = 0; t < tiles; ++t) {
        const std::uint64_t r0 = t * rows, r1 = std::min(mm.rows_total, r0 + rows);
        const Piece piece{mm.a, ranges.a_rows ? (a_base + r0) * a_row_bytes : 0,
                          ranges.a_rows ? (a_base + r1) * a_row_bytes : a.bytes(),
                          (r1 - r0) * mm.k * mm.a_elem_bytes};
        GemmShape shape;
        shape.m = r1 - r0;
        shape.n = nc;
        shape.k = mm.k;
        const std::uint64_t y_base = PassRanges::y_base(mm, p);
        const bool last = t == tiles - 1;
        computes.push_back(tile(next_slice(), group, {piece}, "Gemm", shape, weights,
                                (r1 - r0) * nc * mm.out_elem_bytes, (y_base + r0) * y_row_bytes,
                                (y_base + r1) * y_row_bytes, last ? &computes : nullptr));
      }
    }
  }
}

// Input outer with the reduction split over slices (Mapping::k_parts; docs/compiler.md, "MatMul
// split over slices"): per column chunk, each part loads its K rows of the chunk (the first part
// also the chunk's share of the bias) and runs a Gemm over them, reading rows [r0, r1) of A, into
// partial sums on a slice of its own; PartialSums add them up (emit_split_tile). The rows of A
// load once, first; then the chunks in waves of at most one part per slice, each wave's loads
// before its computes.
void Emitter::emit_matmul_split(const LayerGroup& group, const Mapping& mapping, std::uint64_t pass,
                                std::uint64_t r0, std::uint64_t r1) {
  const MatMulLayer mm = describe_matmul(g_, group);
  const PassRanges ranges(mm, layouts_);
  const std::uint64_t rows = r1 - r0, cols = mapping.tile_cols;
  const std::uint64_t chunks = ceil_div(mm.n, cols);
  const std::uint64_t part_k = mm.part_k(mapping.k_parts), n_parts = mm.part_count(mapping.k_parts);
  const std::uint64_t wave_chunks = std::max<std::uint64_t>(1, group_slices_ / n_parts);
  const std::uint64_t ey = mm.out_elem_bytes, a_row_bytes = mm.k * mm.a_elem_bytes;
  const std::uint64_t a_base = ranges.a_base(mm, pass), b_base = ranges.b_base(mm, pass);
  // B's parts are read from its batch: an activation's readers wait for its writers. A resident B
  // is not loaded (only a bias share, if any): its parts wait for its writers on chip.
  const Tensor& b = g_.tensors[mm.b];
  const std::uint64_t b_batch_bytes = mm.b_bytes(mm.k * mm.n);
  const std::uint64_t b_lo = ranges.b_exact ? b_base * b_batch_bytes : 0;
  const std::uint64_t b_hi = ranges.b_exact ? (b_base + 1) * b_batch_bytes : b.bytes();
  const bool b_on_chip = !b.constant && on_chip(mm.b);
  // The rows of A first, shared by every part of the row tile. (After the first wave's parts of
  // B, as a split conv loads its block after its weights, the BERT-base layer on `server` took
  // 38,066 cycles against 36,205.)
  load_shared_input(group, mm.a, ranges.a_rows ? (a_base + r0) * a_row_bytes : 0,
                    ranges.a_rows ? (a_base + r1) * a_row_bytes : g_.tensors[mm.a].bytes(),
                    rows * a_row_bytes);
  auto chunk_cols = [&](std::uint64_t ch) { return std::min(mm.n, (ch + 1) * cols) - ch * cols; };
  std::vector<CommandIndex> computes;  // every Gemm that read the rows of A
  for (std::uint64_t first = 0; first < chunks; first += wave_chunks) {
    const std::uint64_t last = std::min(chunks, first + wave_chunks);
    // The wave's loads. Its parts claim the ring together: none of them is on it yet.
    std::vector<BlockPart> parts;
    std::uint64_t wave_bytes = 0;
    for (std::uint64_t ch = first; ch < last; ++ch) {
      for (std::uint64_t k0 = 0; k0 < mm.k; k0 += part_k) {
        const std::uint64_t nc = chunk_cols(ch), kn = std::min(mm.k, k0 + part_k) - k0;
        const std::uint64_t b_bytes =
            mm.part_b_bytes(nc, kn, k0 == 0) - (b_on_chip ? nc * mm.b_bytes(kn) : 0);
        BlockPart p = wave_part(ch, kn, b_bytes + rows * nc * (ey + MatMulLayer::kPartialElemBytes),
                                wave_bytes);
        std::vector<CommandIndex> load_deps = p.waits;
        if (!b.constant && !b_on_chip) reader_deps(mm.b, b_lo, b_hi, load_deps);
        if (b_on_chip) on_chip_writers(mm.b, b_lo, b_hi, p.waits);
        p.load = kNone;
        if (b_bytes > 0) load_part(group, p, b_bytes, std::move(load_deps));
        parts.push_back(std::move(p));
      }
    }
    for (std::uint64_t ch = first; ch < last; ++ch) {
      std::vector<const BlockPart*> chunk_parts;
      for (const BlockPart& p : parts) {
        if (p.chunk == ch) chunk_parts.push_back(&p);
      }
      const std::uint64_t nc = chunk_cols(ch);
      SplitTile t;
      t.op = "Gemm";
      t.part_shape = [&](const BlockPart& p) { return Shape{GemmShape{1, rows, nc, p.in_c}}; };
      t.rows = rows;
      t.piece_rows = ceil_div(rows, std::min(rows, n_parts));
      t.out_row_bytes = nc * ey;
      t.partial_row_bytes = nc * MatMulLayer::kPartialElemBytes;
      t.reduce_row_elements = (n_parts - 1) * nc;
      t.y_first_row = PassRanges::y_base(mm, pass) + r0;
      t.y_row_bytes = mm.n * ey;  // a column chunk claims whole rows
      emit_split_tile(group, t, chunk_parts, computes, ch == chunks - 1);
    }
  }
}

// Each output tile runs on one slice and accumulates in place over steps along K. Per step: one
// DMA_IN of A's part, one of B's part (with the tile's share of the bias on the first step), one
// Gemm; then one DMA_OUT. Loads wait for the step two back, whose compute freed them. A resident
// operand is not loaded, and a resident output is not stored (store_tile).
void Emitter::emit_matmul_ksplit(const LayerGroup& group, const Mapping& mapping) {
  const MatMulLayer mm = describe_matmul(g_, group);
  const PassRanges ranges(mm, layouts_);
  const std::uint64_t rows = mapping.tile_rows, cols = mapping.tile_cols, kc = mapping.k_step;
  const std::uint64_t ea = mm.a_elem_bytes, ey = mm.out_elem_bytes;
  const std::uint64_t a_row_bytes = mm.k * ea, y_row_bytes = mm.n * ey;
  const std::uint64_t b_batch_bytes = mm.b_bytes(mm.k * mm.n);
  const Tensor& a = g_.tensors[mm.a];
  const Tensor& b = g_.tensors[mm.b];
  // The output tiles of a pass go round-robin over the slices in batches of one per slice, and a
  // batch is emitted step-major (step 0 of each tile, then step 1, ...): the in-order DMA_IN
  // queue then feeds every slice of the batch at once instead of one tile's steps after another.
  struct OutTile : KSplitTile {
    std::uint64_t r0 = 0, r1 = 0, c0 = 0, nc = 0;
  };
  // What a tile of r rows and nc columns holds on its slice: its output, two steps' inputs and
  // its share of a bias.
  auto tile_bytes = [&](std::uint64_t r, std::uint64_t nc) {
    return r * nc * ey + 2 * (r * kc * ea + nc * mm.b_bytes(kc)) +
           ceil_div(mm.bias_bytes * nc, mm.n);
  };
  // A batch that passes the tiles' half takes the whole memory (begin_whole_memory).
  begin_whole_memory(group_slices_ *
                     tile_bytes(std::min(mm.rows_total, rows), std::min(mm.n, cols)));
  for (std::uint64_t p = 0; p < mm.passes; ++p) {
    const std::uint64_t a_base = ranges.a_base(mm, p), b_base = ranges.b_base(mm, p);
    const std::uint64_t y_base = PassRanges::y_base(mm, p);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> origins;  // (r0, c0) of each tile
    for (std::uint64_t r0 = 0; r0 < mm.rows_total; r0 += rows) {
      for (std::uint64_t c0 = 0; c0 < mm.n; c0 += cols) origins.push_back({r0, c0});
    }
    for (std::size_t first = 0, next = 0; first < origins.size(); first = next) {
      std::vector<OutTile> batch;
      std::uint64_t batch_bytes = 0;  // the batch's earlier tiles, not on the ring yet
      for (next = first; next < origins.size() && next < first + group_slices_; ++next) {
        OutTile o;
        o.r0 = origins[next].first;
        o.r1 = std::min(mm.rows_total, o.r0 + rows);
        o.c0 = origins[next].second;
        o.nc = std::min(mm.n, o.c0 + cols) - o.c0;
        o.bytes = tile_bytes(o.r1 - o.r0, o.nc);
        if (!join_ksplit_batch(o, batch_bytes, batch.empty())) break;
        batch.push_back(std::move(o));
      }
      for (std::uint64_t k0 = 0; k0 < mm.k; k0 += kc) {
        const std::uint64_t kn = std::min(mm.k, k0 + kc) - k0;
        // B's parts of the batch first: weights wait for no activation, so the in-order DMA_IN
        // queue brings them in while A's writers still run.
        // A resident B (docs/compiler.md, "Tensors resident on chip") is not loaded: its step
        // waits for B's writers on chip, and loads only its share of a bias, if any.
        const std::uint64_t b_lo = ranges.b_exact ? b_base * b_batch_bytes : 0;
        const std::uint64_t b_hi = ranges.b_exact ? (b_base + 1) * b_batch_bytes : b.bytes();
        const bool b_on_chip = !b.constant && on_chip(mm.b);
        std::vector<std::vector<CommandIndex>> b_deps_of(batch.size());
        std::vector<std::string> b_bufs(batch.size());
        for (std::size_t t = 0; t < batch.size(); ++t) {
          const OutTile& o = batch[t];
          const std::uint64_t bias = k0 == 0 ? ceil_div(mm.bias_bytes * o.nc, mm.n) : 0;
          if (b_on_chip) on_chip_writers(mm.b, b_lo, b_hi, b_deps_of[t]);
          if (b_on_chip && bias == 0) continue;
          std::vector<CommandIndex> b_deps = ksplit_step_waits(o);
          if (!b.constant && !b_on_chip) reader_deps(mm.b, b_lo, b_hi, b_deps);
          Command load_b = dma(EngineKind::kDmaIn, (b_on_chip ? 0 : o.nc * mm.b_bytes(kn)) + bias);
          b_bufs[t] = buffer_name();
          load_b.alloc.push_back({b_bufs[t], load_b.bytes});
          b_deps_of[t].push_back(emit(std::move(load_b), "DI", di_, group, std::move(b_deps)));
        }
        for (std::size_t t = 0; t < batch.size(); ++t) {
          OutTile& o = batch[t];
          const std::uint64_t a_lo = ranges.a_rows ? (a_base + o.r0) * a_row_bytes : 0;
          const std::uint64_t a_hi = ranges.a_rows ? (a_base + o.r1) * a_row_bytes : a.bytes();
          std::vector<CommandIndex> deps = b_deps_of[t];
          std::vector<std::string> frees;
          if (!b_bufs[t].empty()) frees.push_back(b_bufs[t]);
          if (on_chip(mm.a)) {
            on_chip_writers(mm.a, a_lo, a_hi, deps);
          } else {
            std::vector<CommandIndex> a_deps = ksplit_step_waits(o);
            reader_deps(mm.a, a_lo, a_hi, a_deps);
            Command load_a = dma(EngineKind::kDmaIn, (o.r1 - o.r0) * kn * ea);
            frees.push_back(buffer_name());
            load_a.alloc.push_back({frees.back(), load_a.bytes});
            deps.push_back(emit(std::move(load_a), "DI", di_, group, std::move(a_deps)));
          }
          if (!o.steps.empty()) deps.push_back(o.steps.back());  // accumulates onto the last step
          if (o.steps.empty() && o.ring_wait != kNone) deps.push_back(o.ring_wait);
          // Operands on chip load nothing: the first step waits for the fence itself.
          if (o.steps.empty()) deps.insert(deps.end(), whole_fence_.begin(), whole_fence_.end());
          Command gemm = compute("Gemm", o.slice, GemmShape{1, o.r1 - o.r0, o.nc, kn});
          if (o.steps.empty()) gemm.alloc.push_back({o.out_buffer, (o.r1 - o.r0) * o.nc * ey});
          gemm.free = std::move(frees);
          o.steps.push_back(emit(std::move(gemm), "S", s_, group, std::move(deps)));
        }
      }
      for (const OutTile& o : batch) {
        const CommandIndex st =
            store_tile(group, {o.steps.back()}, o.out_buffer, (o.r1 - o.r0) * o.nc * ey,
                       (y_base + o.r0) * y_row_bytes, (y_base + o.r1) * y_row_bytes, nullptr);
        push_ring(st, o.bytes);
      }
    }
  }
  end_whole_memory();
}

}  // namespace npusim
