#include "sim/cost/evaluator.h"

#include "sim/util/math.h"

namespace npusim::cost {

Evaluator::Evaluator(const HwConfig& config, const ModelInfo& model)
    : config_(config),
      dma_(config),
      dram_(config),
      host_link_(LinkTiming::host(config)),
      device_link_(LinkTiming::device(config)),
      type_(compute_type(model, config.energy)) {}

CommandCost Evaluator::cost(const Command& command) {
  CommandCost c;
  switch (command.engine) {
    case EngineKind::kArray:
    case EngineKind::kVector: {
      if (std::holds_alternative<std::monostate>(command.shape)) return c;
      const SliceCost s = slice_op_cost(command.op, command.shape, config_);
      c.cycles = c.compute_cycles = s.cycles;
      c.macs = s.macs;
      c.vector_macs = s.vector_macs;
      c.energy = energy_of(command, &s);
      return c;
    }
    case EngineKind::kHost:
      c.cycles = c.compute_cycles = host_call_cycles(command.elements, config_.host);
      return c;
    case EngineKind::kDmaIn:
    case EngineKind::kDmaOut: {
      // Schedules repeat few transfer sizes; each is replayed once.
      auto [it, inserted] = transfer_cycles_.try_emplace(command.bytes, 0);
      if (inserted) it->second = isolated_transfer_cycles(command.bytes, dma_, dram_);
      c.cycles = it->second;
      c.energy = energy_of(command, nullptr);
      return c;
    }
    case EngineKind::kExtHdma:
      c.cycles = link_transfer_cycles(command.bytes, host_link_);
      c.energy = energy_of(command, nullptr);
      return c;
    case EngineKind::kDevHdma:
      c.cycles = link_transfer_cycles(command.bytes, device_link_);
      c.energy = energy_of(command, nullptr);
      return c;
    case EngineKind::kSync:
      // One message over a device link: its latency.
      c.cycles = c.compute_cycles = config_.ideal_memory ? 0 : device_link_.latency_cycles;
      return c;
  }
  return c;
}

profiler::DynamicEnergy Evaluator::energy(const Command& command) const {
  if (on_slice(command.engine)) {
    if (std::holds_alternative<std::monostate>(command.shape)) return {};
    const SliceCost s = slice_op_cost(command.op, command.shape, config_);
    return energy_of(command, &s);
  }
  return energy_of(command, nullptr);
}

profiler::DynamicEnergy Evaluator::energy_of(const Command& command, const SliceCost* slice) const {
  profiler::DynamicEnergy e;
  switch (command.engine) {
    case EngineKind::kArray:
    case EngineKind::kVector:
      if (slice != nullptr) e = slice_energy(*slice, type_, config_.energy);
      break;
    case EngineKind::kDmaIn:
    case EngineKind::kDmaOut:
      e = dma_energy(command.engine, command.bytes, config_.energy);
      break;
    case EngineKind::kExtHdma:
      // The device's DRAM end of the transfer; the link itself has no energy figure yet.
      e.dram_fj = saturating_mul(command.bytes, config_.energy.dram_fj_per_byte);
      break;
    case EngineKind::kDevHdma:
      // Read from one device's DRAM, written to the peer's.
      e.dram_fj = saturating_mul(saturating_mul(command.bytes, 2), config_.energy.dram_fj_per_byte);
      break;
    case EngineKind::kHost:  // the host's energy is not modelled
    case EngineKind::kSync:
      break;
  }
  return e;
}

}  // namespace npusim::cost
