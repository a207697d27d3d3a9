// Remapping to fewer DMA transfers (docs/compiler.md, "Fewer transfers") on a real model: the
// QDQ MobileNet-EdgeTPU block (int8) on `default`. Costed alone, its expand convs are cheapest
// split over slices in two parts (two loads a chunk); a mapping with fewer transfers costs them a
// little more alone, and the model less.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/search/cost_search.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/onnx_import.h"
#include "sim/ir/engines.h"
#include "sim/ir/schedule.h"
#include "tests/explain_support.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

std::uint64_t count_engine(const Schedule& s, EngineKind engine) {
  return static_cast<std::uint64_t>(std::count_if(
      s.commands.begin(), s.commands.end(), [&](const Command& c) { return c.engine == engine; }));
}

// The number that ends just before `at` in `line` ("...: 245568 cycles": at the " cycles").
std::uint64_t number_before(const std::string& line, std::size_t at) {
  const std::size_t start = line.find_last_not_of("0123456789", at - 1) + 1;
  return std::stoull(line.substr(start, at - start));
}

}  // namespace

TEST(FewerTransfers, DmaLoadCountIsTheTilesLoadsAndTheSharedLoads) {
  // 3 tiles of 2 loads each, 5 tiles of 1, and 4 shared chunks: 6 + 5 + 4 = 15 transfers.
  GroupWork work;
  TileClass a;
  a.count = 3;
  a.loads = 2;
  TileClass b;
  b.count = 5;
  b.loads = 1;
  work.tiles = {a, b};
  work.shared = {{4, 1024}};
  EXPECT_EQ(dma_load_count(work), 15u);
}

TEST(FewerTransfers, TheEdgeTpuBlocksExpandConvsTakeFewerLoadsAndTheModelIsFaster) {
  const Graph g =
      import_onnx(std::string(NPUSIM_SHARED_MODELS) + "/onnx/qdq_mobilenet_edgetpu_block.onnx", {});
  const HwConfig config = load_hw_config("default");
  std::vector<std::string> explain;
  CompileOptions with;
  with.explain = &explain;
  CompileOptions without;
  without.fewer_transfers = false;
  const Schedule s = compile_schedule(g, config, with);
  const Schedule plain = compile_schedule(g, config, without);
  const std::string line = test::explain_line(explain, "transfers\t");
  // "transfers\twithin 1/100, N group(s): C cycles estimated; ...; before: B; kept: within 1/F"
  const std::size_t kept = line.find("kept: within 1/");
  ASSERT_NE(kept, std::string::npos) << line;
  const std::uint64_t fraction = std::stoull(line.substr(kept + 15));
  EXPECT_NE(std::find(kFewerTransfersFractions.begin(), kFewerTransfersFractions.end(), fraction),
            kFewerTransfersFractions.end());
  // Each group taken so was within 1/F of its cheapest alone, and no cheaper (else the search
  // would have chosen it).
  std::size_t taken = 0;
  for (const std::string& l : explain) {
    const std::size_t at = l.find("; taken for fewer DMA transfers: ");
    if (at == std::string::npos) continue;
    ++taken;
    // "<group>\t<mapping>: C cycles (best of N); ...; taken for fewer DMA transfers:
    // <mapping>: A cycles"
    const std::size_t best = l.find(" cycles (best of");
    ASSERT_NE(best, std::string::npos) << l;
    const std::uint64_t cheapest = number_before(l, best);
    const std::uint64_t alt_cycles = number_before(l, l.rfind(" cycles"));
    EXPECT_GE(alt_cycles, cheapest) << l;
    EXPECT_LE(alt_cycles, cheapest + cheapest / fraction) << l;
  }
  EXPECT_GE(taken, 1u);
  // Fewer loads in all, the same work, faster, and within the local memory.
  EXPECT_LT(count_engine(s, EngineKind::kDmaIn), count_engine(plain, EngineKind::kDmaIn));
  EXPECT_EQ(test::schedule_macs(s), test::schedule_macs(plain));
  const profiler::Timeline t = estimate(s, config);
  EXPECT_LT(t.total_cycles(), estimate(plain, config).total_cycles());
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(s, config), t).overflow);
}

}  // namespace npusim
