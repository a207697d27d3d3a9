// The energy model's prices (docs/cost-model.md#energy): a command's dynamic energy is its counts,
// the same ones its cycles come from (array MACs, vector lane cycles, local-memory bytes read and
// written, DRAM bytes), times the config's energy per unit. It does not depend on the clock or on
// when the command runs. Static energy (power x the run's time) needs a timeline and is computed
// by the profiler (profiler/energy.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "profiler/energy.h"
#include "sim/config/hw_config.h"
#include "sim/cost/compute.h"
#include "sim/ir/schedule.h"

namespace npusim::cost {

// How a schedule's MACs and local-memory elements are priced: the dtype of its model's first
// input (ModelInfo::inputs), int8 when it names none. Commands carry no dtype of their own.
struct ComputeType {
  std::uint64_t mac_fj = 0;         // energy.mac_int8_pj, mac_fp16_pj or mac_fp32_pj, by width
  std::uint32_t element_bytes = 1;  // size of one operand or result element in local memory
};
ComputeType compute_type(const ModelInfo& model, const EnergyConfig& energy);
// The same for a dtype name ("int8", "float16", ...); an unknown name counts as int8.
ComputeType compute_type(std::string_view dtype, const EnergyConfig& energy);

// Dynamic energy of a slice command from its cost's counts.
profiler::DynamicEnergy slice_energy(const SliceCost& cost, const ComputeType& type,
                                     const EnergyConfig& energy);
// Dynamic energy of a DMA transfer of `bytes`: DRAM read or written, and local memory written
// (DMA_IN) or read (DMA_OUT).
profiler::DynamicEnergy dma_energy(EngineKind engine, std::uint64_t bytes,
                                   const EnergyConfig& energy);

}  // namespace npusim::cost
