// MatMul: what the tiling needs to know about one, and its map space: tiles of rows of A over
// chunks of B's columns, or, when one column or one row does not fit, K-split tiles that
// accumulate over steps along the reduction dimension (docs/compiler.md, "MatMul", "K-split
// MatMul").
#pragma once

#include <cstdint>

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
};

MatMulLayer describe_matmul(const Graph& graph, const LayerGroup& group);

// Dims: rows, columns (then k for K-split), shrunk in that order; K-split shrinks k first for its
// steps.
MapSpace matmul_map_space(const GroupContext& ctx);

// What a (not K-split) `mapping` makes the MatMul do (mapping/work.h).
GroupWork matmul_work(const MatMulLayer& mm, const Mapping& mapping, std::uint32_t slices);

}  // namespace npusim
