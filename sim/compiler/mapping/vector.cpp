#include "sim/compiler/mapping/vector.h"

#include <algorithm>

#include "sim/util/math.h"

namespace npusim {

std::string vector_schedule_op(const std::string& graph_op) {
  if (graph_op == "BatchNormalization") return "BatchNorm";
  if (classify_op(graph_op) == OpClass::kCopy) return "Copy";
  return graph_op;
}

std::uint64_t VectorLayer::share(std::uint64_t bytes, std::uint64_t r0, std::uint64_t r1,
                                 std::uint64_t rows_total) {
  __extension__ using U128 = unsigned __int128;
  return static_cast<std::uint64_t>((U128{bytes} * (r1 - r0) + rows_total - 1) / rows_total);
}

Piece VectorLayer::piece(const VectorOperand& operand, std::uint64_t r0, std::uint64_t r1,
                         std::uint64_t row_pieces) const {
  const std::uint64_t rows_total = base_rows * row_pieces;
  const std::uint64_t bytes = operand.bytes;
  switch (operand.feed) {
    case Feed::kShare:
      return {operand.tensor, share(bytes, 0, r0, rows_total), share(bytes, 0, r1, rows_total),
              share(bytes, r0, r1, rows_total)};
    case Feed::kShareAll:
      return {operand.tensor, 0, bytes, share(bytes, r0, r1, rows_total)};
    case Feed::kRows: {
      // The driver's whole rows this tile touches, mapped onto the operand's rows.
      const std::uint64_t d0 = r0 / row_pieces, d1 = ceil_div(r1, row_pieces);
      const std::uint64_t row_bytes = bytes / operand.rows;
      const std::uint64_t n = std::min(d1 - d0, operand.rows);
      const std::uint64_t lo = (d0 % operand.rows) * row_bytes;
      // A range that wraps past the operand's end reads all of it.
      const bool wraps = d0 % operand.rows + n > operand.rows;
      return {operand.tensor, wraps ? 0 : lo, wraps ? bytes : lo + n * row_bytes, n * row_bytes};
    }
    case Feed::kWhole:
      return {operand.tensor, 0, bytes, bytes};
    case Feed::kOnce:
      break;
  }
  return {operand.tensor, 0, 0, 0};
}

std::uint64_t VectorLayer::tile_bytes(std::uint64_t rows, std::uint64_t row_pieces) const {
  std::uint64_t total = share(output_bytes, 0, rows, base_rows * row_pieces);
  for (const VectorOperand& operand : operands) total += piece(operand, 0, rows, row_pieces).bytes;
  return total;
}

VectorLayer describe_vector(const Graph& graph, const LayerGroup& group,
                            const TensorLayouts& layouts) {
  const Layer& l = graph.layers[group.layers[0]];
  VectorLayer v;
  v.op = vector_schedule_op(l.op);
  v.driver = vector_driver(graph, group);
  v.output = group.output;
  const Tensor& d = graph.tensors[v.driver];
  const Tensor& y = graph.tensors[group.output];
  v.driver_elements = d.elements();
  v.base_rows = layouts.rows(graph, v.driver);
  v.row_elements = d.elements() / v.base_rows;
  v.output_bytes = y.bytes();
  // The result's rows, where its layout matches the driver's; else it may be anywhere.
  v.output_aligned =
      layouts.is_image(group.output) == layouts.is_image(v.driver) && y.elements() == d.elements();
  // Only ops that keep element order read the rows they write: a transpose or gather reads from
  // anywhere in its input.
  const bool keeps_order = classify_op(l.op) == OpClass::kVector || l.op == "Cast";
  // The head's inputs, then the fused layers' other operands (constants: fuse_layer_groups).
  std::vector<std::uint32_t> inputs = l.inputs;
  for (std::size_t i = 1; i < group.layers.size(); ++i) {
    const Layer& fused = graph.layers[group.layers[i]];
    if (fused.op == "Quantize") continue;  // its scale and zero point are folded in, as on arrays
    const std::uint32_t chain = graph.layers[group.layers[i - 1]].outputs.at(0);
    for (std::uint32_t t : fused.inputs) {
      if (t != chain) inputs.push_back(t);
    }
    v.then_ops.push_back(vector_schedule_op(fused.op));
  }
  for (std::uint32_t t : inputs) {
    const Tensor& in = graph.tensors[t];
    const bool same_layout = layouts.is_image(t) == layouts.is_image(v.driver);
    VectorOperand operand{t, Feed::kWhole, 0, in.bytes()};
    if (in.elements() == d.elements()) {
      operand.feed = same_layout && keeps_order ? Feed::kShare : Feed::kShareAll;
    } else if (same_layout && !layouts.is_image(t) && in.shape.size() >= 2 &&
               in.shape.back() == d.shape.back() && v.base_rows % layouts.rows(graph, t) == 0) {
      operand.feed = Feed::kRows;
      operand.rows = layouts.rows(graph, t);
    } else if (in.constant) {
      operand.feed = Feed::kOnce;
      v.once_bytes += in.bytes();
    } else if (classify_op(l.op) == OpClass::kCopy) {
      // A resize or gather reads its input in proportion to the output it makes.
      operand.feed = Feed::kShareAll;
    }
    v.operands.push_back(operand);
  }
  return v;
}

MapSpace vector_map_space(const GroupContext& ctx) {
  const VectorLayer v = describe_vector(ctx.graph, ctx.group, ctx.layouts);
  if (v.once_bytes > ctx.budgets.weight_chunk_bytes) {
    throw_cannot_fit(ctx.graph, ctx.group, ctx.config.lram_bytes, v.once_bytes,
                     "the whole of its constant operands");
  }
  // Rows are cut into pieces when one row is more than a tile.
  std::uint64_t row_pieces = 1;
  while (v.tile_bytes(1, row_pieces) > ctx.budgets.tile_bytes && row_pieces < v.row_elements) {
    row_pieces *= 2;
  }
  const std::uint64_t rows_total = v.base_rows * row_pieces;
  MapSpace space;
  space.kind = MappingKind::kVector;
  space.dims = {{"rows", rows_total, {}}};
  space.fit_rules = {
      {{0},
       [v, row_pieces](const TileSizes& t) { return v.tile_bytes(t[0], row_pieces); },
       ctx.budgets.tile_bytes,
       "one element",
       1}};
  space.tiles = [rows_total](const TileSizes& t) { return ceil_div(rows_total, t[0]); };
  space.spread_dim = 0;
  space.to_mapping = [row_pieces](const TileSizes& t) {
    Mapping m;
    m.kind = MappingKind::kVector;
    m.tile_rows = t[0];
    m.row_pieces = row_pieces;
    return m;
  };
  return space;
}

}  // namespace npusim
