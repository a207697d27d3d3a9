#include "sim/estimator/estimator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/util/error.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

using test::gemm;  // a 16x16x16 GEMM: 61 cycles on default
using test::load;  // 1024 bytes: 256 cycles on default
using test::schedule_with;

profiler::Timeline run(const Json& commands, const std::vector<std::string>& overrides = {}) {
  const HwConfig config = parse_hw_config("{}", "cfg", overrides);
  return estimate(parse_schedule(schedule_with(commands), "s.json", config), config);
}

TEST(Estimator, DependentCommandsPayTheDispatchCost) {
  const auto t = run({gemm("S0", 0), gemm("S1", 0, {"S0"})});
  // dispatch 4: S0 [4, 65); S1 ready at 65, starts at 69, ends 130.
  EXPECT_EQ(t.commands[0].start, 4u);
  EXPECT_EQ(t.commands[0].end, 65u);
  EXPECT_EQ(t.commands[1].start, 69u);
  EXPECT_EQ(t.commands[1].end, 130u);
  EXPECT_EQ(t.total_cycles(), 130u);
}

TEST(Estimator, SlicesRunInParallel) {
  const auto t = run({gemm("S0", 0), gemm("S1", 1)});
  EXPECT_EQ(t.commands[0].start, 4u);
  EXPECT_EQ(t.commands[1].start, 4u);
  EXPECT_EQ(t.total_cycles(), 65u);
}

TEST(Estimator, QueuesAreInOrder) {
  // S1 has no dependency but is queued behind S0 on slice 0's array, which waits for DI0.
  const auto t = run({load("DI0"), gemm("S0", 0, {"DI0"}), gemm("S1", 0)});
  EXPECT_EQ(t.commands[0].end, 4u + 256u);
  EXPECT_EQ(t.commands[1].start, 260u + 4u);  // 264, ends 325
  EXPECT_EQ(t.commands[2].start, 325u + 4u);
}

TEST(Estimator, VectorAndArrayOfOneSliceOverlap) {
  Json add = {{"id", "S1"},
              {"engine", "SLICE"},
              {"slice", 0},
              {"op", "Add"},
              {"shape", {{"elements", 160}}}};
  const auto t = run({gemm("S0", 0), add});
  EXPECT_EQ(t.commands[1].start, 4u);
  EXPECT_EQ(t.commands[1].end, 4u + 10u);  // ceil(160 / 16 lanes)
}

TEST(Estimator, DmaChannelsDispatchInOrderToTheFirstFreeChannel) {
  // Two channels, one dispatcher: DI0 dispatched over [0, 4), DI1 over [4, 8) onto the second
  // channel; DI2 waits for the first channel to free at 4 + 256 = 260 and starts at 264.
  const auto t = run({load("DI0"), load("DI1"), load("DI2")}, {"dma.in_channels=2"});
  EXPECT_EQ(t.commands[0].start, 4u);
  EXPECT_EQ(t.commands[1].start, 8u);
  EXPECT_EQ(t.commands[1].unit, 1u);
  EXPECT_EQ(t.commands[2].unit, 0u);
  EXPECT_EQ(t.commands[2].start, 264u);
  EXPECT_EQ(t.commands[2].end, 264u + 256u);
}

TEST(Estimator, DeadlockIsExplained) {
  // Acyclic dependencies, but the in-order queues close a loop: S0 waits for S3 behind S2, and S2
  // waits for S1 behind S0.
  try {
    run({gemm("S0", 0, {"S3"}), gemm("S1", 0), gemm("S2", 1, {"S1"}), gemm("S3", 1)});
    FAIL() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("deadlock"));
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

TEST(Estimator, RunsPastTheCycleLimitAreRejected) {
  // n = 2^32, k = 2^31 on ws 16x16: 2^27 * 2^28 folds of 47 cycles, about 2^60 cycles > 2^50.
  Json huge = gemm("S0", 0);
  huge["shape"] = {{"m", 1}, {"n", 4294967296}, {"k", 2147483648}};
  try {
    run(Json::array({huge}));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("s.json: /commands/0: the schedule runs past 1125899906842624 cycles"));
  }
}

TEST(Estimator, EmptyScheduleTakesNoTime) { EXPECT_EQ(run(Json::array()).total_cycles(), 0u); }

}  // namespace
}  // namespace npusim
