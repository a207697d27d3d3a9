// The graph JSON and SCALE-Sim topology front-ends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/compiler/compiler.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/scalesim.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScaleSim, ConvRowsFollowScaleSimsOutputSize) {
  const Graph g = parse_scalesim_topology(
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
      "Strides,\n"
      "Conv1,  230, 230,    7, 7,      3,      64,     2,\n"
      "\n"
      "CB2a_1,56,56,1,1,64,64,1,,,,,\n",
      "t/Net.csv");
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.name, "Net");
  // ceil((230 - 7 + 2) / 2) = 113, where floor division would give 112.
  EXPECT_EQ(g.tensors[g.layers[0].outputs[0]].shape, (std::vector<std::uint64_t>{1, 64, 113, 113}));
  EXPECT_EQ(g.layers[0].attrs.get_ints("pads", {}), (std::vector<std::int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(g.layers[0].loc, "loc(\"Net.csv\":2)");
  EXPECT_EQ(g.layers[1].loc, "loc(\"Net.csv\":4)");
  // 113*113*64 outputs of 7*7*3 MACs.
  EXPECT_EQ(layer_macs(g, g.layers[0]), 113u * 113u * 64u * 147u);
}

TEST(ScaleSim, GemmRowsAreMatMuls) {
  const Graph g = parse_scalesim_topology("Layer,M,N,K,\nQKT,1024,1024,64,\n", "gpt2.csv");
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, "MatMul");
  EXPECT_EQ(g.tensors[g.layers[0].inputs[0]].shape, (std::vector<std::uint64_t>{1024, 64}));
  EXPECT_EQ(g.tensors[g.layers[0].inputs[1]].shape, (std::vector<std::uint64_t>{64, 1024}));
  EXPECT_EQ(layer_macs(g, g.layers[0]), 1024u * 1024u * 64u);
}

TEST(ScaleSim, DepthwiseLayersAreNamedDP) {
  const Graph g = parse_scalesim_topology(
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
      "Strides,\n"
      "Conv_DP1, 114, 114, 3, 3, 32, 1, 1,\n",
      "m.csv");
  EXPECT_EQ(g.layers[0].attrs.get_int("group", 1), 32);
  EXPECT_EQ(g.tensors[g.layers[0].outputs[0]].shape, (std::vector<std::uint64_t>{1, 32, 112, 112}));
}

TEST(ScaleSim, BadRowsAreNamed) {
  const std::string header =
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
      "Strides,\n";
  EXPECT_THAT(
      error_of([&] { parse_scalesim_topology(header + "C1, 8, 8, 3, 3, x, 4, 1,\n", "n.csv"); }),
      HasSubstr("n.csv: row 2: expected a positive integer for Channels, found 'x'"));
  EXPECT_THAT(error_of([&] { parse_scalesim_topology(header + "C1, 8, 8, 3\n", "n.csv"); }),
              HasSubstr("n.csv: row 2: expected 8 fields"));
  EXPECT_THAT(
      error_of([&] { parse_scalesim_topology(header + "C1, 2, 2, 3, 3, 1, 1, 1,\n", "n.csv"); }),
      HasSubstr("n.csv: row 2: filter 3x3 larger than the IFMAP 2x2"));
  EXPECT_THAT(error_of([&] { parse_scalesim_topology("a,b,c\n", "n.csv"); }),
              HasSubstr("n.csv: row 1: expected a SCALE-Sim header"));
  EXPECT_THAT(error_of([&] { parse_scalesim_topology("", "n.csv"); }), HasSubstr("empty topology"));
}

TEST(ScaleSim, EveryShippedTopologyCompilesOnBothConfigs) {
  const std::filesystem::path root = std::filesystem::path(NPUSIM_SHARED_MODELS) / "scalesim";
  std::size_t files = 0;
  for (const char* folder : {"conv_nets", "gemm"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / folder)) {
      SCOPED_TRACE(entry.path().string());
      const Graph g = load_scalesim_topology(entry.path().string());
      EXPECT_GT(g.layers.size(), 0u);
      for (const char* config : {"default", "server"}) {
        const Schedule s = compile_schedule(g, load_hw_config(config));
        std::uint64_t macs = 0, expected = 0;
        for (const Command& c : s.commands) macs += c.macs + c.vector_macs;
        for (const Layer& l : g.layers) expected += layer_macs(g, l);
        EXPECT_EQ(macs, expected) << config;
      }
      ++files;
    }
  }
  EXPECT_EQ(files, 13u);
}

TEST(GraphJson, ProblemsAreNamedWithPointers) {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "g",
    "tensors": [{"name": "x", "shape": [1, 4]}, {"name": "x", "shape": [0]}, {"name": "y", "dtype": "int3", "shape": [1, 4]}],
    "inputs": ["x"], "outputs": ["z"],
    "layers": [{"name": "l0", "op": "Frobnicate", "inputs": ["x"], "outputs": ["y"], "colour": 1}]
  })");
  const std::string e = error_of([&] { parse_graph_json(doc, "g.json"); });
  EXPECT_THAT(e,
              HasSubstr("g.json: /tensors/1/shape/0: expected a dimension in [1, 2^32], found 0"));
  EXPECT_THAT(e, HasSubstr("g.json: /tensors/1/name: duplicate tensor 'x'"));
  EXPECT_THAT(e, HasSubstr("g.json: /tensors/2/dtype: unknown dtype 'int3'"));
  EXPECT_THAT(e, HasSubstr("g.json: /outputs/0: unknown tensor 'z'"));
  EXPECT_THAT(e, HasSubstr("g.json: /layers/0/op: unknown graph op 'Frobnicate'"));
  EXPECT_THAT(e, HasSubstr("g.json: /layers/0/colour: unknown key"));
}

TEST(GraphJson, ShapeMismatchNamesTheLayer) {
  const Json doc = Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "g",
    "tensors": [{"name": "a", "shape": [4, 8]}, {"name": "b", "shape": [8, 3], "constant": true},
                {"name": "y", "shape": [4, 4]}],
    "inputs": ["a"], "outputs": ["y"],
    "layers": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}]
  })");
  EXPECT_THAT(error_of([&] { parse_graph_json(doc, "g.json"); }),
              HasSubstr("g.json: layer 'mm' (loc(\"g.json\":/layers/0)): output 'y' has shape "
                        "[4,4], expected [4,3]"));
}

}  // namespace
}  // namespace npusim
