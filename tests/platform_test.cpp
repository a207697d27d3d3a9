// The SystemC platform. Each test runs in its own process (gtest_discover_tests), because SystemC
// elaborates once per process: run this binary through ctest, or one test at a time.
#include "sim/platform/platform.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "sim/api/simulate_child.h"
#include "sim/compiler/compiler.h"
#include "sim/cost/memory.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/platform/dram.h"
#include "sim/platform/sc_time.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "tests/schedule_support.h"

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

using test::gemm;  // a 16x16x16 GEMM: 61 cycles on default

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
  for (const DramModel model : {DramModel::kPerBurst, DramModel::kClosedForm}) {
    set_dram_model(model);
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
}

// The closed form against burst-by-burst arbitration. Each schedule runs twice, once per DRAM
// model, each in a child process (SystemC elaborates once per process); every command's start,
// end and unit and the DRAM activity must be identical.

struct Models {
  profiler::Timeline per_burst;
  profiler::Timeline closed_form;
};

Models both_models(const Schedule& s, const HwConfig& config) {
  set_dram_model(DramModel::kPerBurst);
  profiler::Timeline per_burst = api::simulate_in_child(s, config);
  set_dram_model(DramModel::kClosedForm);
  return {std::move(per_burst), api::simulate_in_child(s, config)};
}

void expect_identical(const profiler::Timeline& a, const profiler::Timeline& b,
                      const std::string& what = "") {
  ASSERT_EQ(a.commands.size(), b.commands.size()) << what;
  for (std::size_t i = 0; i < a.commands.size(); ++i) {
    EXPECT_EQ(a.commands[i].start, b.commands[i].start) << what << " command " << i;
    EXPECT_EQ(a.commands[i].end, b.commands[i].end) << what << " command " << i;
    EXPECT_EQ(a.commands[i].unit, b.commands[i].unit) << what << " command " << i;
  }
  EXPECT_EQ(a.dram.bursts, b.dram.bursts) << what;
  EXPECT_EQ(a.dram.bytes, b.dram.bytes) << what;
  EXPECT_EQ(a.dram.total_latency_cycles, b.dram.total_latency_cycles) << what;
  EXPECT_EQ(a.dram.max_latency_cycles, b.dram.max_latency_cycles) << what;
  EXPECT_EQ(a.dram.latency_histogram, b.dram.latency_histogram) << what;
}

Models run_models(const Json& commands, const std::vector<std::string>& overrides = {}) {
  const HwConfig config = parse_hw_config("{}", "cfg", overrides);
  return both_models(parse_schedule(schedule_with(commands), "s.json", config), config);
}

TEST(ClosedForm, UncontendedTransfersOfEverySizeEqualPerBurst) {
  // One after another: each has DRAM to itself. Sizes below, at and above a burst, not multiples
  // of it, and beyond the outstanding window (8 bursts).
  Json commands = Json::array();
  std::string prev;
  int n = 0;
  for (std::uint64_t bytes : {1u, 255u, 256u, 257u, 1000u, 2048u, 2049u, 8192u, 65535u}) {
    const std::string id = "DI" + std::to_string(n++);
    commands.push_back(load(id, bytes, prev.empty() ? Json::array() : Json::array({prev})));
    prev = id;
  }
  const Models m = run_models(commands);
  expect_identical(m.per_burst, m.closed_form);
  // And both equal the estimate: nothing contends.
  const HwConfig config = parse_hw_config("{}", "cfg");
  expect_equal(estimate(parse_schedule(schedule_with(commands), "s.json", config), config),
               m.closed_form);
}

TEST(ClosedForm, TwoChannelsContendingFromTheStartEqualPerBurst) {
  // The worked example of ContendingTransfersShareDramRoundRobin (A ends 372, B 404), and the
  // same with the second transfer starting in the very cycle the first does.
  Models m = run_models({load("DI0", 1024), load("DI1", 1024)},
                        {"dma.in_channels=2", "dram.bandwidth_gbps=6.4"});
  expect_identical(m.per_burst, m.closed_form);
  EXPECT_EQ(m.closed_form.commands[0].end, 372u);
  EXPECT_EQ(m.closed_form.commands[1].end, 404u);
  m = run_models({load("DI0", 1024), load("DI1", 1000)},
                 {"dma.in_channels=2", "dram.bandwidth_gbps=6.4", "dispatch_cycles=0"});
  expect_identical(m.per_burst, m.closed_form);
}

TEST(ClosedForm, ATransferStartingInsideAnothersWindowEqualsPerBurst) {
  // DI0 (8 KiB, 32 bursts) starts at 4 and runs alone in closed form until DO0, which waits for
  // S0 (4 + 61 = 65) and starts at 69, begins its bursts at 101: DI0's closed form is undone at
  // 101 and both go on burst by burst. DRAM at 3.2 GB/s (4 B/cycle) keeps DI0's bursts queued.
  for (const char* bandwidth : {"dram.bandwidth_gbps=3.2", "dram.bandwidth_gbps=12.8"}) {
    const Models m =
        run_models({load("DI0", 8192), gemm("S0", 0), store("DO0", 3000, {"S0"})}, {bandwidth});
    expect_identical(m.per_burst, m.closed_form, bandwidth);
    EXPECT_GT(m.closed_form.commands[0].end, m.closed_form.commands[2].start) << bandwidth;
  }
  // Several transfers cut into one long one, at different points of it.
  const Models m = run_models(
      {load("DI0", 65536), gemm("S0", 0), store("DO0", 500, {"S0"}), gemm("S1", 0, {"S0"}),
       store("DO1", 4000, {"S1"}), gemm("S2", 0, {"S1"}), store("DO2", 1, {"S2"})},
      {"dram.bandwidth_gbps=6.4"});
  expect_identical(m.per_burst, m.closed_form);
}

TEST(ClosedForm, OutstandingLimitsEqualPerBurst) {
  for (const char* outstanding :
       {"dma.max_outstanding=1", "dma.max_outstanding=2", "dma.max_outstanding=3"}) {
    const Models m = run_models({load("DI0", 5000), load("DI1", 3000), gemm("S0", 0),
                                 store("DO0", 4097, {"S0"}), load("DI2", 777, {"DI0"})},
                                {outstanding, "dma.in_channels=2"});
    expect_identical(m.per_burst, m.closed_form, outstanding);
  }
}

TEST(ClosedForm, SeveralDramChannelsEqualPerBurst) {
  // The server's DRAM (8 channels, 512 GB/s at 1 GHz) and a slow 3-channel one, with transfers
  // alone, contending, and starting inside each other.
  for (const std::vector<std::string>& dram :
       {std::vector<std::string>{"dram.channels=8", "dram.bandwidth_gbps=512", "clock_mhz=1000",
                                 "dma.bytes_per_cycle=128", "dma.burst_bytes=1024",
                                 "dma.max_outstanding=16", "dma.in_channels=4"},
        std::vector<std::string>{"dram.channels=3", "dram.bandwidth_gbps=10", "clock_mhz=933.333",
                                 "dram.latency_ns=87.5", "dma.in_channels=3"}}) {
    const Models m = run_models(
        {load("DI0", 1 << 20), load("DI1", 70000), gemm("S0", 0), store("DO0", 33333, {"S0"}),
         load("DI2", 5000, {"DI1"}), load("DI3", 12345, {"S0"}), store("DO1", 999, {"DI3"})},
        dram);
    expect_identical(m.per_burst, m.closed_form, dram[0]);
  }
}

// Small random configs and schedules, from a fixed seed: DMA commands on several channels of both
// engines with compute between them, so that transfers run alone, contend from the start, start
// inside each other's closed forms and queue behind a busy DRAM.
TEST(ClosedForm, RandomSchedulesEqualPerBurst) {
  std::mt19937_64 rng(20240613);
  auto pick = [&rng](std::initializer_list<const char*> values) {
    std::uniform_int_distribution<std::size_t> d(0, values.size() - 1);
    return std::string(values.begin()[d(rng)]);
  };
  auto uniform = [&rng](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 200; ++round) {
    const std::vector<std::string> overrides = {
        "clock_mhz=" + pick({"800", "1000", "933.333", "250"}),
        "dram.bandwidth_gbps=" + pick({"3.2", "6.4", "12.8", "25.6", "7.777"}),
        "dram.latency_ns=" + pick({"0", "1", "100", "87.5"}),
        "dram.channels=" + pick({"1", "1", "2", "3", "4", "8"}),
        "dma.burst_bytes=" + pick({"64", "100", "256", "1024"}),
        "dma.bytes_per_cycle=" + pick({"4", "8", "16", "64", "128"}),
        "dma.setup_cycles=" + pick({"0", "1", "32"}),
        "dma.max_outstanding=" + pick({"1", "2", "4", "8", "16"}),
        "dma.in_channels=" + pick({"1", "2", "3"}),
        "dma.out_channels=" + pick({"1", "2"}),
        "dispatch_cycles=" + pick({"0", "1", "4", "8"}),
    };
    Json commands = Json::array();
    std::vector<std::string> ids;
    const std::uint64_t count = uniform(2, 14);
    for (std::uint64_t i = 0; i < count; ++i) {
      Json deps = Json::array();
      if (!ids.empty() && uniform(0, 2) != 0) deps.push_back(ids[uniform(0, ids.size() - 1)]);
      const std::uint64_t kind = uniform(0, 4);
      const std::string id = (kind < 2 ? "DI" : kind < 4 ? "DO" : "S") + std::to_string(i);
      const std::uint64_t size = uniform(0, 9);
      const std::uint64_t bytes = size < 3   ? uniform(1, 300)
                                  : size < 9 ? uniform(1, 6000)
                                             : uniform(1, 40000);
      commands.push_back(kind < 2   ? load(id, bytes, deps)
                         : kind < 4 ? store(id, bytes, deps)
                                    : gemm(id, static_cast<std::uint32_t>(uniform(0, 1)), deps));
      ids.push_back(id);
    }
    const Models m = run_models(commands, overrides);
    std::string what = "round " + std::to_string(round) + ":";
    for (const std::string& o : overrides) what += " " + o;
    expect_identical(m.per_burst, m.closed_form, what);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << what << "\n" << commands.dump();
      return;
    }
  }
}

// Compiled zoo models, where transfers overlap by the thousand: ResNet-50 and BERT on the edge
// NPU (one DMA channel per engine, one DRAM channel) and every zoo model on the server (four
// DMA_IN and two DMA_OUT channels over eight DRAM channels), where most transfers contend.
TEST(ClosedForm, ZooModelsEqualPerBurst) {
  using Run = std::pair<std::string, std::string>;
  for (const auto& [model, config_name] :
       {Run{"resnet50", "default"}, Run{"bert_base_layer", "default"}, Run{"resnet50", "server"},
        Run{"mobilenetv2", "server"}, Run{"yolo_tiny", "server"}, Run{"bert_base_layer", "server"},
        Run{"llm7b_decoder_layer", "server"}}) {
    const std::string path = std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/" + model + ".json";
    const HwConfig config = load_hw_config(config_name);
    const Schedule s = compile_schedule(parse_graph_json(read_json_file(path), path), config);
    const Models m = both_models(s, config);
    std::string what = model;
    what += "/";
    what += config_name;
    expect_identical(m.per_burst, m.closed_form, what);
  }
}

// The Dram module on its own: a transfer alone is served in closed form (its bursts are counted
// apart from the event sink's), and one that another cuts into is replayed and arbitrated burst
// by burst from the cycle the other starts.
class DramBench : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DramBench);
  // A runs two transfers of 8 KiB back to back; B one of 1000 bytes from cycle `b_start`.
  DramBench(const sc_core::sc_module_name& name, platform::Dram& dram, std::uint64_t b_start)
      : sc_module(name),
        dram_(dram),
        a_(dram.add_requester()),
        b_(dram.add_requester()),
        b_start_(b_start) {
    SC_THREAD(run_a);
    SC_THREAD(run_b);
  }
  std::vector<std::uint64_t> a_ends;
  std::vector<std::uint64_t> b_ends;

 private:
  void run_a() {
    for (int i = 0; i < 2; ++i) {
      dram_.start_transfer(a_, 8192, a_done_);
      wait(a_done_);
      a_ends.push_back(platform::now_cycles());
      dram_.end_transfer(a_);
    }
  }
  void run_b() {
    wait(platform::cycles(b_start_));
    dram_.start_transfer(b_, 1000, b_done_);
    wait(b_done_);
    b_ends.push_back(platform::now_cycles());
    dram_.end_transfer(b_);
  }
  platform::Dram& dram_;
  std::uint32_t a_;
  std::uint32_t b_;
  std::uint64_t b_start_;
  sc_core::sc_event a_done_;
  sc_core::sc_event b_done_;
};

TEST(ClosedForm, DramServesALoneTransferInOneStepAndFallsBackWhenCutInto) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const cost::DmaTiming dma(config);
  const cost::DramTiming timing(config);
  // 8192 bytes alone: isolated_transfer_cycles less the setup, which the DMA channel waits first.
  const std::uint64_t alone = cost::isolated_transfer_cycles(8192, dma, timing) - dma.setup_cycles;
  profiler::TimelineRecorder recorder(0);
  platform::Dram dram("dram", timing, dma, recorder, true);
  // B starts 100 cycles into A's second transfer, which is then in its closed form.
  DramBench bench("bench", dram, alone + 100);
  sc_core::sc_start();
  ASSERT_EQ(bench.a_ends.size(), 2u);
  ASSERT_EQ(bench.b_ends.size(), 1u);
  EXPECT_EQ(bench.a_ends[0], alone);
  EXPECT_GE(bench.a_ends[1], 2 * alone);
  // A's first transfer was one step: its 32 bursts are all counted by the closed form, none by
  // the sink. Its second was undone at alone + 100: the bursts granted before then were replayed
  // to the sink, the next ones arbitrated with B's 4 (to the sink too), and once B's were all
  // served A's rest went back to the closed form.
  const profiler::Timeline t = recorder.take();
  EXPECT_GE(dram.closed_form_activity().bursts, 32u);
  EXPECT_GT(t.dram.bursts, 4u);
  EXPECT_EQ(dram.closed_form_activity().bursts + t.dram.bursts, 68u);
  EXPECT_EQ(dram.bursts_served(), 68u);
}

}  // namespace
}  // namespace npusim
