// The energy model (docs/cost-model.md#energy): hand-computed figures, sums of parts, and how
// dynamic and static energy follow the clock. Estimates only: no SystemC needed (for fc the
// simulation's timeline is the estimate's,
// docs/cost-model.md#worked-examples-default-config-modelsfcjson).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/energy.h"
#include "profiler/timeline.h"
#include "sim/compiler/compiler.h"
#include "sim/config/hw_config.h"
#include "sim/cost/energy.h"
#include "sim/cost/evaluator.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule.h"

namespace npusim {
namespace {

const std::string kSource = NPUSIM_SOURCE_DIR;

struct EnergyRun {
  profiler::Workload workload;
  profiler::Cycles total_cycles = 0;
  profiler::EnergyStats energy;
};

EnergyRun estimate_run(const std::string& model, const std::vector<std::string>& overrides = {}) {
  const HwConfig config = load_hw_config("default", overrides);
  const Schedule schedule = load_schedule(kSource + "/models/" + model, config);
  EnergyRun r;
  r.workload = make_workload(schedule, config);
  r.total_cycles = estimate(schedule, config).total_cycles();
  r.energy = profiler::compute_energy(r.workload, r.total_cycles);
  return r;
}

TEST(Energy, FcOnDefaultIsTheHandComputedFigure) {
  // models/fc.json on `default` (int8: 1 byte per element; 16x16 ws array; 2 slices), with the
  // `default` energy preset: MAC 0.23 pJ, LRAM 2.5 pJ/B read and written, DRAM 160 pJ/B, static
  // 2 mW per slice and 20 mW of DRAM.
  //
  // S0, Gemm m = 1, n = 256, k = 1024:
  //   MACs        = 1 * 256 * 1024                           = 262144 -> x 0.23 = 60293.12 pJ
  //   ws keeps the weights (k x n = 262144 B) in the array: read once;
  //   the inputs (m x k = 1024 B) stream once per column fold, ceil(256/16) = 16: 16384 B;
  //   LRAM read   = 262144 + 16384 = 278528 B                 -> x 2.5 = 696320 pJ
  //   the outputs (m x n = 256 B) are written once per row fold, ceil(1024/16) = 64: 16384 B
  //   LRAM write  = 16384 B                                   -> x 2.5 = 40960 pJ
  // DI0, 262144 B in: DRAM 262144 x 160 = 41943040 pJ; LRAM write 262144 x 2.5 = 655360 pJ
  // DI1,   1024 B in: DRAM   1024 x 160 =   163840 pJ; LRAM write   1024 x 2.5 =   2560 pJ
  // DO0,    256 B out: DRAM    256 x 160 =    40960 pJ; LRAM read     256 x 2.5 =    640 pJ
  // dynamic = 60293.12 + (696320 + 640) + (40960 + 655360 + 2560) + (41943040 + 163840 + 40960)
  //         = 60293.12 + 696960 + 698880 + 42147840 = 43603973.12 pJ
  // time: DO0 ends at cycle 81455 (docs/cost-model.md works it out), 81455 / 800 MHz
  //   = 101.81875 us; static = (2 x 2 + 20) mW x 101.81875 us = 24 mW x 101.81875 us
  //   = 2443.65 nJ = 2443650 pJ
  // total = 43603973.12 + 2443650 = 46047623.12 pJ = 46.04762312 uJ
  const EnergyRun r = estimate_run("fc.json");
  ASSERT_EQ(r.total_cycles, 81455u);
  const profiler::DynamicEnergy& d = r.energy.dynamic;
  EXPECT_EQ(d.mac_fj, 60293120u);
  EXPECT_EQ(d.vector_fj, 0u);
  EXPECT_EQ(d.lram_read_fj, 696960000u);
  EXPECT_EQ(d.lram_write_fj, 698880000u);
  EXPECT_EQ(d.dram_fj, 42147840000u);
  EXPECT_EQ(d.total_fj(), 43603973120u);
  EXPECT_EQ(r.energy.static_slices_fj, 407275000u);  // 4 mW x 101.81875 us
  EXPECT_EQ(r.energy.static_dram_fj, 2036375000u);   // 20 mW x 101.81875 us
  EXPECT_EQ(r.energy.total_fj(), 46047623120u);
  // Per op: S0 is its MACs and LRAM traffic; DI0 its DRAM read and LRAM write.
  EXPECT_EQ(r.workload.commands[2].energy.total_fj(), 60293120u + 696320000u + 40960000u);
  EXPECT_EQ(r.workload.commands[0].energy.total_fj(), 41943040000u + 655360000u);
  // 46047623.12 pJ over 101.81875 us: 452.2509 mW.
  EXPECT_NEAR(r.energy.average_power_mw(800000), 452.2509, 1e-4);
}

// The profiler's per-command energy comes from Evaluator::energy, the schedule's checks from
// Evaluator::cost: the two must agree on every kind of command, links and barriers included (the
// BERT layer on two devices has EXT_HDMA, DEV_HDMA and SYNC commands besides the slices' and
// DMAs').
TEST(Energy, TheWorkloadsEnergyIsTheCostModelsForEveryKindOfCommand) {
  const HwConfig config = load_hw_config("server", {"devices.count=2"});
  const Graph graph = parse_graph_json(read_json_file(kSource + "/models/zoo/bert_base_layer.json"),
                                       "bert_base_layer.json");
  const Schedule schedule = compile_schedule(graph, config);
  const profiler::Workload w = make_workload(schedule, config);
  cost::Evaluator evaluator(config, schedule.model);
  std::vector<bool> seen(8, false);
  ASSERT_EQ(w.commands.size(), schedule.commands.size());
  for (std::size_t i = 0; i < schedule.commands.size(); ++i) {
    const Command& c = schedule.commands[i];
    seen[static_cast<std::size_t>(c.engine)] = true;
    const profiler::DynamicEnergy want = evaluator.cost(c).energy;
    const profiler::DynamicEnergy& got = w.commands[i].energy;
    EXPECT_EQ(got.mac_fj, want.mac_fj) << c.id;
    EXPECT_EQ(got.vector_fj, want.vector_fj) << c.id;
    EXPECT_EQ(got.lram_read_fj, want.lram_read_fj) << c.id;
    EXPECT_EQ(got.lram_write_fj, want.lram_write_fj) << c.id;
    EXPECT_EQ(got.dram_fj, want.dram_fj) << c.id;
  }
  for (const EngineKind kind :
       {EngineKind::kArray, EngineKind::kVector, EngineKind::kDmaIn, EngineKind::kDmaOut,
        EngineKind::kExtHdma, EngineKind::kDevHdma, EngineKind::kSync}) {
    EXPECT_TRUE(seen[static_cast<std::size_t>(kind)]) << static_cast<int>(kind);
  }
}

TEST(Energy, TheTotalIsTheSumOfItsParts) {
  for (const char* model : {"fc.json", "convnet.json"}) {
    const EnergyRun r = estimate_run(model);
    const profiler::EnergyStats& e = r.energy;
    std::uint64_t engines = 0, layers = 0, op_types = 0, commands = 0;
    for (std::uint64_t fj : e.engine_fj) engines += fj;
    for (const auto& [name, fj] : e.layer_fj) layers += fj;
    for (const auto& [name, fj] : e.op_type_fj) op_types += fj;
    for (const profiler::CommandInfo& c : r.workload.commands) commands += c.energy.total_fj();
    const std::uint64_t dynamic = e.dynamic.total_fj();
    EXPECT_GT(dynamic, 0u) << model;
    if (std::string(model) == "convnet.json") {
      EXPECT_GT(e.dynamic.vector_fj, 0u);
    }
    EXPECT_EQ(engines, dynamic) << model;
    EXPECT_EQ(layers, dynamic) << model;
    EXPECT_EQ(op_types, dynamic) << model;
    EXPECT_EQ(commands, dynamic) << model;
    EXPECT_EQ(engines + e.static_fj(), e.total_fj()) << model;
    EXPECT_EQ(layers + e.static_slices_fj + e.static_dram_fj, e.total_fj()) << model;
    const profiler::DynamicEnergy& d = e.dynamic;
    EXPECT_EQ(d.mac_fj + d.vector_fj + d.lram_read_fj + d.lram_write_fj + d.dram_fj, dynamic);
  }
}

TEST(Energy, DoublingTheClockKeepsDynamicEnergyAndScalesStaticWithTime) {
  for (const char* model : {"fc.json", "convnet.json"}) {
    const EnergyRun slow = estimate_run(model);
    const EnergyRun fast = estimate_run(model, {"clock_mhz=1600"});
    // Dynamic energy counts work, which the clock does not change.
    EXPECT_EQ(fast.energy.dynamic.total_fj(), slow.energy.dynamic.total_fj()) << model;
    for (std::size_t i = 0; i < slow.workload.commands.size(); ++i) {
      EXPECT_EQ(fast.workload.commands[i].energy.total_fj(),
                slow.workload.commands[i].energy.total_fj());
    }
    // Static energy is power x time; time = cycles / clock. DRAM does not speed up with the
    // clock, so the cycles do not halve and neither does the static energy.
    const double slow_s = static_cast<double>(slow.total_cycles) / 800e6;
    const double fast_s = static_cast<double>(fast.total_cycles) / 1600e6;
    EXPECT_LT(fast_s, slow_s) << model;
    EXPECT_NEAR(
        static_cast<double>(fast.energy.static_fj()) / static_cast<double>(slow.energy.static_fj()),
        fast_s / slow_s, 1e-9)
        << model;
    // 24 mW on `default`: 24e-3 W x seconds, in fJ.
    EXPECT_NEAR(static_cast<double>(fast.energy.static_fj()), 24e-3 * fast_s * 1e15, 2.0);
  }
}

TEST(Energy, StaticEnergyIsExactAndRounded) {
  // 24000 uW x 81455 cycles x 10^6 / 800000 kHz = 2443650000 fJ exactly.
  EXPECT_EQ(profiler::static_energy_fj(24000, 81455, 800000), 2443650000u);
  // 1 uW for 1 cycle at 3 kHz: 10^6 / 3 = 333333.33 fJ -> 333333; at 2 GHz 0.5 -> 1 (halves up).
  EXPECT_EQ(profiler::static_energy_fj(1, 1, 3), 333333u);
  EXPECT_EQ(profiler::static_energy_fj(1, 1, 2000000), 1u);
  EXPECT_EQ(profiler::static_energy_fj(5, 10, 0), 0u);
}

TEST(Energy, MacsArePricedByTheModelsDtype) {
  const HwConfig c;  // the `default` preset's figures
  EXPECT_EQ(cost::compute_type("int8", c.energy).mac_fj, 230u);
  EXPECT_EQ(cost::compute_type("float16", c.energy).mac_fj, 1500u);
  EXPECT_EQ(cost::compute_type("bfloat16", c.energy).element_bytes, 2u);
  EXPECT_EQ(cost::compute_type("float32", c.energy).mac_fj, 4600u);
  EXPECT_EQ(cost::compute_type("float32", c.energy).element_bytes, 4u);
  EXPECT_EQ(cost::compute_type(ModelInfo{}, c.energy).mac_fj, 230u);  // no inputs: int8
}

TEST(Energy, VectorOpsPayEachCycleOfTheirElements) {
  // Exp costs 4 cycles per element by default: 100 elements are 400 lane cycles at 1.5 pJ,
  // reading 100 and writing 100 int8 elements at 2.5 pJ/B.
  const HwConfig c;
  const cost::SliceCost s = cost::slice_op_cost(find_op("Exp"), ElementsShape{100}, c);
  EXPECT_EQ(s.vector_lane_cycles, 400u);
  const profiler::DynamicEnergy e =
      cost::slice_energy(s, cost::compute_type("int8", c.energy), c.energy);
  EXPECT_EQ(e.vector_fj, 400u * 1500u);
  EXPECT_EQ(e.lram_read_fj, 100u * 2500u);
  EXPECT_EQ(e.lram_write_fj, 100u * 2500u);
  EXPECT_EQ(e.mac_fj, 0u);
}

TEST(Energy, PresetsAreTheDocumentedOnes) {
  const HwConfig server = load_hw_config("server");
  EXPECT_EQ(server.energy.dram_fj_per_byte, 31200u);  // HBM2, 3.9 pJ/bit
  EXPECT_EQ(server.energy.slice_static_uw, 128000u);
  EXPECT_EQ(server.energy.dram_static_uw, 160000u);
  const HwConfig def = load_hw_config("default");
  const HwConfig empty;
  EXPECT_EQ(def.energy.dram_fj_per_byte, empty.energy.dram_fj_per_byte);  // `{}` is `default`
  EXPECT_EQ(def.energy.mac_int8_fj, empty.energy.mac_int8_fj);
  EXPECT_EQ(def.energy.slice_static_uw, empty.energy.slice_static_uw);
}

}  // namespace
}  // namespace npusim
