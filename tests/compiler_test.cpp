// The compiler: exact schedules for small graphs, and properties over the model zoo.
#include "sim/compiler/compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "profiler/stats.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/schedule_writer.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

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

// conv1 (3x3, 16 -> 32, pad 1) + bn1 + relu1 on an 8x8 image, then conv2 (1x1, 32 -> 8).
Graph two_convs() {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "two",
    "tensors": [
      {"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w1", "shape": [32, 16, 3, 3], "constant": true},
      {"name": "s", "shape": [32], "constant": true},
      {"name": "b", "shape": [32], "constant": true},
      {"name": "m", "shape": [32], "constant": true},
      {"name": "v", "shape": [32], "constant": true},
      {"name": "c1", "shape": [1, 32, 8, 8]},
      {"name": "n1", "shape": [1, 32, 8, 8]},
      {"name": "r1", "shape": [1, 32, 8, 8]},
      {"name": "w2", "shape": [8, 32, 1, 1], "constant": true},
      {"name": "y", "shape": [1, 8, 8, 8]}
    ],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["c1"],
       "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
      {"name": "bn1", "op": "BatchNormalization", "inputs": ["c1", "s", "b", "m", "v"], "outputs": ["n1"]},
      {"name": "relu1", "op": "Relu", "inputs": ["n1"], "outputs": ["r1"]},
      {"name": "conv2", "op": "Conv", "inputs": ["r1", "w2"], "outputs": ["y"],
       "attrs": {"kernel_shape": [1, 1]}}
    ]})");
  return parse_graph_json(doc, "two.json");
}

TEST(Compiler, FusesConvBatchNormAndActivation) {
  const HwConfig config = parse_hw_config("{}", "default.json");
  const Schedule s = compile_schedule(two_convs(), config);
  ASSERT_EQ(s.programs.size(), 2u);
  EXPECT_EQ(s.programs[0].name, "fused(conv1+bn1+relu1)");
  EXPECT_EQ(s.programs[0].loc, "loc(fused[\"two.json\":/layers/0, \"two.json\":/layers/1, \"two.json\":/layers/2])");
  EXPECT_EQ(s.programs[1].name, "conv2");
  for (const Command& c : s.commands) {
    if (c.engine == EngineType::kSlice) {
      EXPECT_EQ(op_table()[c.op].name, "Conv");
    }
  }
}

TEST(Compiler, TilesSpreadOverSlicesWithExactShapesAndDependencies) {
  const HwConfig config = parse_hw_config("{}", "default.json");  // 2 slices, 512 KiB
  const Schedule s = compile_schedule(two_convs(), config);
  std::vector<std::string> ids;
  for (const Command& c : s.commands) ids.push_back(c.id);
  // conv1: weights (32*16*9 = 4608 bytes; the batch norm folds into them), then two tiles of 4
  // output rows, one per slice (enough tiles for 2 slices); conv2 likewise.
  EXPECT_EQ(ids, (std::vector<std::string>{"DI0", "DI1", "S0", "DO0", "DI2", "S1", "DO1",
                                           "DI3", "DI4", "S2", "DO2", "DI5", "S3", "DO3"}));
  EXPECT_EQ(s.commands[0].bytes, 4608u);
  // Tile 0 reads rows 0..4 (4 rows and the halo row below; the top is padding): 5*8*16 bytes.
  EXPECT_EQ(s.commands[1].bytes, 5u * 8u * 16u);
  const auto& shape = std::get<ConvShape>(s.commands[2].shape);
  EXPECT_EQ(shape.in_h, 6u);  // (4 - 1) * 1 + 3: padding folded in, output exactly 4 rows
  EXPECT_EQ(shape.in_w, 10u);
  EXPECT_EQ(shape.out_c, 32u);
  EXPECT_EQ(s.commands[2].slice, 0u);
  EXPECT_EQ(s.commands[5].slice, 1u);
  // MACs: 4 rows * 8 cols * 32 out * 16 in * 9 per tile.
  EXPECT_EQ(s.commands[2].macs, 4u * 8u * 32u * 16u * 9u);
  // The second tile's store frees the weights, so it waits for both computes.
  EXPECT_EQ(s.commands[6].deps, (std::vector<std::uint32_t>{2, 5}));
  // conv2's tile 0 reads conv1's rows 0..4 (1x1 kernel): only DO0 wrote them.
  EXPECT_EQ(s.commands[8].id, "DI4");
  EXPECT_EQ(s.commands[8].deps, (std::vector<std::uint32_t>{3}));
  // DI5 (conv2 tile 1, slice 1) reads rows 4..8, written by DO1; slice 1 has one tile before it.
  EXPECT_EQ(s.commands[11].deps, (std::vector<std::uint32_t>{6}));
  // conv2's weights (DI3) wait for nothing: only one chunk was loaded before them.
  EXPECT_TRUE(s.commands[7].deps.empty());
}

TEST(Compiler, ATransposeWaitsForEveryStoreOfItsInput) {
  // MatMul [64,64]x[64,64] -> Transpose -> Relu, in little memory so that both are tiled: a
  // transposed tile reads columns from every row, so its loads wait for all of the MatMul's
  // stores, not the ones of its own rows.
  const Json doc = Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "t",
    "tensors": [{"name": "a", "shape": [64, 64]}, {"name": "b", "shape": [64, 64], "constant": true},
                {"name": "m", "shape": [64, 64]}, {"name": "t", "shape": [64, 64]}, {"name": "y", "shape": [64, 64]}],
    "inputs": ["a"], "outputs": ["y"],
    "layers": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["m"]},
               {"name": "tr", "op": "Transpose", "inputs": ["m"], "outputs": ["t"], "attrs": {"perm": [1, 0]}},
               {"name": "relu", "op": "Relu", "inputs": ["t"], "outputs": ["y"]}]})");
  const Schedule s = compile_schedule(parse_graph_json(doc, "t.json"), parse_hw_config("{}", "c", {"lram_kib=16"}));
  std::vector<std::uint32_t> mm_stores;
  std::optional<std::uint32_t> first_transpose_load;
  for (std::uint32_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    if (c.layer == "mm" && c.engine == EngineType::kDmaOut) mm_stores.push_back(i);
    if (c.layer == "tr" && c.engine == EngineType::kDmaIn && !first_transpose_load) first_transpose_load = i;
  }
  ASSERT_GT(mm_stores.size(), 1u);
  ASSERT_TRUE(first_transpose_load.has_value());
  for (std::uint32_t store : mm_stores) {
    EXPECT_NE(std::find(s.commands[*first_transpose_load].deps.begin(), s.commands[*first_transpose_load].deps.end(), store),
              s.commands[*first_transpose_load].deps.end()) << s.commands[store].id;
  }
}

TEST(Compiler, MacsEqualTheGraphsAnalyticCount) {
  for (const std::string name : {"resnet50", "mobilenetv2", "yolo_tiny", "bert_base_layer"}) {
    const Graph g = load_graph_json(kZoo + name + ".json");
    for (const std::string config : {"default", "server"}) {
      const Schedule s = compile_schedule(g, load_hw_config(config));
      EXPECT_EQ(schedule_macs(s), graph_macs(g)) << name << " on " << config;
    }
  }
  // ResNet-50 is 4.09 GMACs (conv and fc).
  EXPECT_EQ(graph_macs(load_graph_json(kZoo + "resnet50.json")), 4089184256u);
}

TEST(Compiler, TilesFitLocalMemoryAcrossSlicesAndCapacities) {
  const Graph resnet = load_graph_json(kZoo + "resnet50.json");
  const Graph bert = load_graph_json(kZoo + "bert_base_layer.json");
  for (const Graph* g : {&resnet, &bert}) {
    for (const char* slices : {"1", "2", "4", "8"}) {
      for (const char* kib : {"512", "1024", "4096", "24576"}) {
        SCOPED_TRACE(g->name + std::string(" slices=") + slices + " lram_kib=" + kib);
        const HwConfig config = parse_hw_config(
            "{}", "c.json", {std::string("slices.count=") + slices, std::string("lram_kib=") + kib});
        const Schedule s = compile_schedule(*g, config);
        const profiler::Workload w = make_workload(s, config);
        const profiler::RunStats stats = profiler::compute_stats(w, estimate(s, config));
        EXPECT_LE(stats.lram.peak_bytes, config.lram_bytes);
        EXPECT_FALSE(stats.lram.overflow.has_value());
        EXPECT_EQ(schedule_macs(s), graph_macs(*g));
        // Every slice gets work.
        std::vector<bool> used(config.slices.count, false);
        for (const Command& c : s.commands) {
          if (c.engine == EngineType::kSlice) {
            used[c.slice] = true;
          }
        }
        EXPECT_EQ(std::count(used.begin(), used.end(), true), config.slices.count);
      }
    }
  }
}

TEST(Compiler, ALayerThatCannotFitIsNamed) {
  const HwConfig config = parse_hw_config("{}", "c.json", {"lram_kib=16", "slices.count=8"});
  try {
    compile_schedule(load_graph_json(kZoo + "resnet50.json"), config);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    // A tile gets 16384 / (4 * 8) = 512 bytes; one output pixel of a 3x3 conv over 64 channels
    // reads 3 * 3 * 64 = 576 bytes and writes 1.
    EXPECT_THAT(e.what(), HasSubstr("resnet50.json: layer 'fused(layer1.0.conv2+layer1.0.conv2.bn+layer1.0.conv2.relu)'"));
    EXPECT_THAT(e.what(), HasSubstr("one output pixel of one channel needs 577 bytes of local memory, more than its share of the config's 16384 bytes"));
  }
}

TEST(Compiler, IsDeterministicAndRoundTripsThroughJson) {
  const HwConfig config = load_hw_config("default");
  const Graph g = load_graph_json(kZoo + "mobilenetv2.json");
  std::ostringstream a, b;
  write_schedule_json(a, compile_schedule(g, config));
  write_schedule_json(b, compile_schedule(g, config));
  EXPECT_EQ(a.str(), b.str());
  const Schedule compiled = compile_schedule(g, config);
  const Schedule loaded = parse_schedule(Json::parse(a.str()), "m.json", config);
  ASSERT_EQ(loaded.commands.size(), compiled.commands.size());
  for (std::size_t i = 0; i < loaded.commands.size(); ++i) {
    const Command& x = loaded.commands[i];
    const Command& y = compiled.commands[i];
    ASSERT_EQ(x.id, y.id);
    EXPECT_EQ(x.deps, y.deps) << x.id;
    EXPECT_EQ(x.isolated_cycles, y.isolated_cycles) << x.id;
    EXPECT_EQ(x.lram_alloc_bytes, y.lram_alloc_bytes) << x.id;
    EXPECT_EQ(x.lram_free_bytes, y.lram_free_bytes) << x.id;
  }
  std::ostringstream c;
  write_schedule_json(c, loaded);
  EXPECT_EQ(c.str(), a.str());
}

}  // namespace
}  // namespace npusim
