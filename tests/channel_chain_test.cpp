// Channel chains (docs/compiler.md, "Channel chains"): an inverted residual block's expand,
// depthwise and project convs run block by block of channels. Expected values are worked by hand
// from the block's shapes and SCALE-Sim's fold count (cost/compute.cpp's systolic_gemm_cycles:
// per fold, rows + rows + cols - 2 + T cycles on a ws array; a layer's total less 1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/plan_chains.h"
#include "sim/config/hw_config.h"
#include "sim/cost/compute.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/engines.h"
#include "sim/ir/ops.h"
#include "sim/util/error.h"

#include "tests/schedule_support.h"

namespace npusim {
namespace {

using test::graph_macs;
using test::schedule_macs;

// x [1, 32, 7, 7] int8 -> expand (1x1, 32 -> 64) + Relu -> depthwise (3x3, 64, pad 1) + Relu ->
// project (1x1, 64 -> 32) + Add x: MobileNetV2's inverted residual block at a small size. With
// `tail`, a 1x1 conv of the block's output follows.
Graph inverted_residual(std::uint64_t channels = 32, std::uint64_t expanded = 64,
                        std::uint64_t size = 7, std::uint64_t stride = 1, bool residual = true,
                        std::uint64_t out_channels = 0, bool tail = false) {
  const std::uint64_t c = channels, e = expanded, h = size;
  const std::uint64_t k = out_channels == 0 ? channels : out_channels;
  const std::uint64_t o = (size + 2 - 3) / stride + 1;  // the depthwise conv's, pad 1
  residual = residual && stride == 1 && k == c;
  auto tensor = [](const std::string& name, const std::vector<std::uint64_t>& shape,
                   bool constant = false) {
    Json t = {{"name", name}, {"dtype", "int8"}, {"shape", shape}};
    if (constant) t["constant"] = true;
    return t;
  };
  auto layer = [](const std::string& name, const std::string& op,
                  const std::vector<std::string>& inputs, const std::string& output) {
    return Json{{"name", name}, {"op", op}, {"inputs", inputs}, {"outputs", Json::array({output})}};
  };
  Json tensors = Json::array(
      {tensor("x", {1, c, h, h}), tensor("we", {e, c, 1, 1}, true), tensor("e", {1, e, h, h}),
       tensor("er", {1, e, h, h}), tensor("wd", {e, 1, 3, 3}, true), tensor("d", {1, e, o, o}),
       tensor("dr", {1, e, o, o}), tensor("wp", {k, e, 1, 1}, true), tensor("p", {1, k, o, o})});
  const Json one_by_one = {{"kernel_shape", Json::array({1, 1})}};
  Json layers = Json::array();
  layers.push_back(layer("expand", "Conv", {"x", "we"}, "e"));
  layers.back()["attrs"] = one_by_one;
  layers.push_back(layer("expand.relu", "Relu", {"e"}, "er"));
  layers.push_back(layer("dw", "Conv", {"er", "wd"}, "d"));
  layers.back()["attrs"] = {{"kernel_shape", Json::array({3, 3})},
                            {"pads", Json::array({1, 1, 1, 1})},
                            {"strides", Json::array({stride, stride})},
                            {"group", e}};
  layers.push_back(layer("dw.relu", "Relu", {"d"}, "dr"));
  layers.push_back(layer("project", "Conv", {"dr", "wp"}, "p"));
  layers.back()["attrs"] = one_by_one;
  std::string out = "p";
  if (residual) {
    tensors.push_back(tensor("y", {1, k, o, o}));
    layers.push_back(layer("add", "Add", {"p", "x"}, "y"));
    out = "y";
  }
  if (tail) {
    tensors.push_back(tensor("wt", {k, k, 1, 1}, true));
    tensors.push_back(tensor("q", {1, k, o, o}));
    layers.push_back(layer("tail", "Conv", {out, "wt"}, "q"));
    layers.back()["attrs"] = one_by_one;
    out = "q";
  }
  const Json doc = {{"format", "npusim-graph"},
                    {"version", 1},
                    {"name", "block"},
                    {"tensors", tensors},
                    {"inputs", Json::array({"x"})},
                    {"outputs", Json::array({out})},
                    {"layers", layers}};
  return parse_graph_json(doc, "block.json");
}

// The chains plan_chains finds in `g`'s three groups when a chain costs `chain_cost` and the
// groups one after another 100.
std::vector<Chain> plan_block(const Graph& g, const HwConfig& config,
                              const std::vector<LayerGroup>& groups, const ChainCost& chain_cost) {
  const PlainCost plain_cost = [](std::size_t, std::size_t) {
    return std::optional<std::uint64_t>(100);
  };
  return plan_chains(g, config, groups, std::vector<Mapping>(groups.size()), chain_cost,
                     plain_cost);
}

// `chain` of `g`'s three groups emitted alone and finalized (it must check), and its commands'
// figures: the slice computes in order ("op@slice") and their places, the DRAM bytes and stores.
struct Emitted {
  Schedule s;
  std::vector<std::string> computes;
  std::vector<std::uint32_t> index;  // of each compute in s.commands
  std::uint64_t in = 0, out = 0, stores = 0;
};
Emitted emit_block_chain(const Graph& g, const HwConfig& config,
                         const std::vector<LayerGroup>& groups, const Chain& chain) {
  const TensorLayouts layouts = assign_layouts(g, groups);
  Emitter emitter(g, config, layouts);
  emitter.emit_chain({&groups[0], &groups[1], &groups[2]}, chain);
  Emitted e{emitter.finish(), {}, {}, 0, 0, 0};
  Diagnostics diag("block.json");
  finalize_schedule(e.s, config, diag);
  EXPECT_TRUE(diag.empty());
  for (std::uint32_t i = 0; i < e.s.commands.size(); ++i) {
    const Command& c = e.s.commands[i];
    if (c.engine == EngineKind::kDmaIn) e.in += c.bytes;
    if (c.engine == EngineKind::kDmaOut) {
      e.out += c.bytes;
      ++e.stores;
    }
    if (!on_slice(c.engine)) continue;
    e.computes.push_back(std::string(op_table()[c.op].name) + "@" + std::to_string(c.slice));
    e.index.push_back(i);
  }
  return e;
}

// The channel chain of 16 channels per block on both slices, expands one block ahead.
const ChainCost kPreferChannels16 = [](const Chain& c) {
  return std::optional<std::uint64_t>(
      c.channel_block == 16 && c.slices == 0 && c.ahead == 1 && !c.split_outputs ? 1 : 10);
};

TEST(ChannelChains, AnInvertedResidualBlockIsPlannedByBlocksOfChannels) {
  const Graph g = inverted_residual();
  const HwConfig config = load_hw_config("default");  // 2 slices of 16 x 16, 512 KiB
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 3u);
  const std::vector<Chain> chains = plan_block(g, config, groups, kPreferChannels16);
  ASSERT_EQ(chains.size(), 1u);
  const Chain& chain = chains[0];
  EXPECT_EQ(chain.channel_block, 16u);
  ASSERT_EQ(chain.mappings.size(), 3u);
  // Every member over the whole 7 x 7 map; the expand and depthwise by 16 channels, the project
  // over all 32 (its steps are the blocks; on two slices PartialSums write its output).
  for (const Mapping& m : chain.mappings) {
    EXPECT_EQ(m.tile_rows, 7u);
    EXPECT_EQ(m.tile_cols, 7u);
  }
  EXPECT_EQ(chain.mappings[0].tile_channel_units, 16u);
  EXPECT_EQ(chain.mappings[1].tile_channel_units, 16u);
  EXPECT_EQ(chain.mappings[2].tile_channel_units, 32u);
  EXPECT_EQ(chain.mappings[2].k_step, 0u);
  // Reserved: the input map once, 7 x 7 x 32 = 1568 bytes; per slice the accumulator,
  // 7 x 7 x 32 x 4 = 6272, 2 (ahead + 1) blocks of the expand's and the depthwise conv's
  // outputs, 2 x 2 x 7 x 7 x 16 = 3136, and two steps' weights of each member,
  // 2 x (16 x 32 + 16 x 9 + 16 x 32) = 2336; then the residual and the output, 1568 each.
  EXPECT_EQ(chain.reserved_bytes, 1568u + 2 * (6272u + 3136u + 2336u) + 1568u + 1568u);
  EXPECT_EQ(chain.ring_bytes, 0u);
}

TEST(ChannelChains, OnlyAnExpandDepthwiseProjectRunIsChainedByChannels) {
  // Two 3 x 3 convs (two_convs' shape): no channel chain among the options.
  const std::string doc = R"({
    "format": "npusim-graph", "version": 1, "name": "two",
    "tensors": [
      {"name": "x", "dtype": "int8", "shape": [1, 16, 8, 8]},
      {"name": "w1", "dtype": "int8", "shape": [32, 16, 3, 3], "constant": true},
      {"name": "c1", "dtype": "int8", "shape": [1, 32, 8, 8]},
      {"name": "w2", "dtype": "int8", "shape": [8, 32, 1, 1], "constant": true},
      {"name": "y", "dtype": "int8", "shape": [1, 8, 8, 8]}
    ],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["c1"],
       "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
      {"name": "conv2", "op": "Conv", "inputs": ["c1", "w2"], "outputs": ["y"],
       "attrs": {"kernel_shape": [1, 1]}}
    ]})";
  const Graph g = parse_graph_json(Json::parse(doc), "two.json");
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  bool any_by_channels = false;
  const ChainCost cost = [&](const Chain& c) {
    any_by_channels = any_by_channels || c.channel_block > 0;
    return std::optional<std::uint64_t>(1);
  };
  EXPECT_EQ(plan_block(g, config, groups, cost).size(), 1u);  // a chain of rows
  EXPECT_FALSE(any_by_channels);
  // One block of channels is no chain: an expand to 16 channels, one array width, has none.
  const Graph narrow = inverted_residual(8, 16, 7);
  const std::vector<LayerGroup> narrow_groups = fuse_layer_groups(narrow);
  any_by_channels = false;
  plan_block(narrow, config, narrow_groups, cost);
  EXPECT_FALSE(any_by_channels);
}

TEST(ChannelChains, TheBlocksAlternateSlicesAndTheArrayComputesTheNextExpandFirst) {
  const Graph g = inverted_residual();
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const std::vector<Chain> chains = plan_block(g, config, groups, kPreferChannels16);
  ASSERT_EQ(chains.size(), 1u);
  const Emitted e = emit_block_chain(g, config, groups, chains[0]);
  const Schedule& s = e.s;
  const std::vector<std::uint32_t>& index = e.index;
  const std::uint64_t in = e.in, out = e.out;
  // The computes in order, "op@slice". 64 / 16 = 4 blocks, block j on slice j mod 2; with one
  // block ahead on each of 2 slices, the expands of blocks 0 to 2 come before the first depthwise
  // conv, and block j + 2's before block j + 1's depthwise conv; then the PartialSums of rows
  // [0, 4) on slice 0 and [4, 7) on slice 1.
  EXPECT_EQ(e.computes,
            (std::vector<std::string>{"Conv@0", "Conv@1", "Conv@0",           // expand 0, 1, 2
                                      "DepthwiseConv@0", "Conv@0",            // block 0
                                      "Conv@1", "DepthwiseConv@1", "Conv@1",  // expand 3, block 1
                                      "DepthwiseConv@0", "Conv@0",            // block 2
                                      "DepthwiseConv@1", "Conv@1",            // block 3
                                      "PartialSum@0", "PartialSum@1"}));
  // Each program is a member: expand, depthwise, project (the PartialSums are the project's).
  EXPECT_EQ(s.programs.size(), 3u);
  const std::vector<std::uint32_t> program_of = {0, 0, 0, 1, 2, 0, 1, 2, 1, 2, 1, 2, 2, 2};
  for (std::size_t k = 0; k < index.size(); ++k) {
    EXPECT_EQ(s.commands[index[k]].program, program_of[k]) << k;
  }
  // Block 0's depthwise conv waits for its expand; its project step for its depthwise conv; block
  // 2's project step accumulates onto block 0's (same slice, same accumulator).
  auto deps_of = [&](std::size_t k) { return s.commands[index[k]].deps; };
  EXPECT_THAT(deps_of(3), ::testing::Contains(index[0]));
  EXPECT_THAT(deps_of(4), ::testing::Contains(index[3]));
  EXPECT_THAT(deps_of(9), ::testing::Contains(index[4]));
  EXPECT_THAT(deps_of(11), ::testing::Contains(index[7]));
  // Each PartialSum waits for both slices' last steps.
  for (const std::size_t k : {12, 13}) {
    EXPECT_THAT(deps_of(k), ::testing::Contains(index[9]));
    EXPECT_THAT(deps_of(k), ::testing::Contains(index[11]));
  }

  // Shapes: each expand is 7 x 7 pixels x 32 input channels x 16 output channels; each project
  // step 7 x 7 x 16 input channels x 32 output channels; each depthwise conv 16 channels.
  for (const std::size_t k : {0, 1, 2, 5}) {
    const auto& c = std::get<ConvShape>(s.commands[index[k]].shape);
    EXPECT_EQ(c.in_c, 32u);
    EXPECT_EQ(c.out_c, 16u);
  }
  for (const std::size_t k : {4, 7, 9, 11}) {
    const auto& c = std::get<ConvShape>(s.commands[index[k]].shape);
    EXPECT_EQ(c.in_c, 16u);
    EXPECT_EQ(c.out_c, 32u);
  }
  // A PartialSum adds the other slice's partial sums and the residual: 2 passes over its rows'
  // 7 x 32 elements, 4 rows on slice 0 and 3 on slice 1.
  EXPECT_EQ(std::get<ElementsShape>(s.commands[index[12]].shape).elements, 2u * 4 * 7 * 32);
  EXPECT_EQ(std::get<ElementsShape>(s.commands[index[13]].shape).elements, 2u * 3 * 7 * 32);

  // Cycles: the folds are the untiled layers' in another order. An expand block is a GEMM of
  // T = 49 pixels, K = 32, N = 16: ceil(32/16) x ceil(16/16) = 2 folds of 16 + 16 + 16 - 2 + 49
  // = 95 cycles, 189 less SCALE-Sim's 1; a project step, K = 16, N = 32, the same. The untiled
  // expand (K = 32, N = 64) is 8 folds, 759: the four blocks take 4 x 189 = 756, a cycle less per
  // extra command. A depthwise block: 49 x 16 x 9 = 7056 MACs over 16 lanes, 441 cycles.
  for (const std::size_t k : {0, 1, 2, 5, 4, 7, 9, 11}) {
    EXPECT_EQ(s.commands[index[k]].compute_cycles, 189u) << k;
  }
  for (const std::size_t k : {3, 6, 8, 10})
    EXPECT_EQ(s.commands[index[k]].compute_cycles, 441u) << k;

  // DRAM traffic: the input once (1568 bytes) and as the residual (4 and 3 rows: 896 + 672), the
  // weights once (2048 + 576 + 2048); the output once (1568), in two stores. Nothing between the
  // members reaches DRAM.
  EXPECT_EQ(in, 1568u + 1568u + 2048u + 576u + 2048u);
  EXPECT_EQ(out, 1568u);
  // MACs: 49 x 32 x 64 + 49 x 64 x 9 + 49 x 64 x 32 = 100352 + 28224 + 100352, the graph's.
  EXPECT_EQ(schedule_macs(s), 228928u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(ChannelChains, SplitOutputsNeedNoPartialSumAndHalfTheAccumulators) {
  const Graph g = inverted_residual();
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const ChainCost split = [](const Chain& c) {
    return std::optional<std::uint64_t>(
        c.channel_block == 16 && c.slices == 0 && c.ahead == 1 && c.split_outputs ? 1 : 10);
  };
  const std::vector<Chain> chains = plan_block(g, config, groups, split);
  ASSERT_EQ(chains.size(), 1u);
  ASSERT_TRUE(chains[0].split_outputs);
  // Per slice: 16 of the 32 output channels, an accumulator of 7 x 7 x 16 x 4 = 3136 bytes and
  // an output of 784; 2 blocks each of the expand's and the depthwise conv's outputs, 3136; two
  // steps' weights, 2 x (16 x 32 + 16 x 9 + 16 x 16) = 1824. Once: the input and the residual.
  EXPECT_EQ(chains[0].reserved_bytes, 1568u + 2 * (3136u + 784u + 3136u + 1824u) + 1568u);
  const Emitted e = emit_block_chain(g, config, groups, chains[0]);
  const Schedule& s = e.s;
  const std::vector<std::uint32_t>& index = e.index;
  // Every block's project step runs on both slices, the block's own slice last; no PartialSum.
  EXPECT_EQ(e.computes, (std::vector<std::string>{
                            "Conv@0", "Conv@1", "Conv@0",                     // expand 0, 1, 2
                            "DepthwiseConv@0", "Conv@1", "Conv@0",            // block 0
                            "Conv@1", "DepthwiseConv@1", "Conv@0", "Conv@1",  // expand 3, block 1
                            "DepthwiseConv@0", "Conv@1", "Conv@0",            // block 2
                            "DepthwiseConv@1", "Conv@0", "Conv@1"}));         // block 3
  // Block 0's step on slice 0 frees its depthwise block after slice 1's step read it.
  EXPECT_THAT(s.commands[index[5]].deps, ::testing::Contains(index[4]));
  EXPECT_EQ(s.commands[index[4]].free.size(), 1u);  // its weights only
  EXPECT_EQ(s.commands[index[5]].free.size(), 2u);  // its weights and the depthwise block
  // A step: T = 49 pixels, K = 16, N = 16, one fold of 16 + 16 + 16 - 2 + 49 = 95, 94 cycles.
  for (const std::size_t k : {4, 5, 8, 9, 11, 12, 14, 15}) {
    const auto& c = std::get<ConvShape>(s.commands[index[k]].shape);
    EXPECT_EQ(c.in_c, 16u);
    EXPECT_EQ(c.out_c, 16u);
    EXPECT_EQ(s.commands[index[k]].compute_cycles, 94u) << k;
  }
  // The same bytes as with partial sums: the input and its residual share per slice (2 x 784),
  // the weights once (the project's 2048 as 8 shares of 256); each slice stores its channels.
  EXPECT_EQ(e.in, 1568u + 1568u + 2048u + 576u + 2048u);
  EXPECT_EQ(e.out, 1568u);
  EXPECT_EQ(e.stores, 2u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(ChannelChains, OnOneSliceTheAccumulatorIsStoredWithNoPartialSum) {
  const Graph g = inverted_residual();
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const ChainCost one_slice = [](const Chain& c) {
    return std::optional<std::uint64_t>(
        c.channel_block == 16 && c.slices == 1 && c.ahead == 1 ? 1 : 10);
  };
  const std::vector<Chain> chains = plan_block(g, config, groups, one_slice);
  ASSERT_EQ(chains.size(), 1u);
  ASSERT_EQ(chains[0].slices, 1u);
  // On one slice nothing holds a second accumulator or a second slice's blocks: the input, 1568;
  // the accumulator, blocks and weights (6272 + 3136 + 2336); the output the last step writes
  // apart from the accumulator, 1568; and the residual, 1568.
  EXPECT_EQ(chains[0].mappings[2].k_step, 0u);
  EXPECT_EQ(chains[0].reserved_bytes, 1568u + 6272u + 3136u + 2336u + 1568u + 1568u);
  const Emitted e = emit_block_chain(g, config, groups, chains[0]);
  std::uint64_t sums = 0;
  for (const Command& c : e.s.commands) {
    if (!on_slice(c.engine)) continue;
    EXPECT_EQ(c.slice, 0u);
    if (c.op == find_op("PartialSum")) ++sums;
  }
  EXPECT_EQ(sums, 0u);
  EXPECT_EQ(e.stores, 1u);
  EXPECT_EQ(e.out, 1568u);
}

TEST(ChannelChains, AResidentInputAndAnOutputKeptOnChipMoveNothing) {
  // The block's input resident on chip (read by the expand and as the residual) and its output
  // left resident, on one slice, on two with partial sums and with split outputs. Only the
  // weights move, 2048 + 576 + 2048 bytes; nothing is stored. The output stays at its own size,
  // 7 x 7 x 32 = 1568 bytes (one buffer, or one per slice of 16 channels: 784 each), not as a
  // 4-byte accumulator (6272).
  const Graph g = inverted_residual();
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  const std::uint32_t x = g.inputs.front();
  struct Mode {
    std::uint32_t slices;
    bool split;
    std::vector<std::uint64_t> kept;  // the output's buffers' bytes
  };
  for (const Mode& mode :
       {Mode{1, false, {1568}}, Mode{0, false, {896, 672}}, Mode{0, true, {784, 784}}}) {
    const ChainCost pick = [&](const Chain& c) {
      return std::optional<std::uint64_t>(c.channel_block == 16 && c.slices == mode.slices &&
                                                  c.ahead == 1 && c.split_outputs == mode.split
                                              ? 1
                                              : 10);
    };
    const std::vector<Chain> chains = plan_block(g, config, groups, pick);
    ASSERT_EQ(chains.size(), 1u);
    Emitter emitter(g, config, layouts);
    emitter.assume_resident(x);
    std::vector<Residency> residency(3);
    residency.back().output = true;
    emitter.emit_chain({&groups[0], &groups[1], &groups[2]}, chains[0], residency);
    Schedule s = emitter.finish();
    Diagnostics diag("block.json");
    finalize_schedule(s, config, diag);
    ASSERT_TRUE(diag.empty());
    EXPECT_EQ(test::dram_bytes(s).in, 2048u + 576u + 2048u) << mode.slices << mode.split;
    EXPECT_EQ(test::dram_bytes(s).out, 0u) << mode.slices << mode.split;
    // The output's buffers: allocated by the project (its last steps, or the PartialSums) and
    // never freed within the chain.
    std::map<std::string, std::uint64_t> live;
    for (const Command& c : s.commands) {
      for (const BufferAlloc& a : c.alloc) live[a.buffer] = a.bytes;
      for (const std::string& f : c.free) live.erase(f);
    }
    std::vector<std::uint64_t> kept;
    kept.reserve(live.size());
    for (const auto& [name, bytes] : live) kept.push_back(bytes);
    std::sort(kept.begin(), kept.end());
    std::vector<std::uint64_t> expected = mode.kept;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(kept, expected) << mode.slices << mode.split;
    EXPECT_EQ(schedule_macs(s), graph_macs(g));
  }
}

TEST(ChannelChains, TheCompilerChoosesThemWhereTheyEstimateFaster) {
  // A block of MobileNetV2's 14 x 14 stage (64 -> 384 -> 64) on `default`. The expand is a GEMM
  // of T = 196 pixels, K = 64, N = 384: 4 x 24 = 96 folds of 16 + 16 + 16 - 2 + 196 = 242
  // cycles, 23231 (less SCALE-Sim's 1); the project (K = 384, N = 64) the same. The depthwise
  // conv is 196 x 384 x 9 = 677376 MACs over 16 lanes, 42336 cycles on the vector unit. Per slice
  // (of 2): 23231 on the array and 21168 on the vector unit; one after another at least their
  // sum, 44399; by channels at least the larger, 23231, and the compiler takes the chain.
  const Graph g = inverted_residual(64, 384, 14);
  const HwConfig config = load_hw_config("default");
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, config, &explain);
  EXPECT_THAT(explain, ::testing::Contains(::testing::HasSubstr(" channels 16")));
  const std::uint64_t cycles = estimate(s, config).total_cycles();
  EXPECT_GE(cycles, 23231u);
  EXPECT_LT(cycles, 44399u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(ChannelChains, TheRowChainInItsPlaceNeverReachesPastIt) {
  // A block without a residual, then a 1x1 conv: four groups, each read only by the next. A
  // channel chain costs 1, a chain of rows 10 less its members (its longest, 4 members, saves
  // most among them), the groups one after another 100. The channel chain is planned over the
  // block; the row chain that may take its place (Chain::instead) is the best of at most its 3
  // members, so that it cannot overlap a chain planned from the tail on.
  const Graph g = inverted_residual(32, 64, 7, 1, false, 0, true);
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 4u);
  const ChainCost cost = [](const Chain& c) {
    return std::optional<std::uint64_t>(c.channel_block > 0 ? 1 : 10 - c.mappings.size());
  };
  const std::vector<Chain> chains = plan_block(g, config, groups, cost);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_GT(chains[0].channel_block, 0u);
  ASSERT_EQ(chains[0].instead.size(), 1u);
  EXPECT_EQ(chains[0].instead[0].channel_block, 0u);
  EXPECT_EQ(chains[0].instead[0].first, 0u);
  EXPECT_EQ(chains[0].instead[0].mappings.size(), 3u);
}

TEST(ChannelChains, EveryOptionChecksHoldsItsReservationAndKeepsTheGraphsMacs) {
  // Blocks of MobileNetV2's shapes and odd ones (an expand of 40 channels: a last block of 8;
  // a stride-2 depthwise conv; no residual; a project that widens), on both built-in configs and
  // on `default` with a small local memory. Every channel chain plan_chains offers is emitted
  // alone: its schedule checks, the estimate runs it to the end, its MACs are the graph's, and
  // the local memory it holds at any time (as the estimate frees and allocates) is within what it
  // reserved, for nothing else is on chip.
  struct Shape {
    std::uint64_t channels, expanded, size, stride, out_channels;
  };
  const std::vector<Shape> shapes = {
      {32, 64, 7, 1, 32},    {24, 144, 14, 2, 32},  {64, 384, 14, 1, 64}, {96, 576, 14, 1, 96},
      {160, 960, 7, 1, 160}, {160, 960, 7, 1, 320}, {16, 40, 5, 1, 16},   {8, 48, 9, 2, 24}};
  HwConfig small = load_hw_config("default");
  small.lram_bytes = std::uint64_t{128} * 1024;
  std::size_t emitted = 0, two_ahead = 0;
  for (const HwConfig& config : {load_hw_config("default"), load_hw_config("server"), small}) {
    for (const Shape& shape : shapes) {
      const Graph g = inverted_residual(shape.channels, shape.expanded, shape.size, shape.stride,
                                        true, shape.out_channels);
      const std::vector<LayerGroup> groups = fuse_layer_groups(g);
      ASSERT_EQ(groups.size(), 3u);
      const TensorLayouts layouts = assign_layouts(g, groups);
      // Each round ranks the options one ahead differently, so that plan_chains tries others of
      // them two ahead; each option is kept once.
      std::vector<Chain> options;
      std::set<std::vector<std::uint64_t>> seen;
      for (std::uint64_t round = 0; round < 5; ++round) {
        std::uint64_t n = 0;
        const ChainCost collect = [&](const Chain& c) {
          if (c.channel_block > 0 && seen.insert(chain_fields(c)).second) options.push_back(c);
          return std::optional<std::uint64_t>(1 + (n++ + 5 - round) % 5);
        };
        plan_block(g, config, groups, collect);
      }
      for (const Chain& chain : options) {
        const std::string what =
            std::to_string(shape.expanded) + " at " + std::to_string(shape.size) + ", block " +
            std::to_string(chain.channel_block) + ", slices " + std::to_string(chain.slices) +
            ", ahead " + std::to_string(chain.ahead) + (chain.split_outputs ? " split" : "");
        Emitter emitter(g, config, layouts);
        emitter.emit_chain({&groups[0], &groups[1], &groups[2]}, chain);
        Schedule s = emitter.finish();
        Diagnostics diag("block.json");
        finalize_schedule(s, config, diag);
        ASSERT_TRUE(diag.empty()) << what;
        const profiler::Timeline t = estimate(s, config);
        std::uint64_t in_use = 0, peak = 0;
        for (const profiler::LramChange& c : profiler::lram_changes(make_workload(s, config), t)) {
          const Command& cmd = s.commands[c.command];
          in_use = c.is_alloc ? in_use + cmd.lram_alloc_bytes
                              : in_use - std::min(in_use, cmd.lram_free_bytes);
          peak = std::max(peak, in_use);
        }
        EXPECT_GT(peak, 0u) << what;
        EXPECT_LE(peak, chain.reserved_bytes) << what;
        EXPECT_EQ(schedule_macs(s), graph_macs(g)) << what;
        ++emitted;
        if (chain.ahead == 2) ++two_ahead;
      }
    }
  }
  // Options were offered: per shape and config up to 2 widths x 2 slice counts (8 on `server`)
  // x (1 + split) one ahead, and some two ahead.
  EXPECT_GT(emitted, 100u);
  EXPECT_GT(two_ahead, 20u);
}

}  // namespace
}  // namespace npusim
