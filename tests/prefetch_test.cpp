// Weight prefetch (docs/compiler.md, "Weight prefetch"): the planner's greedy choice on slots
// given by hand, and the emitter's loads, dependencies and chunks'-half waits on a small graph
// with the bytes derived in the comments. On real models: tests/prefetch_model_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/plan_prefetch.h"
#include "sim/compiler/passes/plan_residency.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/engines.h"
#include "sim/ir/ops.h"
#include "sim/ir/schedule.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

PrefetchSlot position(std::uint64_t idle_bytes, std::uint64_t need_bytes = 0) {
  PrefetchSlot s;
  s.position = true;
  s.idle_bytes = idle_bytes;
  s.need_bytes = need_bytes;
  return s;
}

PrefetchSlot dma_bound(std::vector<std::uint64_t> loads) {
  PrefetchSlot s = position(0);
  s.dma_bound = true;
  s.load_bytes = std::move(loads);
  return s;
}

bool same(const Prefetch& a, const Prefetch& b) {
  return a.at == b.at && a.target == b.target && a.load == b.load && a.bytes == b.bytes;
}

}  // namespace

TEST(PlanPrefetch, EachLoadGoesToTheLatestEarlierGroupWithIdleTimeForIt) {
  // Group 2's three loads of 200 bytes: load 0 fits group 1's 300 idle bytes (100 left), loads
  // 1 and 2 do not fit there and go one group further back, to group 0 (1000 - 400 left).
  const std::vector<PrefetchSlot> slots = {position(1000), position(300),
                                           dma_bound({200, 200, 200})};
  const std::vector<Prefetch> plan = plan_prefetch(slots, 10000, 5000);
  ASSERT_EQ(plan.size(), 3u);
  // Sorted by position, then target and load.
  EXPECT_TRUE(same(plan[0], {0, 2, 1, 200}));
  EXPECT_TRUE(same(plan[1], {0, 2, 2, 200}));
  EXPECT_TRUE(same(plan[2], {1, 2, 0, 200}));
}

TEST(PlanPrefetch, AGroupsLoadsArePrefetchedAsAPrefix) {
  // 250 idle bytes: load 0 (200) fits, load 1 (100) does not (50 left), and load 2 (50), which
  // would fit, is not taken: the emitter meets a group's loads in order.
  const std::vector<PrefetchSlot> slots = {position(250), dma_bound({200, 100, 50})};
  const std::vector<Prefetch> plan = plan_prefetch(slots, 10000, 5000);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_TRUE(same(plan[0], {0, 1, 0, 200}));
}

TEST(PlanPrefetch, NothingIsHeldAcrossAChainOrPastTheMemoryOrTheCap) {
  // A chain member between: the walk back stops there.
  PrefetchSlot chain = position(1000);
  chain.in_chain = true;
  EXPECT_TRUE(plan_prefetch({position(1000), chain, dma_bound({100})}, 10000, 5000).empty());
  // A group between that needs 9950 of 10000 bytes: 100 more do not fit while it runs.
  EXPECT_TRUE(
      plan_prefetch({position(1000), position(0, 9950), dma_bound({100})}, 10000, 5000).empty());
  // Held bytes capped at 150: the first load of 100 is held from group 0 through group 1, the
  // second would make 200.
  const std::vector<Prefetch> capped =
      plan_prefetch({position(1000), dma_bound({100, 100})}, 10000, 150);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_TRUE(same(capped[0], {0, 1, 0, 100}));
  // A DMA-bound group is no position: its own DMA time is what prefetch takes load from.
  PrefetchSlot busy = dma_bound({});
  busy.idle_bytes = 1000;
  EXPECT_TRUE(plan_prefetch({busy, dma_bound({100})}, 10000, 5000).empty());
}

TEST(PlanPrefetch, ALaterRoundTakesTheLoadsAfterTheEarlierRoundsWithinTheCap) {
  // Round 1 took group 2's load 0 (100 bytes) at group 0. On the new estimate group 1, whose
  // loads went earlier too, idles 1000 bytes and is a position.
  const std::vector<Prefetch> earlier = {{0, 2, 0, 100}};
  std::vector<PrefetchSlot> slots = {position(0), position(1000), dma_bound({100, 100, 100})};
  const std::vector<std::size_t> first_load = continue_after(slots, earlier);
  // Load 0 is left out of group 2's loads; groups 0 through 2 hold its 100 bytes.
  EXPECT_EQ(first_load, (std::vector<std::size_t>{0, 0, 1}));
  EXPECT_EQ(slots[2].load_bytes, (std::vector<std::uint64_t>{100, 100}));
  for (const PrefetchSlot& s : slots) EXPECT_EQ(s.held_bytes, 100u);
  // Cap 250: load 1 makes 100 + 100 held at groups 1 and 2, load 2 would make 300.
  const std::vector<Prefetch> more = plan_prefetch(slots, 10000, 250, first_load);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_TRUE(same(more[0], {1, 2, 1, 100}));  // numbered as group 2 issues it: its second load
  const std::vector<Prefetch> all = merge_plans(earlier, more);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(same(all[0], {0, 2, 0, 100}));
  EXPECT_TRUE(same(all[1], {1, 2, 1, 100}));
  // With a cap of 450 both remaining loads fit (100 + 200 held at groups 1 and 2).
  EXPECT_EQ(plan_prefetch(slots, 10000, 450, first_load).size(), 2u);
}

namespace {

// x [1,16,8,8] -> conv1 -> t1 -> conv2 -> ... -> convN -> y, all 1x1 and int8, conv i with
// outs[i - 1] output channels (the last writes y).
Graph conv_chain(const std::vector<std::uint64_t>& outs) {
  Json tensors = Json::array({{{"name", "x"}, {"shape", {1, 16, 8, 8}}}});
  Json layers = Json::array();
  std::string in = "x";
  std::uint64_t in_c = 16;
  for (std::size_t i = 1; i <= outs.size(); ++i) {
    const std::string n = std::to_string(i);
    const std::string out = i == outs.size() ? std::string("y") : "t" + n;
    tensors.push_back(
        {{"name", "w" + n}, {"shape", {outs[i - 1], in_c, 1, 1}}, {"constant", true}});
    tensors.push_back({{"name", out}, {"shape", {1, outs[i - 1], 8, 8}}});
    layers.push_back({{"name", "conv" + n},
                      {"op", "Conv"},
                      {"inputs", {in, "w" + n}},
                      {"outputs", {out}},
                      {"attrs", {{"kernel_shape", {1, 1}}}}});
    in = out;
    in_c = outs[i - 1];
  }
  const Json doc = {{"format", "npusim-graph"}, {"version", 1},    {"name", "chain"},
                    {"tensors", tensors},       {"inputs", {"x"}}, {"outputs", {"y"}},
                    {"layers", layers}};
  return parse_graph_json(doc, "chain.json");
}

// conv1 (16 -> 16), conv2 (16 -> 16), conv3 (16 -> 128): w1 and w2 are 256 bytes, w3 2048.
Graph three_convs() { return conv_chain({16, 16, 128}); }

Mapping spatial(std::uint64_t rows, std::uint64_t units, LoopOrder order) {
  Mapping m;
  m.kind = MappingKind::kSpatial;
  m.tile_rows = rows;
  m.tile_cols = 8;
  m.tile_channel_units = units;
  m.order = order;
  return m;
}

// conv1 and conv2 weights outer in tiles of 2 rows (2 x 8 x 16 = 256 bytes in and out: T = 4096
// / (4 x 2) = 512 at lram_kib=4 on 2 slices); conv3 input outer, one row per block and chunks of
// 16 output channels (8 chunks of 256 bytes of w3 per block), each part 256 + 1 x 8 x 16 = 384
// bytes on the ring.
// `g`'s groups emitted as `mappings` say, with the first `prefetched` loads (256 bytes each) of
// the last group issued by the one before it, first in it or, with `after`, after its commands.
Schedule emit_prefetching(const Graph& g, const HwConfig& config,
                          const std::vector<Mapping>& mappings, std::size_t prefetched,
                          bool after = false) {
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  Emitter emitter(g, config, layouts);
  emitter.prefetch_after_group(after);
  const std::size_t last = mappings.size() - 1;
  for (std::size_t k = 0; k < prefetched; ++k) {
    emitter.prefetch(groups[last - 1], groups[last], k, 256);
  }
  for (std::size_t i = 0; i < mappings.size(); ++i) emitter.emit_group(groups[i], mappings[i]);
  return emitter.finish();
}

Schedule emit_three(const Graph& g, const HwConfig& config, std::size_t prefetched_loads,
                    std::uint64_t conv3_rows = 1, bool after = false) {
  return emit_prefetching(
      g, config,
      {spatial(2, 16, LoopOrder::kWeightsOuter), spatial(2, 16, LoopOrder::kWeightsOuter),
       spatial(conv3_rows, 16, LoopOrder::kInputOuter)},
      prefetched_loads, after);
}

std::uint64_t dma_in_bytes(const Schedule& s) {
  std::uint64_t bytes = 0;
  for (const Command& c : s.commands) {
    if (c.engine == EngineKind::kDmaIn) bytes += c.bytes;
  }
  return bytes;
}

}  // namespace

TEST(Prefetch, TheFirstBlockWeightLoadsAreThoseTheInputOuterEmitterIssues) {
  const Graph g = three_convs();
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  const SpatialLayer s = describe_spatial(g, groups[2], budgets_of(config));
  // 128 channels in chunks of 16: 8 loads of 16 x 16 = 256 bytes; split over 2 parts of 8 input
  // channels each: 16 loads of 128.
  EXPECT_EQ(first_block_weight_loads(s, spatial(1, 16, LoopOrder::kInputOuter)),
            std::vector<std::uint64_t>(8, 256));
  Mapping split = spatial(1, 16, LoopOrder::kInputOuter);
  split.k_parts = 2;
  EXPECT_EQ(first_block_weight_loads(s, split), std::vector<std::uint64_t>(16, 128));
  // Weights outer loads shared chunks, which are not prefetched.
  EXPECT_TRUE(first_block_weight_loads(s, spatial(1, 16, LoopOrder::kWeightsOuter)).empty());
}

TEST(Prefetch, PrefetchedLoadsComeEarlyAndShareTheChunksHalfInBytes) {
  const Graph g = three_convs();
  // L = 4096: the chunks' half is 2048 bytes.
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  const Schedule plain = emit_three(g, config, 0);
  const Schedule s = emit_three(g, config, 7);
  // Seven of conv3's first block's eight 256-byte loads are issued by conv2's program, named
  // conv3's, before conv2's own weights; the eighth stays in conv3's program.
  std::vector<std::size_t> prefetches;
  std::size_t w2 = s.commands.size();
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.engine != EngineKind::kDmaIn || c.program != 1) continue;
    if (c.layer == "conv3") {
      EXPECT_EQ(c.bytes, 256u);
      prefetches.push_back(i);
    } else if (w2 == s.commands.size()) {
      w2 = i;
    }
  }
  ASSERT_EQ(prefetches.size(), 7u);
  ASSERT_LT(w2, s.commands.size());
  EXPECT_LT(prefetches.back(), w2);
  // They wait for nothing: the k-th finds w1's 256 bytes and the k earlier ones live, at most
  // 256 + 6 x 256 + 256 = 2048 bytes for the seventh.
  for (std::size_t i : prefetches) EXPECT_TRUE(s.commands[i].deps.empty()) << i;
  // conv2's chunk (w2, 256 bytes) would wait for nothing (one chunk before it), but with the
  // 7 x 256 = 1792 prefetched bytes held, 256 + 1792 + w1's 256 = 2304 pass the half: it waits
  // for w1's free, conv1's last store.
  std::size_t w1_free = 0;
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    if (s.commands[i].engine == EngineKind::kDmaOut && s.commands[i].program == 0) w1_free = i;
  }
  EXPECT_EQ(s.commands[w2].deps, (std::vector<std::uint32_t>{static_cast<std::uint32_t>(w1_free)}));
  for (const Command& c : plain.commands) {
    if (c.engine == EngineKind::kDmaIn && c.program == 1 && c.bytes == 256) {
      EXPECT_TRUE(c.deps.empty());  // w2 without prefetch
      break;
    }
  }
  // conv3's first block: chunks 0 to 6 read the prefetched buffers (their Convs wait for those
  // loads and free them); only chunk 7 loads. 8 blocks x 8 chunks = 64 loads without prefetch.
  std::size_t conv3_loads = 0, plain_conv3_loads = 0;
  for (const Command& c : s.commands) {
    conv3_loads += c.engine == EngineKind::kDmaIn && c.program == 2 && c.bytes == 256;
  }
  for (const Command& c : plain.commands) {
    plain_conv3_loads += c.engine == EngineKind::kDmaIn && c.program == 2 && c.bytes == 256;
  }
  EXPECT_EQ(plain_conv3_loads, 64u);
  EXPECT_EQ(conv3_loads, 64u - 7u);
  for (std::size_t k = 0; k < prefetches.size(); ++k) {
    const std::string& buffer = s.commands[prefetches[k]].alloc.at(0).buffer;
    const auto reader = std::find_if(s.commands.begin(), s.commands.end(), [&](const Command& c) {
      return on_slice(c.engine) && std::find(c.free.begin(), c.free.end(), buffer) != c.free.end();
    });
    ASSERT_NE(reader, s.commands.end()) << k;
    EXPECT_EQ(reader->layer, "conv3");
    const auto self = static_cast<std::uint32_t>(prefetches[k]);
    EXPECT_NE(std::find(reader->deps.begin(), reader->deps.end(), self), reader->deps.end());
  }
  // Nothing more moves: x 1024 + w1 256 + a 1024 (conv2's tiles) + w2 256 + b 8 x 128 + w3
  // 8 x 2048 bytes, with prefetch or without.
  EXPECT_EQ(dma_in_bytes(plain), 1024u + 256u + 1024u + 256u + 1024u + 8u * 2048u);
  EXPECT_EQ(dma_in_bytes(s), dma_in_bytes(plain));
  // A valid schedule whose local memory never passes the 4096 bytes.
  Schedule checked = s;
  Diagnostics diag("three.json");
  finalize_schedule(checked, config, diag);
  ASSERT_TRUE(diag.empty());
  const profiler::Timeline t = estimate(checked, config);
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(checked, config), t).overflow);
}

TEST(Prefetch, AnEighthLoadCannotBeHeldWithConv2sChunk) {
  // 8 x 256 = 2048 bytes held would leave no room for w2 in the 2048-byte half: the emitter
  // says so, and the driver plans again without holding across conv2.
  const Graph g = three_convs();
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  try {
    emit_three(g, config, 8);
    FAIL() << "expected PrefetchDoesNotFit";
  } catch (const Emitter::PrefetchDoesNotFit& e) {
    EXPECT_EQ(e.group_name, "conv2");
    EXPECT_TRUE(e.held);
  }
}

TEST(Prefetch, AfterTheGroupTheLoadsFollowItsOwnCommands) {
  // The same plan placed after conv2's commands: the seven loads come last in its program, and
  // conv2's chunk no longer waits for room (nothing is held yet when it loads).
  const Schedule s =
      emit_three(three_convs(), parse_hw_config(R"({"lram_kib": 4})", "small.json"), 7, 1, true);
  std::vector<std::string> program1;
  for (const Command& c : s.commands) {
    if (c.program == 1) program1.push_back(c.layer);
  }
  // conv2: its chunk, then 4 tiles of load, Conv and store; then the seven loads.
  ASSERT_EQ(program1.size(), 1u + 4u * 3u + 7u);
  for (std::size_t i = 0; i < program1.size(); ++i) {
    EXPECT_EQ(program1[i], i < 13 ? "conv2" : "conv3") << i;
  }
  const auto w2 = std::find_if(s.commands.begin(), s.commands.end(),
                               [](const Command& c) { return c.program == 1; });
  ASSERT_NE(w2, s.commands.end());
  EXPECT_EQ(w2->engine, EngineKind::kDmaIn);
  EXPECT_EQ(w2->bytes, 256u);
  EXPECT_TRUE(w2->deps.empty());
}

namespace {

// conv1, conv2 (accumulating in steps of 8 input channels in the test), conv3, all 16 -> 16,
// then conv4 (16 -> 128).
Graph four_convs() { return conv_chain({16, 16, 16, 128}); }

}  // namespace

TEST(Prefetch, LoadsAfterTilesThatTookTheWholeMemoryFitUnderAnyTiming) {
  // conv2's K-split tiles take the whole memory (L = 4096); conv3 prefetches seven of conv4's
  // 256-byte loads. Like conv3's own chunk, they must wait until those tiles fit the tiles'
  // half again; without that wait (found by review) some timings overfilled local memory. The
  // schedule is run under 300 random timings (each command's cycles scaled by e^u, u uniform in
  // [-2, 2], per engine and per command, fixed seed): local memory never passes 4096 bytes.
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  Mapping ksplit = spatial(4, 16, LoopOrder::kWeightsOuter);
  ksplit.k_step = 8;
  Schedule s = emit_prefetching(
      four_convs(), config,
      {spatial(2, 16, LoopOrder::kWeightsOuter), ksplit, spatial(2, 16, LoopOrder::kWeightsOuter),
       spatial(1, 16, LoopOrder::kInputOuter)},
      7);
  Diagnostics diag("four.json");
  finalize_schedule(s, config, diag);
  ASSERT_TRUE(diag.empty());
  std::size_t prefetches = 0;
  for (const Command& c : s.commands) {
    if (c.engine != EngineKind::kDmaIn || c.program != 2 || c.layer != "conv4") continue;
    ++prefetches;
    EXPECT_FALSE(c.deps.empty()) << c.id;
  }
  EXPECT_EQ(prefetches, 7u);
  std::vector<std::uint64_t> cycles;
  for (const Command& c : s.commands) cycles.push_back(c.isolated_cycles);
  std::mt19937_64 rng(1);
  // u from the generator's bits (std::uniform_real_distribution differs between libraries).
  const auto u = [](std::mt19937_64& r) {
    return static_cast<double>(r() >> 11) * 0x1.0p-53 * 4.0 - 2.0;
  };
  int overflows = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> per_engine(16);
    for (double& f : per_engine) f = std::exp(u(rng));
    for (std::size_t i = 0; i < s.commands.size(); ++i) {
      const double scaled = static_cast<double>(cycles[i]) *
                            per_engine[static_cast<std::size_t>(s.commands[i].engine) % 16] *
                            std::exp(u(rng));
      s.commands[i].isolated_cycles =
          std::max<std::uint64_t>(1, static_cast<std::uint64_t>(scaled));
    }
    const profiler::Timeline t = estimate(s, config);
    overflows += profiler::lram_occupancy(make_workload(s, config), t).overflow.has_value();
  }
  EXPECT_EQ(overflows, 0);
}

TEST(RingNeed, ASplitWaveNeedsWhatItsPartsClaim) {
  // conv3 input outer, one row by 8 columns, chunks of 16 channels, its 16 input channels split
  // in 2 parts of 8. A part holds its weights, 16 x 8 = 128 bytes, and, as the emitter counts it
  // (emit_spatial_input_outer), the tile's output 1 x 8 x 16 = 128 bytes and its partial sums
  // 1 x 8 x 16 x 4 = 512: 768. Its wave is one part per slice, 2 x 768 = 1536, which the
  // residency plan must leave room for. (Counting the parts' weights only gave 2 x 128 = 256,
  // and such waves spilled past the tiles' half.)
  const Graph g = three_convs();
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const SpatialLayer s = describe_spatial(g, groups[2], budgets_of(config));
  Mapping split = spatial(1, 16, LoopOrder::kInputOuter);
  split.k_parts = 2;
  EXPECT_EQ(ring_need(spatial_work(s, split, 2, config.dma.out_channels, false), config.lram_bytes),
            1536u);
}

TEST(Prefetch, TilesThatPassTheTilesHalfStopAPlan) {
  // conv3 in blocks of all 8 rows: a part holds 256 bytes of weights and 8 x 8 x 16 = 1024 of
  // output, and a wave of two (one per slice) claims 2 x 1280 = 2560 bytes of the 2048-byte
  // tiles' half (1024 + 1280 = 2304 with its first load prefetched). Without prefetch the claim
  // spills into the chunks' half, which holds little; prefetched weights may fill it, so the
  // emitter stops the plan there.
  const Graph g = three_convs();
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  EXPECT_NO_THROW(emit_three(g, config, 0, 8));
  try {
    emit_three(g, config, 1, 8);
    FAIL() << "expected PrefetchDoesNotFit";
  } catch (const Emitter::PrefetchDoesNotFit& e) {
    EXPECT_EQ(e.group_name, "conv3");
  }
}

TEST(Prefetch, AClaimPastTheTilesHalfBeforeAnyPrefetchSpillsAsWithout) {
  // conv2 (16 -> 32) in tiles of all 8 rows, weights outer: 8 x 8 x 16 = 1024 bytes in and
  // 8 x 8 x 32 = 2048 out, a claim of 3072 on the 2048-byte tiles' half (L = 4096). Nothing is
  // prefetched yet when it claims (the loads go after conv2's commands), so it spills into the
  // chunks' half as it does without prefetch; the prefetches of conv3's first two 512-byte loads
  // (32 x 16 weights each) then wait until the live tiles fit the tiles' half again.
  const Graph g = conv_chain({16, 32, 128});
  const HwConfig config = parse_hw_config(R"({"lram_kib": 4})", "small.json");
  const std::vector<Mapping> mappings = {spatial(2, 16, LoopOrder::kWeightsOuter),
                                         spatial(8, 32, LoopOrder::kWeightsOuter),
                                         spatial(1, 16, LoopOrder::kInputOuter)};
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  auto emit = [&](bool after) {
    Emitter emitter(g, config, layouts);
    emitter.prefetch_after_group(after);
    for (std::size_t k = 0; k < 2; ++k) emitter.prefetch(groups[1], groups[2], k, 512);
    for (std::size_t i = 0; i < mappings.size(); ++i) emitter.emit_group(groups[i], mappings[i]);
    return emitter.finish();
  };
  // First in conv2, the loads are held when its tile claims: the plan stops at conv2.
  try {
    emit(false);
    FAIL() << "expected PrefetchDoesNotFit";
  } catch (const Emitter::PrefetchDoesNotFit& e) {
    EXPECT_EQ(e.group_name, "conv2");
    EXPECT_TRUE(e.held);
  }
  Schedule s = emit(true);
  // conv2's one tile (one per slice would be two tiles of 4 rows; 8 rows is one): its store.
  std::vector<std::size_t> conv2_stores, prefetches;
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.program != 1) continue;
    if (c.engine == EngineKind::kDmaOut) conv2_stores.push_back(i);
    if (c.engine == EngineKind::kDmaIn && c.layer == "conv3") prefetches.push_back(i);
  }
  ASSERT_EQ(prefetches.size(), 2u);
  ASSERT_FALSE(conv2_stores.empty());
  for (const std::size_t i : prefetches) {
    EXPECT_EQ(s.commands[i].bytes, 512u);
    const auto& deps = s.commands[i].deps;
    const auto store = static_cast<std::uint32_t>(conv2_stores.back());
    EXPECT_NE(std::find(deps.begin(), deps.end(), store), deps.end()) << i;
  }
  Diagnostics diag("chain.json");
  finalize_schedule(s, config, diag);
  ASSERT_TRUE(diag.empty());
  const profiler::Timeline t = estimate(s, config);
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(s, config), t).overflow);
}

namespace {

// x [rows, 64] -> mm1 (w1 [64, 64]) -> t -> mm2 (w2 [64, 48]) -> y, int8.
Graph two_matmuls(std::uint64_t rows) {
  const Json doc = {
      {"format", "npusim-graph"},
      {"version", 1},
      {"name", "gemv"},
      {"tensors",
       {{{"name", "x"}, {"shape", {rows, 64}}},
        {{"name", "w1"}, {"shape", {64, 64}}, {"constant", true}},
        {{"name", "t"}, {"shape", {rows, 64}}},
        {{"name", "w2"}, {"shape", {64, 48}}, {"constant", true}},
        {{"name", "y"}, {"shape", {rows, 48}}}}},
      {"inputs", {"x"}},
      {"outputs", {"y"}},
      {"layers",
       {{{"name", "mm1"}, {"op", "MatMul"}, {"inputs", {"x", "w1"}}, {"outputs", {"t"}}},
        {{"name", "mm2"}, {"op", "MatMul"}, {"inputs", {"t", "w2"}}, {"outputs", {"y"}}}}}};
  return parse_graph_json(doc, "gemv.json");
}

Mapping matmul(std::uint64_t cols, LoopOrder order) {
  Mapping m;
  m.kind = MappingKind::kMatMul;
  m.tile_rows = 1;
  m.tile_cols = cols;
  m.order = order;
  return m;
}

}  // namespace

TEST(Prefetch, AnInputOuterMatMulsFirstRowTileChunksArePrefetched) {
  // Two rows, in row tiles of one: input outer, each row tile loads every chunk of w2.
  const Graph g = two_matmuls(2);
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const MatMulLayer mm2 = describe_matmul(g, groups[1]);
  // The first row tile's: 48 columns in chunks of 32, 64 x 32 = 2048 bytes and 64 x 16 = 1024
  // (int8, no bias); in chunks of 16, three of 1024.
  EXPECT_EQ(first_row_tile_weight_loads(g, mm2, matmul(32, LoopOrder::kInputOuter)),
            (std::vector<std::uint64_t>{2048, 1024}));
  EXPECT_EQ(first_row_tile_weight_loads(g, mm2, matmul(16, LoopOrder::kInputOuter)),
            std::vector<std::uint64_t>(3, 1024));
  // Weights outer loads shared chunks, and a split reduction parts: neither is prefetched.
  EXPECT_TRUE(first_row_tile_weight_loads(g, mm2, matmul(32, LoopOrder::kWeightsOuter)).empty());
  Mapping split = matmul(32, LoopOrder::kInputOuter);
  split.k_parts = 2;
  EXPECT_TRUE(first_row_tile_weight_loads(g, mm2, split).empty());

  // mm2's two chunks of its first row tile loaded by mm1's program (L = 8192: the chunks' half
  // holds them); mm1 in chunks of 32 columns (2 x 2048 bytes of w1).
  const HwConfig config = parse_hw_config(R"({"lram_kib": 8})", "small.json");
  const TensorLayouts layouts = assign_layouts(g, groups);
  const std::vector<std::uint64_t> loads = {2048, 1024};
  auto emit = [&](std::size_t prefetched) {
    Emitter emitter(g, config, layouts);
    for (std::size_t k = 0; k < prefetched; ++k) {
      emitter.prefetch(groups[0], groups[1], k, loads[k]);
    }
    emitter.emit_group(groups[0], matmul(32, LoopOrder::kInputOuter));
    emitter.emit_group(groups[1], matmul(32, LoopOrder::kInputOuter));
    return emitter.finish();
  };
  const Schedule plain = emit(0);
  Schedule s = emit(2);
  std::vector<std::size_t> prefetches;
  std::vector<std::uint64_t> mm2_loads, plain_mm2_loads;
  std::vector<const Command*> gemms;  // mm2's, in emission order
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.layer != "mm2") continue;
    if (on_slice(c.engine) && c.op == find_op("Gemm")) gemms.push_back(&c);
    if (c.engine != EngineKind::kDmaIn) continue;
    if (c.program == 0) prefetches.push_back(i);
    if (c.program == 1 && c.bytes != 64) mm2_loads.push_back(c.bytes);  // (64: a row of t)
  }
  for (const Command& c : plain.commands) {
    if (c.engine == EngineKind::kDmaIn && c.program == 1 && c.bytes != 64) {
      plain_mm2_loads.push_back(c.bytes);
    }
  }
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(s.commands[prefetches[0]].bytes, 2048u);
  EXPECT_EQ(s.commands[prefetches[1]].bytes, 1024u);
  // Without prefetch each of the 2 row tiles loads both chunks; with it, the second row tile.
  EXPECT_EQ(plain_mm2_loads, (std::vector<std::uint64_t>{2048, 1024, 2048, 1024}));
  EXPECT_EQ(mm2_loads, (std::vector<std::uint64_t>{2048, 1024}));
  // The k-th Gemm (row tile 0, chunk k) reads prefetch k: it waits for the load and frees it;
  // the second row tile's Gemms read their own loads.
  ASSERT_EQ(gemms.size(), 4u);
  for (std::size_t k = 0; k < gemms.size(); ++k) {
    for (std::size_t p = 0; p < prefetches.size(); ++p) {
      const std::string& buffer = s.commands[prefetches[p]].alloc.at(0).buffer;
      const auto self = static_cast<std::uint32_t>(prefetches[p]);
      const bool frees =
          std::find(gemms[k]->free.begin(), gemms[k]->free.end(), buffer) != gemms[k]->free.end();
      const bool waits =
          std::find(gemms[k]->deps.begin(), gemms[k]->deps.end(), self) != gemms[k]->deps.end();
      EXPECT_EQ(frees, k == p) << "Gemm " << k << ", prefetch " << p;
      EXPECT_EQ(waits, k == p) << "Gemm " << k << ", prefetch " << p;
    }
  }
  // Nothing more moves: x 2 x 64 + w1 2 x 4096 (mm1 input outer too) + t 2 x 64 + w2 2 x 3072
  // bytes either way.
  EXPECT_EQ(dma_in_bytes(plain), 128u + 2u * 4096u + 128u + 2u * 3072u);
  EXPECT_EQ(dma_in_bytes(s), dma_in_bytes(plain));
  Diagnostics diag("gemv.json");
  finalize_schedule(s, config, diag);
  ASSERT_TRUE(diag.empty());
  const profiler::Timeline t = estimate(s, config);
  EXPECT_FALSE(profiler::lram_occupancy(make_workload(s, config), t).overflow);
}

}  // namespace npusim
