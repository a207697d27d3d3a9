// Vector layers (element-wise ops, normalisations, unfused batch norms, copies): what the tiling
// needs to know about one, and its map space: tiles of whole rows of the largest tensor, or of
// pieces of a row when one row is more than a tile (docs/compiler.md, "Vector layers").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/compiler/mapping/map_space.h"

namespace npusim {

// One input piece of a tile: `bytes` moved from DRAM, covering [lo, hi) of `tensor` (the range
// decides which stores the load waits for).
struct Piece {
  std::uint32_t tensor = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t bytes = 0;
};

// How an operand comes in per tile of r driver rows.
enum class Feed : std::uint8_t {
  kShare,     // same size as the driver: its share of the rows
  kShareAll,  // a share in another layout or order: waits for every writer of the operand
  kRows,      // broadcast over leading dims (same last dim): the rows the tile touches
  kWhole,     // anything smaller: whole, with every tile
  kOnce,      // a smaller constant: once per layer, through the weight budget
};

// The schedule op that runs a vector-class graph op (BatchNormalization: BatchNorm; a copy-class
// op: Copy; else the graph op).
std::string vector_schedule_op(const std::string& graph_op);

struct VectorOperand {
  std::uint32_t tensor = 0;
  Feed feed = Feed::kShare;
  std::uint64_t rows = 0;   // kRows: the operand's own rows
  std::uint64_t bytes = 0;  // the whole operand
};

struct VectorLayer {
  std::string op;            // the schedule op (BatchNorm, Copy, or the graph op)
  std::uint32_t driver = 0;  // the tensor the tiling follows (assign_layouts.h)
  std::uint32_t output = 0;
  std::uint64_t driver_elements = 0;
  std::uint64_t base_rows = 0;     // the driver's rows in DRAM
  std::uint64_t row_elements = 0;  // elements per driver row
  std::uint64_t output_bytes = 0;
  bool output_aligned = false;          // the output's rows are the driver's (same layout and size)
  std::vector<VectorOperand> operands;  // one per input of every layer, in order, but the chain's
  std::uint64_t once_bytes = 0;         // the kOnce constants
  // The schedule ops of the element-wise layers fused after the head (fuse_layer_groups.h), run
  // on each tile after it on the same slice, in place; a fused Quantize costs nothing and is not
  // here.
  std::vector<std::string> then_ops;

  // ceil(bytes * (r1 - r0) / rows_total): a share of rows [r0, r1) out of rows_total.
  static std::uint64_t share(std::uint64_t bytes, std::uint64_t r0, std::uint64_t r1,
                             std::uint64_t rows_total);
  // The piece of `operand` a tile of rows [r0, r1) reads, with each driver row cut into
  // `row_pieces` rows.
  Piece piece(const VectorOperand& operand, std::uint64_t r0, std::uint64_t r1,
              std::uint64_t row_pieces) const;
  // Local memory of a tile of `rows` rows: its pieces and its output.
  std::uint64_t tile_bytes(std::uint64_t rows, std::uint64_t row_pieces) const;
};

VectorLayer describe_vector(const Graph& graph, const LayerGroup& group,
                            const TensorLayouts& layouts);

// Dims: rows (after cutting each row into the fewest power-of-two pieces that fit, or into
// single elements).
MapSpace vector_map_space(const GroupContext& ctx);

}  // namespace npusim
