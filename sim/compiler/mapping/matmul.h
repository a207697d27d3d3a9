// MatMul: what the tiling needs to know about one, and its map space: tiles of rows of A over
// chunks of B's columns, or, when one column or one row does not fit, K-split tiles that
// accumulate over steps along the reduction dimension (docs/compiler.md, "MatMul", "K-split
// MatMul").
#pragma once

#include <cstdint>
#include <vector>

#include "sim/compiler/mapping/map_space.h"

namespace npusim {

struct MatMulLayer {
  std::uint32_t a = 0, b = 0;         // the operand tensors: A [..., M, K], B [..., K, N]
  std::uint64_t m = 0, k = 0, n = 0;  // M, K, N
  std::uint64_t a_elem_bytes = 1, out_elem_bytes = 1;
  DType b_dtype = DType::kInt8;  // int4 weights pack two to a byte: sizes of B go through b_bytes
  std::uint64_t a_batch = 1, b_batch = 1, out_batch = 1;
  bool shared_b = false;            // B has no batch: A's batches are just more rows
  std::uint64_t passes = 1;         // 1 with a shared B, else one per output batch
  std::uint64_t rows_total = 0;     // rows per pass
  std::uint64_t bias_bytes = 0;     // the bias inputs and fused bias constants, loaded with B
  std::uint64_t bytes_per_col = 0;  // one column of B with its share of the bias

  // Bytes of `elements` elements of B (a column of an int4 B rounds up to a whole byte).
  std::uint64_t b_bytes(std::uint64_t elements) const { return packed_bytes(b_dtype, elements); }

  // A tile of `rows` rows and `cols` output columns: its rows of A and its output.
  std::uint64_t tile_bytes(std::uint64_t rows, std::uint64_t cols) const;
  // One K-split step: `rows` x `k_step` of A and `k_step` x `cols` of B.
  std::uint64_t step_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t k_step) const;

  // Splitting the reduction over slices (Mapping::k_parts; docs/compiler.md, "MatMul split over
  // slices"): input outer. Each part reduces over part_k(parts) of the K rows of B
  // (balanced; even, so that int4 parts are whole bytes) into partial sums of
  // kPartialElemBytes per element, which PartialSums add up.
  static constexpr std::uint64_t kPartialElemBytes = 4;
  std::uint64_t part_k(std::uint64_t parts) const;
  // Parts the reduction is actually cut into (balanced parts may be fewer than asked).
  std::uint64_t part_count(std::uint64_t parts) const {
    return (k + part_k(parts) - 1) / part_k(parts);
  }
  // A part's load: `kn` rows of `cols` columns of B, the first part with the columns' share of
  // the bias.
  std::uint64_t part_b_bytes(std::uint64_t cols, std::uint64_t kn, bool first) const;
  // What a part holds on its slice until its store: its share of B, its partial sums and (the
  // tile's output being reduced on the parts' slices) the output.
  std::uint64_t part_tile_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t parts) const;
};

MatMulLayer describe_matmul(const Graph& graph, const LayerGroup& group);

// The loads of B's column chunks by an input-outer mapping's first row tile, in the order
// emit_matmul issues them: one per chunk, its columns with their share of the bias. Empty unless
// B is a constant (weights) and the reduction is not split over slices. (Weight prefetch plans on
// them, as on first_block_weight_loads.)
std::vector<std::uint64_t> first_row_tile_weight_loads(const Graph& graph, const MatMulLayer& mm,
                                                       const Mapping& m);

// Dims: rows, columns (then k for K-split), shrunk in that order; K-split shrinks k first for its
// steps.
MapSpace matmul_map_space(const GroupContext& ctx);

// What a (not K-split) `mapping` makes the MatMul do (mapping/work.h), with `out_channels` DMA_OUT
// channels (a split tile stores its pieces in one store per channel at most).
GroupWork matmul_work(const MatMulLayer& mm, const Mapping& mapping, std::uint32_t slices,
                      std::uint32_t out_channels);

}  // namespace npusim
