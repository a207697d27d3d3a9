// Compute costs: cycles of slice ops on the systolic array and the vector unit, and of HOST
// calls. Pure functions of a command's shape and the config.
#pragma once

#include <cstdint>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim::cost {

using Cycles = std::uint64_t;

// Cycles of one GEMM (m x k times k x n) on a rows x cols systolic array, after SCALE-Sim's
// analytical model: the operands fold onto the array in ceil(Sr/rows) * ceil(Sc/cols) folds, each
// costing its fill, stream and drain, 2*rows + cols + T - 2 cycles, where the dataflow picks
// (Sr, Sc, T): os (m, n, k), ws (k, n, m), is (k, m, n). Throws std::overflow_error.
Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k);

struct SliceCost {
  Cycles cycles = 0;              // on the command's unit, at least 1
  std::uint64_t macs = 0;         // multiply-accumulates on the systolic array
  std::uint64_t vector_macs = 0;  // multiply-accumulates on the vector unit (DepthwiseConv)
};
// Throws std::overflow_error when a figure does not fit 64 bits.
SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config);

// A HOST command: the call's round trip plus its per-element cost. Throws std::overflow_error.
Cycles host_call_cycles(std::uint64_t elements, const HostConfig& host);

}  // namespace npusim::cost
