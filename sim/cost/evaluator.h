// The one evaluator: what any command costs on a config, with no contention. The schedule's
// checks fix every command's cost with it, so the estimator, the SystemC platform, the compiler
// and the reports all read one number.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "sim/config/hw_config.h"
#include "sim/cost/compute.h"
#include "sim/cost/energy.h"
#include "sim/cost/link.h"
#include "sim/cost/memory.h"
#include "sim/ir/schedule.h"

namespace npusim::cost {

// One command's cost: its cycles and its dynamic energy, from the same counts.
struct CommandCost {
  Cycles cycles = 0;              // on its engine with DRAM to itself
  Cycles compute_cycles = 0;      // slice and host commands: cycles on their unit
  std::uint64_t macs = 0;         // on the systolic array
  std::uint64_t vector_macs = 0;  // on the vector unit
  // Independent of the clock and of contention; HOST commands spend none (the host's energy is
  // not modelled).
  profiler::DynamicEnergy energy;
};

class Evaluator {
 public:
  // `model`: the schedule's model, whose dtype prices MACs and local-memory elements.
  Evaluator(const HwConfig& config, const ModelInfo& model);
  // Throws std::overflow_error when a figure does not fit 64 bits.
  CommandCost cost(const Command& command);
  // Its dynamic energy alone, as cost() gives it, without timing its transfers: for a command
  // that cost() has already accepted (the schedule's checks), so it does not throw.
  profiler::DynamicEnergy energy(const Command& command) const;
  const DmaTiming& dma() const { return dma_; }
  const DramTiming& dram() const { return dram_; }

 private:
  // The energy of `command`, whose slice cost is `slice` (nullptr for the other engines).
  profiler::DynamicEnergy energy_of(const Command& command, const SliceCost* slice) const;

  const HwConfig& config_;
  DmaTiming dma_;
  DramTiming dram_;
  LinkTiming host_link_;
  LinkTiming device_link_;
  ComputeType type_;
  std::unordered_map<std::uint64_t, Cycles> transfer_cycles_;  // by byte count
};

}  // namespace npusim::cost
