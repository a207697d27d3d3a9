// Spatial layers (Conv, DepthwiseConv, MaxPool, AveragePool): what the tiling needs to know about
// one, and its map space: tiles of output rows, output columns and a chunk of channel units
// (docs/compiler.md, "Convolutions and pools").
#pragma once

#include <cstdint>
#include <string>

#include "sim/compiler/mapping/map_space.h"

namespace npusim {

struct SpatialLayer {
  std::string op;  // the schedule op: Conv, DepthwiseConv, MaxPool or AveragePool
  bool conv = false;
  bool depthwise = false;
  std::uint32_t input = 0;                   // the tensor read
  std::uint64_t n = 0, c = 0, h = 0, w = 0;  // input [N, C, H, W]
  std::uint64_t k = 0, oh = 0, ow = 0;       // output channels, rows, columns
  std::uint64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::uint64_t pad_top = 0, pad_left = 0;
  std::uint64_t span_h = 1, span_w = 1;  // input rows and columns one output pixel reads
  std::uint64_t group_count = 1;         // the Conv's `group`
  std::uint64_t in_elem_bytes = 1, out_elem_bytes = 1;
  std::uint64_t residual_elem_bytes = 0;  // a fused residual Add's operand, loaded per tile; or 0
  // Channel units: one output channel (ungrouped Conv, or within a group too large for a chunk),
  // one group (grouped Conv), one input channel with its outputs (depthwise, pools).
  std::uint64_t units = 0;
  std::uint64_t out_per_unit = 0;
  std::uint64_t in_per_unit = 0;
  std::uint64_t weight_bytes_per_unit = 0;  // 0 for pools
  std::uint64_t out_per_group = 0;
  bool within_group = false;          // units are output channels within one group
  bool input_whole_channels = false;  // every tile reads all C input channels

  // The largest chunk of at most `limit` units (within a group: one that divides the group).
  std::uint64_t allowed_chunk(std::uint64_t limit) const;
  // Input channels a tile with a chunk of `units` reads.
  std::uint64_t chunk_in_c(std::uint64_t chunk_units) const;
  std::uint64_t in_rows(std::uint64_t rows) const;
  std::uint64_t in_cols(std::uint64_t cols) const;
  // Local memory of a tile: its input rows and columns, its share of a fused residual operand,
  // plus its output.
  std::uint64_t tile_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t chunk_units) const;
  // A tile's input (at most; border tiles read fewer rows), its output, a chunk's weights.
  std::uint64_t input_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t in_c) const;
  std::uint64_t output_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t units) const;
  // A tile's piece of a fused residual operand (0 without one).
  std::uint64_t residual_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t units) const;
  std::uint64_t chunk_weight_bytes(std::uint64_t units) const;
  // The shape of a tile of rows x cols output pixels and `units` channel units: the input rows
  // and columns it reads with the padding folded in, so its output is exactly its pixels.
  ConvShape tile_shape(std::uint64_t rows, std::uint64_t cols, std::uint64_t units) const;
  // Loop order kInputOuter shares an input block between chunks: it holds every input channel.
  bool input_outer_allowed() const { return weight_bytes_per_unit > 0; }
};

// The units depend on the weight budget: a group whose weights exceed a chunk is cut by output
// channel.
SpatialLayer describe_spatial(const Graph& graph, const LayerGroup& group, const Budgets& budgets);

// Dims: output rows, output columns, channel units per chunk (shrunk in that order: a smaller row
// tile only re-reads the halo rows, a channel chunk the whole input).
MapSpace spatial_map_space(const GroupContext& ctx);

// What `mapping` makes the layer do (mapping/work.h).
GroupWork spatial_work(const SpatialLayer& s, const Mapping& mapping, std::uint32_t slices);

}  // namespace npusim
