// A mapping: how one layer group is cut into tiles, which is what a search chooses and the
// emitter follows. Sizes are in elements of the dimension they name (output rows, output
// columns, channel units, reduction elements), never in bytes.
//
// What a mapping does not choose, because today's compiler fixes it for every layer (the emitter
// applies it, docs/compiler.md):
//  - loop order, per kind: spatial layers run chunk, image, row tile, column tile; MatMul pass,
//    column chunk, row tile; K-split pass, row tile, column tile, step; vector and global-pool
//    tiles in order;
//  - slice spread: tiles go round-robin over all slices, continuing from the previous group;
//  - buffering: two weight chunks live, two tiles per slice (the ring rule).
#pragma once

#include <cstdint>

namespace npusim {

enum class MappingKind : std::uint8_t {
  kNone,          // views and host layers: nothing to tile
  kSpatial,       // Conv, DepthwiseConv, MaxPool, AveragePool
  kMatMul,        // Gemm tiles of rows, over chunks of B's columns
  kMatMulKSplit,  // Gemm tiles accumulating over steps along the reduction dimension
  kVector,        // element-wise, normalisation and copy ops
  kGlobalPool,    // GlobalAveragePool
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
  // Reduction elements per step (K-split).
  std::uint64_t k_step = 0;
  // Pieces each row is cut into when one row does not fit a tile (vector).
  std::uint64_t row_pieces = 1;
};

}  // namespace npusim
