// Exact cycle counts of the cost model, with the arithmetic in a comment.
#include "sim/cost/evaluator.h"

#include "sim/cost/dispatch.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace npusim::cost {
namespace {

HwConfig config_with(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow) {
  HwConfig c = parse_hw_config("{}", "test");
  c.slices.rows = rows;
  c.slices.cols = cols;
  c.slices.dataflow = dataflow;
  return c;
}

// Expected values from SCALE-Sim v2's own arithmetic (scalesim-project/scale-sim-v2 @22f88b17):
// - compute/systolic_compute_{os,ws,is}.py map (Sr, Sc, T) = os (M, N, K), ws (K, N, M),
//   is (K, M, N) and fold ceil(Sr/R) * ceil(Sc/C) times;
// - each fold's demand matrices have P rows: os R + C + T - 2 (no weight-load prefix), ws and is
//   2R + C + T - 2 (an R-row prefix that loads the stationary operand);
// - COMPUTE_REPORT's Total Cycles is the 0-based cycle of the last demand row
//   (memory/double_buffered_scratchpad_mem.py), so a layer is folds * P - 1.
// The yolo_tiny and test_mnk cases were also run through SCALE-Sim itself (CALC mode) and
// printed these totals; so did the golden trace test/golden_trace/COMPUTE_REPORT.csv (112283).

TEST(SystolicGemm, YoloTinyConv1MatchesScaleSimOnBothArraySizes) {
  // yolo_tiny.csv Conv1: 416x416 ifmap, 3x3 filter, 3 channels, 4 filters, stride 1:
  // ofmap ceil((416 - 3 + 1) / 1) = 414, M = 414 * 414 = 171396, K = 3 * 3 * 3 = 27, N = 4.
  const std::uint64_t m = 171396, n = 4, k = 27;
  // os 32x32: (Sr, Sc, T) = (171396, 4, 27); folds ceil(171396/32) = 5357; P = 32+32+27-2 = 89;
  // 5357 * 89 - 1 = 476772.
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kOutputStationary, m, n, k), 476772u);
  // os 128x128: folds 1340, P = 128+128+27-2 = 281: 1340 * 281 - 1 = 376539.
  EXPECT_EQ(systolic_gemm_cycles(128, 128, Dataflow::kOutputStationary, m, n, k), 376539u);
  // ws 32x32: (27, 4, 171396): 1 fold, P = 64+32+171396-2 = 171490: 171489.
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kWeightStationary, m, n, k), 171489u);
  // ws 128x128: P = 256+128+171396-2 = 171778: 171777.
  EXPECT_EQ(systolic_gemm_cycles(128, 128, Dataflow::kWeightStationary, m, n, k), 171777u);
  // is 32x32: (27, 171396, 4): folds 1 * 5357, P = 64+32+4-2 = 98: 5357 * 98 - 1 = 524985.
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kInputStationary, m, n, k), 524985u);
  // is 128x128: folds 1340, P = 256+128+4-2 = 386: 1340 * 386 - 1 = 517239.
  EXPECT_EQ(systolic_gemm_cycles(128, 128, Dataflow::kInputStationary, m, n, k), 517239u);
}

TEST(SystolicGemm, GemmTopologyOnANonSquareArrayMatchesScaleSim) {
  // test_mnk_input.csv "Test 1, 128, 64, 256,": M = 128, N = 64, K = 256, on R = 8, C = 16.
  // os (128, 64, 256): folds 16 * 4 = 64, P = 8+16+256-2 = 278: 64 * 278 - 1 = 17791.
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kOutputStationary, 128, 64, 256), 17791u);
  // ws (256, 64, 128): folds 32 * 4 = 128, P = 16+16+128-2 = 158: 128 * 158 - 1 = 20223.
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kWeightStationary, 128, 64, 256), 20223u);
  // is (256, 128, 64): folds 32 * 8 = 256, P = 16+16+64-2 = 94: 256 * 94 - 1 = 24063.
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kInputStationary, 128, 64, 256), 24063u);
  // The same layer on 32x32: os folds 4 * 2 = 8, P = 318: 2543; ws 8 * 2 = 16, P = 222: 3551;
  // is 8 * 4 = 32, P = 158: 5055.
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kOutputStationary, 128, 64, 256), 2543u);
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kWeightStationary, 128, 64, 256), 3551u);
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kInputStationary, 128, 64, 256), 5055u);
}

TEST(SystolicGemm, ScaleSimGoldenTraceAlexNetConv1) {
  // SCALE-Sim's committed test/golden_trace/COMPUTE_REPORT.csv: ws, 32x32, AlexNet Conv1
  // (224x224, 11x11, 3 channels, 96 filters, stride 4): ofmap ceil(213/4) + 1 = 55, M = 3025,
  // K = 363, N = 96; folds ceil(363/32) * ceil(96/32) = 12 * 3 = 36; P = 64+32+3025-2 = 3119;
  // Total Cycles 36 * 3119 - 1 = 112283, as the file says.
  EXPECT_EQ(systolic_gemm_cycles(32, 32, Dataflow::kWeightStationary, 3025, 96, 363), 112283u);
}

TEST(SystolicGemm, PartialFoldsCostAsMuchAsFullOnes) {
  // yolo_tiny Conv9 (7x7 ifmap, 1x1 filter, 1024 channels, 125 filters) on R = 8, C = 16:
  // M = 49, K = 1024, N = 125. os (49, 125, 1024): folds 7 * 8 = 56, P = 8+16+1024-2 = 1046:
  // 58575. ws (1024, 125, 49): 128 * 8 = 1024 folds, P = 16+16+49-2 = 79: 80895.
  // is (1024, 49, 125): 128 * 4 = 512 folds, P = 16+16+125-2 = 155: 79359.
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kOutputStationary, 49, 125, 1024), 58575u);
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kWeightStationary, 49, 125, 1024), 80895u);
  EXPECT_EQ(systolic_gemm_cycles(8, 16, Dataflow::kInputStationary, 49, 125, 1024), 79359u);
}

TEST(SystolicGemm, AtLeastOneCycle) {
  // os on a 1x1 array with K = 1: P = 1 + 1 + 1 - 2 = 1, 1 fold: 1 - 1 = 0, clamped to 1.
  EXPECT_EQ(systolic_gemm_cycles(1, 1, Dataflow::kOutputStationary, 1, 1, 1), 1u);
}

TEST(SystolicGemm, OverflowIsReportedNotWrapped) {
  const std::uint64_t huge = std::uint64_t{1} << 40;
  EXPECT_THROW(systolic_gemm_cycles(1, 1, Dataflow::kWeightStationary, huge, huge, 1),
               std::overflow_error);
}

TEST(SliceOpCost, ConvIsAnIm2colGemm) {
  const HwConfig c = config_with(16, 16, Dataflow::kWeightStationary);
  ConvShape s;
  s.in_h = 8, s.in_w = 8, s.in_c = 16, s.out_c = 32, s.kernel_h = 3, s.kernel_w = 3;
  s.pad_h = 1, s.pad_w = 1;
  // Output 8x8 = 64 pixels; GEMM (m, n, k) = (64, 32, 3*3*16 = 144).
  // ws: folds = ceil(144/16) * ceil(32/16) = 9 * 2 = 18; P = 32 + 16 + 64 - 2 = 110; 18*110 - 1.
  const SliceCost cost = slice_op_cost(find_op("Conv"), s, c);
  EXPECT_EQ(cost.cycles, 18u * 110u - 1u);
  EXPECT_EQ(cost.macs, 64u * 32u * 144u);
}

TEST(SliceOpCost, GroupedConvRunsOneGemmPerGroup) {
  const HwConfig c = config_with(16, 16, Dataflow::kWeightStationary);
  ConvShape s;
  s.in_h = 4, s.in_w = 4, s.in_c = 32, s.out_c = 32, s.groups = 2;
  // 1x1 kernel, 16 pixels; per group (m, n, k) = (16, 16, 16): 1 fold of 32 + 16 + 16 - 2 = 62,
  // so 61 per group, as SCALE-Sim counts each GEMM.
  const SliceCost cost = slice_op_cost(find_op("Conv"), s, c);
  EXPECT_EQ(cost.cycles, 2u * 61u);
  EXPECT_EQ(cost.macs, 2u * 16u * 16u * 16u);
}

TEST(SliceOpCost, BatchedGemmRepeatsTheGemm) {
  const HwConfig c = config_with(16, 16, Dataflow::kOutputStationary);
  GemmShape g;
  g.batch = 3, g.m = 16, g.n = 16, g.k = 10;
  // os: 1 fold of P = 16 + 16 + 10 - 2 = 40, so 39 cycles, three times.
  EXPECT_EQ(slice_op_cost(find_op("Gemm"), g, c).cycles, 3u * 39u);
}

TEST(SliceOpCost, VectorOpsSpreadWorkOverLanes) {
  const HwConfig c = parse_hw_config("{}", "test");  // 16 lanes; Exp 4 cycles per element
  // Add: ceil(1000 * 1 / 16) = 63. Exp: ceil(1000 * 4 / 16) = 250.
  EXPECT_EQ(slice_op_cost(find_op("Add"), ElementsShape{1000}, c).cycles, 63u);
  EXPECT_EQ(slice_op_cost(find_op("Exp"), ElementsShape{1000}, c).cycles, 250u);
  // Never less than one cycle.
  EXPECT_EQ(slice_op_cost(find_op("Add"), ElementsShape{1}, c).cycles, 1u);
  EXPECT_EQ(slice_op_cost(find_op("Add"), ElementsShape{1}, c).macs, 0u);
}

TEST(SliceOpCost, VectorOpCyclesComeFromTheConfig) {
  const HwConfig c = parse_hw_config(R"({"slices": {"vector_op_cycles": {"Exp": 10}}})", "test");
  // ceil(1000 * 10 / 16) = 625.
  EXPECT_EQ(slice_op_cost(find_op("Exp"), ElementsShape{1000}, c).cycles, 625u);
}

TEST(SliceOpCost, PoolsAndDepthwiseRunOnTheVectorUnit) {
  const HwConfig c = parse_hw_config("{}", "test");  // 16 lanes
  ConvShape pool;
  pool.in_h = 8, pool.in_w = 8, pool.in_c = pool.out_c = 16;
  pool.kernel_h = pool.kernel_w = 2, pool.stride_h = pool.stride_w = 2;
  // Output 4x4x16 = 256 elements, 4 window elements each: ceil(1024 / 16) = 64.
  EXPECT_EQ(slice_op_cost(find_op("MaxPool"), pool, c).cycles, 64u);
  ConvShape dw;
  dw.in_h = 8, dw.in_w = 8, dw.in_c = dw.out_c = 32, dw.kernel_h = dw.kernel_w = 3;
  dw.pad_h = dw.pad_w = 1;
  // 8*8*32 = 2048 outputs * 9 MACs = 18432 / 16 lanes = 1152; no array MACs.
  const SliceCost cost = slice_op_cost(find_op("DepthwiseConv"), dw, c);
  EXPECT_EQ(cost.cycles, 1152u);
  EXPECT_EQ(cost.macs, 0u);
}

TEST(DramTiming, ReducesTicksExactly) {
  // 12.8 GB/s at 800 MHz is 16 bytes per cycle: a cycle is 16 ticks and a byte 1 tick.
  const DramTiming t(parse_hw_config("{}", "test"));
  EXPECT_EQ(t.ticks_per_cycle, Ticks{16});
  EXPECT_EQ(t.ticks_per_byte, Ticks{1});
  EXPECT_EQ(t.latency_cycles, 80u);  // 100 ns * 800 MHz
}

TEST(DramState, FractionalServiceTimesDoNotDrift) {
  // 12.8 GB/s at 600 MHz: 21 1/3 bytes per cycle, so a 64-byte burst takes exactly 3 cycles and
  // a 16-byte one 3/4 of a cycle. Latency 0.
  const HwConfig c = parse_hw_config(
      R"({"clock_mhz": 600, "dram": {"bandwidth_gbps": 12.8, "latency_ns": 0}})", "test");
  DramState dram{DramTiming(c)};
  // Four 16-byte bursts arriving at cycle 0 end at 0.75, 1.5, 2.25, 3 cycles: rounded up 1, 2,
  // 3, 3.
  EXPECT_EQ(dram.serve(0, 0, 16), 1u);
  EXPECT_EQ(dram.serve(0, 0, 16), 2u);
  EXPECT_EQ(dram.serve(0, 0, 16), 3u);
  EXPECT_EQ(dram.serve(0, 0, 16), 3u);  // per-burst rounding would have said 4
  // A burst arriving after the channel is free starts on arrival: 10 + 3 = 13.
  EXPECT_EQ(dram.serve(0, 10, 64), 13u);
}

TEST(DramState, ChannelsEachCarryAShareOfTheBandwidth) {
  // 2 channels of 8 bytes/cycle each (16 total at 800 MHz), latency 80.
  const HwConfig c = parse_hw_config(R"({"dram": {"channels": 2}})", "test");
  DramState dram{DramTiming(c)};
  EXPECT_EQ(dram.earliest_channel(), 0u);
  EXPECT_EQ(dram.serve(0, 0, 64), 8u + 80u);  // 64 / 8
  EXPECT_EQ(dram.earliest_channel(), 1u);
  EXPECT_EQ(dram.serve(1, 0, 64), 8u + 80u);  // in parallel on the other channel
}

TEST(IsolatedTransfer, PortBoundWhenDramIsFaster) {
  // Default config: setup 32, port 8 B/cycle, 256-byte bursts (32 port cycles), DRAM 16 B/cycle
  // (16 cycles per burst), latency 80, 8 outstanding. Burst b leaves the port at
  // 32 + 32(b+1), is served by +16 and has its data by +80:
  // 1024 bytes = 4 bursts: 32 + 32*4 + 16 + 80 = 256.
  const HwConfig c = parse_hw_config("{}", "test");
  EXPECT_EQ(isolated_transfer_cycles(1024, DmaTiming(c), DramTiming(c)), 256u);
  // A short last burst: 1000 bytes = 3 * 256 + 232; the last takes ceil(232/8) = 29 port cycles
  // and 232/16 = 14.5 DRAM cycles: 32 + 96 + 29 = 157, 157 + 14.5 = 171.5 -> 172, + 80 = 252.
  EXPECT_EQ(isolated_transfer_cycles(1000, DmaTiming(c), DramTiming(c)), 252u);
}

TEST(IsolatedTransfer, DramBoundWhenDramIsSlower) {
  // DRAM 3.2 GB/s at 800 MHz = 4 B/cycle: a 256-byte burst takes 64 DRAM cycles, the port 32.
  // Bursts reach DRAM at 64, 96, 128, 160 (after setup 32) but DRAM serves back to back from 64:
  // ends 128, 192, 256, 320; + latency 80 = 400.
  const HwConfig c = parse_hw_config(R"({"dram": {"bandwidth_gbps": 3.2}})", "test");
  EXPECT_EQ(isolated_transfer_cycles(1024, DmaTiming(c), DramTiming(c)), 400u);
}

TEST(IsolatedTransfer, OutstandingLimitStallsThePort) {
  // One burst in flight at a time: each waits for the previous one's data.
  // Burst b: issue when b-1 completes; port 32, DRAM 16, latency 80 => 128 per burst.
  // 4 bursts: 32 + 4 * 128 = 544.
  const HwConfig c = parse_hw_config(R"({"dma": {"max_outstanding": 1}})", "test");
  EXPECT_EQ(isolated_transfer_cycles(1024, DmaTiming(c), DramTiming(c)), 544u);
}

TEST(DmaTransfer, StepsBurstsThroughThePortAndTheOutstandingWindow) {
  // Default port: 8 B/cycle, 256-byte bursts, max_outstanding 2 (set below). 600 bytes = 256 +
  // 256 + 88. From cycle 10 the first two go out back to back: 10 + 32 = 42, 42 + 32 = 74.
  const HwConfig c = parse_hw_config(R"({"dma": {"max_outstanding": 2}})", "test");
  const DmaTiming timing(c);
  DmaTransfer t(timing, 600, 10);
  const std::vector<DmaTransfer::Burst> first = t.start_bursts();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].arrival, 42u);
  EXPECT_EQ(first[0].bytes, 256u);
  EXPECT_EQ(first[1].arrival, 74u);
  // Burst 0's data at 200 frees its slot: burst 2 (88 bytes, ceil(88/8) = 11 port cycles) enters
  // the port at max(74, 200) = 200 and leaves at 211.
  const DmaTransfer::Burst third = t.served(200);
  EXPECT_EQ(third.arrival, 211u);
  EXPECT_EQ(third.bytes, 88u);
  EXPECT_FALSE(t.finished());
  EXPECT_EQ(t.served(230).bytes, 0u);  // nothing left to issue
  EXPECT_EQ(t.served(300).bytes, 0u);
  EXPECT_TRUE(t.finished());
  EXPECT_EQ(t.end(), 300u);
}

TEST(QueueDispatcher, InOrderOnTheLowestFreeChannelAfterTheDispatchCost) {
  QueueDispatcher d(4, 2);  // 4 dispatch cycles, 2 channels
  // First command, ready at 10: channel 0, starts 14.
  EXPECT_EQ(d.earliest_dispatch(10), 10u);
  QueueDispatcher::Grant g = d.dispatch(10);
  EXPECT_EQ(g.start, 14u);
  EXPECT_EQ(g.channel, 0u);
  d.release(0, 100);
  // Second, ready at 0: not before the first has started (14); channel 1 is free.
  EXPECT_EQ(d.earliest_dispatch(0), 14u);
  g = d.dispatch(14);
  EXPECT_EQ(g.start, 18u);
  EXPECT_EQ(g.channel, 1u);
  // A channel whose command still runs (the platform releases at the real end) is never free;
  // channel 0 frees at 100.
  d.release(1, QueueDispatcher::kNever);
  EXPECT_EQ(d.earliest_dispatch(0), 100u);
  d.release(1, 50);
  // Third: channel 1 frees first (50 < 100).
  EXPECT_EQ(d.earliest_dispatch(20), 50u);
  EXPECT_EQ(d.dispatch(50).channel, 1u);
}

TEST(Evaluator, HostCallsCostTheRoundTripPlusPerElement) {
  // Default host: 5000 cycles per call + 4 per element: 5000 + 4 * 100 = 5400.
  const HwConfig c = parse_hw_config("{}", "test");
  Command host;
  host.engine = EngineKind::kHost;
  host.elements = 100;
  Evaluator e(c, ModelInfo{});
  EXPECT_EQ(e.cost(host).cycles, 5400u);
  EXPECT_EQ(e.cost(host).compute_cycles, 5400u);
  EXPECT_THROW(host_call_cycles(~std::uint64_t{0} / 2, c.host), std::overflow_error);
}

TEST(Evaluator, DmaCommandsCostTheIsolatedTransfer) {
  const HwConfig c = parse_hw_config("{}", "test");
  Command load;
  load.engine = EngineKind::kDmaIn;
  load.bytes = 1024;
  Evaluator e(c, ModelInfo{});
  EXPECT_EQ(e.cost(load).cycles, 256u);  // IsolatedTransfer.PortBoundWhenDramIsFaster
  EXPECT_EQ(e.cost(load).compute_cycles, 0u);
}

}  // namespace
}  // namespace npusim::cost
