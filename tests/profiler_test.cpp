#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profiler/csv_writers.h"
#include "profiler/dependants.h"
#include "profiler/json_writer.h"
#include "profiler/output_dir.h"
#include "profiler/stats.h"
#include "profiler/text_out.h"
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
  // p1: [150, 550): ends at 550 cycles = 0.6875 us -> 1; lasts 400 cycles = 0.5 us -> 1 (halves
  // up).
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

// A workload of `engines` and one program whose commands S0, S1, ... run on the engines
// `command_engines` names by index: what busy-time statistics need.
Workload on_engines(std::vector<EngineInfo> engines, std::uint32_t slices,
                    const std::vector<std::uint32_t>& command_engines) {
  Workload w;
  w.device.slices = slices;
  w.engines = std::move(engines);
  w.programs = {{"p0", ""}};
  w.commands.reserve(command_engines.size());
  for (std::size_t i = 0; i < command_engines.size(); ++i) {
    CommandInfo c{};
    c.id = "S" + std::to_string(i);
    c.engine = command_engines[i];
    w.commands.push_back(c);
  }
  return w;
}

// Two slices, their units listed out of order (slice 1's vector unit before its array), so the
// match is by slice. By hand:
//   SLICE0.ARRAY busy [0, 100) u [150, 300); SLICE0.VECTOR busy [50, 200) u [250, 400) and a
//   command of no cycles at 300: both busy in [50, 100), [150, 200) and [250, 300): 150 of its 300.
//   SLICE1.VECTOR busy [0, 50), its array [100, 200): never at once, 0.
TEST(Stats, AVectorUnitCountsTheCyclesItRanBesideItsSlicesArray) {
  const Workload w = on_engines({{"SLICE0.ARRAY", EngineKind::kArray, 1, 0, 0, ""},
                                 {"SLICE0.VECTOR", EngineKind::kVector, 1, 0, 0, ""},
                                 {"SLICE1.VECTOR", EngineKind::kVector, 1, 1, 0, ""},
                                 {"SLICE1.ARRAY", EngineKind::kArray, 1, 1, 0, ""}},
                                2, {0, 0, 1, 1, 1, 2, 3});
  Timeline t;
  t.commands = {{0, 100}, {150, 300}, {50, 200}, {250, 400}, {300, 300}, {0, 50}, {100, 200}};
  const RunStats s = compute_stats(w, t);
  EXPECT_EQ(s.engines[1].busy_cycles, 300u);
  EXPECT_EQ(s.engines[1].array_overlap_cycles, 150u);
  EXPECT_EQ(s.engines[2].busy_cycles, 50u);
  EXPECT_EQ(s.engines[2].array_overlap_cycles, 0u);
  EXPECT_EQ(s.engines[0].array_overlap_cycles, 0u);  // an array's own figure stays 0
  EXPECT_EQ(s.engines[3].array_overlap_cycles, 0u);
}

// With two devices each vector unit is measured against its own device's array of its slice, and
// an engine's commands may come in any order, with empty ones between.
TEST(Stats, AVectorUnitsOverlapIsWithItsOwnDevicesArray) {
  const Workload w = on_engines({{"DEV0.SLICE0.ARRAY", EngineKind::kArray, 1, 0, 0, ""},
                                 {"DEV0.SLICE0.VECTOR", EngineKind::kVector, 1, 0, 0, ""},
                                 {"DEV1.SLICE0.VECTOR", EngineKind::kVector, 1, 0, 1, ""},
                                 {"DEV1.SLICE0.ARRAY", EngineKind::kArray, 1, 0, 1, ""}},
                                1, {0, 1, 3, 3, 2, 2, 2});
  Timeline t;
  // Device 0: array [0, 100), vector [50, 210).
  // Device 1: array [400, 500) and [200, 300), given in that order; vector [250, 450), [0, 60)
  // and an empty command at 150, in the gap between them.
  t.commands = {{0, 100}, {50, 210}, {400, 500}, {200, 300}, {250, 450}, {0, 60}, {150, 150}};
  const RunStats s = compute_stats(w, t);
  // Device 0's vector: busy 210 - 50 = 160, beside its array [50, 100) = 50 (device 1's array
  // would give [200, 210) = 10).
  EXPECT_EQ(s.engines[1].busy_cycles, 160u);
  EXPECT_EQ(s.engines[1].array_overlap_cycles, 50u);
  // Device 1's vector: busy 60 + 200 = 260, beside its array [250, 300) + [400, 450) = 100
  // (device 0's array would give [0, 60) = 60).
  EXPECT_EQ(s.engines[2].busy_cycles, 260u);
  EXPECT_EQ(s.engines[2].array_overlap_cycles, 100u);
  EXPECT_EQ(s.engines[3].busy_cycles, 200u);
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

// The order of changes in one cycle is total and keeps the rule: a command taking no cycles (S0,
// index 2) allocates and frees at 550 while DI0 (index 0) allocates there too. S0's allocation
// and its own free come first, as a pair, then DI0's allocation. (Ordering S0's free before every
// other allocation, after its own, and allocations by command was circular: DI0's < S0's < S0's
// free < DI0's.)
TEST(Stats, OneCyclesChangesAreInATotalOrder) {
  Workload w = two_engine_workload();
  w.commands[2].lram_alloc_bytes = 100;
  w.commands[2].lram_free_bytes = 100;
  Timeline t = two_engine_timeline();
  t.commands[0] = {550, 600};  // DI0 takes 600 at 550
  t.commands[2] = {550, 550};
  const auto changes = lram_changes(w, t);
  ASSERT_EQ(changes.size(), 4u);      // DI0, DI1 take; S0 takes and frees
  EXPECT_EQ(changes[0].command, 1u);  // DI1 at 50
  EXPECT_EQ(changes[1].command, 2u);
  EXPECT_TRUE(changes[1].is_alloc);
  EXPECT_EQ(changes[2].command, 2u);
  EXPECT_FALSE(changes[2].is_alloc);
  EXPECT_EQ(changes[3].command, 0u);  // DI0 at 550
  EXPECT_TRUE(changes[3].is_alloc);
  // 300 (DI1) + 100 (S0), back to 300, then + 600 (DI0) at 550.
  EXPECT_EQ(compute_stats(w, t).lram.peak_bytes, 900u);
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
  EXPECT_EQ(b.mac_peak_cycles, 100u);   // 25600 MACs / 256 per cycle
  EXPECT_EQ(b.dram_cycles, 110u);       // 1760 bytes / 16 per cycle
  EXPECT_EQ(b.array_cycles, 400u);      // S0's isolated cycles
  EXPECT_EQ(b.dma_in_port_cycles, 0u);  // no DMA port rate in this device: no bound
  EXPECT_EQ(b.binding(), BoundResource::kArray);
}

// Two slices of 4x4 PEs (16 MACs per cycle each) at 800 MHz, DRAM 12.8 GB/s = 16 bytes per
// cycle, DMA_IN with 2 channels and DMA_OUT with 1, 4 bytes per cycle per channel. The engine
// table lists the units out of report order, so nothing can rely on positions or names.
Workload bounds_workload() {
  Workload w;
  w.device.clock_khz = 800000;
  w.device.slices = 2;
  w.device.array_rows = 4;
  w.device.array_cols = 4;
  w.device.dram_bandwidth_mbps = 12800;
  w.device.dma_in_channels = 2;
  w.device.dma_out_channels = 1;
  w.device.dma_bytes_per_cycle = 4;
  w.engines = {{"HOST", EngineKind::kHost, 1, 0, 0, "HOST"},
               {"SLICE1.ARRAY", EngineKind::kArray, 1, 1, 0, "SLICE1.ARRAY"},
               {"SLICE0.VECTOR", EngineKind::kVector, 1, 0, 0, "SLICE0.VECTOR"},
               {"DMA_IN", EngineKind::kDmaIn, 2, 0, 0, "DMA_IN"},
               {"SLICE0.ARRAY", EngineKind::kArray, 1, 0, 0, "SLICE0.ARRAY"},
               {"DMA_OUT", EngineKind::kDmaOut, 1, 0, 0, "DMA_OUT"},
               {"SLICE1.VECTOR", EngineKind::kVector, 1, 1, 0, "SLICE1.VECTOR"}};
  w.programs = {{"p", ""}};
  auto command = [&](const std::string& id, std::uint32_t engine, std::uint64_t read,
                     std::uint64_t write, std::uint64_t macs, Cycles isolated) {
    CommandInfo c{id, engine, "op", "", "", 0, read, write, macs, 0, 0, 0, isolated, {}};
    w.commands.push_back(c);
  };
  command("DI0", 3, 1000, 0, 0, 300);
  command("DI1", 3, 999, 0, 0, 300);
  command("DO0", 5, 0, 500, 0, 200);
  command("S0", 4, 0, 0, 1600, 120);  // SLICE0.ARRAY
  command("S1", 4, 0, 0, 800, 90);    // SLICE0.ARRAY
  command("S2", 1, 0, 0, 3200, 205);  // SLICE1.ARRAY: more MACs, fewer cycles than SLICE0's
  command("S3", 2, 0, 0, 0, 40);      // SLICE0.VECTOR
  command("S4", 6, 0, 0, 0, 30);      // SLICE1.VECTOR
  command("S5", 6, 0, 0, 0, 25);      // SLICE1.VECTOR
  command("H0", 0, 0, 0, 0, 700);
  command("H1", 0, 0, 0, 0, 60);
  return w;
}

TEST(Bounds, ArrayIsTheBusiestSlicesArrayWork) {
  // SLICE0.ARRAY: 120 + 90 = 210 cycles; SLICE1.ARRAY: 205. The max: 210.
  EXPECT_EQ(compute_bounds(bounds_workload()).array_cycles, 210u);
}

TEST(Bounds, VectorIsTheBusiestSlicesVectorWork) {
  // SLICE0.VECTOR: 40; SLICE1.VECTOR: 30 + 25 = 55.
  EXPECT_EQ(compute_bounds(bounds_workload()).vector_cycles, 55u);
}

TEST(Bounds, MacPeakIsEveryPeOfEverySliceBusy) {
  // (1600 + 800 + 3200) MACs / (2 slices x 4 x 4) = 5600 / 32 = 175.
  EXPECT_EQ(compute_bounds(bounds_workload()).mac_peak_cycles, 175u);
}

TEST(Bounds, DmaPortsMoveChannelsTimesBytesPerCycle) {
  const Bounds b = compute_bounds(bounds_workload());
  EXPECT_EQ(b.dma_in_port_cycles, 250u);   // 1999 B / (2 x 4 B/cycle) = 249.875, rounded up
  EXPECT_EQ(b.dma_out_port_cycles, 125u);  // 500 B / (1 x 4 B/cycle)
}

TEST(Bounds, DmaChannelsKeepAtMostMaxOutstandingBurstsInFlight) {
  // `server`'s DMA: bursts of 1024 B, 16 in flight per channel; DRAM 512 GB/s on 8 channels at
  // 1 GHz, so 64 B/cycle each, and 120 cycles of latency. A burst is in flight for at least
  // 1024 / 64 = 16 cycles of service plus 120: a channel moves at most 16 x 1024 B per 136 cycles
  // (120.5 B/cycle), less than its 128-byte port.
  Workload w = bounds_workload();
  w.device.clock_khz = 1000000;
  w.device.dram_bandwidth_mbps = 512000;
  w.device.dma_bytes_per_cycle = 128;
  w.device.dma_burst_bytes = 1024;
  w.device.dma_max_outstanding = 16;
  w.device.dram_channels = 8;
  w.device.dram_latency_cycles = 120;
  w.commands[0].dram_read_bytes = 1 << 20;  // DI0: 1 MiB
  w.commands[1].dram_read_bytes = 0;
  w.commands[2].dram_write_bytes = 1000;  // DO0: 1000 B, one burst
  const Bounds b = compute_bounds(w);
  // 1024 bursts x 136 cycles in flight over 2 channels x 16 slots: 4352 cycles (the ports: 4096).
  EXPECT_EQ(b.dma_in_port_cycles, 4352u);
  // One burst of 1000 B: 15.625 cycles of service + 120, over 1 x 16 slots: 8.48, rounded up to 9
  // (the port: 1000 / 128 = 7.8, rounded up to 8).
  EXPECT_EQ(b.dma_out_port_cycles, 9u);
  // Without the burst parameters (ideal memory), the ports alone.
  w.device.dma_max_outstanding = 0;
  EXPECT_EQ(compute_bounds(w).dma_in_port_cycles, 4096u);
}

TEST(Bounds, IdealMemoryBoundsNoTraffic) {
  // With ideal memory DMA and DRAM take no cycles, so they bound nothing: a Relu over 1M fp32
  // elements on `default` took 65,536 vector cycles while the DMA_IN port "bound" said 524,288.
  Workload w = bounds_workload();
  w.device.ideal_memory = true;
  const Bounds b = compute_bounds(w);
  EXPECT_EQ(b.dma_in_port_cycles, 0u);
  EXPECT_EQ(b.dma_out_port_cycles, 0u);
  EXPECT_EQ(b.dram_cycles, 0u);
  EXPECT_EQ(b.host_cycles, 760u);  // the rest as without
  EXPECT_EQ(b.array_cycles, 210u);
}

TEST(Bounds, DramIsAllTrafficAtTheBandwidth) {
  // (1999 + 500) B / 16 B per cycle = 156.1875, rounded up.
  EXPECT_EQ(compute_bounds(bounds_workload()).dram_cycles, 157u);
  Workload w = bounds_workload();
  w.device.clock_khz = 1000000;  // at 1 GHz, 12.8 GB/s is 12.8 B/cycle: 2499 / 12.8 = 195.23
  EXPECT_EQ(compute_bounds(w).dram_cycles, 196u);
}

TEST(Bounds, HostIsTheSumOfHostWork) {
  EXPECT_EQ(compute_bounds(bounds_workload()).host_cycles, 760u);  // 700 + 60
}

TEST(Bounds, TheLargestBoundBindsAndIsNamed) {
  Workload w = bounds_workload();
  // host 760 > dma_in_port 250 > array 210 > mac_peak 175 > dram 157 > dma_out_port 125 > vector 55
  EXPECT_EQ(compute_bounds(w).binding(), BoundResource::kHost);
  EXPECT_STREQ(binding_name(compute_bounds(w)), "host");
  w.commands.resize(9);  // without H0 and H1: dma_in_port 250
  EXPECT_STREQ(binding_name(compute_bounds(w)), "dma_in_port");
  w.device.dma_bytes_per_cycle = 64;  // ports: 1999 / 128 -> 16, 500 / 64 -> 8: array 210 binds
  EXPECT_STREQ(binding_name(compute_bounds(w)), "array");
  w.device.dram_bandwidth_mbps = 3200;  // 4 B/cycle: 2499 / 4 = 624.75 -> 625
  const Bounds b = compute_bounds(w);
  EXPECT_EQ(b.dram_cycles, 625u);
  EXPECT_STREQ(binding_name(b), "dram");
  EXPECT_EQ(b.cycles(BoundResource::kDram), 625u);
  w.device.dma_out_channels = 0;  // no DMA_OUT port rate known: no bound from it
  EXPECT_EQ(compute_bounds(w).dma_out_port_cycles, 0u);
}

TEST(Bounds, TiesGoToTheFirstInReportOrder) {
  Bounds b;
  EXPECT_FALSE(b.binding().has_value());  // nothing to do
  EXPECT_STREQ(binding_name(b), "none");
  b.dram_cycles = 10;
  b.dma_in_port_cycles = 10;
  EXPECT_EQ(b.binding(), BoundResource::kDmaInPort);
  b.mac_peak_cycles = 10;
  EXPECT_EQ(b.binding(), BoundResource::kMacPeak);
  b.array_cycles = 10;
  EXPECT_EQ(b.binding(), BoundResource::kArray);
  b.host_cycles = 11;
  EXPECT_EQ(b.binding(), BoundResource::kHost);
  std::vector<std::string> names;
  for (BoundResource r : kBoundResources) names.emplace_back(bound_name(r));
  EXPECT_EQ(names, (std::vector<std::string>{"array", "vector", "mac_peak", "dma_in_port",
                                             "dma_out_port", "dram", "host"}));
}

TEST(Stats, AchievedBandwidth) {
  // 1600 bytes in 100 cycles at 800 MHz = 16 bytes/cycle = 12.8 GB/s.
  EXPECT_DOUBLE_EQ(achieved_gbps(1600, 100, 800000), 12.8);
  EXPECT_EQ(achieved_gbps(1600, 0, 800000), 0.0);
}

}  // namespace
// stats.json is written beside the traces as if trace.json fits, and again with the note when it
// does not (Session::write): the second write replaces the first, and commit moves one file.
TEST(OutputDir, ANameWrittenTwiceHoldsTheSecondWriteAfterCommit) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "npusim_output_dir_twice";
  std::filesystem::remove_all(dir);
  {
    OutputDir out(dir);
    out.write("stats.json", [](std::ostream& s) { s << "{\"first\": true, \"longer\": 1}"; });
    out.write("stats.json", [](std::ostream& s) { s << "{\"second\": 2}"; });
    EXPECT_EQ(out.staged_bytes("stats.json"), 13u);  // {"second": 2}
    ASSERT_NO_THROW(out.commit());
  }
  std::ifstream in(dir / "stats.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "{\"second\": 2}");
  std::filesystem::remove_all(dir);
}

// A run over an earlier one's outputs: each file written replaces the old one (exchanged with it,
// OutputDir::commit), an output this run did not write is removed, the old files leave with the
// staging folder, a folder where an output goes is never taken for a file (commit fails and the
// folder stays, with what it holds: exchanged, it would have left with the staging folder), and
// a symlink there is replaced, not what it points to.
TEST(OutputDir, ARunOverAnEarlierOneReplacesItsFilesAndLeavesAFolderOfAnOutputsName) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "npusim_output_dir_over";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "summary.txt") << "old summary, longer than the new one";
  std::ofstream(dir / "stats.json") << "{\"old\": 1}";
  std::ofstream(dir / "notes.txt") << "the user's";
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  {
    OutputDir out(dir);
    out.write("summary.txt", [](std::ostream& s) { s << "new"; });
    ASSERT_NO_THROW(out.commit());
  }
  EXPECT_EQ(read(dir / "summary.txt"), "new");
  EXPECT_FALSE(fs::exists(dir / "stats.json"));      // an output this run did not write
  EXPECT_EQ(read(dir / "notes.txt"), "the user's");  // not an output: left alone
  std::vector<std::string> left;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"notes.txt", "summary.txt"}));
  // A folder named trace.json.
  fs::create_directories(dir / "trace.json");
  std::ofstream(dir / "trace.json" / "inside") << "kept";
  {
    OutputDir out(dir);
    out.write("trace.json", [](std::ostream& s) { s << "{}"; });
    EXPECT_THROW(out.commit(), OutputError);
  }
  EXPECT_EQ(read(dir / "trace.json" / "inside"), "kept");
  // A symlink where an output goes is replaced itself, as a rename replaces it; what it points
  // to is not touched.
  const fs::path target = fs::temp_directory_path() / "npusim_output_dir_over_target";
  std::ofstream(target) << "the target";
  fs::create_symlink(target, dir / "runtime.csv");
  {
    OutputDir out(dir);
    out.write("runtime.csv", [](std::ostream& s) { s << "rows"; });
    ASSERT_NO_THROW(out.commit());
  }
  EXPECT_EQ(fs::symlink_status(dir / "runtime.csv").type(), fs::file_type::regular);
  EXPECT_EQ(read(dir / "runtime.csv"), "rows");
  EXPECT_EQ(read(target), "the target");
  fs::remove(target);
  fs::remove_all(dir);
}

}  // namespace npusim::profiler

// put_json_string, the one JSON string writer of stats.json, trace.json and schedule files, against
// the reference it must equal: nlohmann::json::dump(). Every character that needs escaping is tried
// at every offset in a word (the scan goes eight bytes at a time), inside longer plain text, and
// next to multi-byte UTF-8 and DEL (which dump leaves as they are).
TEST(JsonString, EqualsNlohmannDumpAtEveryOffset) {
  const std::string special[] = {
      "\"",   "\\",   "\n",   "\r",       "\t",           "\b", "\f", std::string(1, '\0'),
      "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", " ",  "~"};
  for (const std::string& s : special) {
    for (std::size_t before = 0; before < 17; ++before) {
      for (const std::size_t after : {0, 1, 7, 8, 9}) {
        const std::string text = std::string(before, 'a') + s + std::string(after, 'z') + s;
        std::ostringstream out;
        {
          npusim::profiler::TextOut t(out);
          npusim::profiler::put_json_string(t, text);
        }
        EXPECT_EQ(out.str(), nlohmann::json(text).dump()) << before << " " << after;
      }
    }
  }
}

// Bytes that are not UTF-8 (a file name can hold them) become \xNN, which reads back as text, in
// both writers: nlohmann would throw on them, and trace.json used to write them raw.
TEST(JsonString, InvalidUtf8IsWrittenAsEscapes) {
  const std::string text = std::string("model_") + "\xff" + "\xc3" + ".onnx \"x\"";
  std::ostringstream out;
  {
    npusim::profiler::TextOut t(out);
    npusim::profiler::put_json_string(t, text);
  }
  EXPECT_EQ(out.str(), R"("model_\\xFF\\xC3.onnx \"x\"")");
  EXPECT_EQ(nlohmann::json::parse(out.str()).get<std::string>(), "model_\\xFF\\xC3.onnx \"x\"");
}

// Dependants: who lists each command among its dependencies, in command order, and how many each
// waits for; a dependency past the end (a workload nobody checked) is left out of both rather than
// read out of bounds.
TEST(Dependants, ListsEachCommandsReadersInOrder) {
  struct Cmd {
    std::vector<std::uint32_t> deps;
  };
  // 0 <- 2, 3; 1 <- 3; 2 <- 3; 3 lists 7, which does not exist.
  const std::vector<Cmd> cmds = {{{}}, {{}}, {{0}}, {{2, 0, 1, 7}}};
  const npusim::profiler::Dependants d(cmds);
  const auto list = [&](std::uint32_t i) {
    return std::vector<std::uint32_t>(d.of(i).begin(), d.of(i).end());
  };
  EXPECT_EQ(list(0), (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(list(1), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(list(2), (std::vector<std::uint32_t>{3}));
  EXPECT_TRUE(list(3).empty());
  // What each waits for, counted as listed: 3 lists 2, 0 and 1, not 7.
  EXPECT_EQ(d.waiting(), (std::vector<std::uint32_t>{0, 0, 1, 3}));
}
