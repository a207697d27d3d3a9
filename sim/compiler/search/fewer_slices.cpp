#include "sim/compiler/search/fewer_slices.h"

#include <algorithm>

#include "sim/ir/engines.h"

namespace npusim {

std::vector<std::uint32_t> fewer_slice_counts(std::uint32_t slices) {
  std::vector<std::uint32_t> counts;
  for (std::uint32_t k = 1; k <= kFewerSliceCounts && k < slices; ++k) counts.push_back(slices - k);
  return counts;
}

std::uint64_t array_bound_cycles(const Schedule& schedule, const HwConfig& config,
                                 std::uint32_t slices) {
  std::uint64_t ideal = 0;
  for (const LayerView& layer : schedule.layers) {
    // A batch of GEMMs that share their right operand (a MatMul's weights over a batch of rows)
    // may run as one GEMM of all the rows, which fills the array once per fold instead of once
    // per GEMM and per fold: the smaller of the two forms bounds either.
    LayerView merged = layer;
    merged.gemm.m = layer.gemm.batch * layer.gemm.m;
    merged.gemm.batch = 1;
    const std::uint64_t apart = layer_info(layer, config).ideal_cycles;
    const std::uint64_t together =
        merged.gemm.m / std::max<std::uint64_t>(layer.gemm.batch, 1) == layer.gemm.m
            ? layer_info(merged, config).ideal_cycles
            : 0;  // rows past 64 bits: no bound from this layer
    ideal += std::min(apart, together);
  }
  return (ideal + slices - 1) / slices;
}

}  // namespace npusim
