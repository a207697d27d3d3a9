#include "sim/cost/compute.h"

#include <algorithm>
#include <stdexcept>

#include "sim/util/math.h"

namespace npusim::cost {
namespace {

// Vector-unit cycles: `work` units at `cycles_per_unit` each, spread over `lanes`.
Cycles vector_cycles(std::uint64_t work, std::uint32_t cycles_per_unit, std::uint32_t lanes) {
  return std::max<Cycles>(1, ceil_div(checked_mul(work, cycles_per_unit), lanes));
}

// A vector op reads one operand element per unit of work (an input element, a window element)
// and writes its outputs; it spends `cycles_per_unit` lane cycles on each unit of work.
void set_vector_traffic(SliceCost& cost, std::uint64_t work, std::uint32_t cycles_per_unit,
                        std::uint64_t outputs) {
  cost.vector_lane_cycles = saturating_mul(work, cycles_per_unit);
  cost.lram_read_elements = work;
  cost.lram_write_elements = outputs;
}

}  // namespace

GemmMapping map_gemm(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow, std::uint64_t m,
                     std::uint64_t n, std::uint64_t k) {
  GemmMapping g;
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      g.sr = m, g.sc = n, g.t = k;
      break;
    case Dataflow::kWeightStationary:
      g.sr = k, g.sc = n, g.t = m;
      break;
    case Dataflow::kInputStationary:
      g.sr = k, g.sc = m, g.t = n;
      break;
  }
  g.folds = checked_mul(ceil_div(g.sr, rows), ceil_div(g.sc, cols));
  // Each fold streams T operand rows through the array and drains through its rows and columns
  // (rows + cols - 2); ws and is first load the stationary operand (another `rows` cycles), os
  // keeps its outputs in place.
  const std::uint64_t load = dataflow == Dataflow::kOutputStationary ? 0 : rows;
  g.fold_cycles = checked_add(load + rows + cols - 2, g.t);
  g.util_fold_cycles = dataflow == Dataflow::kOutputStationary
                           ? g.fold_cycles
                           : checked_add(g.fold_cycles, cols - 1);
  return g;
}

Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  const GemmMapping g = map_gemm(rows, cols, dataflow, m, n, k);
  // SCALE-Sim counts a layer's cycles as the 0-based index of its last one, hence the -1
  // (scale-sim-v2 memory/double_buffered_scratchpad_mem.py).
  return std::max<Cycles>(1, checked_mul(g.folds, g.fold_cycles) - 1);
}

GemmTraffic gemm_lram_traffic(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                              std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  const std::uint64_t a = saturating_mul(m, k);  // left operand (inputs)
  const std::uint64_t b = saturating_mul(k, n);  // right operand (weights)
  const std::uint64_t out = saturating_mul(m, n);
  GemmTraffic t;
  switch (dataflow) {
    case Dataflow::kOutputStationary:  // rows take m, columns n, k streams
      t.read_elements = saturating_add(saturating_mul(a, ceil_div(n, cols)),
                                       saturating_mul(b, ceil_div(m, rows)));
      t.write_elements = out;
      break;
    case Dataflow::kWeightStationary:  // rows take k, columns n, m streams
      t.read_elements = saturating_add(b, saturating_mul(a, ceil_div(n, cols)));
      t.write_elements = saturating_mul(out, ceil_div(k, rows));
      break;
    case Dataflow::kInputStationary:  // rows take k, columns m, n streams
      t.read_elements = saturating_add(a, saturating_mul(b, ceil_div(m, cols)));
      t.write_elements = saturating_mul(out, ceil_div(k, rows));
      break;
  }
  return t;
}

SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config) {
  const OpInfo& info = op_table().at(op);
  const SliceConfig& s = config.slices;
  const std::uint32_t cpe = s.vector_op_cycles.at(op);
  SliceCost cost;
  switch (info.shape) {
    case ShapeKind::kGemm: {
      const auto& g = std::get<GemmShape>(shape);
      cost.cycles =
          checked_mul(g.batch, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, g.m, g.n, g.k));
      cost.macs = checked_mul(checked_mul(checked_mul(g.batch, g.m), g.n), g.k);
      const GemmTraffic t = gemm_lram_traffic(s.rows, s.cols, s.dataflow, g.m, g.n, g.k);
      cost.lram_read_elements = saturating_mul(g.batch, t.read_elements);
      cost.lram_write_elements = saturating_mul(g.batch, t.write_elements);
      return cost;
    }
    case ShapeKind::kConv: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t pixels = checked_mul(checked_mul(c.batch, c.out_h()), c.out_w());
      const std::uint64_t window = checked_mul(c.kernel_h, c.kernel_w);
      if (info.unit == EngineKind::kArray) {
        // im2col: each group is a GEMM of (pixels) x (window * in_c/groups) x (out_c/groups).
        const std::uint64_t k = checked_mul(window, c.in_c / c.groups);
        const std::uint64_t n = c.out_c / c.groups;
        cost.cycles =
            checked_mul(c.groups, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, pixels, n, k));
        cost.macs = checked_mul(checked_mul(checked_mul(pixels, n), k), c.groups);
        const GemmTraffic t = gemm_lram_traffic(s.rows, s.cols, s.dataflow, pixels, n, k);
        cost.lram_read_elements = saturating_mul(c.groups, t.read_elements);
        cost.lram_write_elements = saturating_mul(c.groups, t.write_elements);
      } else {
        // DepthwiseConv on the vector unit: one MAC per output element per window element.
        cost.vector_macs = checked_mul(checked_mul(pixels, c.out_c), window);
        cost.cycles = vector_cycles(cost.vector_macs, cpe, s.vector_lanes);
        set_vector_traffic(cost, cost.vector_macs, cpe, saturating_mul(pixels, c.out_c));
      }
      return cost;
    }
    case ShapeKind::kPool:
    case ShapeKind::kGlobalPool: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t outputs =
          checked_mul(checked_mul(checked_mul(c.batch, c.out_h()), c.out_w()), c.out_c);
      const std::uint64_t work = checked_mul(outputs, checked_mul(c.kernel_h, c.kernel_w));
      cost.cycles = vector_cycles(work, cpe, s.vector_lanes);
      set_vector_traffic(cost, work, cpe, outputs);
      return cost;
    }
    case ShapeKind::kElements: {
      const auto& e = std::get<ElementsShape>(shape);
      cost.cycles = vector_cycles(e.elements, cpe, s.vector_lanes);
      set_vector_traffic(cost, e.elements, cpe, e.elements);
      return cost;
    }
  }
  throw std::logic_error("unhandled shape kind");
}

Cycles host_call_cycles(std::uint64_t elements, const HostConfig& host) {
  return checked_add(checked_mul(elements, host.cycles_per_element), host.call_cycles);
}

}  // namespace npusim::cost
