#include "sim/compiler/mapping/matmul.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>
#include <vector>

#include "sim/util/math.h"

namespace npusim {
namespace {

std::vector<Mapping> ksplit_candidates(const MatMulLayer& mm, const HwConfig& config);

// What a K-split output tile of rows x cols holds on its slice: its output, two steps' inputs,
// and its share of a bias (loaded with the first step).
std::uint64_t ksplit_tile_bytes(const MatMulLayer& mm, std::uint64_t rows, std::uint64_t cols,
                                std::uint64_t k_step) {
  return rows * cols * mm.out_elem_bytes + 2 * mm.step_bytes(rows, cols, k_step) +
         ceil_div(mm.bias_bytes * cols, mm.n);
}
GroupWork ksplit_work(const MatMulLayer& mm, const Mapping& m, std::uint32_t slices);

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
  space.candidates = [mm, &config = ctx.config] { return ksplit_candidates(mm, config); };
  space.work = [mm, slices = ctx.config.slices.count](const Mapping& m) {
    return ksplit_work(mm, m, m.slices == 0 ? slices : m.slices);
  };
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
  const std::vector<std::uint64_t> col_sizes =
      balanced_sizes(mm.n, size_options(max_cols, config.slices.cols));
  std::vector<Mapping> out;
  for (const ResourceOption& r : resource_options(config)) {
    const bool weights_outer = r.order == LoopOrder::kWeightsOuter;
    const Budgets& b = r.budgets;
    for (const std::uint64_t cols : col_sizes) {
      if (weights_outer && cols * mm.bytes_per_col > b.weight_chunk_bytes) continue;
      for (const std::uint64_t rows : size_options(mm.rows_total, config.slices.rows)) {
        const bool block_fits = rows * mm.k * mm.a_elem_bytes <= b.weight_chunk_bytes;
        const bool fits = weights_outer ? mm.tile_bytes(rows, cols) <= b.tile_bytes
                                        : block_fits && cols * mm.bytes_per_col +
                                                                rows * cols * mm.out_elem_bytes <=
                                                            b.tile_bytes;
        Mapping m = r.mapping(MappingKind::kMatMul);
        m.tile_rows = rows;
        m.tile_cols = cols;
        if (fits) out.push_back(m);
        // The same tiles with the reduction split over 2, 4, ... slices (a GEMV's few row folds
        // then end sooner); a part holds its share of the chunk, so a chunk too large for one
        // tile may fit in parts.
        if (weights_outer || !block_fits) continue;
        for (std::uint32_t parts = 2; parts <= r.slices && parts <= mm.k; parts *= 2) {
          if (mm.part_count(parts) < 2 || mm.part_tile_bytes(rows, cols, parts) > b.tile_bytes) {
            continue;
          }
          m.k_parts = parts;
          out.push_back(m);
        }
      }
    }
  }
  return out;
}

// K-split candidates: output tiles of rows x cols accumulating over steps of k_step, rows and
// columns multiples of the array's rows and columns or halvings, k_step likewise; the output
// takes at most T/3 and one step's operands at most T/3; or, as a K-split MatMul loads no shared
// chunk and may take the whole memory (L / slices = 4T per slice), the output up to T and each
// step up to 3T/2 (docs/compiler.md, "K-split MatMul").
std::vector<Mapping> ksplit_candidates(const MatMulLayer& mm, const HwConfig& config) {
  std::vector<Mapping> out;
  std::set<std::array<std::uint64_t, 4>> seen;  // rows, cols, k_step, slices
  for (const std::uint32_t slices : slice_options(config.slices.count)) {
    const std::uint64_t t_bytes = budgets_of(config, slices).tile_bytes;
    const std::uint64_t slice_share = config.lram_bytes / slices;
    for (const auto& [out_budget, step_budget] :
         {std::pair{t_bytes / 3, t_bytes / 3}, std::pair{t_bytes, 3 * t_bytes / 2}}) {
      for (const std::uint64_t rows : size_options(mm.rows_total, config.slices.rows)) {
        for (const std::uint64_t cols : size_options(mm.n, config.slices.cols)) {
          if (rows * cols * mm.out_elem_bytes > out_budget) continue;
          for (const std::uint64_t k_step : size_options(mm.k, config.slices.rows)) {
            if (mm.step_bytes(rows, cols, k_step) > step_budget) continue;
            // The whole tile, with its share of a bias, within the slice's share of the memory.
            if (ksplit_tile_bytes(mm, rows, cols, k_step) > slice_share) continue;
            Mapping m;
            m.kind = MappingKind::kMatMulKSplit;
            m.tile_rows = rows;
            m.tile_cols = cols;
            m.k_step = k_step;
            m.slices = slices;
            // The larger budgets repeat what the smaller gave when nothing larger fits.
            if (seen.insert({rows, cols, k_step, slices}).second) out.push_back(m);
            break;  // the largest step that fits: smaller ones only add commands
          }
        }
      }
    }
  }
  return out;
}

GroupWork ksplit_work(const MatMulLayer& mm, const Mapping& m, std::uint32_t slices) {
  GroupWork w;
  w.slices = slices;
  w.whole_memory = true;
  const OpId gemm = find_op("Gemm");
  for (const auto& [nr, rows] : tile_cuts(mm.rows_total, m.tile_rows)) {
    for (const auto& [nc, cols] : tile_cuts(mm.n, m.tile_cols)) {
      for (const auto& [nk, k_step] : tile_cuts(mm.k, m.k_step)) {
        TileClass t;
        t.count = mm.passes * nr * nc * nk;
        t.op = gemm;
        t.shape = GemmShape{1, rows, cols, k_step};
        t.loads = 2;
        t.load_bytes = mm.step_bytes(rows, cols, k_step);
        w.tiles.push_back(t);
      }
      w.stores.push_back({mm.passes * nr * nc, rows * cols * mm.out_elem_bytes});
      // Besides a step's loads, a tile holds its output and the next step's.
      w.hold_bytes = std::max(w.hold_bytes, ksplit_tile_bytes(mm, rows, cols, m.k_step) -
                                                mm.step_bytes(rows, cols, m.k_step));
    }
  }
  return w;
}

// The parts of `count` split tiles of rows x cols (emit_matmul_split): per part a load of its
// share of the chunk and a Gemm over it, per reduction piece a PartialSum, and the stores.
void add_part_tiles(GroupWork& w, const MatMulLayer& mm, std::uint32_t parts, std::uint64_t count,
                    std::uint64_t rows, std::uint64_t cols, std::uint32_t out_channels) {
  const std::uint64_t n_parts = mm.part_count(parts);
  const std::uint64_t bias = ceil_div(mm.bias_bytes * cols, mm.n);
  for (const auto& [np, kn] : tile_cuts(mm.k, mm.part_k(parts))) {
    TileClass t;
    t.count = count * np;
    t.op = find_op("Gemm");
    t.shape = GemmShape{1, rows, cols, kn};
    // The bias rides with the first part; spread over the parts here.
    t.load_bytes = mm.part_b_bytes(cols, kn, false) + ceil_div(bias, n_parts);
    t.ring_extra_bytes = rows * cols * (mm.out_elem_bytes + MatMulLayer::kPartialElemBytes);
    w.tiles.push_back(t);
  }
  const std::uint64_t piece_rows = ceil_div(rows, std::min(rows, n_parts));
  for (const auto& [np, pr] : tile_cuts(rows, piece_rows)) {
    TileClass reduce;
    reduce.count = count * np;
    reduce.op = find_op("PartialSum");
    reduce.shape = ElementsShape{(n_parts - 1) * pr * cols};
    w.tiles.push_back(reduce);
  }
  const std::uint64_t pieces = ceil_div(rows, piece_rows);
  const std::uint64_t per_store = ceil_div(pieces, std::min<std::uint64_t>(pieces, out_channels));
  for (const auto& [ns, store_rows] : tile_cuts(rows, per_store * piece_rows)) {
    w.stores.push_back({count * ns, store_rows * cols * mm.out_elem_bytes});
  }
}

}  // namespace

GroupWork matmul_work(const MatMulLayer& mm, const Mapping& m, std::uint32_t slices,
                      std::uint32_t out_channels) {
  GroupWork w;
  w.slices = slices;
  w.shared_live = m.shared_live;
  const OpId gemm = find_op("Gemm");
  const bool input_outer = m.order == LoopOrder::kInputOuter;
  for (const auto& [nr, rows] : tile_cuts(mm.rows_total, m.tile_rows)) {
    if (input_outer) w.shared.push_back({mm.passes * nr, rows * mm.k * mm.a_elem_bytes});
    for (const auto& [nc, cols] : tile_cuts(mm.n, m.tile_cols)) {
      if (m.k_parts > 1) {
        add_part_tiles(w, mm, m.k_parts, mm.passes * nr * nc, rows, cols, out_channels);
        continue;
      }
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

std::uint64_t MatMulLayer::part_k(std::uint64_t parts) const {
  const std::uint64_t kn = ceil_div(k, parts);
  return std::min(k, kn + kn % 2);
}

std::uint64_t MatMulLayer::part_b_bytes(std::uint64_t cols, std::uint64_t kn, bool first) const {
  return cols * b_bytes(kn) + (first ? ceil_div(bias_bytes * cols, n) : 0);
}

std::vector<std::uint64_t> first_row_tile_weight_loads(const Graph& graph, const MatMulLayer& mm,
                                                       const Mapping& m) {
  std::vector<std::uint64_t> loads;
  if (m.kind != MappingKind::kMatMul || m.order != LoopOrder::kInputOuter || m.k_parts > 1 ||
      m.tile_cols == 0 || !graph.tensors[mm.b].constant) {
    return loads;
  }
  for (std::uint64_t c0 = 0; c0 < mm.n; c0 += m.tile_cols) {
    loads.push_back((std::min(mm.n, c0 + m.tile_cols) - c0) * mm.bytes_per_col);
  }
  return loads;
}

std::uint64_t MatMulLayer::part_tile_bytes(std::uint64_t rows, std::uint64_t cols,
                                           std::uint64_t parts) const {
  return part_b_bytes(cols, part_k(parts), true) +
         rows * cols * (out_elem_bytes + kPartialElemBytes);
}

std::uint64_t MatMulLayer::step_bytes(std::uint64_t rows, std::uint64_t cols,
                                      std::uint64_t k_step) const {
  return rows * k_step * a_elem_bytes + cols * b_bytes(k_step);
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
  mm.b_dtype = b.dtype;
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
  mm.bytes_per_col = mm.b_bytes(mm.k) + ceil_div(mm.bias_bytes, mm.n);
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
    std::vector<Mapping> all = matmul_candidates(mm, config, cols);
    for (const Mapping& m : ksplit_candidates(mm, config)) all.push_back(m);
    return all;
  };
  space.work = [mm, slices = ctx.config.slices.count,
                out_channels = ctx.config.dma.out_channels](const Mapping& m) {
    const std::uint32_t used = m.slices == 0 ? slices : m.slices;
    return m.kind == MappingKind::kMatMulKSplit ? ksplit_work(mm, m, used)
                                                : matmul_work(mm, m, used, out_channels);
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
