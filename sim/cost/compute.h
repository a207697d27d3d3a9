// Compute costs: cycles of slice ops on the systolic array and the vector unit, and of HOST
// calls. Pure functions of a command's shape and the config.
#pragma once

#include <cstdint>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim::cost {

using Cycles = std::uint64_t;

// Cycles of one GEMM (m x k times k x n) on a rows x cols systolic array, equal to SCALE-Sim v2's
// compute report: the dataflow maps (Sr, Sc, T) to os (m, n, k), ws (k, n, m), is (k, m, n); the
// operands fold onto the array in ceil(Sr/rows) * ceil(Sc/cols) folds of P cycles each, P =
// rows + cols + T - 2 for os and 2*rows + cols + T - 2 for ws and is (the stationary operand's
// load); the total is folds * P - 1, at least 1. Throws std::overflow_error.
// How a GEMM maps onto a rows x cols array, as SCALE-Sim maps it.
struct GemmMapping {
  std::uint64_t sr = 0, sc = 0, t = 0;  // onto the rows, onto the columns, streamed in time
  std::uint64_t folds = 0;              // ceil(sr / rows) * ceil(sc / cols)
  std::uint64_t fold_cycles = 0;  // P: os rows + cols + t - 2, ws and is 2 * rows + cols + t - 2
  // The fold length SCALE-Sim's Compute Util % divides by: P for os, P + cols - 1 for ws and is
  // (it measures the never-skewed operand's demand matrix there).
  std::uint64_t util_fold_cycles = 0;
};
// Throws std::overflow_error.
GemmMapping map_gemm(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow, std::uint64_t m,
                     std::uint64_t n, std::uint64_t k);

Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k);

struct SliceCost {
  Cycles cycles = 0;              // on the command's unit, at least 1
  std::uint64_t macs = 0;         // multiply-accumulates on the systolic array
  std::uint64_t vector_macs = 0;  // multiply-accumulates on the vector unit (DepthwiseConv)
  // What the energy model prices (sim/cost/energy.h), counted with the cycles; saturating, as
  // they must never reject a shape the cycles accept.
  std::uint64_t vector_lane_cycles = 0;   // vector ops: units of work x the op's cycles per unit
  std::uint64_t lram_read_elements = 0;   // operand elements read from local memory
  std::uint64_t lram_write_elements = 0;  // result elements written to local memory
};
// Local-memory traffic of one GEMM on the array, in elements, as the systolic folds fetch it: the
// stationary operand (os: none) is read once, the streamed one once per fold of the other array
// dimension, and the outputs written once per fold along the reduction (ws, is: partial sums; os
// keeps them in the array). Saturating.
struct GemmTraffic {
  std::uint64_t read_elements = 0;
  std::uint64_t write_elements = 0;
};
GemmTraffic gemm_lram_traffic(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                              std::uint64_t m, std::uint64_t n, std::uint64_t k);
// Throws std::overflow_error when a figure does not fit 64 bits.
SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config);

// A HOST command: the call's round trip plus its per-element cost. Throws std::overflow_error.
Cycles host_call_cycles(std::uint64_t elements, const HostConfig& host);

}  // namespace npusim::cost
