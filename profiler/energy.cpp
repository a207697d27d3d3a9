#include "profiler/energy.h"

#include <map>

#include "profiler/timeline.h"

namespace npusim::profiler {

std::uint64_t DynamicEnergy::total_fj() const {
  return mac_fj + vector_fj + lram_read_fj + lram_write_fj + dram_fj;
}

DynamicEnergy& DynamicEnergy::operator+=(const DynamicEnergy& other) {
  mac_fj += other.mac_fj;
  vector_fj += other.vector_fj;
  lram_read_fj += other.lram_read_fj;
  lram_write_fj += other.lram_write_fj;
  dram_fj += other.dram_fj;
  return *this;
}

std::uint64_t static_energy_fj(std::uint64_t power_uw, Cycles cycles, std::uint64_t clock_khz) {
  if (clock_khz == 0) return 0;
  // 128 bits: uW (< 2^30) x cycles (< 2^50) x 10^6 fits with room to spare.
  __extension__ using U128 = unsigned __int128;
  const U128 num = U128{power_uw} * cycles * 1000000u;
  return static_cast<std::uint64_t>((num + clock_khz / 2) / clock_khz);
}

double EnergyStats::average_power_mw(std::uint64_t clock_khz) const {
  if (total_cycles == 0 || clock_khz == 0) return 0.0;
  // fJ / (cycles / (khz * 10^3) s) = fJ * khz * 10^3 / cycles fJ/s; mW = 10^12 fJ/s.
  return static_cast<double>(total_fj()) * static_cast<double>(clock_khz) /
         (static_cast<double>(total_cycles) * 1e9);
}

EnergyStats compute_energy(const Workload& w, Cycles total_cycles) {
  EnergyStats e;
  e.total_cycles = total_cycles;
  e.engine_fj.assign(w.engines.size(), 0);
  std::map<std::string, std::uint64_t> by_op;
  std::map<std::string, std::size_t> layer_index;
  // Commands come in runs of one op type and one layer: the last lookups are kept.
  const InternedString* last_op = nullptr;
  std::uint64_t* op_fj = nullptr;
  const std::string* last_layer = nullptr;
  std::size_t layer = 0;
  for (const CommandInfo& c : w.commands) {
    const std::uint64_t fj = c.energy.total_fj();
    e.dynamic += c.energy;
    e.engine_fj[c.engine] += fj;
    if (last_op == nullptr || *last_op != c.op_type) {
      op_fj = &by_op[c.op_type];
      last_op = &c.op_type;
    }
    *op_fj += fj;
    const std::string& name = c.layer.empty() ? c.op_type : c.layer;
    if (last_layer == nullptr || *last_layer != name) {
      const auto [it, added] = layer_index.try_emplace(name, e.layer_fj.size());
      if (added) e.layer_fj.emplace_back(name, 0);
      layer = it->second;
      last_layer = &name;
    }
    e.layer_fj[layer].second += fj;
  }
  e.op_type_fj.assign(by_op.begin(), by_op.end());
  const DeviceInfo& d = w.device;
  e.static_slices_fj =
      static_energy_fj(std::uint64_t{d.slices} * d.slice_static_uw, total_cycles, d.clock_khz);
  e.static_dram_fj = static_energy_fj(d.dram_static_uw, total_cycles, d.clock_khz);
  return e;
}

double fj_to_uj(std::uint64_t fj) { return static_cast<double>(fj) / 1e9; }

}  // namespace npusim::profiler
