// The DMA queue order pass (docs/compiler.md, "DMA queue order"): a ready transfer passes one that
// still waits, within the window; nothing moves when nothing waits; on compiled models the
// reordered schedule never deadlocks, keeps every other queue's order, and its estimate is the
// pass's own prediction command by command.
#include "sim/compiler/passes/order_dma_queues.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/compiler.h"
#include "sim/config/hw_config.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule_writer.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

const std::string kZoo = std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/";

using test::gemm;  // a 16x16x16 GEMM: 61 cycles on default
using test::load;  // 1024 bytes: 256 cycles on default
using test::schedule_with;

// A reordered copy of `s`: the tests keep the schedule they gave.
Schedule order_dma_queues(Schedule s, const HwConfig& config) {
  reorder_dma_queues(s, config);
  return s;
}

// S0 computes; DI0 loads what S0 wrote (it waits), DI1 loads weights that wait for nothing, and
// S1 reads DI1. On default (1 DMA_IN channel, dispatch 4 cycles).
Schedule waiting_head(const HwConfig& config) {
  return parse_schedule(
      schedule_with({gemm("S0", 0), load("DI0", {"S0"}), load("DI1"), gemm("S1", 1, {"DI1"})}),
      "s.json", config);
}

TEST(DmaQueueOrder, AReadyLoadPassesOneThatWaits) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = waiting_head(config);
  // In emission order: S0 [4, 65); DI0 ready at 65, starts 69, ends 325; DI1 behind it on the one
  // channel starts 329, ends 585; S1 [589, 650).
  EXPECT_EQ(estimate(s, config).total_cycles(), 650u);

  // Ready first: DI1 is ready at 0 while DI0 waits, so DI1 goes [4, 260); DI0 then waits for the
  // channel: dispatched at 260, [264, 520); S1 ready at 260, [264, 325).
  const std::vector<std::uint64_t> starts = ready_first_starts(s, config);
  EXPECT_EQ(starts, (std::vector<std::uint64_t>{4, 264, 4, 264}));

  // Sorted by start, ties in the old order: S0, DI1, DI0, S1; the loads' ids follow the queue.
  const Schedule o = order_dma_queues(s, config);
  ASSERT_EQ(o.commands.size(), 4u);
  EXPECT_EQ(o.commands[0].id, "S0");
  EXPECT_EQ(o.commands[1].id, "DI0");  // was DI1: no dependencies
  EXPECT_TRUE(o.commands[1].deps.empty());
  EXPECT_EQ(o.commands[2].id, "DI1");  // was DI0: waits for S0
  EXPECT_EQ(o.commands[2].deps, (IndexList{0}));
  EXPECT_EQ(o.commands[3].id, "S1");
  EXPECT_EQ(o.commands[3].deps, (IndexList{1}));
  const profiler::Timeline t = estimate(o, config);
  EXPECT_EQ(t.total_cycles(), 520u);
  EXPECT_EQ(t.commands[1].start, 4u);
  EXPECT_EQ(t.commands[2].start, 264u);
}

std::string json_of(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(out, s);
  return out.str();
}

// The driver tries an order on the schedule itself and undoes it when it is not faster: the undo
// must give back the very schedule, ids and dependencies included.
TEST(DmaQueueOrder, UndoGivesBackTheScheduleItWasGiven) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  Schedule s = waiting_head(config);
  const std::string before = json_of(s);
  QueueReorder r = reorder_dma_queues(s, config);
  EXPECT_EQ(r.order, (std::vector<std::uint32_t>{0, 2, 1, 3}));  // DI1 passed DI0, as above
  EXPECT_NE(json_of(s), before);
  undo_reorder(s, std::move(r));
  EXPECT_EQ(json_of(s), before);

  // A compiled model: thousands of commands, several DMA channels, deps across engines.
  const HwConfig server = load_hw_config("server");
  Schedule m = compile_schedule(load_graph_json(kZoo + "mobilenetv2.json"), server);
  const std::string compiled = json_of(m);
  undo_reorder(m, reorder_dma_queues(m, server));
  EXPECT_EQ(json_of(m), compiled);
}

TEST(DmaQueueOrder, ATransferPassesOnlyWithinTheWindow) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = waiting_head(config);
  // A window of one command is the in-order queue: the starts of the estimate above.
  EXPECT_EQ(ready_first_starts(s, config, 1), (std::vector<std::uint64_t>{4, 69, 329, 589}));
}

TEST(DmaQueueOrder, AStorePassesOneThatWaitsToo) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  // DO0 stores S1's output, DO1 S0's: S1 waits for S0 on slice 0, so DO0 waits until 126 while
  // DO1 is ready at 65. 1024 bytes out: 256 cycles as in.
  Json store0 = {{"id", "DO0"}, {"engine", "DMA_OUT"}, {"bytes", 1024}, {"deps", {"S1"}}};
  Json store1 = {{"id", "DO1"}, {"engine", "DMA_OUT"}, {"bytes", 1024}, {"deps", {"S0"}}};
  const Schedule s = parse_schedule(
      schedule_with({gemm("S0", 0), gemm("S1", 0, {"S0"}), store0, store1}), "s.json", config);
  // In order: S0 [4, 65), S1 [69, 130); DO0 [134, 390); DO1 [394, 650).
  EXPECT_EQ(estimate(s, config).total_cycles(), 650u);
  // Ready first: DO1 [69, 325); DO0 ready at 130, the channel at 325: [329, 585).
  EXPECT_EQ(ready_first_starts(s, config), (std::vector<std::uint64_t>{4, 69, 329, 69}));
  const Schedule o = order_dma_queues(s, config);
  EXPECT_EQ(o.commands[2].deps, (IndexList{0}));  // the store of S0, now DO0
  EXPECT_EQ(estimate(o, config).total_cycles(), 585u);
}

// The emitter's ring assumes frees come in the order it emitted them (a tile that waits for one
// store's free counts every older entry as freed), so nothing passes a command that frees memory.
TEST(DmaQueueOrder, NothingPassesACommandThatFreesMemory) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  Json store0 = {
      {"id", "DO0"}, {"engine", "DMA_OUT"}, {"bytes", 1024}, {"deps", {"S1"}}, {"free", {"b0"}}};
  Json store1 = {{"id", "DO1"}, {"engine", "DMA_OUT"}, {"bytes", 1024}, {"deps", {"S0"}}};
  Json s0 = gemm("S0", 0);
  s0["alloc"] = Json::array({{{"buffer", "b0"}, {"bytes", 1024}}});
  const Schedule s =
      parse_schedule(schedule_with({s0, gemm("S1", 0, {"S0"}), store0, store1}), "s.json", config);
  // As AStorePassesOneThatWaitsToo, but DO0 frees S0's buffer: DO1 stays behind it, the starts
  // are the in-order estimate's: S0 4, S1 69, DO0 134, DO1 394.
  EXPECT_EQ(ready_first_starts(s, config), (std::vector<std::uint64_t>{4, 69, 134, 394}));
}

TEST(DmaQueueOrder, NothingMovesWhenNothingWaits) {
  const HwConfig config = parse_hw_config("{}", "cfg");
  const Schedule s = parse_schedule(
      schedule_with({load("DI0"), load("DI1"), gemm("S0", 0, {"DI0"}), gemm("S1", 1, {"DI1"})}),
      "s.json", config);
  const Schedule o = order_dma_queues(s, config);
  ASSERT_EQ(o.commands.size(), s.commands.size());
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    EXPECT_EQ(o.commands[i].id, s.commands[i].id);
    EXPECT_EQ(o.commands[i].deps, s.commands[i].deps);
  }
}

// On compiled models: the order the pass makes never deadlocks, every queue that is not a DMA
// queue runs the same commands in the same order, the DMA queues the same commands, and the
// estimate of the reordered schedule starts every command where the pass predicted (a DMA
// transfer is dispatched at the same cycle whether it passed others or comes first in its queue).
TEST(DmaQueueOrder, OnCompiledModelsTheOrderIsTheOneThePassPredicted) {
  for (const char* name : {"bert_base_layer", "mobilenetv2", "yolo_tiny"}) {
    for (const char* config_name : {"default", "server"}) {
      SCOPED_TRACE(std::string(name) + " on " + config_name);
      const HwConfig config = load_hw_config(config_name);
      const Schedule s = compile_schedule(load_graph_json(kZoo + name + ".json"), config);
      const std::vector<std::uint64_t> predicted = ready_first_starts(s, config);
      Schedule o = order_dma_queues(s, config);
      Diagnostics diag(o.file);
      finalize_schedule(o, config, diag);
      ASSERT_TRUE(diag.empty());
      profiler::Timeline t;
      ASSERT_NO_THROW(t = estimate(o, config));
      // Where each old command went: ids of one engine are handed out again, so match by
      // position in each queue instead.
      const EngineLayout layout(config, s);
      const auto before = layout.queues(s);
      const auto after = layout.queues(o);
      ASSERT_EQ(before.size(), after.size());
      std::vector<std::uint32_t> moved_to(s.commands.size());
      for (std::size_t e = 0; e < before.size(); ++e) {
        ASSERT_EQ(before[e].size(), after[e].size());
        const EngineKind kind = layout.info(static_cast<std::uint32_t>(e)).kind;
        const bool dma = kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut;
        if (dma) continue;
        for (std::size_t p = 0; p < before[e].size(); ++p) {
          const Command& a = s.commands[before[e][p]];
          const Command& b = o.commands[after[e][p]];
          // (S ids count up over all slices, so they are handed out again too.)
          EXPECT_EQ(a.op, b.op);
          EXPECT_EQ(a.layer.str(), b.layer.str());
          EXPECT_EQ(a.isolated_cycles, b.isolated_cycles);
          moved_to[before[e][p]] = after[e][p];
        }
      }
      // Every command of the new schedule waits only for earlier ones, and starts where the
      // pass predicted for the command it came from (non-DMA commands, matched above).
      std::size_t checked = 0;
      for (std::uint32_t i = 0; i < o.commands.size(); ++i) {
        for (const std::uint32_t d : o.commands[i].deps) ASSERT_LT(d, i);
      }
      for (std::size_t e = 0; e < before.size(); ++e) {
        const EngineKind kind = layout.info(static_cast<std::uint32_t>(e)).kind;
        if (kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut) {
          // The DMA queue is the predicted starts in order.
          std::vector<std::uint64_t> starts;
          for (const std::uint32_t i : before[e]) starts.push_back(predicted[i]);
          std::sort(starts.begin(), starts.end());
          for (std::size_t p = 0; p < after[e].size(); ++p) {
            EXPECT_EQ(t.commands[after[e][p]].start, starts[p]) << o.commands[after[e][p]].id;
            ++checked;
          }
          continue;
        }
        for (const std::uint32_t i : before[e]) {
          EXPECT_EQ(t.commands[moved_to[i]].start, predicted[i]) << s.commands[i].id;
          ++checked;
        }
      }
      EXPECT_GT(checked, 0u);
      EXPECT_FALSE(profiler::lram_occupancy(make_workload(o, config), t).overflow.has_value());
    }
  }
}

}  // namespace
}  // namespace npusim
