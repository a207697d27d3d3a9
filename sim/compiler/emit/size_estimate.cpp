#include "sim/compiler/emit/size_estimate.h"

#include <algorithm>

#include "sim/compiler/mapping/global_pool.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/ir/schedule.h"
#include "sim/util/math.h"

namespace npusim {
namespace {

constexpr std::uint64_t kSaturated = std::uint64_t{1} << 62;

std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  __extension__ using U128 = unsigned __int128;
  const U128 p = U128{a} * b;
  return p > kSaturated ? kSaturated : static_cast<std::uint64_t>(p);
}

std::uint64_t add(std::uint64_t a, std::uint64_t b) { return std::min(kSaturated, a + b); }

// Dependencies per command, on average: about 2.2 on YOLOX-style graphs (a load waits for the
// ring store and a few segments, a compute for its loads, a store for its compute; joins add
// about one per store). 16 leaves room for wider reads.
constexpr std::uint64_t kDepsPerCommand = 16;
// Per command beyond the Command, its strings and deps: buffer names, the vector's growth (up to
// 3 × sizeof(Command) while it reallocates), allocator overhead, and what finalize_schedule keeps
// per command. With it the estimate is above the measured peak RSS per command (about 890 bytes
// on a YOLOX-style graph at lram_kib=8, of 1.08M commands).
constexpr std::uint64_t kOverheadPerCommand = 512;

// At least the DMA_INs of a shared chunk of up to `bytes` (shared_pieces cuts one into at most a
// piece per channel, of whole bursts): one per burst, at most one per channel. (Not shared_pieces'
// own count, which is not monotone in the bytes: on 4 channels 4 bursts load in 4 pieces, 5 in 3,
// so a chunk's largest size would not bound its smaller last one.)
std::uint64_t shared_load_commands(std::uint64_t bytes, const Budgets& budgets) {
  if (budgets.dma_burst_bytes == 0) return 1;
  const std::uint64_t bursts = ceil_div(std::max<std::uint64_t>(bytes, 1), budgets.dma_burst_bytes);
  return std::min<std::uint64_t>(budgets.dma_in_channels, bursts);
}

std::uint64_t commands_of(const Graph& g, const LayerGroup& group, const Mapping& m,
                          const TensorLayouts& layouts, const Budgets& budgets) {
  switch (m.kind) {
    case MappingKind::kNone:
      return group_kind(g, group) == GroupKind::kHost ? 1 : 0;
    case MappingKind::kSpatial: {
      const SpatialLayer s = describe_spatial(g, group, budgets);
      const std::uint64_t chunks = ceil_div(s.units, m.tile_channel_units);
      const std::uint64_t blocks =
          mul(s.n, mul(ceil_div(s.oh, m.tile_rows), ceil_div(s.ow, m.tile_cols)));
      const std::uint64_t tiles = mul(chunks, blocks);
      // Load, compute, store; and a fused residual Add's operand is one more load per tile. A
      // tile split into parts: a load and a compute per part, then the reduction and the store.
      std::uint64_t per_tile = s.residual_elem_bytes > 0 ? 4 : 3;
      if (m.k_step > 0) {
        // Per step a weights load, an input load and a Conv; then the residual load and store.
        return mul(tiles, add(per_tile - 2, mul(3, ceil_div(s.c, m.k_step))));
      }
      if (m.k_parts > 1) {
        // Per part a load and a Conv; per reduction piece an Add and a residual load; a store per
        // DMA_OUT channel at most.
        const std::uint64_t pieces =
            ceil_div(m.tile_rows, s.reduce_piece_rows(m.tile_rows, m.k_parts));
        per_tile = 2 * s.part_count(m.k_parts) + pieces * (per_tile - 2) + pieces;
      }
      // Reusing the halo, a tile loads its new rows in as many pieces as halo_pieces cuts them
      // into (none, one, or more): per band, the same for every band, image and chunk.
      if (s.reuses_halo(m) && layouts.is_image(s.input)) {  // as emit_spatial decides
        std::uint64_t pieces = 0;
        for (const auto& tile : s.halo_pieces(m.tile_rows)) pieces += tile.size();
        const std::uint64_t row_tiles = ceil_div(s.oh, m.tile_rows);
        const std::uint64_t per_band = add(mul(per_tile - 1, row_tiles), pieces);
        const std::uint64_t chunk = s.chunk_weight_bytes(std::min(s.units, m.tile_channel_units));
        return add(
            s.weight_bytes_per_unit > 0 ? mul(chunks, shared_load_commands(chunk, budgets)) : 0,
            mul(mul(chunks, mul(s.n, ceil_div(s.ow, m.tile_cols))), per_band));
      }
      // One shared load per chunk (weights outer) or per input block (input outer), in up to a
      // piece per DMA_IN channel (counted for the largest chunk or block).
      if (m.order == LoopOrder::kInputOuter) {
        // (A block is at most the whole input: one in another layout is read whole.)
        const std::uint64_t block = g.tensors[s.input].bytes();
        return add(mul(blocks, shared_load_commands(block, budgets)), mul(per_tile, tiles));
      }
      const std::uint64_t chunk = s.chunk_weight_bytes(std::min(s.units, m.tile_channel_units));
      return add(
          s.weight_bytes_per_unit > 0 ? mul(chunks, shared_load_commands(chunk, budgets)) : 0,
          mul(per_tile, tiles));
    }
    case MappingKind::kMatMul: {
      const MatMulLayer mm = describe_matmul(g, group);
      const std::uint64_t chunks = mul(mm.passes, ceil_div(mm.n, m.tile_cols));
      if (m.order == LoopOrder::kInputOuter) {
        const std::uint64_t blocks = mul(mm.passes, ceil_div(mm.rows_total, m.tile_rows));
        std::uint64_t per_chunk = 3;
        if (m.k_parts > 1) {
          // Per part a load and a Gemm; per reduction piece a PartialSum and at most a store.
          const std::uint64_t parts = mm.part_count(m.k_parts);
          per_chunk = 2 * parts + 2 * std::min(m.tile_rows, parts);
        }
        const std::uint64_t a_rows = shared_load_commands(
            std::min(mm.rows_total, m.tile_rows) * mm.k * mm.a_elem_bytes, budgets);
        return mul(blocks, add(a_rows, mul(per_chunk, ceil_div(mm.n, m.tile_cols))));
      }
      const std::uint64_t b_chunk =
          shared_load_commands(std::min(mm.n, m.tile_cols) * mm.bytes_per_col, budgets);
      return mul(chunks, add(b_chunk, mul(3, ceil_div(mm.rows_total, m.tile_rows))));
    }
    case MappingKind::kMatMulKSplit: {
      const MatMulLayer mm = describe_matmul(g, group);
      const std::uint64_t tiles =
          mul(mm.passes, mul(ceil_div(mm.rows_total, m.tile_rows), ceil_div(mm.n, m.tile_cols)));
      return mul(tiles, add(1, mul(3, ceil_div(mm.k, m.k_step))));
    }
    case MappingKind::kVector: {
      const VectorLayer v = describe_vector(g, group, layouts);
      std::uint64_t per_tile = 2 + v.then_ops.size();  // the computes and the store
      for (const VectorOperand& o : v.operands) per_tile += o.feed == Feed::kOnce ? 0 : 1;
      const std::uint64_t tiles = ceil_div(mul(v.base_rows, m.row_pieces), m.tile_rows);
      return add(v.once_bytes > 0 ? shared_load_commands(v.once_bytes, budgets) : 0,
                 mul(per_tile, tiles));
    }
    case MappingKind::kGlobalPool: {
      const GlobalPoolLayer p = describe_global_pool(g, group);
      return mul(3, mul(p.n, ceil_div(p.c, m.tile_channel_units)));
    }
  }
  return 0;
}

// A string's heap bytes, beyond the std::string itself (libstdc++ keeps 15 characters inline).
std::uint64_t heap(const std::string& s) { return s.size() > 15 ? s.size() + 1 : 0; }

}  // namespace

GroupSize estimate_group(const Graph& graph, const LayerGroup& group, const Mapping& mapping,
                         const TensorLayouts& layouts, const Budgets& budgets) {
  GroupSize size;
  size.commands = commands_of(graph, group, mapping, layouts, budgets);
  const std::uint64_t per_command = sizeof(Command) + heap(group.name) + heap(group.loc) +
                                    kDepsPerCommand * sizeof(std::uint32_t) + kOverheadPerCommand;
  size.bytes = mul(size.commands, per_command);
  return size;
}

GroupSize operator+(GroupSize a, GroupSize b) {
  return {add(a.commands, b.commands), add(a.bytes, b.bytes)};
}

}  // namespace npusim
