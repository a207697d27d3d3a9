#include "sim/compiler/mapping/matmul.h"

#include <algorithm>

#include "sim/util/math.h"

namespace npusim {
namespace {

// A MatMul whose reduction dimension is too long for one row or column to fit: each output
// tile accumulates in place over steps along k, each step loading its slices of both operands.
// A slice then holds the tile two back (at most T) and this tile's output (at most T/3) and
// two steps' inputs (at most T/3 each): 2T, as for other tiles.
MapSpace ksplit_map_space(const GroupContext& ctx, const MatMulLayer& mm) {
  const std::uint64_t third = ctx.budgets.tile_bytes / 3;
  MapSpace space;
  space.kind = MappingKind::kMatMulKSplit;
  space.dims = {{"rows", mm.rows_total, {}}, {"columns", mm.n, {}}, {"k", mm.k, {}}};
  space.fit_rules = {{{0, 1},
                      [mm](const TileSizes& t) { return t[0] * t[1] * mm.out_elem_bytes; },
                      third,
                      "one output element",
                      3},
                     {{2, 0, 1},
                      [mm](const TileSizes& t) { return mm.step_bytes(t[0], t[1], t[2]); },
                      third,
                      "one step of one output element",
                      3}};
  space.tiles = [mm](const TileSizes& t) {
    return mm.passes * ceil_div(mm.rows_total, t[0]) * ceil_div(mm.n, t[1]);
  };
  space.spread_dim = 0;
  space.to_mapping = [](const TileSizes& t) {
    Mapping m;
    m.kind = MappingKind::kMatMulKSplit;
    m.tile_rows = t[0];
    m.tile_cols = t[1];
    m.k_step = t[2];
    return m;
  };
  return space;
}

}  // namespace

std::uint64_t MatMulLayer::tile_bytes(std::uint64_t rows, std::uint64_t cols) const {
  return rows * k * a_elem_bytes + rows * cols * out_elem_bytes;
}

std::uint64_t MatMulLayer::step_bytes(std::uint64_t rows, std::uint64_t cols,
                                      std::uint64_t k_step) const {
  return rows * k_step * a_elem_bytes + k_step * cols * b_elem_bytes;
}

MatMulLayer describe_matmul(const Graph& graph, const LayerGroup& group) {
  const Layer& l = graph.layers[group.layers[0]];
  const Tensor& a = graph.tensors[l.inputs[0]];
  const Tensor& b = graph.tensors[l.inputs[1]];
  const Tensor& y = graph.tensors[group.output];
  MatMulLayer mm;
  mm.a = l.inputs[0];
  mm.b = l.inputs[1];
  mm.m = a.shape[a.shape.size() - 2], mm.k = a.shape.back(), mm.n = b.shape.back();
  mm.a_elem_bytes = dtype_bytes(a.dtype);
  mm.b_elem_bytes = dtype_bytes(b.dtype);
  mm.out_elem_bytes = dtype_bytes(y.dtype);
  mm.a_batch = a.elements() / (mm.m * mm.k);
  mm.b_batch = b.elements() / (mm.k * mm.n);
  mm.out_batch = y.elements() / (mm.m * mm.n);
  mm.shared_b = mm.b_batch == 1;
  mm.passes = mm.shared_b ? 1 : mm.out_batch;
  mm.rows_total = mm.shared_b ? mm.a_batch * mm.m : mm.m;
  for (std::size_t i = 2; i < l.inputs.size(); ++i)
    mm.bias_bytes += graph.tensors[l.inputs[i]].bytes();
  for (std::uint32_t t : group.extra_constants) mm.bias_bytes += graph.tensors[t].bytes();
  mm.bytes_per_col = mm.k * mm.b_elem_bytes + ceil_div(mm.bias_bytes, mm.n);
  return mm;
}

MapSpace matmul_map_space(const GroupContext& ctx) {
  const MatMulLayer mm = describe_matmul(ctx.graph, ctx.group);
  const std::uint64_t cols = std::min(mm.n, ctx.budgets.weight_chunk_bytes / mm.bytes_per_col);
  if (cols == 0 || mm.tile_bytes(1, 1) > ctx.budgets.tile_bytes) return ksplit_map_space(ctx, mm);
  MapSpace space;
  space.kind = MappingKind::kMatMul;
  space.dims = {{"rows", mm.rows_total, {}}, {"columns", cols, {}}};
  space.fit_rules = {{{0, 1},
                      [mm](const TileSizes& t) { return mm.tile_bytes(t[0], t[1]); },
                      ctx.budgets.tile_bytes,
                      "one row of one column",
                      1}};
  space.tiles = [mm](const TileSizes& t) {
    return mm.passes * ceil_div(mm.rows_total, t[0]) * ceil_div(mm.n, t[1]);
  };
  space.spread_dim = 0;
  space.to_mapping = [mm](const TileSizes& t) {
    Mapping m;
    m.kind = MappingKind::kMatMul;
    m.tile_rows = t[0];
    m.tile_cols = ceil_div(mm.n, ceil_div(mm.n, t[1]));  // balance the column chunks
    return m;
  };
  return space;
}

}  // namespace npusim
