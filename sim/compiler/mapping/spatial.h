// Spatial layers (Conv, DepthwiseConv, MaxPool, AveragePool): what the tiling needs to know about
// one, and its map space: tiles of output rows, output columns and a chunk of channel units
// (docs/compiler.md, "Convolutions and pools").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/compiler/mapping/map_space.h"

namespace npusim {

// Output rows [r0, r1) and columns [c0, c1) of a tile, and the input rows [lo, hi) and columns
// [wl, wh) it reads, padding excluded.
struct TileWindow {
  std::uint64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0, lo = 0, hi = 0, wl = 0, wh = 0;
};

struct SpatialLayer {
  std::string op;  // the schedule op: Conv, DepthwiseConv, MaxPool or AveragePool (or pointwise's)
  bool conv = false;
  bool depthwise = false;
  // Element-wise vector ops over an image, as a chain member (pointwise_group): a window of one
  // pixel, one channel unit per channel, its constant operands as its weights.
  bool pointwise = false;
  std::uint64_t pointwise_constant_bytes = 0;   // its constant operands (chunk_weight_bytes)
  std::vector<std::string> pointwise_then_ops;  // its fused layers' ops, after `op`, per tile
  std::uint32_t input = 0;                      // the tensor read
  std::uint64_t n = 0, c = 0, h = 0, w = 0;     // input [N, C, H, W]
  std::uint64_t k = 0, oh = 0, ow = 0;          // output channels, rows, columns
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
  // The window of tile `t` (row-major over tiles of `rows` x `cols` output pixels).
  TileWindow window(std::uint64_t t, std::uint64_t rows, std::uint64_t cols) const;
  // Input rows and columns a tile of `rows` x `cols` output pixels reads, at most. When the
  // stride passes the window (a 1 x 1 conv of stride 2), the rows between windows are not read:
  // the DMA reads each window's rows, each one contiguous run of the image (rows_read).
  std::uint64_t in_rows(std::uint64_t rows) const;
  std::uint64_t in_cols(std::uint64_t cols, std::uint64_t in_c) const;
  // The input rows the windows of output rows [r0, r1) read, padding excluded: v.hi - v.lo of
  // their window, less the rows between windows when the stride passes the window.
  std::uint64_t rows_read(std::uint64_t r0, std::uint64_t r1) const;
  bool skips_rows() const { return span_h < stride_h; }
  // Whether `m`'s tiles reuse the rows the tile above read (docs/compiler.md, "Halo reuse"): it
  // says so, weights outer, no K-split or parts, more than one row tile, and windows that
  // overlap.
  bool reuses_halo(const Mapping& m) const;
  // Reusing the halo with tiles of `rows` output rows: the input rows each row tile of a column
  // band loads, [lo, hi), cut where the set of tiles reading them changes, each with the last row
  // tile that reads it (the same for every band, image and chunk).
  struct HaloPiece {
    std::uint64_t lo = 0, hi = 0, last = 0;
  };
  std::vector<std::vector<HaloPiece>> halo_pieces(std::uint64_t rows) const;
  // Whether a read of `in_c` channels skips the columns between windows too: the stride passes
  // the window, the conv is ungrouped, and a pixel's `in_c` channels read (one run of the NHWC
  // image) fill a DMA burst, so reading them pixel by pixel costs what a contiguous read of as
  // many bytes does. (A K-split step reads fewer channels per pixel than a whole tile.)
  bool skips_cols(std::uint64_t in_c) const {
    return cols_skippable && dma_burst_bytes > 0 && in_c * in_elem_bytes >= dma_burst_bytes;
  }
  bool cols_skippable = false;        // ungrouped, and the stride passes the window
  std::uint64_t dma_burst_bytes = 0;  // Budgets::dma_burst_bytes
  // The input columns the windows of output columns [c0, c1) read when `in_c` channels are read
  // (as rows_read).
  std::uint64_t cols_read(std::uint64_t c0, std::uint64_t c1, std::uint64_t in_c) const;
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
  // What a tile's compute command costs by: tile_shape, or a pointwise op's elements.
  Shape compute_shape(std::uint64_t rows, std::uint64_t cols, std::uint64_t units) const;
  // Whether every tile of `m` reads all the input's pixels (one image, one tile of pixels): as one
  // block (input outer), or its chunk's channels of them (weights outer). Then the input may be
  // the last group's output kept on chip (docs/compiler.md).
  bool reads_input_whole(const Mapping& m) const {
    return m.kind == MappingKind::kSpatial && m.k_step == 0 && n == 1 && m.tile_rows >= oh &&
           m.tile_cols >= ow;
  }
  // Loop order kInputOuter shares an input block between chunks: it holds every input channel.
  bool input_outer_allowed() const { return weight_bytes_per_unit > 0; }

  // Splitting the reduction over slices (Mapping::k_parts): ungrouped convs only, whose every
  // output channel reads every input channel. A partial sum is kept at kPartialElemBytes per
  // element (the accumulator's int32 or fp32), whatever the output's dtype.
  static constexpr std::uint64_t kPartialElemBytes = 4;
  bool k_split_allowed() const { return conv && !depthwise && input_whole_channels; }
  // Input channels per part: the channels cut into `parts` balanced parts.
  std::uint64_t part_channels(std::uint64_t parts) const { return (c + parts - 1) / parts; }
  // A part's share of a chunk's weights: its `part_c` of the c input channels.
  std::uint64_t part_weight_bytes(std::uint64_t chunk_units, std::uint64_t part_c) const;
  std::uint64_t partial_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t units) const;
  // Local memory of one part of a tile: its weights and partial sum, and (as the last part's
  // slice also reduces) the tile's output and residual share.
  std::uint64_t part_tile_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t units,
                                std::uint64_t parts) const;
  // Parts a tile's reduction is actually cut into (balanced parts may be fewer than asked).
  std::uint64_t part_count(std::uint64_t parts) const {
    return (c + part_channels(parts) - 1) / part_channels(parts);
  }
  // Output rows per reduction piece: a tile of `rows` is reduced in up to part_count pieces of
  // whole rows, each on one part's slice.
  std::uint64_t reduce_piece_rows(std::uint64_t rows, std::uint64_t parts) const;
  // Vector element operations of the reduction: the partials added, then a fused residual.
  std::uint64_t reduce_elements(std::uint64_t rows, std::uint64_t cols, std::uint64_t units,
                                std::uint64_t parts) const;

  // Splitting the reduction in time (Mapping::k_step, docs/compiler.md, "K-split convolutions"):
  // a tile accumulates on its slice over steps of `step_c` input channels, each loading those
  // channels of its input window and their share of the chunk's weights. Ungrouped convs only
  // (k_split_allowed). One step's operands:
  std::uint64_t step_bytes(std::uint64_t rows, std::uint64_t cols, std::uint64_t chunk_units,
                           std::uint64_t step_c) const {
    return input_bytes(rows, cols, step_c) + part_weight_bytes(chunk_units, step_c);
  }
  // What a K-split tile holds besides its steps: the accumulator (kPartialElemBytes per element)
  // and a fused residual's share.
  std::uint64_t accumulator_bytes(std::uint64_t rows, std::uint64_t cols,
                                  std::uint64_t chunk_units) const {
    return partial_bytes(rows, cols, chunk_units) + residual_bytes(rows, cols, chunk_units);
  }
};

// Whether `group` is element-wise vector ops (in the op table as such: Quantize, Relu, Mul,
// BatchNorm, ...) or LRN, each reading the one before, of an image [1, C, H, W] to one of the
// same shape, their other operands constants (a pre-activation batch norm and ReLU): tiles of
// rows of it are tiles of a 1 x 1 window, so it may be a member of a chain of rows, not the last
// (plan_chains). A QDQ model's input QuantizeLinear is the case in point: alone it must end
// before the first conv starts; heading the conv's chain, its rows are quantised as the conv
// needs them.
bool pointwise_group(const Graph& graph, const LayerGroup& group);

// The units depend on the weight budget: a group whose weights exceed a chunk is cut by output
// channel. A pointwise_group is described as a window of one pixel (SpatialLayer::pointwise).
SpatialLayer describe_spatial(const Graph& graph, const LayerGroup& group, const Budgets& budgets);

// The weight loads of an input-outer mapping's first input block, in the order
// emit_spatial_input_outer issues them: per chunk of output channels, one load, or one per part
// of its input channels when the reduction is split over slices (Mapping::k_parts). Empty for
// other mappings and for layers without weights. (Weight prefetch plans on them.)
std::vector<std::uint64_t> first_block_weight_loads(const SpatialLayer& s, const Mapping& m);

// Dims: output rows, output columns, channel units per chunk (shrunk in that order: a smaller row
// tile only re-reads the halo rows, a channel chunk the whole input).
MapSpace spatial_map_space(const GroupContext& ctx);

// What `mapping` makes the layer do (mapping/work.h).
// `out_channels`: the config's DMA_OUT channels, over which a split tile's stores are spread.
// `input_on_chip`: the input is the last group's output kept on chip, not loaded.
GroupWork spatial_work(const SpatialLayer& s, const Mapping& mapping, std::uint32_t slices,
                       std::uint32_t out_channels, bool input_on_chip = false);

}  // namespace npusim
