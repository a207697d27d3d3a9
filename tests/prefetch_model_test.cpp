// Weight prefetch on a real model (docs/compiler.md, "Weight prefetch"): SqueezeNet 1.1 (fp32) on
// `server`, where the estimate keeps a plan. A prefetch only moves loads earlier: the bytes
// loaded, the MACs and the local memory's bound stay those of the model without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/onnx_import.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule.h"
#include "tests/explain_support.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

// The commands that run in a program before their own layer's: prefetched loads (without
// prefetch every command is in its own layer's program).
std::size_t loads_ahead_of_their_layer(const Schedule& x) {
  std::size_t n = 0;
  for (const Command& c : x.commands) n += x.programs.at(c.program).name != c.layer;
  return n;
}

}  // namespace

TEST(PrefetchModel, SqueezeNetOnServerMovesNoMoreBytesAndKeepsTheWorkAndTheMemory) {
  const Graph g =
      import_onnx(std::string(NPUSIM_SHARED_MODELS) + "/onnx/light_squeezenet.onnx", {});
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  CompileOptions with;
  with.explain = &explain;
  CompileOptions without;
  without.prefetch = false;
  const Schedule s = compile_schedule(g, config, with);
  const Schedule plain = compile_schedule(g, config, without);
  const std::string line = test::explain_line(explain, "prefetch\t");
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("kept: none"), std::string::npos) << line;
  // The prefetched loads are named after the layers whose weights they load, in earlier
  // programs: some command of a layer runs in a program before that layer's own.
  EXPECT_GT(loads_ahead_of_their_layer(s), 0u);
  EXPECT_EQ(loads_ahead_of_their_layer(plain), 0u);
  EXPECT_EQ(test::dram_bytes(s).in, test::dram_bytes(plain).in);
  EXPECT_EQ(test::schedule_macs(s), test::schedule_macs(plain));
  const profiler::Timeline t = estimate(s, config);
  EXPECT_LT(t.total_cycles(), estimate(plain, config).total_cycles());
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(s, config), t).overflow);
}

// SqueezeNet on `server`: the first plan moves its fire modules' weights into the stem's idle
// DMA time, and the groups they came from then idle in turn. A second round plans on that
// estimate and takes later groups' next loads: faster than the first plan alone, with the same
// bytes and work, and the memory still within the config's.
TEST(PrefetchModel, ASecondRoundTakesLoadsIntoTheTimeTheFirstFreed) {
  const Graph g =
      import_onnx(std::string(NPUSIM_SHARED_MODELS) + "/onnx/light_squeezenet.onnx", {});
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  CompileOptions rounds;
  rounds.explain = &explain;
  // Only the prefetch differs (the slice count could otherwise be chosen apart).
  rounds.fewer_slices = false;
  CompileOptions one = rounds;
  one.explain = nullptr;
  one.prefetch_rounds = 1;
  const Schedule s = compile_schedule(g, config, rounds);
  const Schedule first = compile_schedule(g, config, one);
  const std::string line = test::explain_line(explain, "prefetch\t");
  const std::size_t round2 = line.find("; round 2: ");
  ASSERT_NE(round2, std::string::npos) << line;
  // Round 2's part of the line (up to round 3's, if any) does not say it was not kept.
  const std::string part = line.substr(round2, line.find("; round 3") - round2);
  EXPECT_EQ(part.find("not"), std::string::npos) << line;
  // Round 2 kept: more commands load ahead of their layer's program than after one round.
  EXPECT_GT(loads_ahead_of_their_layer(s), loads_ahead_of_their_layer(first));
  EXPECT_EQ(test::dram_bytes(s).in, test::dram_bytes(first).in);
  EXPECT_EQ(test::schedule_macs(s), test::schedule_macs(first));
  const profiler::Timeline t = estimate(s, config);
  EXPECT_LT(t.total_cycles(), estimate(first, config).total_cycles());
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(s, config), t).overflow);
}

}  // namespace npusim
