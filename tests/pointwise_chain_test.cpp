// A pointwise vector op heading a chain of rows (docs/compiler.md, "Chains of convolutions"): a
// QDQ model's input QuantizeLinear quantises the rows its conv reads as the conv needs them,
// instead of quantising the whole image before the conv starts. Expected values are worked by
// hand from the shapes: a vector op of E elements takes ceil(E / 16) cycles on `default`'s 16
// lanes (cost/compute.cpp, one cycle per element for Quantize), and a ws array GEMM SCALE-Sim's
// folds of rows + rows + cols - 2 + T cycles each, the layer's total less 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/spatial.h"
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

using test::dram_bytes;
using test::graph_macs;
using test::schedule_macs;

Json tensor(const std::string& name, const std::string& dtype,
            const std::vector<std::uint64_t>& shape, bool constant = false) {
  Json t = {{"name", name}, {"dtype", dtype}, {"shape", shape}};
  if (constant) t["constant"] = true;
  return t;
}

Json layer(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
           const std::string& output) {
  return Json{{"name", name}, {"op", op}, {"inputs", inputs}, {"outputs", Json::array({output})}};
}

Graph graph_of(Json tensors, Json layers, const std::string& out) {
  const Json doc = {{"format", "npusim-graph"},
                    {"version", 1},
                    {"name", "qconv"},
                    {"tensors", std::move(tensors)},
                    {"inputs", Json::array({"x"})},
                    {"outputs", Json::array({out})},
                    {"layers", std::move(layers)}};
  return parse_graph_json(doc, "qconv.json");
}

// x [1, 3, size, size] float32 -> Quantize (scale: a float32 constant) -> q int8 -> conv 3x3,
// stride 2, pad 1, 3 -> 32 -> y int8 [1, 32, size/2, size/2]: the head of a QDQ MobileNetV2.
// With `relu`, a Relu of q (a group of its own) comes between; with `tail`, a 1x1 conv 32 -> 8
// of y follows.
Graph quantized_conv(std::uint64_t size, bool relu = false, bool tail = false) {
  const std::uint64_t o = size / 2;
  Json tensors =
      Json::array({tensor("x", "float32", {1, 3, size, size}),
                   tensor("scale", "float32", {1}, true), tensor("q", "int8", {1, 3, size, size}),
                   tensor("w", "int8", {32, 3, 3, 3}, true), tensor("y", "int8", {1, 32, o, o})});
  Json layers = Json::array();
  layers.push_back(layer("quantize", "Quantize", {"x", "scale"}, "q"));
  std::string conv_in = "q";
  if (relu) {
    tensors.push_back(tensor("r", "int8", {1, 3, size, size}));
    layers.push_back(layer("relu", "Relu", {"q"}, "r"));
    conv_in = "r";
  }
  layers.push_back(layer("conv", "Conv", {conv_in, "w"}, "y"));
  layers.back()["attrs"] = {{"kernel_shape", Json::array({3, 3})},
                            {"pads", Json::array({1, 1, 1, 1})},
                            {"strides", Json::array({2, 2})}};
  std::string out = "y";
  if (tail) {
    tensors.push_back(tensor("wt", "int8", {8, 32, 1, 1}, true));
    tensors.push_back(tensor("z", "int8", {1, 8, o, o}));
    layers.push_back(layer("tail", "Conv", {"y", "wt"}, "z"));
    layers.back()["attrs"] = {{"kernel_shape", Json::array({1, 1})}};
    out = "z";
  }
  return graph_of(tensors, layers, out);
}

const PlainCost kPlain100 = [](std::size_t, std::size_t) {
  return std::optional<std::uint64_t>(100);
};

// `chain` of `g`'s groups emitted alone and finalized: it must check.
Schedule emit_alone(const Graph& g, const HwConfig& config, const std::vector<LayerGroup>& groups,
                    const Chain& chain) {
  std::vector<const LayerGroup*> members;
  for (std::size_t i = 0; i < chain.mappings.size(); ++i)
    members.push_back(&groups[chain.first + i]);
  const TensorLayouts layouts = assign_layouts(g, groups);
  Emitter emitter(g, config, layouts);
  emitter.emit_chain(members, chain);
  Schedule s = emitter.finish();
  Diagnostics diag(g.source_file);
  finalize_schedule(s, config, diag);
  EXPECT_TRUE(diag.empty());
  return s;
}

// The one chain plan_chains finds in `g`'s two groups under `cost` (against 100 for the two one
// after the other), and that chain emitted alone.
std::pair<Chain, Schedule> chain_two(const Graph& g, const HwConfig& config,
                                     const std::vector<LayerGroup>& groups, const ChainCost& cost) {
  const std::vector<Chain> chains =
      plan_chains(g, config, groups, std::vector<Mapping>(2), cost, kPlain100);
  EXPECT_EQ(chains.size(), 1u);
  if (chains.empty()) return {};
  return {chains[0], emit_alone(g, config, groups, chains[0])};
}

TEST(PointwiseChains, OnlyALoneElementwiseOpOfAnImageWithConstantOperandsIsPointwise) {
  const Graph q = quantized_conv(8);
  const std::vector<LayerGroup> groups = fuse_layer_groups(q);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_TRUE(pointwise_group(q, groups[0]));
  EXPECT_FALSE(pointwise_group(q, groups[1]));  // a conv

  // Add of two activations: its second operand is not a constant.
  Json tensors = Json::array({tensor("x", "int8", {1, 4, 6, 6}), tensor("a", "int8", {1, 4, 6, 6}),
                              tensor("s", "int8", {1, 4, 6, 6})});
  Json layers =
      Json::array({layer("relu", "Relu", {"x"}, "a"), layer("add", "Add", {"a", "x"}, "s")});
  const Graph add = graph_of(tensors, layers, "s");
  const std::vector<LayerGroup> add_groups = fuse_layer_groups(add);
  ASSERT_EQ(add_groups.size(), 2u);
  EXPECT_TRUE(pointwise_group(add, add_groups[0]));  // Relu of an image
  EXPECT_FALSE(pointwise_group(add, add_groups[1]));

  // Softmax is a vector op of elements but not element-wise; a Relu of a [batch, tokens, hidden]
  // tensor is not an image.
  Json t2 =
      Json::array({tensor("x", "float32", {1, 4, 6, 6}), tensor("p", "float32", {1, 4, 6, 6})});
  const Graph softmax = graph_of(t2, Json::array({layer("sm", "Softmax", {"x"}, "p")}), "p");
  EXPECT_FALSE(pointwise_group(softmax, fuse_layer_groups(softmax).at(0)));
  Json t3 = Json::array({tensor("x", "float32", {1, 6, 8}), tensor("r", "float32", {1, 6, 8})});
  const Graph rank3 = graph_of(t3, Json::array({layer("relu", "Relu", {"x"}, "r")}), "r");
  EXPECT_FALSE(pointwise_group(rank3, fuse_layer_groups(rank3).at(0)));
  // LRN normalises across the channels of one pixel, all of which a chain member's tile holds: it
  // is pointwise. A tile of 2 rows x 6 columns x 4 channels is 48 elements; at LRN's 6 cycles an
  // element over `default`'s 16 lanes, 18 cycles.
  const Graph lrn = graph_of(t2, Json::array({layer("lrn", "LRN", {"x"}, "p")}), "p");
  const HwConfig config = load_hw_config("default");
  ASSERT_TRUE(pointwise_group(lrn, fuse_layer_groups(lrn).at(0)));
  const SpatialLayer s = describe_spatial(lrn, fuse_layer_groups(lrn).at(0), budgets_of(config));
  EXPECT_EQ(s.op, "LRN");
  EXPECT_EQ(cost::slice_op_cost(find_op(s.op), s.compute_shape(2, 6, s.units), config).cycles, 18u);
}

TEST(PointwiseChains, APointwiseOpIsDescribedAsAWindowOfOnePixel) {
  const Graph g = quantized_conv(8);
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const SpatialLayer s = describe_spatial(g, groups[0], budgets_of(load_hw_config("default")));
  EXPECT_TRUE(s.pointwise);
  EXPECT_EQ(s.op, "Quantize");
  EXPECT_EQ(s.c, 3u);
  EXPECT_EQ(s.k, 3u);
  EXPECT_EQ(s.oh, 8u);
  EXPECT_EQ(s.ow, 8u);
  EXPECT_EQ(s.kernel_h * s.kernel_w * s.stride_h * s.stride_w, 1u);
  EXPECT_EQ(s.in_elem_bytes, 4u);   // float32 in
  EXPECT_EQ(s.out_elem_bytes, 1u);  // int8 out
  EXPECT_EQ(s.units, 3u);           // one per channel
  // Its weights are the scale's 4 bytes, loaded whole.
  EXPECT_EQ(s.chunk_weight_bytes(s.units), 4u);
  // A tile of 2 rows of 8 pixels, 3 channels: 48 float32 elements in, 48 int8 out, and a
  // compute of 48 elements.
  EXPECT_EQ(s.input_bytes(2, 8, s.chunk_in_c(s.units)), 192u);
  EXPECT_EQ(s.output_bytes(2, 8, s.units), 48u);
  const Shape shape = s.compute_shape(2, 8, s.units);
  ASSERT_TRUE(std::holds_alternative<ElementsShape>(shape));
  EXPECT_EQ(std::get<ElementsShape>(shape).elements, 48u);
}

TEST(PointwiseChains, TheQuantizeHeadsTheConvsChainAndItsOutputNeverGoesToDram) {
  // quantized_conv(8) on `default` (2 slices), chained at 2 rows per tile: the quantize's tiles
  // are rows [0, 2), [2, 4), [4, 6), [6, 8). The conv's tile 0 (output rows 0, 1) reads input
  // rows [0, 4) (row -1 is padding), so the quantize's tiles 0 and 1 come first; its tile 1
  // (rows 2, 3) reads [3, 8): tiles 2 and 3.
  const Graph g = quantized_conv(8);
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const ChainCost cost = [](const Chain& c) {
    return std::optional<std::uint64_t>(
        c.mappings[0].tile_rows == 2 && c.slices == 0 && c.ahead == 0 ? 1 : 10);
  };
  auto [chain, s] = chain_two(g, config, groups, cost);
  ASSERT_EQ(chain.mappings.size(), 2u);
  // The conv's tile 1 is its last: it frees all four of the quantize's tiles, so four are live.
  // Reserved: the weights (the scale's 4 bytes, the conv's 864) and four int8 tiles of the
  // quantize, 2 x 8 x 3 = 48 bytes each. On the ring, per slice (2), the larger of a quantize
  // tile's float32 rows, 2 x 8 x 3 x 4 = 192 bytes, and a conv tile's output, 2 x 4 x 32 = 256.
  EXPECT_EQ(chain.live_tiles[0], 4u);
  EXPECT_EQ(chain.reserved_bytes, 4u + 864u + 4u * 48u);
  EXPECT_EQ(chain.ring_bytes, 2u * 256u);
  std::vector<std::string> computes;
  for (const Command& c : s.commands) {
    if (!on_slice(c.engine)) continue;
    computes.push_back(std::string(op_table()[c.op].name));
    if (computes.back() != "Quantize") continue;
    // 2 rows x 8 columns x 3 channels = 48 elements, 48 / 16 lanes = 3 cycles.
    ASSERT_TRUE(std::holds_alternative<ElementsShape>(c.shape));
    EXPECT_EQ(std::get<ElementsShape>(c.shape).elements, 48u);
    EXPECT_EQ(cost::slice_op_cost(c.op, c.shape, config).cycles, 3u);
  }
  EXPECT_EQ(computes, (std::vector<std::string>{"Quantize", "Quantize", "Conv", "Quantize",
                                                "Quantize", "Conv"}));
  // In: the float32 image once, 8 x 8 x 3 x 4 = 768 bytes (a window of one pixel has no halo),
  // the scale's 4 bytes and the conv's weights, 32 x 3 x 3 x 3 = 864. Out: y alone, 4 x 4 x 32 =
  // 512 bytes; q never leaves local memory.
  EXPECT_EQ(dram_bytes(s).in, 768u + 4u + 864u);
  EXPECT_EQ(dram_bytes(s).out, 512u);
  // MACs: 4 x 4 pixels x 32 outputs x 27 = 13824, the graph's.
  EXPECT_EQ(schedule_macs(s), 13824u);
  EXPECT_EQ(graph_macs(g), 13824u);
}

TEST(PointwiseChains, TheCompilerChainsTheQuantizeWhereThatEstimatesFaster) {
  // quantized_conv(64) on `default`, whose one DMA_IN channel moves 8 bytes a cycle. Chained, the
  // float32 image is read once, 64 x 64 x 3 x 4 = 49152 bytes, with the scale's 4 and the conv's
  // 864 bytes of weights; q (64 x 64 x 3 = 12288 bytes) neither goes to DRAM nor comes back, and
  // DMA_OUT writes y alone, 32 x 32 x 32 = 32768 bytes. The run takes at least DMA_IN's
  // 50020 / 8 = 6253 cycles. The compiler keeps the chain only where the model estimates faster
  // than without chains.
  const Graph g = quantized_conv(64);
  const HwConfig config = load_hw_config("default");
  std::vector<std::string> explain;
  CompileOptions options;
  options.explain = &explain;
  const Schedule s = compile_schedule(g, config, options);
  EXPECT_THAT(explain, ::testing::Contains(::testing::HasSubstr("[quantize x2 rows")));
  EXPECT_EQ(dram_bytes(s).in, 49152u + 4u + 864u);
  EXPECT_EQ(dram_bytes(s).out, 32768u);
  const std::uint64_t cycles = estimate(s, config).total_cycles();
  EXPECT_GE(cycles, 6253u);
  options.chains = false;
  options.explain = nullptr;
  EXPECT_LT(cycles, estimate(compile_schedule(g, config, options), config).total_cycles());
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(PointwiseChains, APointwiseMemberIsNeverTheLast) {
  // quantize -> relu -> conv: both vector groups are pointwise and may be members, but not the
  // last, whose tiles are stored as an image's rows. Every chain costs 1 against 100: from the
  // quantize, [quantize, relu] is no option and all three members save 99; from the relu, [relu,
  // conv] saves no more, so the chain of three is kept.
  const HwConfig config = load_hw_config("default");
  const ChainCost cost = [](const Chain&) { return std::optional<std::uint64_t>(1); };
  const Graph g = quantized_conv(8, /*relu=*/true);
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 3u);
  std::vector<Chain> chains =
      plan_chains(g, config, groups, std::vector<Mapping>(3), cost, kPlain100);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].first, 0u);
  EXPECT_EQ(chains[0].mappings.size(), 3u);
  {
    // Emitted: only x (8 x 8 x 3 x 4 = 768 bytes), the scale's 4 and the conv's 864 bytes of
    // weights, and y (4 x 4 x 32 = 512) move; q and r stay on chip, each relu tile after the
    // quantize tile of its rows.
    const Schedule s = emit_alone(g, config, groups, chains[0]);
    for (const Command& c : s.commands) {
      if (on_slice(c.engine) && op_table()[c.op].name == "Relu") {
        ASSERT_FALSE(c.deps.empty());
        EXPECT_EQ(op_table()[s.commands[c.deps.back()].op].name, "Quantize");
      }
    }
    EXPECT_EQ(dram_bytes(s).in, 768u + 4u + 864u);
    EXPECT_EQ(dram_bytes(s).out, 512u);
    EXPECT_EQ(schedule_macs(s), graph_macs(g));
  }
  // x -> Quantize -> q -> Relu -> r: two pointwise groups and nothing to end a chain.
  Json tensors =
      Json::array({tensor("x", "float32", {1, 3, 8, 8}), tensor("q", "int8", {1, 3, 8, 8}),
                   tensor("r", "int8", {1, 3, 8, 8})});
  Json layers =
      Json::array({layer("quantize", "Quantize", {"x"}, "q"), layer("relu", "Relu", {"q"}, "r")});
  const Graph two = graph_of(tensors, layers, "r");
  const std::vector<LayerGroup> two_groups = fuse_layer_groups(two);
  ASSERT_EQ(two_groups.size(), 2u);
  chains = plan_chains(two, config, two_groups, std::vector<Mapping>(2), cost, kPlain100);
  EXPECT_TRUE(chains.empty());
}

TEST(PointwiseChains, AChainFromTheNextGroupThatSavesMoreIsKeptInstead) {
  // quantize -> conv -> tail conv. A chain from the quantize costs 50 and one from the conv 10,
  // against 100 for their members one after another: the quantize's saves 50, the conv's 90. A
  // chain headed by the quantize would take the conv's place; the conv's is kept instead.
  const Graph g = quantized_conv(8, false, /*tail=*/true);
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 3u);
  const ChainCost cost = [](const Chain& c) {
    return std::optional<std::uint64_t>(c.first == 0 ? 50 : 10);
  };
  std::vector<Chain> chains =
      plan_chains(g, config, groups, std::vector<Mapping>(3), cost, kPlain100);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].first, 1u);
  // And the other way round: the chain from the quantize is kept.
  const ChainCost prefer_head = [](const Chain& c) {
    return std::optional<std::uint64_t>(c.first == 0 ? 10 : 50);
  };
  chains = plan_chains(g, config, groups, std::vector<Mapping>(3), prefer_head, kPlain100);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].first, 0u);
}

// x [1, 8, 8, 8] float32 -> BatchNormalization -> Relu -> conv 1x1, 8 -> 16 -> y: DenseNet's
// pre-activation (its batch norm and ReLU read the concat, then its 1x1 conv reads them).
Graph pre_activation_conv() {
  Json tensors = Json::array(
      {tensor("x", "float32", {1, 8, 8, 8}), tensor("g", "float32", {8}, true),
       tensor("b", "float32", {8}, true), tensor("m", "float32", {8}, true),
       tensor("v", "float32", {8}, true), tensor("n", "float32", {1, 8, 8, 8}),
       tensor("r", "float32", {1, 8, 8, 8}), tensor("w", "float32", {16, 8, 1, 1}, true),
       tensor("y", "float32", {1, 16, 8, 8})});
  Json layers = Json::array();
  layers.push_back(layer("bn", "BatchNormalization", {"x", "g", "b", "m", "v"}, "n"));
  layers.push_back(layer("relu", "Relu", {"n"}, "r"));
  layers.push_back(layer("conv", "Conv", {"r", "w"}, "y"));
  layers.back()["attrs"] = {{"kernel_shape", Json::array({1, 1})}};
  return graph_of(tensors, layers, "y");
}

TEST(PointwiseChains, ABatchNormAndReluHeadRunsBothOpsOnEachTileOnItsSlice) {
  // pre_activation_conv on `default`, chained at 2 rows per tile on both slices, none ahead: the
  // 1x1 conv's tile t reads the head's rows [2t, 2t + 2), so the two alternate.
  const Graph g = pre_activation_conv();
  const HwConfig config = load_hw_config("default");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 2u);  // batch norm + ReLU, conv
  ASSERT_TRUE(pointwise_group(g, groups[0]));
  const SpatialLayer head = describe_spatial(g, groups[0], budgets_of(config));
  EXPECT_EQ(head.op, "BatchNorm");
  EXPECT_EQ(head.pointwise_then_ops, (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(head.chunk_weight_bytes(head.units), 4u * 8u * 4u);  // four float32 vectors of 8
  const ChainCost cost = [](const Chain& c) {
    return std::optional<std::uint64_t>(
        c.mappings[0].tile_rows == 2 && c.slices == 0 && c.ahead == 0 ? 1 : 10);
  };
  auto [chain, s] = chain_two(g, config, groups, cost);
  ASSERT_EQ(chain.mappings.size(), 2u);
  std::vector<std::string> computes;
  for (std::uint32_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (!on_slice(c.engine)) continue;
    const std::string op(op_table()[c.op].name);
    computes.push_back(op);
    if (op == "Conv") continue;
    // 2 rows x 8 columns x 8 channels = 128 elements: the batch norm at 2 cycles an element over
    // 16 lanes takes 16 cycles, the ReLU 8.
    ASSERT_TRUE(std::holds_alternative<ElementsShape>(c.shape));
    EXPECT_EQ(std::get<ElementsShape>(c.shape).elements, 128u);
    EXPECT_EQ(cost::slice_op_cost(c.op, c.shape, config).cycles, op == "BatchNorm" ? 16u : 8u);
    if (op != "Relu") continue;
    // The ReLU runs after its batch norm, on its slice, and frees the tile's input rows.
    const Command& bn = s.commands[i - 1];
    EXPECT_EQ(std::string(op_table()[bn.op].name), "BatchNorm");
    EXPECT_EQ(c.deps, (std::vector<std::uint32_t>{i - 1}));
    EXPECT_EQ(c.slice, bn.slice);
    EXPECT_EQ(c.free.size(), 1u);
    EXPECT_TRUE(bn.free.empty());
  }
  EXPECT_EQ(computes,
            (std::vector<std::string>{"BatchNorm", "Relu", "Conv", "BatchNorm", "Relu", "Conv",
                                      "BatchNorm", "Relu", "Conv", "BatchNorm", "Relu", "Conv"}));
  // In: x once, 8 x 8 x 8 x 4 = 2048 bytes, the batch norm's 128 and the conv's 16 x 8 x 4 = 512.
  // Out: y alone, 8 x 8 x 16 x 4 = 4096; the normalised x never goes to DRAM.
  EXPECT_EQ(dram_bytes(s).in, 2048u + 128u + 512u);
  EXPECT_EQ(dram_bytes(s).out, 4096u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));  // 8 x 8 x 16 x 8 = 8192
  EXPECT_EQ(graph_macs(g), 8192u);
}

TEST(PointwiseChains, AFusedQuantizeFoldsIntoTheOpBeforeIt) {
  // x float32 -> Relu -> Mul by c -> Quantize -> q int8 -> conv: one vector group whose fused
  // Quantize is no command of its own and loads nothing (describe_vector folds its scale into the
  // Mul), and whose tiles hold int8 outputs.
  Json tensors =
      Json::array({tensor("x", "float32", {1, 4, 6, 6}), tensor("r", "float32", {1, 4, 6, 6}),
                   tensor("c", "float32", {1}, true), tensor("m", "float32", {1, 4, 6, 6}),
                   tensor("scale", "float32", {1}, true), tensor("q", "int8", {1, 4, 6, 6}),
                   tensor("w", "int8", {8, 4, 1, 1}, true), tensor("y", "int8", {1, 8, 6, 6})});
  Json layers = Json::array(
      {layer("relu", "Relu", {"x"}, "r"), layer("mul", "Mul", {"r", "c"}, "m"),
       layer("quantize", "Quantize", {"m", "scale"}, "q"), layer("conv", "Conv", {"q", "w"}, "y")});
  layers.back()["attrs"] = {{"kernel_shape", Json::array({1, 1})}};
  const Graph g = graph_of(tensors, layers, "y");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].layers.size(), 3u);
  ASSERT_TRUE(pointwise_group(g, groups[0]));
  const SpatialLayer s = describe_spatial(g, groups[0], budgets_of(load_hw_config("default")));
  EXPECT_EQ(s.op, "Relu");
  EXPECT_EQ(s.pointwise_then_ops, (std::vector<std::string>{"Mul"}));
  EXPECT_EQ(s.chunk_weight_bytes(s.units), 4u);  // c alone
  EXPECT_EQ(s.in_elem_bytes, 4u);
  EXPECT_EQ(s.out_elem_bytes, 1u);
}

TEST(PointwiseChains, AConvsChainThroughAPointwiseGroupGivesWayToItsChainThatSavesMore) {
  // conv a (3x3, pad 1) + Relu -> Sigmoid (a group of its own) -> conv b (1x1): a chain from a
  // runs through the Sigmoid and costs 50; one from the Sigmoid costs 10, against 100 for the
  // members one after another. The chain from a would take the Sigmoid's place: the Sigmoid's,
  // saving 90 against 50, is kept.
  Json tensors =
      Json::array({tensor("x", "int8", {1, 8, 8, 8}), tensor("wa", "int8", {8, 8, 3, 3}, true),
                   tensor("a", "int8", {1, 8, 8, 8}), tensor("ar", "int8", {1, 8, 8, 8}),
                   tensor("s", "int8", {1, 8, 8, 8}), tensor("wb", "int8", {8, 8, 1, 1}, true),
                   tensor("y", "int8", {1, 8, 8, 8})});
  Json layers = Json::array();
  layers.push_back(layer("a", "Conv", {"x", "wa"}, "a"));
  layers.back()["attrs"] = {{"kernel_shape", Json::array({3, 3})},
                            {"pads", Json::array({1, 1, 1, 1})}};
  layers.push_back(layer("a.relu", "Relu", {"a"}, "ar"));
  layers.push_back(layer("sigmoid", "Sigmoid", {"ar"}, "s"));
  layers.push_back(layer("b", "Conv", {"s", "wb"}, "y"));
  layers.back()["attrs"] = {{"kernel_shape", Json::array({1, 1})}};
  const Graph g = graph_of(tensors, layers, "y");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 3u);
  ASSERT_TRUE(pointwise_group(g, groups[1]));
  const HwConfig config = load_hw_config("default");
  const ChainCost cost = [](const Chain& c) {
    return std::optional<std::uint64_t>(c.first == 0 ? 50 : 10);
  };
  const std::vector<Chain> chains =
      plan_chains(g, config, groups, std::vector<Mapping>(3), cost, kPlain100);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].first, 1u);
  EXPECT_EQ(chains[0].mappings.size(), 2u);
}

}  // namespace
}  // namespace npusim
