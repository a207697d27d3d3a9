#include "sim/cost/evaluator.h"

namespace npusim::cost {

Evaluator::Evaluator(const HwConfig& config, const ModelInfo& model)
    : config_(config), dma_(config), dram_(config), type_(compute_type(model, config.energy)) {}

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
      c.energy = slice_energy(s, type_, config_.energy);
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
      c.energy = dma_energy(command.engine, command.bytes, config_.energy);
      return c;
    }
  }
  return c;
}

}  // namespace npusim::cost
