#include "sim/cost/energy.h"

#include "sim/ir/graph.h"
#include "sim/util/math.h"

namespace npusim::cost {

ComputeType compute_type(std::string_view dtype, const EnergyConfig& energy) {
  const std::uint32_t bytes = dtype_bytes(parse_dtype(dtype).value_or(DType::kInt8));
  ComputeType t;
  t.element_bytes = bytes;
  t.mac_fj = bytes <= 1 ? energy.mac_int8_fj : bytes == 2 ? energy.mac_fp16_fj : energy.mac_fp32_fj;
  return t;
}

ComputeType compute_type(const ModelInfo& model, const EnergyConfig& energy) {
  return compute_type(model.inputs.empty() ? std::string_view("int8") : model.inputs[0].dtype,
                      energy);
}

profiler::DynamicEnergy slice_energy(const SliceCost& cost, const ComputeType& type,
                                     const EnergyConfig& energy) {
  profiler::DynamicEnergy e;
  e.mac_fj = saturating_mul(cost.macs, type.mac_fj);
  e.vector_fj = saturating_mul(cost.vector_lane_cycles, energy.vector_op_fj);
  e.lram_read_fj = saturating_mul(saturating_mul(cost.lram_read_elements, type.element_bytes),
                                  energy.lram_read_fj_per_byte);
  e.lram_write_fj = saturating_mul(saturating_mul(cost.lram_write_elements, type.element_bytes),
                                   energy.lram_write_fj_per_byte);
  return e;
}

profiler::DynamicEnergy dma_energy(EngineKind engine, std::uint64_t bytes,
                                   const EnergyConfig& energy) {
  profiler::DynamicEnergy e;
  e.dram_fj = saturating_mul(bytes, energy.dram_fj_per_byte);
  if (engine == EngineKind::kDmaIn) {
    e.lram_write_fj = saturating_mul(bytes, energy.lram_write_fj_per_byte);
  } else {
    e.lram_read_fj = saturating_mul(bytes, energy.lram_read_fj_per_byte);
  }
  return e;
}

}  // namespace npusim::cost
