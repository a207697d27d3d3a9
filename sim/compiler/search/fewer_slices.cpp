#include "sim/compiler/search/fewer_slices.h"

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
  for (const LayerView& layer : schedule.layers) ideal += layer_info(layer, config).ideal_cycles;
  return (ideal + slices - 1) / slices;
}

}  // namespace npusim
