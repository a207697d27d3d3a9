// The SystemC platform. Each test runs in its own process (gtest_discover_tests), because SystemC
// elaborates once per process: run this binary through ctest, or one test at a time.
#include "sim/platform/platform.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/api/simulate_child.h"
#include "sim/estimator/estimator.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

// This binary simulates, so it sets SystemC's process state first, as the CLI's main does.
class SystemcProcess : public ::testing::Environment {
 public:
  void SetUp() override { configure_systemc_process(); }
};
[[maybe_unused]] ::testing::Environment* const kSystemc =
    ::testing::AddGlobalTestEnvironment(new SystemcProcess);

Json schedule_with(Json commands) {
  return Json{{"format", "npusim-schedule"},
              {"version", 1},
              {"model", {{"name", "t"}}},
              {"commands", std::move(commands)}};
}

Json load(const std::string& id, std::uint64_t bytes, Json deps = Json::array()) {
  return {{"id", id}, {"engine", "DMA_IN"}, {"bytes", bytes}, {"deps", std::move(deps)}};
}

Json store(const std::string& id, std::uint64_t bytes, Json deps = Json::array()) {
  return {{"id", id}, {"engine", "DMA_OUT"}, {"bytes", bytes}, {"deps", std::move(deps)}};
}

Json gemm(const std::string& id, std::uint32_t slice, Json deps = Json::array()) {
  return {{"id", id},
          {"engine", "SLICE"},
          {"slice", slice},
          {"op", "Gemm"},
          {"shape", {{"m", 16}, {"n", 16}, {"k", 16}}},
          {"deps", std::move(deps)}};
}

struct Both {
  profiler::Timeline estimate;
  profiler::Timeline simulation;
};

Both run(const Json& commands, const std::string& config_json,
         const std::vector<std::string>& overrides = {}) {
  const HwConfig config = parse_hw_config(config_json, "cfg", overrides);
  const Schedule s = parse_schedule(schedule_with(commands), "s.json", config);
  return {estimate(s, config), simulate(s, config)};
}

void expect_equal(const profiler::Timeline& a, const profiler::Timeline& b) {
  ASSERT_EQ(a.commands.size(), b.commands.size());
  for (std::size_t i = 0; i < a.commands.size(); ++i) {
    EXPECT_EQ(a.commands[i].start, b.commands[i].start) << "command " << i;
    EXPECT_EQ(a.commands[i].end, b.commands[i].end) << "command " << i;
  }
}

TEST(Platform, WithoutContentionSimulationEqualsEstimate) {
  // Transfers one after another (one channel per engine, DMA_OUT after the compute it stores),
  // overlapping compute: nothing competes for DRAM.
  const Both r = run({load("DI0", 4096), gemm("S0", 0, {"DI0"}), load("DI1", 1000, {"DI0"}),
                      gemm("S1", 1, {"DI1"}), store("DO0", 512, {"S0", "S1"})},
                     "{}");
  expect_equal(r.estimate, r.simulation);
  // DI0: 4 + 32 setup + 16 bursts * 32 port + 16 DRAM + 80 latency = 644.
  EXPECT_EQ(r.simulation.commands[0].end, 644u);
}

TEST(Platform, SingleTransferOverManyDramChannelsEqualsEstimate) {
  // The server config: 8 DRAM channels, 16 bursts outstanding; one transfer alone.
  const Both r = run(Json::array({load("DI0", 1 << 20)}), "{}",
                     {"dram.channels=8", "dram.bandwidth_gbps=512", "clock_mhz=1000",
                      "dma.bytes_per_cycle=128", "dma.burst_bytes=1024", "dma.max_outstanding=16"});
  expect_equal(r.estimate, r.simulation);
}

TEST(Platform, FractionalDramTimingAgreesWithEstimate) {
  // 12.8 GB/s at 933.333 MHz: a non-integer number of bytes per cycle, slower than the port.
  const Both r = run({load("DI0", 5000), store("DO0", 3000, {"DI0"})}, "{}",
                     {"clock_mhz=933.333", "dma.bytes_per_cycle=32", "dram.latency_ns=87.5"});
  expect_equal(r.estimate, r.simulation);
}

TEST(Platform, ContendingTransfersShareDramRoundRobin) {
  // Two channels, each 8 B/cycle, share DRAM of 8 B/cycle (6.4 GB/s at 800 MHz): a 256-byte burst
  // holds DRAM for 32 cycles. A starts at 4 and B at 8 (one dispatcher); after setup and a port
  // burst each, A's bursts reach DRAM at 68, 100, 132, 164 and B's at 72, 104, 136, 168.
  // Grants alternate A0 [68,100) B0 [100,132) A1 [132,164) B1 [164,196) A2 [196,228)
  // B2 [228,260) A3 [260,292) B3 [292,324); + 80 latency: A ends 372, B ends 404.
  const Both r = run({load("DI0", 1024), load("DI1", 1024)}, "{}",
                     {"dma.in_channels=2", "dram.bandwidth_gbps=6.4"});
  // Alone, each would have DRAM back to back from its first burst: 68 + 4 * 32 + 80 = 276, and
  // 4 later for B.
  EXPECT_EQ(r.estimate.commands[0].end, 276u);
  EXPECT_EQ(r.estimate.commands[1].end, 280u);
  EXPECT_EQ(r.simulation.commands[0].end, 372u);
  EXPECT_EQ(r.simulation.commands[1].end, 404u);
  // Each on its own channel.
  EXPECT_EQ(r.simulation.commands[0].unit, 0u);
  EXPECT_EQ(r.simulation.commands[1].unit, 1u);
  // Burst latencies (done - arrival): A 112, 144, 176, 208; B 212-72 = 140, 172, 204, 236.
  // Sum 640 + 752 = 1392; max 236 in bucket [128, 256) = 8.
  const profiler::DramActivity& dram = r.simulation.dram;
  EXPECT_EQ(dram.bursts, 8u);
  EXPECT_EQ(dram.bytes, 2048u);
  EXPECT_EQ(dram.total_latency_cycles, 1392u);
  EXPECT_EQ(dram.max_latency_cycles, 236u);
  EXPECT_EQ(dram.latency_histogram[7], 1u);  // 112 in [64, 128)
  EXPECT_EQ(dram.latency_histogram[8], 7u);
}

TEST(Platform, ReadsAndWritesContendToo) {
  // DMA_IN and DMA_OUT together at 8 B/cycle each against 12.8 GB/s = 16 B/cycle: no
  // slowdown on average, but bursts arriving in the same cycle queue. The simulation is never
  // earlier than the estimate, command by command.
  const Both r = run({load("DI0", 8192), store("DO0", 8192)}, "{}");
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GE(r.simulation.commands[i].end, r.estimate.commands[i].end);
  }
  // Total traffic 16384 bytes at 16 B/cycle needs at least 1024 cycles.
  EXPECT_GE(r.simulation.total_cycles(), 1024u);
}

TEST(Platform, DeadlockEndsTheRunAndNamesTheCommands) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = parse_schedule(
      schedule_with({gemm("S0", 0, {"S3"}), gemm("S1", 0), gemm("S2", 1, {"S1"}), gemm("S3", 1)}),
      "s.json", config);
  try {
    simulate(s, config);
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr(
            "SLICE0.ARRAY holds S0, waiting for S3 (queued on SLICE1.ARRAY behind 1 command(s))"));
    EXPECT_THAT(
        e.what(),
        HasSubstr(
            "SLICE1.ARRAY holds S2, waiting for S1 (queued on SLICE0.ARRAY behind 1 command(s))"));
  }
}

TEST(Platform, ElaboratesOncePerProcess) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = parse_schedule(schedule_with({gemm("S0", 0)}), "s.json", config);
  EXPECT_EQ(simulate(s, config).total_cycles(), 65u);  // 4 dispatch + 61
  EXPECT_THROW(simulate(s, config), std::logic_error);
}

TEST(Platform, SimulationsInChildProcessesRepeatAndEqualTheInProcessOne) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = parse_schedule(
      schedule_with({load("DI0", 1024), gemm("S0", 0, {"DI0"}), store("DO0", 512, {"S0"})}),
      "s.json", config);
  const profiler::Timeline first = api::simulate_in_child(s, config);
  // DI0: 4 dispatch + 256 transfer = 260; S0: 260 + 4 + 61 = 325; DO0 (512 B, two bursts):
  // 325 + 4 + 32 setup + 64 port + 16 DRAM + 80 latency = 521.
  EXPECT_EQ(first.total_cycles(), 521u);
  EXPECT_EQ(first.dram.bursts, 6u);  // 4 + 2
  EXPECT_EQ(first.dram.bytes, 1536u);
  const profiler::Timeline second = api::simulate_in_child(s, config);
  const profiler::Timeline in_process = simulate(s, config);
  for (const profiler::Timeline* t : {&second, &in_process}) {
    ASSERT_EQ(t->commands.size(), first.commands.size());
    for (std::size_t i = 0; i < first.commands.size(); ++i) {
      EXPECT_EQ(t->commands[i].start, first.commands[i].start);
      EXPECT_EQ(t->commands[i].end, first.commands[i].end);
    }
  }
  // A child inherits the parent's SystemC state: once this process has elaborated, it says so.
  EXPECT_THROW(api::simulate_in_child(s, config), std::logic_error);
}

TEST(Platform, ADeadlockInTheChildComesBackWithItsPartialRun) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = parse_schedule(
      schedule_with({gemm("S0", 0, {"S3"}), gemm("S1", 0), gemm("S2", 1, {"S1"}), gemm("S3", 1)}),
      "s.json", config);
  try {
    api::simulate_in_child(s, config);
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("SLICE0.ARRAY holds S0, waiting for S3"));
    ASSERT_NE(e.partial(), nullptr);
    EXPECT_EQ(e.partial()->finished, std::vector<bool>(4, false));
  }
}

TEST(Platform, AChannelFreedInTheCycleOfADispatchIsTakenWhateverTheProcessOrder) {
  // 3 DMA_IN channels, 7 dispatch cycles, no setup and no DRAM latency. DI0 (72 bytes: 9 port
  // cycles, 4.5 DRAM cycles) runs on channel 0 over [7, 21); DI1 (1 byte) on channel 1 over
  // [14, 16); DI2 starts at 21 on channel 2. The engine resumes at 21 from DI2's dispatch and
  // dispatches DI3 in the very cycle DI0 frees channel 0: it takes channel 0, the lowest free one,
  // as the estimate does, whichever of the two processes SystemC runs first at 21.
  const std::vector<std::string> overrides = {"dma.in_channels=3", "dispatch_cycles=7",
                                              "dma.setup_cycles=0", "dram.latency_ns=0"};
  const Json commands = {load("DI0", 72), load("DI1", 1), load("DI2", 4096), load("DI3", 256)};
  const HwConfig config = parse_hw_config("{}", "cfg", overrides);
  const Schedule s = parse_schedule(schedule_with(commands), "s.json", config);
  const profiler::Timeline t = api::simulate_in_child(s, config);
  EXPECT_EQ(t.commands[0].end, 21u);
  EXPECT_EQ(t.commands[1].end, 16u);
  EXPECT_EQ(t.commands[2].start, 21u);
  EXPECT_EQ(t.commands[3].start, 28u);
  EXPECT_EQ(t.commands[3].unit, 0u);
  EXPECT_EQ(estimate(s, config).commands[3].unit, 0u);
}

}  // namespace
}  // namespace npusim
