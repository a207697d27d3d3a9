// A mapping: how one layer group is cut into tiles, which is what a search chooses and the
// emitter follows. Sizes are in elements of the dimension they name (output rows, output
// columns, channel units, reduction elements), never in bytes.
//
// A mapping also chooses the loop order of spatial and MatMul groups (which operand is loaded
// once and shared by the slices) and over how many slices the tiles go round-robin. Fixed for
// every layer (the emitter applies it, docs/compiler.md): two shared chunks live, two tiles per
// slice (the ring rule).
#pragma once

#include <cstdint>
#include <vector>

namespace npusim {

enum class MappingKind : std::uint8_t {
  kNone,          // views and host layers: nothing to tile
  kSpatial,       // Conv, DepthwiseConv, MaxPool, AveragePool
  kMatMul,        // Gemm tiles of rows, over chunks of B's columns
  kMatMulKSplit,  // Gemm tiles accumulating over steps along the reduction dimension
  kVector,        // element-wise, normalisation and copy ops
  kGlobalPool,    // GlobalAveragePool
};

// Which operand a spatial or MatMul group loads once per block, shared by every slice, while the
// other streams through the tiles.
enum class LoopOrder : std::uint8_t {
  // Weight chunks outer: each chunk of weights (B's columns) is loaded once, and every tile of
  // the chunk loads its input rows. The input is read once per chunk.
  kWeightsOuter,
  // Input blocks outer: each block of input rows (A's rows) is loaded once, and every tile of the
  // block loads one chunk of weights and computes those output channels (columns). The weights
  // are read once per block; channel chunks spread the block's work over the slices.
  kInputOuter,
};

struct Mapping {
  MappingKind kind = MappingKind::kNone;
  // Output rows per tile (spatial, MatMul, K-split); rows of the driving tensor per tile, after
  // cutting each row into row_pieces (vector).
  std::uint64_t tile_rows = 0;
  // Output columns per tile (spatial, K-split); B's columns per weight chunk, which every row
  // tile of the chunk computes (MatMul).
  std::uint64_t tile_cols = 0;
  // Channel units per weight chunk, balanced over the chunks (spatial; docs/compiler.md defines
  // the unit per layer kind); channels per tile (global pool).
  std::uint64_t tile_channel_units = 0;
  // Reduction elements per step (K-split MatMul); input channels per step of a spatial tile that
  // accumulates in place (docs/compiler.md, "K-split convolutions"). 0: no split in time.
  std::uint64_t k_step = 0;
  // Pieces each row is cut into when one row does not fit a tile (vector).
  std::uint64_t row_pieces = 1;
  LoopOrder order = LoopOrder::kWeightsOuter;  // spatial and MatMul
  // Slices the group's tiles go round-robin over (at most the config's); 0 for all. A group on
  // fewer slices gets a larger tile budget, L / (4 * slices).
  std::uint32_t slices = 0;
  // Shared chunks (weights, or input blocks) that may be live at once, each at most
  // L / (2 * shared_live): 2 double-buffers one chunk read by many tiles; one per slice lets
  // every slice work on its own chunk.
  std::uint32_t shared_live = 2;
  // Parts an ungrouped conv's input channels are cut into (spatial, input outer only): each part
  // of a tile runs on a slice of its own into a partial sum, and the vector unit of the last
  // part's slice adds the partials (docs/compiler.md, "Splitting the reduction over slices").
  // 1: no split.
  std::uint32_t k_parts = 1;
  // Each tile loads only the input rows the tile above it did not (spatial, weights outer, when
  // the windows overlap; docs/compiler.md, "Halo reuse").
  bool reuse_halo = false;
};

// Every field of `m`, in a fixed order, for comparing mappings and keying what is remembered per
// mapping (a field added to Mapping must be added here).
inline std::vector<std::uint64_t> mapping_fields(const Mapping& m) {
  return {static_cast<std::uint64_t>(m.kind),
          m.tile_rows,
          m.tile_cols,
          m.tile_channel_units,
          m.k_step,
          m.row_pieces,
          static_cast<std::uint64_t>(m.order),
          m.slices,
          m.shared_live,
          m.k_parts,
          m.reuse_halo ? 1u : 0u};
}

}  // namespace npusim
