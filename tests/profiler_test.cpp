#include <gtest/gtest.h>

#include <sstream>

#include "profiler/csv_writers.h"
#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {
namespace {

Workload two_engine_workload() {
  Workload w;
  w.model_name = "m";
  w.device.clock_khz = 800000;
  w.device.slices = 1;
  w.device.array_rows = 16;
  w.device.array_cols = 16;
  w.device.lram_bytes = 1000;
  w.device.dram_bandwidth_mbps = 12800;  // 16 bytes per cycle at 800 MHz
  w.engines = {{"SLICE0.ARRAY", EngineKind::kArray, 1, 0, 0, "SLICE0.ARRAY"},
               {"DMA_IN", EngineKind::kDmaIn, 2, 0, 0, "DMA_IN"}};
  w.programs = {{"p0", "loc(a;b)"}, {"p1", "plain"}};
  w.commands = {
      {"DI0", 1, "DMA_IN", "l0", "loc(\"x\")", 0, 1600, 0, 0, 0, 600, 0, 100, {}},
      {"DI1", 1, "DMA_IN", "l0", "a,b", 0, 160, 0, 0, 0, 300, 0, 100, {}},
      {"S0", 0, "Gemm", "l0", "", 1, 0, 0, 256 * 100, 0, 0, 900, 400, {0, 1}},
  };
  return w;
}

Timeline two_engine_timeline() {
  Timeline t;
  t.commands = {{0, 100}, {50, 150}, {150, 550}};
  return t;
}

TEST(Csv, FieldsAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("a;b", ';'), "\"a;b\"");
  EXPECT_EQ(csv_field("a,b", ';'), "a,b");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, TimelineIsOrderedByStart) {
  const Workload w = two_engine_workload();
  Timeline t = two_engine_timeline();
  t.commands[0] = {60, 100};  // DI0 now starts after DI1
  std::ostringstream out;
  write_timeline_csv(out, w, t);
  EXPECT_EQ(out.str(),
            "ID,Start,End,Location,Op Type\n"
            "DI1,50,150,\"a,b\",DMA_IN\n"
            "DI0,60,100,\"loc(\"\"x\"\")\",DMA_IN\n"
            "S0,150,550,,Gemm\n");
}

TEST(Csv, RuntimeCsvRoundsMicrosecondsToNearest) {
  const Workload w = two_engine_workload();
  std::ostringstream out;
  write_runtime_csv(out, w, two_engine_timeline());
  // p0: [0, 150): ends at 150 cycles = 0.1875 us -> 0; lasts 0.1875 -> 0.
  // p1: [150, 550): ends at 550 cycles = 0.6875 us -> 1; lasts 400 cycles = 0.5 us -> 1 (halves up).
  EXPECT_EQ(out.str(),
            "id;time_since_open;time_since_start;location\n"
            "0;0;0;\"loc(a;b)\"\n"
            "1;1;1;plain\n");
}

TEST(Clock, RoundingIsExact) {
  const Clock c{800000};
  EXPECT_EQ(c.to_us_rounded(399), 0u);  // 0.49875
  EXPECT_EQ(c.to_us_rounded(400), 1u);  // 0.5
  EXPECT_EQ(c.to_us_rounded(1199), 1u);
  EXPECT_EQ(c.to_us_rounded(1200), 2u);
  EXPECT_EQ(c.to_us_rounded(~std::uint64_t{0}), 23058430092136940u);  // (2^64-1)/800, rounded
}

TEST(Stats, BusyCyclesAreTheUnionOfChannelIntervals) {
  const RunStats s = compute_stats(two_engine_workload(), two_engine_timeline());
  EXPECT_EQ(s.total_cycles, 550u);
  EXPECT_EQ(s.engines[1].busy_cycles, 150u);  // [0,100) u [50,150)
  EXPECT_EQ(s.engines[1].commands, 2u);
  EXPECT_EQ(s.engines[0].busy_cycles, 400u);
  EXPECT_EQ(s.dram_read_bytes, 1760u);
  EXPECT_EQ(s.programs[0].start, 0u);
  EXPECT_EQ(s.programs[0].end, 150u);
  EXPECT_EQ(s.programs[1].start, 150u);
}

TEST(Stats, LocalMemoryFreesBeforeAllocationsInTheSameCycle) {
  // DI0 takes 600 at 0, DI1 300 at 50 (peak 900), S0 frees 900 at 550.
  const RunStats s = compute_stats(two_engine_workload(), two_engine_timeline());
  EXPECT_EQ(s.lram.peak_bytes, 900u);
  EXPECT_EQ(s.lram.peak_at, 50u);
  EXPECT_FALSE(s.lram.overflow.has_value());
}

TEST(Stats, ACommandTakingNoCyclesReleasesWhatItTakes) {
  Workload w = two_engine_workload();
  w.commands[2].lram_alloc_bytes = 100;  // S0 takes 100 and gives back 1000 (900 + its own)
  w.commands[2].lram_free_bytes = 1000;
  Timeline t = two_engine_timeline();
  t.commands[2] = {550, 550};
  const RunStats s = compute_stats(w, t);
  EXPECT_EQ(s.lram.peak_bytes, 1000u);  // 900 + 100 at cycle 550, then 0
  const auto changes = lram_changes(w, t);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_TRUE(changes[2].is_alloc);  // S0's own allocation before its own free
  EXPECT_FALSE(changes[3].is_alloc);
}

TEST(Stats, LocalMemoryOverflowIsReported) {
  Workload w = two_engine_workload();
  w.device.lram_bytes = 800;
  const RunStats s = compute_stats(w, two_engine_timeline());
  ASSERT_TRUE(s.lram.overflow.has_value());
  EXPECT_EQ(s.lram.overflow->command, 1u);
  EXPECT_EQ(s.lram.overflow->at, 50u);
  EXPECT_EQ(s.lram.overflow->in_use_bytes, 900u);
}

TEST(Stats, BoundsFollowPeakComputeAndBandwidth) {
  const Bounds b = compute_bounds(two_engine_workload());
  EXPECT_EQ(b.compute_cycles, 100u);  // 25600 MACs / 256 per cycle
  EXPECT_EQ(b.dram_cycles, 110u);     // 1760 bytes / 16 per cycle
}

TEST(Stats, AchievedBandwidth) {
  // 1600 bytes in 100 cycles at 800 MHz = 16 bytes/cycle = 12.8 GB/s.
  EXPECT_DOUBLE_EQ(achieved_gbps(1600, 100, 800000), 12.8);
  EXPECT_EQ(achieved_gbps(1600, 0, 800000), 0.0);
}

}  // namespace
}  // namespace npusim::profiler
