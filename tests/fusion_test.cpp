// Epilogue fusion (docs/compiler.md, "Groups and fusion") on the patterns real exports have:
// SiLU / HardSwish written as x * f(x), ResNet's residual Add + Relu, and QDQ requantisation.
// Expected values are worked out by hand in the comments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fold_dequantize.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/onnx_import.h"
#include "sim/ir/engines.h"
#include "tests/explain_support.h"

namespace npusim {
namespace {

const std::string kShared = std::string(NPUSIM_SHARED_MODELS) + "/onnx/";
const std::string kZoo = std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/";

std::uint64_t graph_macs(const Graph& g) {
  std::uint64_t macs = 0;
  for (const Layer& l : g.layers) macs += layer_macs(g, l);
  return macs;
}

std::uint64_t schedule_macs(const Schedule& s) {
  std::uint64_t macs = 0;
  for (const Command& c : s.commands) macs += c.macs + c.vector_macs;
  return macs;
}

std::uint64_t bytes_of(const Schedule& s, EngineKind engine, const std::string& layer = "") {
  std::uint64_t bytes = 0;
  for (const Command& c : s.commands) {
    if (c.engine == engine && (layer.empty() || c.layer == layer)) bytes += c.bytes;
  }
  return bytes;
}

std::vector<std::string> program_names(const Schedule& s) {
  std::vector<std::string> names;
  for (const auto& p : s.programs) names.push_back(p.name);
  return names;
}

// The block YOLOv5's Conv module exports (BN folded into the conv's bias, act = SiLU):
//   Conv(x, w, b) -> c;  Sigmoid(c) -> s;  Mul(c, s) -> y
// (YOLOX and EfficientNet write the same x * sigmoid(x); MobileNetV3 exports HardSwish as
// x * HardSigmoid(x)), followed by a 1x1 conv.
Graph gated_block(const std::string& gate, bool mul_gate_first) {
  const std::string mul_inputs = mul_gate_first ? R"(["s", "c"])" : R"(["c", "s"])";
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "silu",
    "tensors": [
      {"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w1", "shape": [32, 16, 3, 3], "constant": true},
      {"name": "b1", "shape": [32], "constant": true},
      {"name": "c", "shape": [1, 32, 8, 8]},
      {"name": "s", "shape": [1, 32, 8, 8]},
      {"name": "y1", "shape": [1, 32, 8, 8]},
      {"name": "w2", "shape": [8, 32, 1, 1], "constant": true},
      {"name": "y", "shape": [1, 8, 8, 8]}
    ],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "model.0.conv", "op": "Conv", "inputs": ["x", "w1", "b1"], "outputs": ["c"],
       "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
      {"name": "model.0.act", "op": ")" +
                               gate + R"(", "inputs": ["c"], "outputs": ["s"]},
      {"name": "model.0.mul", "op": "Mul", "inputs": )" +
                               mul_inputs + R"(, "outputs": ["y1"]},
      {"name": "model.1.conv", "op": "Conv", "inputs": ["y1", "w2"], "outputs": ["y"],
       "attrs": {"kernel_shape": [1, 1]}}
    ]})");
  return parse_graph_json(doc, "silu.json");
}

TEST(Fusion, SiluTwoReaderFormFusesIntoTheConvEpilogue) {
  for (const std::string gate : {"Sigmoid", "HardSigmoid"}) {
    for (bool gate_first : {false, true}) {
      const Graph g = gated_block(gate, gate_first);
      const Schedule s = compile_schedule(g, load_hw_config("default"));
      EXPECT_THAT(
          program_names(s),
          ::testing::ElementsAre("fused(model.0.conv+model.0.act+model.0.mul)", "model.1.conv"))
          << gate;
      // No vector command but the partial sums of a conv split over slices: the gate and the
      // product are applied to the array's output.
      for (const Command& c : s.commands) {
        if (c.engine == EngineKind::kVector) {
          EXPECT_EQ(op_table()[c.op].name, "PartialSum") << c.id;
        }
      }
      // No byte is stored twice, however the layers are tiled: group 0 stores at most the Mul's
      // output, 8*8*32 = 2048 bytes (less when model.1.conv reads it whole from local memory,
      // docs/compiler.md "Outputs kept on chip"), and model.1.conv its 8*8*8 = 512. c and s never
      // reach DRAM (unfused: 2048 more stored for c, and 2048 for s; and 2048 + 4096 loaded by
      // the Sigmoid and the Mul).
      const std::string g0 = "fused(model.0.conv+model.0.act+model.0.mul)";
      EXPECT_LE(bytes_of(s, EngineKind::kDmaOut, g0), 2048u);
      EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "model.1.conv"), 512u);
      EXPECT_EQ(schedule_macs(s), graph_macs(g));
    }
  }
}

TEST(Fusion, SiluDoesNotFuseWhenTheGateHasAnotherReader) {
  Graph g = gated_block("Sigmoid", false);
  // The gate is also a graph output: it must reach DRAM, so nothing past the conv fuses.
  g.outputs.push_back(*g.find_tensor("s"));
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].name, "model.0.conv");
}

// A bottleneck-style identity block: conv1 (1x1, 32 -> 32) + relu, then conv2 (1x1) whose
// output is added to conv1's and rectified: y = relu(conv2(c) + c).
Graph residual_block() {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "res",
    "tensors": [
      {"name": "x", "shape": [1, 32, 8, 8]},
      {"name": "w1", "shape": [32, 32, 1, 1], "constant": true},
      {"name": "c0", "shape": [1, 32, 8, 8]},
      {"name": "c", "shape": [1, 32, 8, 8]},
      {"name": "w2", "shape": [32, 32, 1, 1], "constant": true},
      {"name": "d", "shape": [1, 32, 8, 8]},
      {"name": "e", "shape": [1, 32, 8, 8]},
      {"name": "y", "shape": [1, 32, 8, 8]}
    ],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["c0"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "relu1", "op": "Relu", "inputs": ["c0"], "outputs": ["c"]},
      {"name": "conv2", "op": "Conv", "inputs": ["c", "w2"], "outputs": ["d"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "add", "op": "Add", "inputs": ["d", "c"], "outputs": ["e"]},
      {"name": "relu", "op": "Relu", "inputs": ["e"], "outputs": ["y"]}
    ]})");
  return parse_graph_json(doc, "res.json");
}

TEST(Fusion, ResidualAddAndReluFuseIntoTheConvEpilogue) {
  const Graph g = residual_block();
  CompileOptions through_dram;  // c through DRAM: the residual is a load of its own
  through_dram.residency = false;
  const Schedule s = compile_schedule(g, load_hw_config("default"), through_dram);
  ASSERT_THAT(program_names(s),
              ::testing::ElementsAre("fused(conv1+relu1)", "fused(conv2+add+relu)"));
  // Whatever the tiling, each conv2 compute reads its weights, its input rows of c and its
  // residual piece of c: the tile's output pixels times its channels (1x1, stride 1: in_h x
  // in_w x out_c of its shape, at 1 byte), and that load waits only for stores of conv1's group.
  std::vector<std::uint32_t> conv1_stores;
  std::size_t conv2_tiles = 0;
  for (std::uint32_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.layer == "fused(conv1+relu1)" && c.engine == EngineKind::kDmaOut)
      conv1_stores.push_back(i);
    if (c.layer != "fused(conv2+add+relu)" || c.engine != EngineKind::kArray) continue;
    ++conv2_tiles;
    const auto& shape = std::get<ConvShape>(c.shape);
    std::size_t loads = 0;
    for (std::uint32_t d : c.deps) {
      if (s.commands[d].engine == EngineKind::kDmaIn && s.commands[d].layer == c.layer) ++loads;
    }
    ASSERT_GE(c.deps.size(), 3u);
    // The last load before the compute is the residual piece.
    const Command& residual = s.commands[c.deps.back()];
    EXPECT_EQ(residual.engine, EngineKind::kDmaIn);
    EXPECT_EQ(residual.bytes, shape.in_h * shape.in_w * shape.out_c);
    EXPECT_FALSE(residual.deps.empty());
    for (std::uint32_t d : residual.deps) {
      EXPECT_NE(std::find(conv1_stores.begin(), conv1_stores.end(), d), conv1_stores.end())
          << s.commands[d].id;
    }
    EXPECT_GE(loads, 2u);  // input (or weights, when the input block is shared) and residual
  }
  EXPECT_GT(conv2_tiles, 0u);
  // The group stores the Relu's output, each byte once: 8*8*32 = 2048 bytes; conv1's group its
  // 2048. The Add's output and conv2's never reach DRAM, and the Add costs nothing.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "fused(conv2+add+relu)"), 2048u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut), 2u * 2048u);
  // MACs: two 1x1 convs of 8*8 pixels * 32 * 32 = 65536 each; the Add adds none.
  EXPECT_EQ(schedule_macs(s), 2u * 65536u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));

  // With residency, c (kept for conv2 and also its residual) stays on chip: conv2's group loads
  // only its weights, 32 x 32 = 1024 bytes. conv1's group stores only its weight chunk's last
  // tile (that store carries the chunk's free; emitter.cpp store_tile), never all 2048 bytes.
  const Schedule on_chip = compile_schedule(g, load_hw_config("default"));
  EXPECT_LT(bytes_of(on_chip, EngineKind::kDmaOut, "fused(conv1+relu1)"), 2048u);
  EXPECT_EQ(bytes_of(on_chip, EngineKind::kDmaIn, "fused(conv2+add+relu)"), 1024u);
  EXPECT_EQ(bytes_of(on_chip, EngineKind::kDmaOut, "fused(conv2+add+relu)"), 2048u);
  EXPECT_EQ(schedule_macs(on_chip), graph_macs(g));
}

// ResNet-50 has 16 bottleneck blocks (3 + 4 + 6 + 3), each ending in Add + Relu. In the 4 with a
// projection shortcut, the downsample conv comes after conv3 in layer order, so the downsample
// conv takes the Add (conv3's output is already written by then).
TEST(Fusion, ResNet50ResidualAddsFuse) {
  const Graph g = load_graph_json(kZoo + "resnet50.json");
  std::size_t residual = 0, downsample = 0;
  for (const LayerGroup& group : fuse_layer_groups(g)) {
    if (!group.residual) continue;
    ++residual;
    EXPECT_EQ(g.layers[group.layers.back()].op, "Relu") << group.name;
    if (g.layers[group.layers[0]].name.find("downsample") != std::string::npos) ++downsample;
  }
  EXPECT_EQ(residual, 16u);
  EXPECT_EQ(downsample, 4u);
  EXPECT_EQ(graph_macs(g), 4089184256u);
  for (const std::string config : {"default", "server"}) {
    const Schedule s = compile_schedule(g, load_hw_config(config));
    EXPECT_EQ(schedule_macs(s), graph_macs(g)) << config;
    for (const Command& c : s.commands) {
      if (c.engine == EngineKind::kVector) {
        EXPECT_NE(op_table()[c.op].name, "Add") << c.layer;
      }
    }
  }
}

// Caffe's pre-activation pattern, as DenseNet exports it: BatchNorm, then its Scale layer as a
// Mul and an Add of per-channel constants, then Relu; once after a conv, once on its own:
//   conv(x, w) -> BN -> Mul(s1 [16,1,1]) -> Add(b1 [1,16,1,1]) -> Relu -> y
//   BN(y) -> Mul(y, s2 [16,1,1]) -> Add(b2 [16,1,1]) -> Relu -> z  (z: the graph output)
// `other` is the second Mul's other operand: s2, x (not a constant) or s3 [16, 8, 1] (a constant
// that broadcasts neither per channel nor over leading dimensions).
Graph scale_blocks(const std::string& other = "s2") {
  const std::string second_mul = R"(["n2", ")" + other + R"("])";
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "scale",
    "tensors": [
      {"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "g1", "shape": [16], "constant": true}, {"name": "h1", "shape": [16], "constant": true},
      {"name": "m1", "shape": [16], "constant": true}, {"name": "v1", "shape": [16], "constant": true},
      {"name": "s1", "shape": [16, 1, 1], "constant": true},
      {"name": "b1", "shape": [1, 16, 1, 1], "constant": true},
      {"name": "c", "shape": [1, 16, 8, 8]}, {"name": "n1", "shape": [1, 16, 8, 8]},
      {"name": "p1", "shape": [1, 16, 8, 8]}, {"name": "q1", "shape": [1, 16, 8, 8]},
      {"name": "y", "shape": [1, 16, 8, 8]},
      {"name": "g2", "shape": [16], "constant": true}, {"name": "h2", "shape": [16], "constant": true},
      {"name": "m2", "shape": [16], "constant": true}, {"name": "v2", "shape": [16], "constant": true},
      {"name": "s2", "shape": [16, 1, 1], "constant": true},
      {"name": "s3", "shape": [16, 8, 1], "constant": true},
      {"name": "b2", "shape": [16, 1, 1], "constant": true},
      {"name": "n2", "shape": [1, 16, 8, 8]}, {"name": "p2", "shape": [1, 16, 8, 8]},
      {"name": "q2", "shape": [1, 16, 8, 8]}, {"name": "z", "shape": [1, 16, 8, 8]}
    ],
    "inputs": ["x"], "outputs": ["z"],
    "layers": [
      {"name": "conv", "op": "Conv", "inputs": ["x", "w"], "outputs": ["c"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "bn1", "op": "BatchNormalization", "inputs": ["c", "g1", "h1", "m1", "v1"], "outputs": ["n1"]},
      {"name": "mul1", "op": "Mul", "inputs": ["n1", "s1"], "outputs": ["p1"]},
      {"name": "add1", "op": "Add", "inputs": ["b1", "p1"], "outputs": ["q1"]},
      {"name": "relu1", "op": "Relu", "inputs": ["q1"], "outputs": ["y"]},
      {"name": "bn2", "op": "BatchNormalization", "inputs": ["y", "g2", "h2", "m2", "v2"], "outputs": ["n2"]},
      {"name": "mul2", "op": "Mul", "inputs": )" +
                               second_mul + R"(, "outputs": ["p2"]},
      {"name": "add2", "op": "Add", "inputs": ["p2", "b2"], "outputs": ["q2"]},
      {"name": "relu2", "op": "Relu", "inputs": ["q2"], "outputs": ["z"]}
    ]})");
  return parse_graph_json(doc, "scale.json");
}

TEST(Fusion, ChannelScaleFoldsIntoTheConvAndElementWiseChainsRunOnEachTile) {
  const Graph g = scale_blocks();
  CompileOptions through_dram;  // a resident y would not be stored at all
  through_dram.residency = false;
  const Schedule s = compile_schedule(g, load_hw_config("default"), through_dram);
  ASSERT_THAT(program_names(s), ::testing::ElementsAre("fused(conv+bn1+mul1+add1+relu1)",
                                                       "fused(bn2+mul2+add2+relu2)"));
  // Each group stores its output once: 16 * 8 * 8 = 1024 int8 bytes; nothing in between.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "fused(conv+bn1+mul1+add1+relu1)"), 1024u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut), 2u * 1024u);
  // The chain loads y once (1024 bytes) and its constants once: BN's 4 x 16, s2's 16, b2's 16.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "fused(bn2+mul2+add2+relu2)"), 1024u + 6u * 16u);
  // The conv group loads x (1024 bytes) and w (16 * 16 = 256 bytes) only: the scale and shift
  // fold into the conv's weights and bias, as the batch norm does.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "fused(conv+bn1+mul1+add1+relu1)"), 1024u + 256u);
  // On each tile of the chain: BatchNorm, Mul, Add, Relu in that order on one slice, each on the
  // tile's elements, each after the one before; over the tiles, every op covers all 1024.
  std::vector<std::string> ops;
  std::map<std::string, std::uint64_t> elements;
  for (std::uint32_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.layer != "fused(bn2+mul2+add2+relu2)" || c.engine != EngineKind::kVector) continue;
    const std::string op(op_table()[c.op].name);
    elements[op] += std::get<ElementsShape>(c.shape).elements;
    if (op != "BatchNorm") {
      ASSERT_EQ(c.deps.size(), 1u) << c.id;
      const Command& before = s.commands[c.deps[0]];
      EXPECT_EQ(before.engine, EngineKind::kVector) << c.id;
      EXPECT_EQ(before.slice, c.slice) << c.id;
      EXPECT_TRUE(c.alloc.empty()) << c.id;  // in place, in the head's output buffer
      // The last op frees the tile's pieces, which every op of the chain may read.
      EXPECT_EQ(c.free.empty(), op != "Relu") << c.id;
    } else {
      EXPECT_TRUE(c.free.empty()) << c.id;
    }
    ops.push_back(op);
  }
  ASSERT_EQ(ops.size() % 4, 0u);
  for (std::size_t i = 0; i < ops.size(); i += 4) {
    EXPECT_THAT(std::vector<std::string>(ops.begin() + static_cast<std::ptrdiff_t>(i),
                                         ops.begin() + static_cast<std::ptrdiff_t>(i + 4)),
                ::testing::ElementsAre("BatchNorm", "Mul", "Add", "Relu"));
  }
  for (const char* op : {"BatchNorm", "Mul", "Add", "Relu"}) EXPECT_EQ(elements[op], 1024u) << op;
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// A Mul by another activation, or by a constant every tile would load whole, is not taken: the
// chain stops before it.
TEST(Fusion, AnElementWiseChainStopsAtANonConstantOrOddlyBroadcastOperand) {
  for (const std::string other : {"x", "s3"}) {
    const Graph g = scale_blocks(other);
    std::vector<std::string> names;
    for (const LayerGroup& group : fuse_layer_groups(g)) names.push_back(group.name);
    EXPECT_THAT(names, ::testing::ElementsAre("fused(conv+bn1+mul1+add1+relu1)", "bn2",
                                              "fused(mul2+add2+relu2)"))
        << other;
  }
}

// The chain loads its smaller constants once, with the weights; it stops before a layer that
// would take them past the cap the compiler gives (its weight-chunk budget). Here: bn2's four
// [16] int8 parameters (64 bytes) and s2 (16) make 80; b2 would make 96. So with a cap of 80,
// add2 starts a chain of its own.
TEST(Fusion, AnElementWiseChainKeepsItsConstantsWithinTheWeightBudget) {
  const Graph g = scale_blocks();
  std::vector<std::string> names;
  for (const LayerGroup& group : fuse_layer_groups(g, 80)) names.push_back(group.name);
  EXPECT_THAT(names, ::testing::ElementsAre("fused(conv+bn1+mul1+add1+relu1)", "fused(bn2+mul2)",
                                            "fused(add2+relu2)"));
  names.clear();
  for (const LayerGroup& group : fuse_layer_groups(g, 96)) names.push_back(group.name);
  EXPECT_THAT(names, ::testing::ElementsAre("fused(conv+bn1+mul1+add1+relu1)",
                                            "fused(bn2+mul2+add2+relu2)"));
}

// A chain ends with a Softmax or LayerNorm over the last axis of a row-major tensor: a residual
// Add and its LayerNorm (post-LN BERT), an attention mask's Add and its Softmax.
Graph add_then(const std::string& norm, const std::string& attrs) {
  return parse_graph_json(Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "n",
    "tensors": [{"name": "x", "shape": [16, 64]}, {"name": "r", "shape": [16, 64]},
                {"name": "s", "shape": [64], "constant": true}, {"name": "b", "shape": [64], "constant": true},
                {"name": "a", "shape": [16, 64]}, {"name": "y", "shape": [16, 64]}],
    "inputs": ["x", "r"], "outputs": ["y"],
    "layers": [{"name": "add", "op": "Add", "inputs": ["x", "r"], "outputs": ["a"]},
               {"name": "norm", "op": ")" +
                                      norm + R"(", "inputs": )" +
                                      (norm == "LayerNorm" ? R"(["a", "s", "b"])" : R"(["a"])") +
                                      R"(, "outputs": ["y"])" + attrs + R"(}]})"),
                          "n.json");
}

TEST(Fusion, AChainEndsWithASoftmaxOrLayerNormOverItsRows) {
  // Through DRAM with 4 KiB of local memory, so the layer takes several tiles of rows. Add +
  // LayerNorm as one group: the norm's scale and bias load once (64 B each), and the tiles load
  // x and r (16 * 64 = 1024 B each): 2176 B in; they store y, 1024 B. Each tile runs the Add,
  // then the LayerNorm, on its rows. Apart, a's 1024 B would be stored and loaded again.
  CompileOptions through_dram;
  through_dram.residency = false;
  const HwConfig config = parse_hw_config("{}", "small.json", {"lram_kib=4"});
  const Schedule ln = compile_schedule(add_then("LayerNorm", ""), config, through_dram);
  EXPECT_THAT(program_names(ln), ::testing::ElementsAre("fused(add+norm)"));
  EXPECT_EQ(bytes_of(ln, EngineKind::kDmaIn), 2176u);
  EXPECT_EQ(bytes_of(ln, EngineKind::kDmaOut), 1024u);
  std::size_t adds = 0, norms = 0;
  for (const Command& c : ln.commands) {
    if (c.engine != EngineKind::kVector) continue;
    const std::string op(op_table()[c.op].name);
    adds += op == "Add" ? 1 : 0;
    norms += op == "LayerNorm" ? 1 : 0;
  }
  EXPECT_GE(adds, 2u);
  EXPECT_EQ(norms, adds);
  // A Softmax over the rows: 2048 B in, 1024 B out. Over axis 0 (columns), a tile of rows cannot
  // normalize: the Softmax runs alone, after a's store (3072 B in, 2048 B out).
  const Schedule sm =
      compile_schedule(add_then("Softmax", R"(, "attrs": {"axis": -1})"), config, through_dram);
  EXPECT_THAT(program_names(sm), ::testing::ElementsAre("fused(add+norm)"));
  EXPECT_EQ(bytes_of(sm, EngineKind::kDmaIn), 2048u);
  EXPECT_EQ(bytes_of(sm, EngineKind::kDmaOut), 1024u);
  const Schedule cols =
      compile_schedule(add_then("Softmax", R"(, "attrs": {"axis": 0})"), config, through_dram);
  EXPECT_THAT(program_names(cols), ::testing::ElementsAre("add", "norm"));
  EXPECT_EQ(bytes_of(cols, EngineKind::kDmaIn), 3072u);
  EXPECT_EQ(bytes_of(cols, EngineKind::kDmaOut), 2048u);

  // Real exports: bert_toy.onnx's mask Add and Softmax in each of its two layers, and the
  // embeddings' sum with its LayerNorm (the importer's LayerNorm, named after its first
  // ReduceMean); the zoo's BERT-base layer's two residual Adds with their LayerNorms.
  const Graph toy = import_onnx(kShared + "bert_toy.onnx", {});
  for (const Layer& l : toy.layers) {
    if (l.name == "ReduceMean_15") {
      EXPECT_EQ(l.op, "LayerNorm");
    }
  }
  const Schedule bert = compile_schedule(toy, load_hw_config("default"));
  for (const std::string fused :
       {"fused(Add_84+Softmax_85)", "fused(Add_200+Softmax_201)", "fused(Add_14+ReduceMean_15)"}) {
    EXPECT_THAT(program_names(bert), ::testing::Contains(fused));
  }
  const Graph base = load_graph_json(kZoo + "bert_base_layer.json");
  const Schedule layer = compile_schedule(base, load_hw_config("server"));
  for (const std::string fused :
       {"fused(attention.residual+attention.norm)", "fused(ffn.residual+ffn.norm)"}) {
    EXPECT_THAT(program_names(layer), ::testing::Contains(fused));
  }
  EXPECT_EQ(schedule_macs(layer), graph_macs(base));
}

// A batch norm inside a chain: its [C] parameters are per channel (axis 1), whatever the last
// dimension is (C = 16, W = 8 here).
TEST(Fusion, ABatchNormJoinsAChainByItsChannels) {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "relu_bn",
    "tensors": [
      {"name": "x", "shape": [1, 16, 4, 8]}, {"name": "r", "shape": [1, 16, 4, 8]},
      {"name": "g", "shape": [16], "constant": true}, {"name": "h", "shape": [16], "constant": true},
      {"name": "m", "shape": [16], "constant": true}, {"name": "v", "shape": [16], "constant": true},
      {"name": "y", "shape": [1, 16, 4, 8]}
    ],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "relu", "op": "Relu", "inputs": ["x"], "outputs": ["r"]},
      {"name": "bn", "op": "BatchNormalization", "inputs": ["r", "g", "h", "m", "v"], "outputs": ["y"]}
    ]})");
  const Graph g = parse_graph_json(doc, "relu_bn.json");
  std::vector<std::string> names;
  for (const LayerGroup& group : fuse_layer_groups(g)) names.push_back(group.name);
  EXPECT_THAT(names, ::testing::ElementsAre("fused(relu+bn)"));
  // One trip: x in (16 * 4 * 8 = 512 int8 bytes) and the parameters (64), y out (512).
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn), 512u + 64u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut), 512u);
}

// PyTorch's classic MNIST example pools before its ReLU: conv1 (1 -> 10 channels, 5x5) on
// 28x28 -> 24x24, max pool 2 -> 12x12, relu; conv2 (10 -> 20, 5x5) -> 8x8, pool -> 4x4, relu.
// The Relu is a clamp of the pool's output and fuses into it: no Relu command, and the pool's
// group stores its output at most once (none when it stays on chip for the next conv): 10 * 12 *
// 12 and 20 * 4 * 4 float32 elements.
TEST(Fusion, APoolTakesTheReluAfterIt) {
  const Graph g = import_onnx(kShared + "mnist_cnn_pytorch.onnx", {});
  std::vector<std::string> names;
  for (const LayerGroup& group : fuse_layer_groups(g)) names.push_back(group.name);
  EXPECT_THAT(names, ::testing::Contains("fused(MaxPool_1+Relu_2)"));
  EXPECT_THAT(names, ::testing::Contains("fused(MaxPool_4+Relu_5)"));
  CompileOptions through_dram;
  through_dram.residency = false;
  through_dram.chains = false;
  const Schedule s = compile_schedule(g, load_hw_config("default"), through_dram);
  EXPECT_THAT(bytes_of(s, EngineKind::kDmaOut, "fused(MaxPool_1+Relu_2)"),
              ::testing::AnyOf(0u, 10u * 12u * 12u * 4u));
  EXPECT_THAT(bytes_of(s, EngineKind::kDmaOut, "fused(MaxPool_4+Relu_5)"),
              ::testing::AnyOf(0u, 20u * 4u * 4u * 4u));
  for (const Command& c : s.commands) {
    EXPECT_TRUE(c.layer != "Relu_2" && c.layer != "Relu_5") << c.id;
    if (c.engine == EngineKind::kVector) {
      EXPECT_NE(op_table()[c.op].name, "Relu") << c.layer;
    }
  }
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// Refused: a Clip whose min is computed (an epilogue loads nothing for it, so the Sigmoid's
// output would be read by no one), after a pool and after a conv; and a Relu after a pool with a
// second output (the group's other outputs are its last layer's).
TEST(Fusion, APoolOrConvKeepsAComputedClipBoundAndAPoolWithTwoOutputsItsRelu) {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "refused",
    "tensors": [
      {"name": "x", "shape": [1, 8, 8, 8]}, {"name": "w", "shape": [8, 8, 1, 1], "constant": true},
      {"name": "lo_in", "shape": [1]}, {"name": "lo", "shape": [1]},
      {"name": "p", "shape": [1, 8, 4, 4]}, {"name": "pc", "shape": [1, 8, 4, 4]},
      {"name": "c", "shape": [1, 8, 4, 4]}, {"name": "cc", "shape": [1, 8, 4, 4]},
      {"name": "q", "shape": [1, 8, 2, 2]}, {"name": "idx", "shape": [1, 8, 2, 2]},
      {"name": "qr", "shape": [1, 8, 2, 2]}, {"name": "s", "shape": [1, 8, 2, 2]}
    ],
    "inputs": ["x", "lo_in"], "outputs": ["qr", "s"],
    "layers": [
      {"name": "lo_of", "op": "Sigmoid", "inputs": ["lo_in"], "outputs": ["lo"]},
      {"name": "pool", "op": "MaxPool", "inputs": ["x"], "outputs": ["p"], "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}},
      {"name": "clip1", "op": "Clip", "inputs": ["p", "lo"], "outputs": ["pc"]},
      {"name": "conv", "op": "Conv", "inputs": ["pc", "w"], "outputs": ["c"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "clip2", "op": "Clip", "inputs": ["c", "lo"], "outputs": ["cc"]},
      {"name": "pool2", "op": "MaxPool", "inputs": ["cc"], "outputs": ["q", "idx"], "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}},
      {"name": "relu", "op": "Relu", "inputs": ["q"], "outputs": ["qr"]},
      {"name": "sig", "op": "Sigmoid", "inputs": ["idx"], "outputs": ["s"]}
    ]})");
  const Graph g = parse_graph_json(doc, "refused.json");
  std::vector<std::string> names;
  for (const LayerGroup& group : fuse_layer_groups(g)) names.push_back(group.name);
  EXPECT_THAT(names, ::testing::ElementsAre("lo_of", "pool", "clip1", "conv", "clip2", "pool2",
                                            "relu", "sig"));
}

// DenseNet-121 (Caffe-converted: each BatchNorm followed by its Scale as Mul and Add). Blocks of
// 6, 12, 24 and 16 dense layers = 58, each BN-Scale-Relu -> 1x1 conv -> BN-Scale-Relu -> 3x3
// conv; three transitions BN-Scale-Relu -> 1x1 conv -> average pool; the stem conv ->
// BN-Scale-Relu -> max pool; and a final BN-Scale-Relu before the global pool. So:
//   conv + BN + Mul + Add + Relu groups: the stem and the 58 bottleneck 1x1 convs = 59;
//   BN + Mul + Add + Relu chains on their own: 58 before dense layers + 3 before transitions +
//   the final one = 62.
TEST(Fusion, DenseNetScaleLayersFuseIntoConvsAndChains) {
  const Graph g = import_onnx(kShared + "light_densenet121.onnx", {});
  std::size_t conv_groups = 0, chains = 0;
  const std::vector<std::string> conv_ops = {"Conv", "BatchNormalization", "Mul", "Add", "Relu"};
  const std::vector<std::string> chain_ops = {"BatchNormalization", "Mul", "Add", "Relu"};
  for (const LayerGroup& group : fuse_layer_groups(g)) {
    std::vector<std::string> ops;
    for (std::uint32_t l : group.layers) ops.push_back(g.layers[l].op);
    conv_groups += ops == conv_ops;
    chains += ops == chain_ops;
    // No Mul or Add of a Scale is left on its own.
    if (ops.size() == 1) {
      EXPECT_TRUE(ops[0] != "Mul" && ops[0] != "Add") << group.name;
    }
  }
  EXPECT_EQ(conv_groups, 59u);
  EXPECT_EQ(chains, 62u);
  const Schedule s = compile_schedule(g, load_hw_config("server"));
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// FastestDet's ShuffleNetV2 backbone (stages of 4, 8 and 4 blocks) shuffles channels at the start
// of each block that keeps its size, 3 + 7 + 3 = 13 of them, as PyTorch exports channel_shuffle:
// Reshape [C/2*N, 2, H*W] -> Transpose [1, 0, 2] -> Reshape [2, N, C/2, H, W] -> Gather 0 and
// Gather 1 (the halves). Each Transpose keeps the H*W rows whole and each Gather takes one
// index, so none of the 13 + 26 copies a byte. The head's Transpose [0, 2, 3, 1] (NCHW -> NHWC)
// reads a Concat of element-wise outputs (a Mul, a Sigmoid, a Softmax), row-major tensors and not
// an NHWC image (nhwc_of_image), so it moves the last axis and stays a copy.
TEST(Fusion, FastestDetsChannelShufflesMoveNoData) {
  const Graph g = import_onnx(kShared + "fastestdet.onnx", {});
  std::size_t shuffles = 0, halves = 0, copies = 0;
  for (const Layer& l : g.layers) {
    if (l.op != "Transpose" && l.op != "Gather") continue;
    if (!moves_no_data(g, l)) {
      ++copies;
      EXPECT_EQ(l.name, "/detect_head/Transpose");
    } else {
      ++(l.op == "Transpose" ? shuffles : halves);
    }
  }
  EXPECT_EQ(shuffles, 13u);
  EXPECT_EQ(halves, 26u);
  EXPECT_EQ(copies, 1u);
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  for (const Command& c : s.commands) {
    const std::string& layer = c.layer;
    EXPECT_TRUE(
        layer.find("/Gather") == std::string::npos &&
        (layer.find("/Transpose") == std::string::npos || layer == "/detect_head/Transpose"))
        << layer;
  }
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// Ultraface's 4 heads each permute their scores and boxes convs' outputs NCHW to NHWC before a
// Reshape and a Concat: 8 Transposes [0, 2, 3, 1], each of a conv's output (an NHWC image), so
// each is a view and emits nothing (before 2026-11-28 each was a Copy group and a DRAM round trip).
TEST(Fusion, UltrafacesHeadPermutesOfConvOutputsMoveNoData) {
  const Graph g = import_onnx(kShared + "ultraface_rfb_320.onnx", {});
  std::size_t transposes = 0;
  for (const Layer& l : g.layers) {
    if (l.op != "Transpose") continue;
    ++transposes;
    EXPECT_EQ(l.attrs.get_ints("perm", {}), (std::vector<std::int64_t>{0, 2, 3, 1})) << l.name;
    EXPECT_TRUE(moves_no_data(g, l)) << l.name;
  }
  EXPECT_EQ(transposes, 8u);
  const Schedule s = compile_schedule(g, load_hw_config("server"));
  for (const Command& c : s.commands)
    EXPECT_EQ(c.layer.str().rfind("Transpose", 0), std::string::npos);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(Fusion, AttentionScoresTakeTheirScaleAndReadKTransposedInPlace) {
  // bert_toy.onnx (a Hugging Face BERT export, two layers): each layer's scores are
  // MatMul(Q, Transpose(K, perm [0, 2, 3, 1])) -> Div(scores, 2.83): the Div of a scalar folds
  // into the MatMul's output scale, and the Transpose is only the MatMul's right operand, whose
  // columns are K's rows: no copy. gpt2_attention_past.onnx (GPT-2's attention with a KV cache)
  // divides its scores the same way; its new key's Transpose feeds the cache's Concat, so it
  // stays a copy.
  const Graph bert = import_onnx(kShared + "bert_toy.onnx", {});
  for (const Layer& l : bert.layers) {
    if (l.name == "Transpose_80" || l.name == "Transpose_196") {
      EXPECT_EQ(l.attrs.get_ints("perm", {}), (std::vector<std::int64_t>{0, 2, 3, 1}));
      EXPECT_TRUE(moves_no_data(bert, l)) << l.name;
    }
    if (l.name == "Div_83" || l.name == "Div_199") {
      EXPECT_TRUE(bert.tensors[l.inputs[1]].constant);
      EXPECT_EQ(bert.tensors[l.inputs[1]].elements(), 1u);
    }
  }
  const Schedule s = compile_schedule(bert, load_hw_config("default"));
  const std::vector<std::string> names = program_names(s);
  for (const std::string fused : {"fused(MatMul_81+Div_83)", "fused(MatMul_197+Div_199)"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), fused), names.end()) << fused;
  }
  for (const Command& c : s.commands) {
    EXPECT_NE(c.layer, "Transpose_80");
    EXPECT_NE(c.layer, "Transpose_196");
  }
  EXPECT_EQ(schedule_macs(s), graph_macs(bert));

  const Graph gpt2 = import_onnx(kShared + "gpt2_attention_past.onnx", {});
  const Schedule g = compile_schedule(gpt2, load_hw_config("server"));
  EXPECT_THAT(program_names(g), ::testing::Contains("fused(MatMul_143+Div_145)"));
  // Its right operand is the key cache's Concat (past keys and the new one, a view); the new
  // key's Transpose is read by that Concat, not by a MatMul: it stays a copy, and runs.
  const auto writer = [&](std::uint32_t t) -> const Layer* {
    for (const Layer& r : gpt2.layers) {
      if (std::find(r.outputs.begin(), r.outputs.end(), t) != r.outputs.end()) return &r;
    }
    return nullptr;
  };
  std::size_t copied = 0;
  for (const Layer& l : gpt2.layers) {
    if (l.name != "MatMul_143") continue;
    const Layer* cache = writer(l.inputs.at(1));
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->op, "Concat");
    for (const std::uint32_t part : cache->inputs) {
      const Layer* p = writer(part);
      if (p == nullptr || p->op != "Transpose") continue;
      ++copied;
      EXPECT_FALSE(moves_no_data(gpt2, *p)) << p->name;
      EXPECT_THAT(program_names(g), ::testing::Contains(p->name));
    }
  }
  EXPECT_GE(copied, 1u);
  EXPECT_EQ(schedule_macs(g), graph_macs(gpt2));
}

// fold_dequantize retypes the outputs of views of integer tensors only, as moves_no_data judges
// them on the graph it leaves. The Reshape of q is a view, so r holds q's int8 elements. The
// Transpose behind it keeps its last axis (W) but not the H x W plane of the NHWC image q is, so
// it moves data (its output t was declared int8, so the dtype rule does not decide it), and the
// Reshape of t is a view of no integer tensor of the pass's: u stays float32. (The pass once
// judged each layer with the layers before it moved out of the graph: the walk from the
// Transpose back to the image found no writer of r, the Transpose passed for a view, and u was
// retyped int8.)
TEST(Fusion, FoldedDequantizesRetypeOnlyTheViewsOfTheirIntegers) {
  Graph g = parse_graph_json(Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "q",
    "tensors": [{"name": "x", "shape": [1, 4, 2, 3], "dtype": "float32"},
                {"name": "w", "shape": [6, 4, 1, 1], "constant": true, "dtype": "float32"},
                {"name": "c", "shape": [1, 6, 2, 3], "dtype": "float32"},
                {"name": "q", "shape": [1, 6, 2, 3], "dtype": "int8"},
                {"name": "d", "shape": [1, 6, 2, 3], "dtype": "float32"},
                {"name": "r", "shape": [1, 6, 2, 3], "dtype": "float32"},
                {"name": "t", "shape": [1, 2, 6, 3], "dtype": "int8"},
                {"name": "u", "shape": [1, 36], "dtype": "float32"}],
    "inputs": ["x"], "outputs": ["u"],
    "layers": [{"name": "conv", "op": "Conv", "inputs": ["x", "w"], "outputs": ["c"], "attrs": {"kernel_shape": [1, 1]}},
               {"name": "quantize", "op": "Quantize", "inputs": ["c"], "outputs": ["q"]},
               {"name": "dequantize", "op": "Dequantize", "inputs": ["q"], "outputs": ["d"]},
               {"name": "reshape", "op": "Reshape", "inputs": ["d"], "outputs": ["r"]},
               {"name": "swap", "op": "Transpose", "inputs": ["r"], "outputs": ["t"], "attrs": {"perm": [0, 2, 1, 3]}},
               {"name": "flatten", "op": "Reshape", "inputs": ["t"], "outputs": ["u"]}]})"),
                             "q.json");
  EXPECT_EQ(fold_dequantize(g), 1u);
  ASSERT_EQ(g.layers.size(), 5u);
  const auto tensor = [&](const std::string& name) -> const Tensor& {
    for (const Tensor& t : g.tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no tensor " + name);
  };
  EXPECT_EQ(g.layers[2].op, "Reshape");
  EXPECT_EQ(g.tensors[g.layers[2].inputs[0]].name, "q");
  EXPECT_EQ(tensor("r").dtype, DType::kInt8);
  EXPECT_EQ(g.layers[3].op, "Transpose");
  EXPECT_FALSE(moves_no_data(g, g.layers[3]));
  EXPECT_EQ(tensor("u").dtype, DType::kFloat32);
}

// A real QDQ export (tf2onnx, MobileNet-EdgeTPU, three inverted-residual blocks on a
// [1, 32, 56, 56] float input): 9 QuantizeLinear, 6 Conv, 3 Add, and 9 DequantizeLinear of
// activations. One Q quantises the graph input; each conv's output is quantised (6); the first
// two Adds' outputs are quantised (2); the last Add writes the float graph output, and the DQ of
// the second Add's Q is a graph output too.
TEST(Fusion, QdqPairsBecomeInt8TensorsWithNoExtraRoundTrip) {
  const Graph g = import_onnx(kShared + "qdq_mobilenet_edgetpu_block.onnx", {});
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  // 19 layers once the activations' DequantizeLinears fold (9 Quantize, 6 Conv, 3 Add, the graph
  // output's Dequantize): the input's Quantize; 3 expand convs with their Quantize; 3 project
  // convs, each with its Quantize and the block's residual Add of the int8 activation before it
  // (expanded_conv_2 and _3 also with the Add's Quantize; _4's Add is a graph output, float);
  // the Dequantize. 8 groups (11 before 2026-11-28, when each Add+Quantize was a group of its
  // own, a DRAM round trip of both int8 operands and the sum).
  ASSERT_EQ(groups.size(), 8u);
  std::size_t conv_q = 0, residual = 0;
  for (const LayerGroup& group : groups) {
    const std::string& head = g.layers[group.layers[0]].op;
    const std::string& last = g.layers[group.layers.back()].op;
    if (head == "Conv") {
      // It reads an integer tensor: the dequantisation is folded into its load.
      const Tensor& x = g.tensors[g.layers[group.layers[0]].inputs[0]];
      EXPECT_EQ(dtype_bytes(x.dtype), 1u) << group.name;
      conv_q += last == "Quantize" ? 1 : 0;
      if (group.residual) {
        ++residual;
        EXPECT_EQ(dtype_bytes(g.tensors[*group.residual].dtype), 1u) << group.name;
      }
    }
  }
  EXPECT_EQ(conv_q, 5u);
  EXPECT_EQ(residual, 3u);
  CompileOptions through_dram;  // resident tensors would not be stored at all
  through_dram.residency = false;
  const Schedule s = compile_schedule(g, load_hw_config("server"), through_dram);
  std::size_t stored = 0;
  for (const LayerGroup& group : groups) {
    if (g.layers[group.layers[0]].op != "Conv") continue;
    // Each conv group stores its output once (int8, one byte per element; the last block's
    // float sum, four), unless the next group takes it from local memory ("Outputs kept on
    // chip": each block's expand conv, whose output its project conv reads whole).
    const std::uint64_t bytes = bytes_of(s, EngineKind::kDmaOut, group.name);
    EXPECT_TRUE(bytes == 0 || bytes == g.tensors[group.output].bytes()) << group.name;
    stored += bytes > 0 ? 1 : 0;
  }
  EXPECT_GE(stored, 3u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// A MatMul y = x [4, 8] . w [8, 6] takes an Add of a bias (6 values, one per output column, or a
// scalar: loaded with its weights) into its epilogue, but not of a [4, 6] or [4, 1] constant,
// which is no bias: it is an element-wise layer of its own, whose tiles read it by rows.
TEST(Fusion, AMatMulTakesAnAddOnlyOfABias) {
  const auto graph_with = [](const std::vector<int>& constant) {
    return parse_graph_json(
        Json{{"format", "npusim-graph"},
             {"version", 1},
             {"name", "mm"},
             {"tensors",
              {{{"name", "x"}, {"shape", {4, 8}}},
               {{"name", "w"}, {"shape", {8, 6}}, {"constant", true}},
               {{"name", "c"}, {"shape", constant}, {"constant", true}},
               {{"name", "y"}, {"shape", {4, 6}}},
               {{"name", "z"}, {"shape", {4, 6}}}}},
             {"inputs", {"x"}},
             {"outputs", {"z"}},
             {"layers",
              {{{"name", "mm"}, {"op", "MatMul"}, {"inputs", {"x", "w"}}, {"outputs", {"y"}}},
               {{"name", "add"}, {"op", "Add"}, {"inputs", {"y", "c"}}, {"outputs", {"z"}}}}}},
        "mm.json");
  };
  const Graph bias = graph_with({6});
  const std::vector<LayerGroup> fused = fuse_layer_groups(bias);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].name, "fused(mm+add)");
  EXPECT_EQ(fused[0].extra_constants, std::vector<std::uint32_t>{2});
  EXPECT_EQ(fuse_layer_groups(graph_with({1})).size(), 1u);  // a scalar: the same for each column
  for (const std::vector<int>& no_bias : {std::vector<int>{4, 6}, std::vector<int>{4, 1}}) {
    const Graph g = graph_with(no_bias);  // a matrix; one value per row
    const std::vector<LayerGroup> apart = fuse_layer_groups(g);
    ASSERT_EQ(apart.size(), 2u);
    EXPECT_EQ(apart[0].name, "mm");
    EXPECT_EQ(apart[1].name, "add");
  }
}

// onnxruntime's dynamic quantisation (`mnist_int8_dynamic.onnx`) writes each integer conv and
// matmul as ConvInteger / MatMulInteger -> Cast(int32 -> float) -> Mul(scale) -> Add(bias)
// [-> Relu]. The cast is the output stage's dequantisation, so all of it is the array head's
// epilogue. By hand, from the file's 20 layers: 8 groups (14 before, when each Cast was a vector
// Copy group of its own and each Mul+Add[+Relu] an element-wise chain after it, each a DRAM round
// trip of the tile's 4-byte elements): the input's Quantize, conv1 with its 4 layers, pool1 with
// its Quantize, conv2 with its 4, pool2, the Reshape (a view), the Quantize, the matmul with its 3.
TEST(Fusion, AnIntegerConvOrMatMulTakesItsCastScaleAndBiasIntoItsEpilogue) {
  const Graph g = import_onnx(kShared + "mnist_int8_dynamic.onnx", {});
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  std::vector<std::string> names;
  names.reserve(groups.size());
  for (const LayerGroup& group : groups) names.push_back(group.name);
  const std::string conv1 =
      "fused(Convolution28_quant+Convolution28_Output_0_quantized_cast+"
      "Convolution28_quant_output_scale_mul+Plus30+ReLU32)";
  const std::string conv2 =
      "fused(Convolution110_quant+Convolution110_Output_0_quantized_cast+"
      "Convolution110_quant_output_scale_mul+Plus112+ReLU114)";
  const std::string matmul =
      "fused(Times212_quant+Times212_Output_0_quantized_cast+Times212_quant_output_scale_mul+"
      "Plus214)";
  EXPECT_THAT(names, ::testing::ElementsAre("Input3_QuantizeLinear", conv1,
                                            "fused(Pooling66+Pooling66_Output_0_QuantizeLinear)",
                                            conv2, "Pooling160", "Times212_reshape0",
                                            "Pooling160_Output_0_reshape0_QuantizeLinear", matmul));
  // The matmul's bias (Parameter194, 10 floats) comes after its scale and still loads with its
  // weights.
  ASSERT_EQ(groups.back().extra_constants.size(), 1u);
  EXPECT_EQ(g.tensors[groups.back().extra_constants[0]].name, "Parameter194");
  // One program per group that emits a command (the Reshape emits none), in order; the graph's
  // output, 10 float32, is stored once by the matmul: 40 bytes. MACs are the graph's:
  // 28 x 28 x 8 x 25 + 14 x 14 x 16 x 8 x 25 + 256 x 10 = 156,800 + 627,200 + 2,560 = 786,560.
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  std::vector<std::string> programs;
  programs.reserve(s.programs.size());
  for (const Program& p : s.programs) programs.push_back(p.name);
  EXPECT_THAT(programs, ::testing::ElementsAre(
                            "Input3_QuantizeLinear", conv1,
                            "fused(Pooling66+Pooling66_Output_0_QuantizeLinear)", conv2,
                            "Pooling160", "Pooling160_Output_0_reshape0_QuantizeLinear", matmul));
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, matmul), 40u);
  EXPECT_EQ(schedule_macs(s), 786560u);
  EXPECT_EQ(graph_macs(g), 786560u);

  // An Add after the scale is a bias only when it holds one value per output column: the 7B
  // layer's causal mask ([512, 512], added to the [1, 32, 512, 512] scaled scores) is not one; it
  // stays for its Softmax's chain (which reads it by rows).
  const Graph llm = load_graph_json(kZoo + "llm7b_decoder_layer.json");
  std::vector<std::string> llm_groups;
  for (const LayerGroup& group : fuse_layer_groups(llm)) llm_groups.push_back(group.name);
  EXPECT_THAT(llm_groups, ::testing::Contains("fused(self_attn.scores+self_attn.scale_mul)"));
  EXPECT_THAT(llm_groups, ::testing::Contains("self_attn.mask"));
}

// FastestDet's ShuffleNetV2 blocks that keep their size (stage2.1-2.3, stage3.1-3.7; stage4's
// chains are left out here, not all of them win in the model) run their main branch, 1x1 conv +
// ReLU -> 3x3 depthwise conv -> 1x1 conv + ReLU, on one half of the shuffled channels: a Gather of
// a Reshape of a Transpose, a view, not an NHWC image. On `default` the whole branch is one chain,
// so the 1x1 conv's output never goes to DRAM: it stores nothing, it loads its half once plus its
// weights, and the depthwise conv loads only its weights. (Until chains could start at an input
// that is no image, the chain began at the depthwise conv, and the 1x1 conv stored its 44 x 44 x 24
// x 4 = 185,856 bytes for it to load.)
TEST(Chains, AShuffleBlocksBranchIsOneChainFromItsHalfOfTheChannels) {
  const Graph g = import_onnx(kShared + "fastestdet.onnx", {});
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  std::map<std::string, std::uint64_t> loaded, stored;
  for (const Command& c : s.commands) {
    if (c.engine == EngineKind::kDmaIn) loaded[c.layer] += c.bytes;
    if (c.engine == EngineKind::kDmaOut) stored[c.layer] += c.bytes;
  }
  std::size_t blocks = 0;
  for (const char* stage : {"stage2", "stage3"}) {
    const int count = std::string(stage) == "stage2" ? 3 : 7;
    for (int b = 1; b <= count; ++b) {
      const std::string block = "/backbone/" + std::string(stage) + "/" + stage + "." +
                                std::to_string(b) + "/branch_main/branch_main.";
      SCOPED_TRACE(block);
      const auto head = std::find_if(groups.begin(), groups.end(), [&](const LayerGroup& gr) {
        return gr.name.find(block + "0/Conv+") != std::string::npos;
      });
      ASSERT_NE(head, groups.end());
      const std::uint32_t half = g.layers[head->layers.front()].inputs[0];
      const auto producer = std::find_if(g.layers.begin(), g.layers.end(), [&](const Layer& l) {
        return std::find(l.outputs.begin(), l.outputs.end(), half) != l.outputs.end();
      });
      ASSERT_NE(producer, g.layers.end());
      EXPECT_EQ(producer->op, "Gather");
      EXPECT_FALSE(layouts.is_image(half));
      // stage2: 44 x 44 pixels x 24 channels; stage3: 22 x 22 x 48; float32.
      const std::uint64_t hw = std::string(stage) == "stage2" ? 44 : 22;
      const std::uint64_t c = std::string(stage) == "stage2" ? 24 : 48;
      EXPECT_EQ(stored[head->name], 0u);
      // Its half, hw x hw x c x 4, its c x c weights and c biases.
      EXPECT_EQ(loaded[head->name], (hw * hw * c + c * c + c) * 4);
      // The depthwise conv: its c x 9 weights and c biases.
      EXPECT_EQ(loaded[block + "3/Conv"], (c * 9 + c) * 4);
      EXPECT_EQ(stored[block + "3/Conv"], 0u);
      ++blocks;
    }
  }
  EXPECT_EQ(blocks, 10u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// ShuffleNet (v1) shuffles channels as Reshape -> Transpose -> Reshape; the depthwise 3x3 conv
// after (n10, stride 2, pad 1, 112 channels of 56 x 56, float32) reads the last Reshape's output
// r9, a view, not an NHWC image. As the first member of its chain on `default` it reuses its
// halo all the same (every read of a view waits for all its writers, so the lent rows need no
// byte ranges): each of its 56 input rows, 56 x 112 x 4 = 25,088 bytes, loads once. Without the
// reuse its 28 one-row tiles would load rows [2t - 1, 2t + 2), 83 rows in all.
TEST(Chains, AChainFromAViewReusesItsHalo) {
  const Graph g = import_onnx(kShared + "light_shufflenet.onnx", {});
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  const auto n10 = std::find_if(groups.begin(), groups.end(),
                                [](const LayerGroup& gr) { return gr.name == "fused(n10+n11)"; });
  ASSERT_NE(n10, groups.end());
  EXPECT_EQ(g.tensors[g.layers[n10->layers.front()].inputs[0]].name, "r9");
  EXPECT_FALSE(layouts.is_image(g.layers[n10->layers.front()].inputs[0]));
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, load_hw_config("default"), &explain);
  EXPECT_NE(test::explain_line(explain, "chains\t").find("fused(n10+n11) x2 rows 1 halo"),
            std::string::npos);
  std::uint64_t rows = 0;
  for (const Command& c : s.commands) {
    if (c.engine != EngineKind::kDmaIn || c.layer != "fused(n10+n11)") continue;
    if (c.bytes == std::uint64_t{112} * 9 * 4) continue;  // its weights
    EXPECT_EQ(c.bytes % 25088, 0u) << c.bytes;
    rows += c.bytes / 25088;
  }
  EXPECT_EQ(rows, 56u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// The light ResNet-50 on `server`: its 7 chains win before remapping (407,287 cycles estimated
// against 436,468), the plain model wins after it (377,263 against 400,796 with the chains), and
// the remapped plain model with one of the chains added beats both (347,346 on 2026-11-24).
TEST(Chains, ThePlainModelRemappedTakesTheChainsThatNowWinOneByOne) {
  const Graph g = import_onnx(kShared + "light_resnet50.onnx", {});
  std::vector<std::string> explain;
  compile_schedule(g, load_hw_config("server"), &explain);
  const std::string line = test::explain_line(explain, "chains\t");
  ASSERT_FALSE(line.empty());
  const std::uint64_t with = test::figure_after(line, "remapped: with chains ");
  const std::uint64_t without = test::figure_after(line, " cycles estimated, without ");
  const std::uint64_t added = test::figure_after(line, " chain(s), ");
  EXPECT_LT(without, with);   // the plain model won after remapping...
  EXPECT_LT(added, without);  // ...and gained from chains added one at a time
  EXPECT_NE(line.find("; after remapping, one by one: "), std::string::npos);
}

// The light VGG-19 on `server` keeps its two chains with residency planned apart from them;
// after remapping, the plain model (whose plan has no chains to be apart from) takes one of the
// two chains one at a time, which only a plan apart from the chain keeps. Screening each trial
// under the plain plan alone, as the chains are in it, took neither (review, 2026-11-29): the
// trial must be tried apart from the chains too.
TEST(Chains, OneByOneTriesEachChainApartFromThePlainPlanToo) {
  const Graph g = import_onnx(kShared + "light_vgg19.onnx", {});
  std::vector<std::string> explain;
  compile_schedule(g, load_hw_config("server"), &explain);
  const std::string line = test::explain_line(explain, "chains\t");
  ASSERT_FALSE(line.empty());
  EXPECT_NE(line.find("kept: 10 tensor(s) in up to L/2 apart from the chains"), std::string::npos);
  EXPECT_NE(line.find("; after remapping, one by one: 1 of 2 chain(s), "), std::string::npos);
  const std::uint64_t with = test::figure_after(line, "remapped: with chains ");
  const std::uint64_t added = test::figure_after(line, " chain(s), ");
  EXPECT_LT(added, with);
}

// bert_toy on `server` keeps most tensors resident, and many of its groups store nothing: the
// last compute of a group that frees a resident input waited for every other slice's readers
// and held its own slice meanwhile. Its residency plan (64 tensors) is estimated with each free
// on the last compute and, being the fastest plan, again with the stores carrying them; the
// carried one estimates faster and is kept. Remapping re-emits it the same way, so the final pass
// compares the remapped model the other way too, and keeps the stores.
TEST(Chains, StoresCarryTheFreesWhereTheModelEstimatesFasterSo) {
  const Graph g = import_onnx(kShared + "bert_toy.onnx", {});
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, config, &explain);
  const std::string line = test::explain_line(explain, "residency\t");
  ASSERT_FALSE(line.empty());
  const std::uint64_t computes = test::figure_after(line, "in up to L/2: ");
  const std::uint64_t stores = test::figure_after(line, "frees carried by stores: ");
  EXPECT_LT(stores, computes);
  EXPECT_NE(line.find("kept: 64 tensor(s) in up to L/2, frees carried by stores"),
            std::string::npos)
      << line;
  const std::string frees = test::explain_line(explain, "frees\t");
  ASSERT_FALSE(frees.empty());
  const std::uint64_t final_stores = test::figure_after(frees, "carried by stores: ");
  EXPECT_LT(final_stores, test::figure_after(frees, "by the last computes: "));
  EXPECT_NE(frees.find("kept: stores"), std::string::npos) << frees;
  // Remapping only keeps what is faster, and the queue order does not change this model.
  EXPECT_LE(final_stores, stores);
  EXPECT_EQ(estimate(s, config).total_cycles(), final_stores);
}

// Three GEMVs in a row (a decode step's MLP shapes, fp16) on `server`: h and y stay on chip. fc2
// and fc3 have their reduction split over slices (24 and 6 row folds unsplit). The release of h
// (and of y) goes on the last command of its reader, fc2's (fc3's) last chunk store, which the
// tile keeps anyway to free its row of A after every chunk that read it: no store was left out
// for the frees, so the plan is not emitted again with stores brought back to carry them (until
// 2026-11-25, unsplit, it was, and that won: the last computes would have waited for every
// reader on every slice).
TEST(Chains, AGemvChainSplitOverSlicesBringsNoStoreBackForItsFrees) {
  const Json doc = Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "gemv3",
    "tensors": [{"name": "x", "dtype": "float16", "shape": [1, 768]},
                {"name": "w1", "dtype": "float16", "shape": [768, 3072], "constant": true},
                {"name": "h", "dtype": "float16", "shape": [1, 3072]},
                {"name": "w2", "dtype": "float16", "shape": [3072, 768], "constant": true},
                {"name": "y", "dtype": "float16", "shape": [1, 768]},
                {"name": "w3", "dtype": "float16", "shape": [768, 768], "constant": true},
                {"name": "z", "dtype": "float16", "shape": [1, 768]}],
    "inputs": ["x"], "outputs": ["z"],
    "layers": [{"name": "fc1", "op": "MatMul", "inputs": ["x", "w1"], "outputs": ["h"]},
               {"name": "fc2", "op": "MatMul", "inputs": ["h", "w2"], "outputs": ["y"]},
               {"name": "fc3", "op": "MatMul", "inputs": ["y", "w3"], "outputs": ["z"]}]})");
  const Graph g = parse_graph_json(doc, "gemv3.json");
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, config, &explain);
  EXPECT_NE(test::explain_line(explain, "fc2\t").find("k_parts"), std::string::npos);
  EXPECT_NE(test::explain_line(explain, "fc3\t").find("k_parts"), std::string::npos);
  const std::string line = test::explain_line(explain, "residency\t");
  const std::uint64_t without = test::figure_after(line, "without: ");
  const std::uint64_t kept = test::figure_after(line, "2 tensor(s) in up to L/2: ");
  EXPECT_LT(kept, without);
  // No left-out store would carry a free, so the plan is not emitted that way too.
  EXPECT_EQ(line.find("frees carried by stores"), std::string::npos) << line;
  // In DRAM: z, 768 fp16 elements, 1536 bytes; and of h and y only the last column chunk of fc1
  // and of fc2, 128 columns x 2 bytes each: that store frees the row of x (h) that every chunk
  // read, and waits for those readers (docs/compiler.md, "Stores nobody reads").
  std::uint64_t stored = 0;
  for (const Command& c : s.commands) {
    if (c.engine == EngineKind::kDmaOut) stored += c.bytes;
  }
  EXPECT_EQ(stored, 1536u + 2 * 256u);
  // 768 x 3072 + 3072 x 768 + 768 x 768 MACs.
  EXPECT_EQ(schedule_macs(s), 5308416u);
  EXPECT_LE(estimate(s, config).total_cycles(), kept);
}

// bert_toy.onnx on `server`: its 6 groups mapped anew under residency estimate 1.3 % faster all
// together (14,028 cycles against 14,217 on 2026-11-25) but take the schedule from 292 to 322
// commands, so the growth rule (more than 10 % more commands must gain at least 2 %) keeps the
// model as it was; one part of them, 3 groups, wins within the rule. (The 7B decoder layer showed
// this until its projections were split over slices: since then no remapping of it estimates
// faster.)
TEST(Remap, APartOfTheGroupsMappedAnewMayWinWhereAllOfThemLose) {
  const Graph g = import_onnx(kShared + "bert_toy.onnx", {});
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, config, &explain);
  const std::string line = test::explain_line(explain, "remap\t");
  ASSERT_FALSE(line.empty());
  // "remap\tN group(s) mapped anew: C cycles estimated (before: B), M commands (before: K),
  // kept: before; in P parts: part I (J group(s)) C2 cycles estimated, kept: remapped ..."
  EXPECT_NE(line.find("kept: before; in "), std::string::npos) << line;
  const std::uint64_t before = test::figure_after(line, "(before: ");
  const std::uint64_t before_commands = test::figure_after(line, "commands (before: ");
  const std::uint64_t part = test::figure_after(line, " group(s)) ");
  EXPECT_LT(part, before);
  // The parts kept obey the growth rule (each of the two rounds adds at most 10 % commands), and
  // the schedule is the one estimated (or a later round's, faster still).
  EXPECT_LE(s.commands.size() * 100, before_commands * 121);
  EXPECT_LE(estimate(s, config).total_cycles(), part);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// mnist-8's classifier on `server` ([1, 256] x [256, 10] fp32, 128 x 128 arrays, ws): 2 row folds
// of P = 2R + C + T - 2 = 256 + 128 + 1 - 2 = 383 cycles on one slice, 2 x 383 - 1 = 765 cycles
// (docs/cost-model.md, "Systolic GEMM"); or, its reduction split over 2 slices (docs/compiler.md,
// "MatMul split over slices"), one fold on each, 383 - 1 = 382 cycles, and a PartialSum of 10
// elements.
TEST(SplitOverSlices, AGemvOfTwoRowFoldsRunsOneFoldOnEachOfTwoSlices) {
  const Graph g = import_onnx(kShared + "mnist-8.onnx", {});
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  Schedule s = compile_schedule(g, config, &explain);
  const std::string line = test::explain_line(explain, "fused(Times212+Plus214)\t");
  ASSERT_NE(line.find("k_parts 2:"), std::string::npos) << line;
  // It beats the best unsplit mapping (its runner-up) by more than 1/32.
  const std::uint64_t chosen = test::figure_after(line, "k_parts 2: ");
  const std::uint64_t runner_up = test::figure_after(line.substr(line.find("runner-up")), ": ");
  EXPECT_GT(runner_up - chosen, runner_up / 32) << line;
  std::vector<const Command*> gemms, sums;
  for (const Command& c : s.commands) {
    if (s.programs[c.program].name != "fused(Times212+Plus214)" || !on_slice(c.engine)) continue;
    (std::string(op_table()[c.op].name) == "Gemm" ? gemms : sums).push_back(&c);
  }
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_NE(gemms[0]->slice, gemms[1]->slice);
  for (const Command* c : gemms) {
    EXPECT_EQ(std::get<GemmShape>(c->shape).k, 128u);
    EXPECT_EQ(std::get<GemmShape>(c->shape).n, 10u);
    EXPECT_EQ(c->compute_cycles, 382u);
  }
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(std::get<ElementsShape>(sums[0]->shape).elements, 10u);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// bert_toy on `default`: its feed-forward MatMuls split over the 2 slices estimate 1305 cycles
// alone against 1312 unsplit (2026-11-25), less than 1/32 faster; taken, they cost the model
// 2.2 % (the PartialSums take the vector units and their partial sums the room other groups
// use, which costing alone does not see), so the unsplit mapping is kept and the explain says
// why.
TEST(SplitOverSlices, ASplitFasterByLessThanAThirtySecondIsNotTaken) {
  const Graph g = import_onnx(kShared + "bert_toy.onnx", {});
  std::vector<std::string> explain;
  compile_schedule(g, load_hw_config("default"), &explain);
  const std::string line = test::explain_line(explain, "fused(MatMul_117+Add_118+Mul_120)\t");
  ASSERT_FALSE(line.empty());
  const std::string label = "faster by at most 1/32 with its reduction split over slices";
  ASSERT_NE(line.find(label), std::string::npos) << line;
  EXPECT_EQ(line.substr(0, line.find(':')).find("k_parts"), std::string::npos) << line;
  const std::string not_taken = line.substr(line.find("; not "));
  const std::uint64_t split = test::figure_after(not_taken, "k_parts 2: ");
  const std::uint64_t against = test::figure_after(not_taken, "cycles against ");
  EXPECT_LT(split, against);
  EXPECT_LE(against - split, against / 32);
}

// ultraface on `default`: with its K-split convs the model estimates 2,430,631 cycles, without
// them 2,419,802 (2026-11-29), within 1/64 of each other, so both are finished (chains,
// remapping, frees, prefetch, queue order) before one is kept, and the faster finished one is.
// Finishing once turned the choice here (2026-11-25: 2,430,038 against 2,425,758 estimated,
// 1,331,463 against 1,348,655 finished); since the head permutes became views it agrees with the
// estimates (1,338,823 against 1,322,853; 1,202,262 against 1,186,292 since chains too large for
// their frees a slice round late free sooner), and no shipped model on either config turns it now
// (fastestdet, ShuffleNet, AlexNet, VGG-19, the QDQ MobileNetV2 and ultraface finish both).
TEST(ReductionSplits, CloseEstimatesAreBothFinishedAndTheFasterIsKept) {
  const Graph g = import_onnx(kShared + "ultraface_rfb_320.onnx", {});
  const HwConfig config = load_hw_config("default");
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, config, &explain);
  const std::string line = test::explain_line(explain, "reduction splits\t");
  ASSERT_FALSE(line.empty());
  const std::uint64_t with = test::figure_after(line, "with: ");
  const std::uint64_t without = test::figure_after(line, "without: ");
  EXPECT_LE(std::max(with, without) - std::min(with, without), std::max(with, without) / 64);
  const std::uint64_t with_finished = test::figure_after(line, "finished: with ");
  const std::uint64_t without_finished = test::figure_after(line, "cycles estimated, without ");
  const std::string kept = line.substr(line.rfind("; kept: ") + 8);
  ASSERT_TRUE(kept == "with" || kept == "without") << line;
  // Kept by the rule the estimates were: faster (and, with more than 10 % more commands, 2 %
  // faster; ultraface's K-split convs take fewer), the model without them on a tie. Which one
  // that is moves with the rest of the compiler: the model with them until its head permutes
  // became views (2026-11-28), now the one without (1,186,292 against 1,202,262 finished).
  if (kept == "with") {
    EXPECT_LT(with_finished, without_finished) << line;
  } else {
    EXPECT_LE(without_finished, with_finished) << line;
  }
  // The schedule is the faster finished one, or faster still (fewer slices come after).
  EXPECT_LE(estimate(s, config).total_cycles(), std::min(with_finished, without_finished));
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// The same model with CompileOptions::finish_close_splits off (as fewer slices compiles the slice
// counts below S): the estimates decide, and the model without the splits, estimated faster, is
// kept unfinished against the other.
TEST(ReductionSplits, WithoutFinishingBothTheEstimatesDecide) {
  const Graph g = import_onnx(kShared + "ultraface_rfb_320.onnx", {});
  std::vector<std::string> explain;
  CompileOptions options;
  options.explain = &explain;
  options.finish_close_splits = false;
  compile_schedule(g, load_hw_config("default"), options);
  const std::string line = test::explain_line(explain, "reduction splits\t");
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("finished:"), std::string::npos) << line;
  const std::uint64_t with = test::figure_after(line, "with: ");
  const std::uint64_t without = test::figure_after(line, "without: ");
  EXPECT_GT(with, without) << line;  // 2,430,038 against 2,425,758 on 2026-11-25
  EXPECT_EQ(line.substr(line.rfind("; kept: ")), "; kept: without") << line;
}

}  // namespace
}  // namespace npusim
