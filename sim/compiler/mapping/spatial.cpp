#include "sim/compiler/mapping/spatial.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/compiler/mapping/vector.h"
#include "sim/util/math.h"

namespace npusim {

std::uint64_t SpatialLayer::allowed_chunk(std::uint64_t limit) const {
  if (!within_group) return std::min(units, limit);
  for (std::uint64_t d = std::min(out_per_group, limit); d > 0; --d) {
    if (out_per_group % d == 0) return d;
  }
  return 0;
}

std::uint64_t SpatialLayer::chunk_in_c(std::uint64_t chunk_units) const {
  return input_whole_channels ? c : within_group ? in_per_unit : chunk_units * in_per_unit;
}

TileWindow SpatialLayer::window(std::uint64_t t, std::uint64_t rows, std::uint64_t cols) const {
  const std::uint64_t col_tiles = ceil_div(ow, cols);
  TileWindow v;
  v.r0 = (t / col_tiles) * rows, v.r1 = std::min(oh, v.r0 + rows);
  v.c0 = (t % col_tiles) * cols, v.c1 = std::min(ow, v.c0 + cols);
  const std::uint64_t last_h = (v.r1 - 1) * stride_h + span_h;
  v.lo = v.r0 * stride_h > pad_top ? v.r0 * stride_h - pad_top : 0;
  v.hi = std::min(h, last_h > pad_top ? last_h - pad_top : 0);
  const std::uint64_t last_w = (v.c1 - 1) * stride_w + span_w;
  v.wl = v.c0 * stride_w > pad_left ? v.c0 * stride_w - pad_left : 0;
  v.wh = std::min(w, last_w > pad_left ? last_w - pad_left : 0);
  // A tile whose windows all lie in the bottom or right padding (SCALE-Sim's output size makes
  // them when the stride passes the filter) reads no input: an empty range, not one that wraps to
  // 2^64 - lo.
  v.lo = std::min(v.lo, v.hi);
  v.wl = std::min(v.wl, v.wh);
  return v;
}

std::uint64_t SpatialLayer::in_rows(std::uint64_t rows) const {
  if (skips_rows()) return std::min(h, rows * span_h);
  return std::min(h, (rows - 1) * stride_h + span_h);
}

std::uint64_t SpatialLayer::in_cols(std::uint64_t cols, std::uint64_t in_c) const {
  if (skips_cols(in_c)) return std::min(w, cols * span_w);
  return std::min(w, (cols - 1) * stride_w + span_w);
}

namespace {

// Input rows (or columns) that windows of `span` every `stride`, from output index o0 to o1,
// read of an image of `size` with `pad` before it: their union, clipped to the image.
std::uint64_t read_of(std::uint64_t o0, std::uint64_t o1, std::uint64_t stride, std::uint64_t span,
                      std::uint64_t pad, std::uint64_t size, bool skip) {
  if (o1 <= o0) return 0;
  if (!skip) {  // one contiguous range, as window() computes it
    const std::uint64_t last = (o1 - 1) * stride + span;
    const std::uint64_t lo = o0 * stride > pad ? o0 * stride - pad : 0;
    const std::uint64_t hi = std::min(size, last > pad ? last - pad : 0);
    return hi > lo ? hi - lo : 0;
  }
  std::uint64_t read = 0;  // disjoint windows, in padded coordinates
  for (std::uint64_t o = o0; o < o1; ++o) {
    const std::uint64_t lo = std::max(o * stride, pad),
                        hi = std::min(o * stride + span, pad + size);
    read += hi > lo ? hi - lo : 0;
  }
  return read;
}

}  // namespace

bool SpatialLayer::reuses_halo(const Mapping& m) const {
  return m.reuse_halo && m.kind == MappingKind::kSpatial && m.order == LoopOrder::kWeightsOuter &&
         m.k_step == 0 && m.k_parts <= 1 && m.tile_rows > 0 && m.tile_rows < oh &&
         span_h > stride_h;
}

std::vector<std::vector<SpatialLayer::HaloPiece>> SpatialLayer::halo_pieces(
    std::uint64_t rows) const {
  const std::uint64_t row_tiles = ceil_div(oh, rows);
  auto window = [&](std::uint64_t i) { return this->window(i, rows, ow); };  // rows only matter
  std::vector<std::vector<HaloPiece>> out(row_tiles);
  std::uint64_t loaded_hi = 0;
  for (std::uint64_t i = 0; i < row_tiles; ++i) {
    const TileWindow v = window(i);
    for (std::uint64_t a = std::max(v.lo, loaded_hi); a < v.hi;) {
      std::uint64_t last = i;
      while (last + 1 < row_tiles && window(last + 1).lo <= a) ++last;
      const std::uint64_t b = last + 1 < row_tiles ? std::min(v.hi, window(last + 1).lo) : v.hi;
      out[i].push_back({a, b, last});
      a = b;
    }
    loaded_hi = std::max(loaded_hi, v.hi);
  }
  return out;
}

std::uint64_t SpatialLayer::rows_read(std::uint64_t r0, std::uint64_t r1) const {
  return read_of(r0, r1, stride_h, span_h, pad_top, h, skips_rows());
}

std::uint64_t SpatialLayer::cols_read(std::uint64_t c0, std::uint64_t c1,
                                      std::uint64_t in_c) const {
  return read_of(c0, c1, stride_w, span_w, pad_left, w, skips_cols(in_c));
}

std::uint64_t SpatialLayer::tile_bytes(std::uint64_t rows, std::uint64_t cols,
                                       std::uint64_t chunk_units) const {
  return in_rows(rows) * in_cols(cols, chunk_in_c(chunk_units)) * chunk_in_c(chunk_units) *
             in_elem_bytes +
         rows * cols * chunk_units * out_per_unit * (out_elem_bytes + residual_elem_bytes);
}

std::uint64_t SpatialLayer::input_bytes(std::uint64_t rows, std::uint64_t cols,
                                        std::uint64_t in_c) const {
  return in_rows(rows) * in_cols(cols, in_c) * in_c * in_elem_bytes;
}

std::uint64_t SpatialLayer::residual_bytes(std::uint64_t rows, std::uint64_t cols,
                                           std::uint64_t chunk_units) const {
  return rows * cols * chunk_units * out_per_unit * residual_elem_bytes;
}

std::uint64_t SpatialLayer::output_bytes(std::uint64_t rows, std::uint64_t cols,
                                         std::uint64_t chunk_units) const {
  return rows * cols * chunk_units * out_per_unit * out_elem_bytes;
}

std::uint64_t SpatialLayer::chunk_weight_bytes(std::uint64_t chunk_units) const {
  if (pointwise) return pointwise_constant_bytes;  // loaded whole (a chain member has all units)
  return chunk_units * weight_bytes_per_unit;
}

std::uint64_t SpatialLayer::part_weight_bytes(std::uint64_t chunk_units,
                                              std::uint64_t part_c) const {
  return ceil_div(chunk_weight_bytes(chunk_units) * part_c, c);
}

std::uint64_t SpatialLayer::partial_bytes(std::uint64_t rows, std::uint64_t cols,
                                          std::uint64_t chunk_units) const {
  return rows * cols * chunk_units * out_per_unit * kPartialElemBytes;
}

std::uint64_t SpatialLayer::part_tile_bytes(std::uint64_t rows, std::uint64_t cols,
                                            std::uint64_t chunk_units, std::uint64_t parts) const {
  return part_weight_bytes(chunk_units, part_channels(parts)) +
         partial_bytes(rows, cols, chunk_units) + output_bytes(rows, cols, chunk_units) +
         residual_bytes(rows, cols, chunk_units);
}

std::uint64_t SpatialLayer::reduce_piece_rows(std::uint64_t rows, std::uint64_t parts) const {
  return ceil_div(rows, std::min(rows, part_count(parts)));
}

std::uint64_t SpatialLayer::reduce_elements(std::uint64_t rows, std::uint64_t cols,
                                            std::uint64_t chunk_units, std::uint64_t parts) const {
  const std::uint64_t passes = part_count(parts) - 1 + (residual_elem_bytes > 0 ? 1 : 0);
  return passes * rows * cols * chunk_units * out_per_unit;
}

ConvShape SpatialLayer::tile_shape(std::uint64_t rows, std::uint64_t cols,
                                   std::uint64_t chunk_units) const {
  ConvShape shape;
  const std::uint64_t out_c = chunk_units * out_per_unit;
  shape.in_h = (rows - 1) * stride_h + kernel_h;
  shape.in_w = (cols - 1) * stride_w + kernel_w;
  shape.in_c = conv ? chunk_in_c(chunk_units) : out_c;
  shape.out_c = out_c;
  shape.kernel_h = kernel_h;
  shape.kernel_w = kernel_w;
  shape.stride_h = stride_h;
  shape.stride_w = stride_w;
  if (conv && !depthwise && group_count > 1 && !within_group) shape.groups = chunk_units;
  return shape;
}

Shape SpatialLayer::compute_shape(std::uint64_t rows, std::uint64_t cols,
                                  std::uint64_t chunk_units) const {
  if (pointwise) return ElementsShape{std::max<std::uint64_t>(1, n * rows * cols * chunk_units)};
  return tile_shape(rows, cols, chunk_units);
}

namespace {

// Whether layer `l` may be in a pointwise group: an op the op table runs on the vector unit by
// elements, each output element from its own pixel: element-wise, or LRN (across the channels of
// one pixel, all of which a chain member's tile holds).
bool pointwise_op(const Layer& l) {
  if (!is_elementwise_op(l.op) && l.op != "Quantize" && l.op != "Dequantize" && l.op != "LRN")
    return false;
  const OpId id = find_op(vector_schedule_op(l.op));
  return l.outputs.size() == 1 && !l.inputs.empty() && id < op_table().size() &&
         op_table()[id].unit == EngineKind::kVector && op_table()[id].shape == ShapeKind::kElements;
}

}  // namespace

bool pointwise_group(const Graph& graph, const LayerGroup& group) {
  if (group.residual || group_kind(graph, group) != GroupKind::kVector) return false;
  const Layer& head = graph.layers[group.layers[0]];
  if (head.inputs.empty()) return false;
  const Tensor& x = graph.tensors[head.inputs[0]];
  if (x.constant || x.shape.size() != 4 || x.shape[0] != 1 ||
      graph.tensors[group.output].shape != x.shape) {
    return false;
  }
  // Each layer reads the one before (the head: x), once, and constants only.
  std::uint32_t chain = head.inputs[0];
  for (const std::uint32_t l : group.layers) {
    const Layer& layer = graph.layers[l];
    if (!pointwise_op(layer)) return false;
    bool reads_chain = false;
    for (const std::uint32_t t : layer.inputs) {
      if (t == chain && !reads_chain) {
        reads_chain = true;
      } else if (!graph.tensors[t].constant) {
        return false;
      }
    }
    if (!reads_chain || graph.tensors[layer.outputs[0]].shape != x.shape) return false;
    chain = layer.outputs[0];
  }
  return chain == group.output;
}

namespace {

SpatialLayer describe_pointwise(const Graph& graph, const LayerGroup& group,
                                const Budgets& budgets) {
  const Layer& l = graph.layers[group.layers[0]];
  const Tensor& x = graph.tensors[l.inputs[0]];
  SpatialLayer s;
  s.op = vector_schedule_op(l.op);
  s.pointwise = true;
  // Each fused layer's op is a command after the one before on the tile, and every layer's
  // constants (a Quantize's scale and zero point, a batch norm's four vectors) load once, whole;
  // but a fused Quantize folds into the op before it, as describe_vector has it: neither.
  for (std::size_t i = 0; i < group.layers.size(); ++i) {
    const Layer& layer = graph.layers[group.layers[i]];
    if (i > 0 && layer.op == "Quantize") continue;
    if (i > 0) s.pointwise_then_ops.push_back(vector_schedule_op(layer.op));
    for (const std::uint32_t t : layer.inputs) {
      if (graph.tensors[t].constant) s.pointwise_constant_bytes += graph.tensors[t].bytes();
    }
  }
  s.input = l.inputs[0];
  s.n = x.shape[0], s.c = x.shape[1], s.h = x.shape[2], s.w = x.shape[3];
  s.k = s.c, s.oh = s.h, s.ow = s.w;  // a window of one pixel, stride 1, no padding
  s.in_elem_bytes = dtype_bytes(x.dtype);
  s.out_elem_bytes = dtype_bytes(graph.tensors[group.output].dtype);
  s.units = s.c;
  s.out_per_unit = s.in_per_unit = 1;
  s.out_per_group = s.k;
  s.dma_burst_bytes = budgets.dma_burst_bytes;
  return s;
}

}  // namespace

SpatialLayer describe_spatial(const Graph& graph, const LayerGroup& group, const Budgets& budgets) {
  if (pointwise_group(graph, group)) return describe_pointwise(graph, group, budgets);
  const Layer& l = graph.layers[group.layers[0]];
  const Tensor& x = graph.tensors[l.inputs[0]];
  const Tensor& y = graph.tensors[group.output];
  SpatialLayer s;
  s.input = l.inputs[0];
  s.n = x.shape[0], s.c = x.shape[1], s.h = x.shape[2], s.w = x.shape[3];
  s.k = y.shape[1], s.oh = y.shape[2], s.ow = y.shape[3];
  s.conv = l.op == "Conv";
  s.group_count = s.conv ? static_cast<std::uint64_t>(l.attrs.get_int("group", 1)) : 1;
  // A conv's kernel comes from its weight [K, C/group, kh, kw], a pool's from its attribute.
  const auto kernel = l.attrs.get_ints("kernel_shape", {1, 1});
  s.kernel_h = s.conv ? graph.tensors[l.inputs[1]].shape[2] : static_cast<std::uint64_t>(kernel[0]);
  s.kernel_w = s.conv ? graph.tensors[l.inputs[1]].shape[3] : static_cast<std::uint64_t>(kernel[1]);
  const auto strides = l.attrs.get_ints("strides", {1, 1});
  const auto pads = l.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dil = l.attrs.get_ints("dilations", {1, 1});
  s.stride_h = static_cast<std::uint64_t>(strides[0]);
  s.stride_w = static_cast<std::uint64_t>(strides[1]);
  s.pad_top = static_cast<std::uint64_t>(pads[0]);
  s.pad_left = static_cast<std::uint64_t>(pads[1]);
  s.span_h = (s.kernel_h - 1) * static_cast<std::uint64_t>(dil[0]) + 1;
  s.span_w = (s.kernel_w - 1) * static_cast<std::uint64_t>(dil[1]) + 1;
  s.depthwise = s.conv && s.group_count == s.c && s.c > 1;
  const bool vector = !s.conv || s.depthwise;
  s.op = s.conv ? (s.depthwise ? "DepthwiseConv" : "Conv") : l.op;
  s.in_elem_bytes = dtype_bytes(x.dtype);
  s.out_elem_bytes = dtype_bytes(y.dtype);
  if (group.residual) s.residual_elem_bytes = dtype_bytes(graph.tensors[*group.residual].dtype);

  // Channels are chunked in units: one input channel for depthwise and pools, whole groups for
  // grouped convs, one output channel otherwise.
  if (vector) {
    s.units = s.c;
    s.out_per_unit = s.k / s.c;
    s.in_per_unit = 1;
  } else {
    s.units = s.group_count;
    s.out_per_unit = s.k / s.units;
    s.in_per_unit = s.c / s.units;
  }
  if (s.conv) {
    std::uint64_t const_bytes = graph.tensors[l.inputs[1]].bytes();
    for (std::size_t i = 2; i < l.inputs.size(); ++i)
      const_bytes += graph.tensors[l.inputs[i]].bytes();
    for (std::uint32_t t : group.extra_constants) const_bytes += graph.tensors[t].bytes();
    s.weight_bytes_per_unit = ceil_div(const_bytes, s.units);
  }
  // Ungrouped convs chunk by output channel.
  if (!vector && s.units == 1) {
    s.units = s.k;
    s.out_per_unit = 1;
    s.in_per_unit = s.c;  // every output channel reads every input channel
    s.weight_bytes_per_unit = ceil_div(s.weight_bytes_per_unit, s.k);
  }
  // A grouped conv whose single group's weights exceed a chunk is chunked by output channel
  // within its group: chunk sizes divide the group's channels so that no chunk straddles two.
  s.out_per_group = s.k / s.group_count;
  s.within_group =
      !vector && s.group_count > 1 && s.weight_bytes_per_unit > budgets.weight_chunk_bytes;
  if (s.within_group) {
    s.weight_bytes_per_unit = ceil_div(s.weight_bytes_per_unit, s.out_per_group);
    s.units = s.k;
    s.out_per_unit = 1;
    s.in_per_unit = s.c / s.group_count;
  }
  s.input_whole_channels = !vector && s.group_count == 1;
  s.cols_skippable = s.input_whole_channels && s.span_w < s.stride_w;
  s.dma_burst_bytes = budgets.dma_burst_bytes;
  return s;
}

namespace {

// Every (rows, columns, chunk) x loop order x slices that meets its budgets. Chunks are balanced
// (every chunk but the last of ceil(units / chunks) units) and include multiples of the array's
// columns; columns are cut only when a one-row tile does not fit.
std::vector<Mapping> spatial_candidates(const SpatialLayer& s, const HwConfig& config) {
  const Budgets full = budgets_of(config);
  std::uint64_t max_units = s.units;
  if (s.weight_bytes_per_unit > 0) {
    max_units = s.allowed_chunk(full.weight_chunk_bytes / s.weight_bytes_per_unit);
  }
  // Within a group a chunk must divide the group's channels, which balancing would not keep.
  const std::uint64_t align = s.conv && !s.depthwise ? config.slices.cols : 1;
  std::vector<std::uint64_t> chunks;
  if (s.within_group) {
    for (const std::uint64_t u : size_options(max_units, align)) {
      const std::uint64_t allowed = s.allowed_chunk(u);
      if (allowed > 0 && std::find(chunks.begin(), chunks.end(), allowed) == chunks.end()) {
        chunks.push_back(allowed);
      }
    }
  } else {
    chunks = balanced_sizes(s.units, size_options(max_units, align));
  }
  std::vector<Mapping> out;
  for (const ResourceOption& r : resource_options(config)) {
    const bool weights_outer = r.order == LoopOrder::kWeightsOuter;
    if (!weights_outer && !s.input_outer_allowed()) continue;
    const Budgets& b = r.budgets;
    for (const std::uint64_t cu : chunks) {
      if (weights_outer && s.chunk_weight_bytes(cu) > b.weight_chunk_bytes) continue;
      for (const std::uint64_t rows : size_options(s.oh, 1)) {
        // A tile's local memory, and what is shared between tiles, at these sizes.
        auto fits = [&](std::uint64_t cols) {
          if (weights_outer) return s.tile_bytes(rows, cols, cu) <= b.tile_bytes;
          return s.input_bytes(rows, cols, s.c) <= b.weight_chunk_bytes &&
                 s.chunk_weight_bytes(cu) + s.output_bytes(rows, cols, cu) +
                         s.residual_bytes(rows, cols, cu) <=
                     b.tile_bytes;
        };
        std::uint64_t cols = s.ow;
        while (!fits(cols) && cols > 1 && rows == 1) cols = ceil_div(cols, 2);
        Mapping m = r.mapping(MappingKind::kSpatial);
        m.tile_rows = rows;
        m.tile_cols = cols;
        m.tile_channel_units = cu;
        if (fits(cols)) {
          out.push_back(m);
          // The same tiles reusing the halo, after (a tie keeps the plain one: fewer transfers).
          m.reuse_halo = weights_outer;
          if (s.reuses_halo(m)) out.push_back(m);
          m.reuse_halo = false;
        }
        // The same block with each tile's reduction split over 2, 4, ... slices: a part holds
        // its share of the chunk's weights, so a chunk too large for one tile may fit in parts.
        if (weights_outer || !s.k_split_allowed() ||
            s.input_bytes(rows, cols, s.c) > b.weight_chunk_bytes) {
          continue;
        }
        for (std::uint32_t parts = 2; parts <= r.slices && parts <= s.c; parts *= 2) {
          // Where the unsplit tile did not fit, it was cut to one column at worst; a part holds
          // less, so its columns are cut for the part's own limits.
          std::uint64_t part_cols = fits(cols) ? cols : s.ow;
          while ((s.part_tile_bytes(rows, part_cols, cu, parts) > b.tile_bytes ||
                  s.input_bytes(rows, part_cols, s.c) > b.weight_chunk_bytes) &&
                 part_cols > 1 && rows == 1) {
            part_cols = ceil_div(part_cols, 2);
          }
          if (s.part_tile_bytes(rows, part_cols, cu, parts) > b.tile_bytes ||
              s.input_bytes(rows, part_cols, s.c) > b.weight_chunk_bytes) {
            continue;
          }
          m.tile_cols = part_cols;
          m.k_parts = parts;
          out.push_back(m);
        }
      }
    }
  }
  return out;
}

// K-split candidates (docs/compiler.md, "K-split convolutions"), for each slice count: chunks of
// output channels that fill the array's columns, tiles of output rows (and columns, when one row
// is too much), and the largest steps of input channels whose operands take at most T/3 while the
// accumulator takes at most T/3 (two steps in flight and the accumulator fill a tile budget T, as
// K-split MatMuls do).
std::vector<Mapping> ksplit_candidates(const SpatialLayer& s, const HwConfig& config) {
  std::vector<Mapping> out;
  if (!s.k_split_allowed()) return out;
  const std::vector<std::uint64_t> chunks =
      balanced_sizes(s.units, size_options(s.units, config.slices.cols));
  const std::vector<std::uint64_t> steps = size_options(s.c, config.slices.rows);
  for (const std::uint32_t slices : slice_options(config.slices.count)) {
    const std::uint64_t t_bytes = budgets_of(config, slices).tile_bytes;
    // A tile holds its accumulator and two steps' operands: within T, a third each; or, since a
    // slice holds one K-split tile at a time (the next batch waits for its store), within 2T, the
    // accumulator up to T and each step up to T / 2: larger tiles read the input for fewer chunks
    // and the weights for fewer row tiles.
    for (const auto& [acc_budget, step_budget] :
         {std::pair{t_bytes / 3, t_bytes / 3}, std::pair{t_bytes, t_bytes / 2},
          std::pair{3 * t_bytes, t_bytes / 2}, std::pair{2 * t_bytes, t_bytes}}) {
      for (const std::uint64_t cu : chunks) {
        for (const std::uint64_t rows : size_options(s.oh, 1)) {
          std::uint64_t cols = s.ow;
          while (s.accumulator_bytes(rows, cols, cu) > acc_budget && cols > 1 && rows == 1) {
            cols = ceil_div(cols, 2);
          }
          if (s.accumulator_bytes(rows, cols, cu) > acc_budget) continue;
          // The largest step that fits, and the largest that also fills whole row folds (its
          // kernel_h x kernel_w x step rows a multiple of the array's): smaller ones only add
          // commands.
          bool any = false;
          for (const std::uint64_t step_c : steps) {
            // A step of every channel is no split: the plain mapping covers it.
            if (step_c >= s.c || s.step_bytes(rows, cols, cu, step_c) > step_budget) continue;
            const bool full_folds = s.kernel_h * s.kernel_w * step_c % config.slices.rows == 0;
            if (any && !full_folds) continue;
            Mapping m;
            m.kind = MappingKind::kSpatial;
            m.tile_rows = rows;
            m.tile_cols = cols;
            m.tile_channel_units = cu;
            m.k_step = step_c;
            m.slices = slices;
            out.push_back(m);
            if (full_folds) break;
            any = true;
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

MapSpace spatial_map_space(const GroupContext& ctx) {
  const SpatialLayer s = describe_spatial(ctx.graph, ctx.group, ctx.budgets);
  const std::uint64_t weight_budget = ctx.budgets.weight_chunk_bytes;
  std::uint64_t chunk_units = s.units;
  if (s.weight_bytes_per_unit > 0)
    chunk_units = s.allowed_chunk(weight_budget / s.weight_bytes_per_unit);
  if (chunk_units == 0) {
    throw_cannot_fit(ctx.graph, ctx.group, ctx.config.lram_bytes, s.weight_bytes_per_unit,
                     "one output channel of its weights");
  }
  MapSpace space;
  space.kind = MappingKind::kSpatial;
  space.dims = {{"rows", s.oh, {}},
                {"columns", s.ow, {}},
                {"channel units", chunk_units,
                 [s](std::uint64_t cu) { return s.allowed_chunk(ceil_div(cu, 2)); }}};
  space.fit_rules = {{{0, 1, 2},
                      [s](const TileSizes& t) { return s.tile_bytes(t[0], t[1], t[2]); },
                      ctx.budgets.tile_bytes,
                      "one output pixel of one channel",
                      1}};
  space.tiles = [s](const TileSizes& t) {
    return s.n * ceil_div(s.oh, t[0]) * ceil_div(s.ow, t[1]) * ceil_div(s.units, t[2]);
  };
  space.spread_dim = 0;
  space.candidates = [s, &config = ctx.config] {
    std::vector<Mapping> all = spatial_candidates(s, config);
    for (const Mapping& m : ksplit_candidates(s, config)) all.push_back(m);
    return all;
  };
  space.input_tensor = s.input;
  space.reads_input_whole = [s](const Mapping& m) { return s.reads_input_whole(m); };
  space.work = [s, slices = ctx.config.slices.count,
                out_channels = ctx.config.dma.out_channels](const Mapping& m) {
    return spatial_work(s, m, m.slices == 0 ? slices : m.slices, out_channels);
  };
  space.work_on_chip = [s, slices = ctx.config.slices.count,
                        out_channels = ctx.config.dma.out_channels](const Mapping& m) {
    return spatial_work(s, m, m.slices == 0 ? slices : m.slices, out_channels, true);
  };
  space.to_mapping = [s](const TileSizes& t) {
    Mapping m;
    m.kind = MappingKind::kSpatial;
    m.tile_rows = t[0];
    m.tile_cols = t[1];
    m.tile_channel_units = t[2];
    // Balance the chunks (not within a group, where chunk sizes must divide the group).
    if (!s.within_group) m.tile_channel_units = ceil_div(s.units, ceil_div(s.units, t[2]));
    return m;
  };
  return space;
}

namespace {

// `count` tiles of rows x cols x units, each split into `parts` over the input channels: the
// parts (their weights loaded, no store), the reduction pieces of each tile (each loading its
// rows' residual) and the stores, at most one per DMA_OUT channel.
void add_part_tiles(GroupWork& w, const SpatialLayer& s, std::uint32_t parts, std::uint64_t count,
                    std::uint64_t rows, std::uint64_t cols, std::uint64_t units,
                    std::uint32_t out_channels) {
  for (const auto& [np, part_c] : tile_cuts(s.c, s.part_channels(parts))) {
    TileClass t;
    t.count = count * np;
    t.op = find_op(s.op);
    ConvShape shape = s.tile_shape(rows, cols, units);
    shape.in_c = part_c;
    t.shape = shape;
    t.load_bytes = s.part_weight_bytes(units, part_c);
    t.ring_extra_bytes = s.output_bytes(rows, cols, units) + s.residual_bytes(rows, cols, units) +
                         s.partial_bytes(rows, cols, units);
    w.tiles.push_back(t);
  }
  const std::uint64_t piece_rows = s.reduce_piece_rows(rows, parts);
  for (const auto& [np, pr] : tile_cuts(rows, piece_rows)) {
    TileClass reduce;
    reduce.count = count * np;
    reduce.op = find_op("PartialSum");
    reduce.shape = ElementsShape{s.reduce_elements(pr, cols, units, parts)};
    reduce.load_bytes = s.residual_bytes(pr, cols, units);
    w.tiles.push_back(reduce);
  }
  const std::uint64_t pieces = ceil_div(rows, piece_rows);
  const std::uint64_t per_store = ceil_div(pieces, std::min<std::uint64_t>(pieces, out_channels));
  for (const auto& [ns, store_rows] : tile_cuts(rows, per_store * piece_rows)) {
    w.stores.push_back({count * ns, s.output_bytes(store_rows, cols, units)});
  }
}

// K-split tiles: per step, a load of its input channels and one of its weights, and a Conv that
// accumulates onto the last step's; a fused residual's share (spread over the steps here, loaded
// with the last one by the emitter); one store per tile after its last step.
GroupWork ksplit_work(const SpatialLayer& s, const Mapping& m, std::uint32_t slices,
                      bool input_on_chip) {
  GroupWork w;
  w.slices = slices;
  w.shared_live = m.shared_live;
  w.whole_memory = true;
  const OpId op = find_op(s.op);
  for (const auto& [nr, rows] : tile_cuts(s.oh, m.tile_rows)) {
    for (const auto& [nc, cols] : tile_cuts(s.ow, m.tile_cols)) {
      for (const auto& [nu, units] : tile_cuts(s.units, m.tile_channel_units)) {
        const std::uint64_t count = s.n * nr * nc * nu;
        const std::uint64_t steps = ceil_div(s.c, m.k_step);
        for (const auto& [nk, step_c] : tile_cuts(s.c, m.k_step)) {
          TileClass t;
          t.count = count * nk;
          t.op = op;
          ConvShape shape = s.tile_shape(rows, cols, units);
          shape.in_c = step_c;
          t.shape = shape;
          t.loads = 2;
          t.load_bytes = (input_on_chip ? 0 : s.input_bytes(rows, cols, step_c)) +
                         s.part_weight_bytes(units, step_c) +
                         ceil_div(s.residual_bytes(rows, cols, units), steps);
          w.tiles.push_back(t);
        }
        w.stores.push_back({count, s.output_bytes(rows, cols, units)});
        w.hold_bytes = std::max(w.hold_bytes, s.accumulator_bytes(rows, cols, units) +
                                                  s.step_bytes(rows, cols, units, m.k_step));
      }
    }
  }
  return w;
}

}  // namespace

GroupWork spatial_work(const SpatialLayer& s, const Mapping& m, std::uint32_t slices,
                       std::uint32_t out_channels, bool input_on_chip) {
  GroupWork w;
  w.slices = slices;
  w.shared_live = m.shared_live;
  const OpId op = find_op(s.op);
  if (m.k_step > 0) return ksplit_work(s, m, slices, input_on_chip);
  const bool input_outer = m.order == LoopOrder::kInputOuter;
  for (const auto& [nr, rows] : tile_cuts(s.oh, m.tile_rows)) {
    for (const auto& [nc, cols] : tile_cuts(s.ow, m.tile_cols)) {
      if (input_outer && !input_on_chip) {
        w.shared.push_back({s.n * nr * nc, s.input_bytes(rows, cols, s.c)});
      }
      for (const auto& [nu, units] : tile_cuts(s.units, m.tile_channel_units)) {
        if (m.k_parts > 1) {
          add_part_tiles(w, s, m.k_parts, s.n * nr * nc * nu, rows, cols, units, out_channels);
          continue;
        }
        TileClass t;
        t.count = s.n * nr * nc * nu;
        t.op = op;
        t.shape = s.tile_shape(rows, cols, units);
        t.load_bytes = input_outer     ? s.chunk_weight_bytes(units)
                       : input_on_chip ? 0
                                       : s.input_bytes(rows, cols, s.chunk_in_c(units));
        // Reusing the halo, a tile loads its rows' new input rows (the first of a column band
        // all of its window, which this averages away), in up to two transfers.
        if (!input_outer && !input_on_chip && s.reuses_halo(m)) {
          t.load_bytes = std::min(s.in_rows(rows), rows * s.stride_h) *
                         s.in_cols(cols, s.chunk_in_c(units)) * s.chunk_in_c(units) *
                         s.in_elem_bytes;
          t.loads = 2;
        }
        t.load_bytes += s.residual_bytes(rows, cols, units);
        t.store_bytes = s.output_bytes(rows, cols, units);
        w.tiles.push_back(t);
      }
    }
  }
  if (!input_outer && s.weight_bytes_per_unit > 0) {
    for (const auto& [nu, units] : tile_cuts(s.units, m.tile_channel_units)) {
      w.shared.push_back({nu, s.chunk_weight_bytes(units)});
    }
  }
  return w;
}

std::vector<std::uint64_t> first_block_weight_loads(const SpatialLayer& s, const Mapping& m) {
  std::vector<std::uint64_t> loads;
  if (m.kind != MappingKind::kSpatial || m.order != LoopOrder::kInputOuter || m.k_step > 0 ||
      s.weight_bytes_per_unit == 0 || m.tile_channel_units == 0) {
    return loads;
  }
  const std::uint64_t part_c = m.k_parts > 1 ? s.part_channels(m.k_parts) : s.c;
  for (std::uint64_t u0 = 0; u0 < s.units; u0 += m.tile_channel_units) {
    const std::uint64_t cu = std::min(s.units, u0 + m.tile_channel_units) - u0;
    for (std::uint64_t c0 = 0; c0 < s.c; c0 += part_c) {
      loads.push_back(s.part_weight_bytes(cu, std::min(s.c, c0 + part_c) - c0));
    }
  }
  return loads;
}

}  // namespace npusim
