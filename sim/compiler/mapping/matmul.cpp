#include "sim/compiler/mapping/matmul.h"

#include <algorithm>
#include <utility>
#include <vector>

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

// Every rows x column chunk x loop order x slices that meets its budgets; column chunks are
// balanced and include multiples of the array's columns, rows multiples of its rows.
std::vector<Mapping> matmul_candidates(const MatMulLayer& mm, const HwConfig& config,
                                       std::uint64_t max_cols) {
  std::vector<std::uint64_t> col_sizes;
  for (std::uint64_t c : size_options(max_cols, config.slices.cols)) {
    const std::uint64_t balanced = ceil_div(mm.n, ceil_div(mm.n, c));
    if (std::find(col_sizes.begin(), col_sizes.end(), balanced) == col_sizes.end()) {
      col_sizes.push_back(balanced);
    }
  }
  std::vector<Mapping> out;
  for (const std::uint32_t slices : slice_options(config.slices.count)) {
    for (const std::uint32_t live : {2u, slices}) {
      if (live != 2 && slices <= 2) continue;  // one per slice is the double buffer there
      const Budgets b = budgets_of(config, slices, live);
      for (const LoopOrder order : {LoopOrder::kWeightsOuter, LoopOrder::kInputOuter}) {
        for (const std::uint64_t cols : col_sizes) {
          if (order == LoopOrder::kWeightsOuter && cols * mm.bytes_per_col > b.weight_chunk_bytes)
            continue;
          for (const std::uint64_t rows : size_options(mm.rows_total, config.slices.rows)) {
            const bool fits =
                order == LoopOrder::kWeightsOuter
                    ? mm.tile_bytes(rows, cols) <= b.tile_bytes
                    : rows * mm.k * mm.a_elem_bytes <= b.weight_chunk_bytes &&
                          cols * mm.bytes_per_col + rows * cols * mm.out_elem_bytes <= b.tile_bytes;
            if (!fits) continue;
            Mapping m;
            m.kind = MappingKind::kMatMul;
            m.tile_rows = rows;
            m.tile_cols = cols;
            m.order = order;
            m.slices = slices;
            m.shared_live = live;
            out.push_back(m);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

GroupWork matmul_work(const MatMulLayer& mm, const Mapping& m, std::uint32_t slices) {
  GroupWork w;
  w.slices = slices;
  w.shared_live = m.shared_live;
  const OpId gemm = find_op("Gemm");
  const bool input_outer = m.order == LoopOrder::kInputOuter;
  for (const auto& [nr, rows] : tile_cuts(mm.rows_total, m.tile_rows)) {
    if (input_outer) w.shared.push_back({mm.passes * nr, rows * mm.k * mm.a_elem_bytes});
    for (const auto& [nc, cols] : tile_cuts(mm.n, m.tile_cols)) {
      TileClass t;
      t.count = mm.passes * nr * nc;
      t.op = gemm;
      t.shape = GemmShape{1, rows, cols, mm.k};
      t.load_bytes = input_outer ? cols * mm.bytes_per_col : rows * mm.k * mm.a_elem_bytes;
      t.store_bytes = rows * cols * mm.out_elem_bytes;
      w.tiles.push_back(t);
    }
  }
  if (!input_outer) {
    for (const auto& [nc, cols] : tile_cuts(mm.n, m.tile_cols)) {
      w.shared.push_back({mm.passes * nc, cols * mm.bytes_per_col});
    }
  }
  return w;
}

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
  space.candidates = [mm, &config = ctx.config, cols] {
    return matmul_candidates(mm, config, cols);
  };
  space.work = [mm, slices = ctx.config.slices.count](const Mapping& m) {
    return matmul_work(mm, m, m.slices == 0 ? slices : m.slices);
  };
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
