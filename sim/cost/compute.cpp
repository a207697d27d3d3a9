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

}  // namespace

Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  std::uint64_t sr = 0;  // operand dimension mapped onto the array's rows
  std::uint64_t sc = 0;  // ... onto its columns
  std::uint64_t t = 0;   // ... streamed through it in time
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      sr = m, sc = n, t = k;
      break;
    case Dataflow::kWeightStationary:
      sr = k, sc = n, t = m;
      break;
    case Dataflow::kInputStationary:
      sr = k, sc = m, t = n;
      break;
  }
  const std::uint64_t folds = checked_mul(ceil_div(sr, rows), ceil_div(sc, cols));
  // Fill (rows), stream (t), drain through the array (rows + cols - 2).
  const std::uint64_t per_fold = checked_add(2u * std::uint64_t{rows} + cols - 2, t);
  return checked_mul(folds, per_fold);
}

SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config) {
  const OpInfo& info = op_table().at(op);
  const SliceConfig& s = config.slices;
  const std::uint32_t cpe = s.vector_op_cycles.at(op);
  SliceCost cost;
  switch (info.shape) {
    case ShapeKind::kGemm: {
      const auto& g = std::get<GemmShape>(shape);
      cost.cycles = checked_mul(g.batch, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, g.m, g.n, g.k));
      cost.macs = checked_mul(checked_mul(checked_mul(g.batch, g.m), g.n), g.k);
      return cost;
    }
    case ShapeKind::kConv: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t pixels = checked_mul(checked_mul(c.batch, c.out_h()), c.out_w());
      const std::uint64_t window = checked_mul(c.kernel_h, c.kernel_w);
      if (info.unit == Unit::kArray) {
        // im2col: each group is a GEMM of (pixels) x (window * in_c/groups) x (out_c/groups).
        const std::uint64_t k = checked_mul(window, c.in_c / c.groups);
        const std::uint64_t n = c.out_c / c.groups;
        cost.cycles = checked_mul(c.groups, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, pixels, n, k));
        cost.macs = checked_mul(checked_mul(checked_mul(pixels, n), k), c.groups);
      } else {
        // DepthwiseConv on the vector unit: one MAC per output element per window element.
        cost.vector_macs = checked_mul(checked_mul(pixels, c.out_c), window);
        cost.cycles = vector_cycles(cost.vector_macs, cpe, s.vector_lanes);
      }
      return cost;
    }
    case ShapeKind::kPool:
    case ShapeKind::kGlobalPool: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t outputs = checked_mul(checked_mul(checked_mul(c.batch, c.out_h()), c.out_w()), c.out_c);
      cost.cycles = vector_cycles(checked_mul(outputs, checked_mul(c.kernel_h, c.kernel_w)), cpe, s.vector_lanes);
      return cost;
    }
    case ShapeKind::kElements: {
      const auto& e = std::get<ElementsShape>(shape);
      cost.cycles = vector_cycles(e.elements, cpe, s.vector_lanes);
      return cost;
    }
  }
  throw std::logic_error("unhandled shape kind");
}

Cycles host_call_cycles(std::uint64_t elements, const HostConfig& host) {
  return checked_add(checked_mul(elements, host.cycles_per_element), host.call_cycles);
}

}  // namespace npusim::cost
