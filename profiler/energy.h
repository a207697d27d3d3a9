// Energy of a run, from the commands' dynamic energy and the device's static power
// (docs/cost-model.md#energy). Each command's dynamic energy is fixed by the cost model
// (sim/cost/energy.h) from the same counts as its cycles, so it is the same in the estimate and
// the simulation and does not depend on the clock; static energy is static power times the run's
// total time, which only a timeline knows, so it is computed here, for either timeline.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npusim::profiler {

using Cycles = std::uint64_t;
struct Workload;

// Dynamic energy in femtojoules, by what spent it. Integers, so sums are exact and every order of
// summation gives the same total.
struct DynamicEnergy {
  std::uint64_t mac_fj = 0;         // array MACs
  std::uint64_t vector_fj = 0;      // vector-unit element operations
  std::uint64_t lram_read_fj = 0;   // local-memory bytes read (array and vector operands, DMA_OUT)
  std::uint64_t lram_write_fj = 0;  // local-memory bytes written (results, DMA_IN)
  std::uint64_t dram_fj = 0;        // DRAM bytes moved by DMA
  std::uint64_t total_fj() const;
  DynamicEnergy& operator+=(const DynamicEnergy& other);
};

// Energy at `power_uw` microwatts over `cycles` cycles of a `clock_khz` clock, in femtojoules,
// rounded to the nearest (halves up): uW * cycles / (khz * 10^3) s * 10^-6 W/uW * 10^15 fJ/J
// = uW * cycles * 10^6 / khz. 0 for a clock of 0 (unknown).
std::uint64_t static_energy_fj(std::uint64_t power_uw, Cycles cycles, std::uint64_t clock_khz);

struct EnergyStats {
  DynamicEnergy dynamic;
  std::uint64_t static_slices_fj = 0;    // slices x slice static power x total time
  std::uint64_t static_dram_fj = 0;      // DRAM static power x total time
  Cycles total_cycles = 0;               // the time the static part is of
  std::vector<std::uint64_t> engine_fj;  // dynamic, indexed like Workload::engines
  // Dynamic, by op type (sorted by name) and by layer (in order of first appearance; the op type
  // stands for an empty layer, as in trace names).
  std::vector<std::pair<std::string, std::uint64_t>> op_type_fj;
  std::vector<std::pair<std::string, std::uint64_t>> layer_fj;

  std::uint64_t static_fj() const { return static_slices_fj + static_dram_fj; }
  std::uint64_t total_fj() const { return dynamic.total_fj() + static_fj(); }
  // Total energy over total time, in mW; 0 for a run of no time.
  double average_power_mw(std::uint64_t clock_khz) const;
};

// The energy of `workload`'s commands run in `total_cycles` (a timeline's total_cycles()).
EnergyStats compute_energy(const Workload& workload, Cycles total_cycles);

// Femtojoules in microjoules (10^9 fJ), as reports print them.
double fj_to_uj(std::uint64_t fj);

}  // namespace npusim::profiler
