// Tensors resident on chip (docs/compiler.md, "Tensors resident on chip"): an output that only
// later tiled groups read stays in local memory, with no store and no loads, and is freed by its
// last reader group. Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/schedule.h"
#include "sim/platform/platform.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

// x [1,16,8,8] -> conv1 (1x1) -> a; a -> conv2 (3x3, pad 1) -> b; a -> conv3 (1x1) -> c;
// y = Add(c, b), fused into conv3's group as its residual (b is written before that group runs).
// All int8. `extra_output` makes `a` a graph output too; `view` adds a Reshape reader of a.
Graph diamond(bool extra_output = false, bool view = false) {
  std::string outputs = extra_output ? R"(["y", "a"])" : R"(["y"])";
  std::string tensors = R"(
      {"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w1", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "w2", "shape": [16, 16, 3, 3], "constant": true},
      {"name": "w3", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "a", "shape": [1, 16, 8, 8]}, {"name": "b", "shape": [1, 16, 8, 8]},
      {"name": "c", "shape": [1, 16, 8, 8]}, {"name": "y", "shape": [1, 16, 8, 8]})";
  std::string layers = R"(
      {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["a"],
       "attrs": {"kernel_shape": [1, 1]}},
      {"name": "conv2", "op": "Conv", "inputs": ["a", "w2"], "outputs": ["b"],
       "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
      {"name": "conv3", "op": "Conv", "inputs": ["a", "w3"], "outputs": ["c"],
       "attrs": {"kernel_shape": [1, 1]}},
      {"name": "add", "op": "Add", "inputs": ["c", "b"], "outputs": ["y"]})";
  if (view) {
    tensors += R"(, {"name": "flat", "shape": [1, 1024]})";
    layers += R"(, {"name": "flatten", "op": "Reshape", "inputs": ["a"], "outputs": ["flat"]})";
    outputs = R"(["y", "flat"])";
  }
  const Json doc = Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "diamond",
    "tensors": [)" + tensors + R"(], "inputs": ["x"], "outputs": )" +
                               outputs + R"(, "layers": [)" + layers + "]}");
  return parse_graph_json(doc, "diamond.json");
}

std::uint64_t bytes_of(const Schedule& s, EngineKind engine, const std::string& layer) {
  std::uint64_t bytes = 0;
  for (const Command& c : s.commands) {
    if (c.engine == engine && c.layer == layer) bytes += c.bytes;
  }
  return bytes;
}

// The work is the model's: array and vector MACs of the schedule against the graph's count.
std::uint64_t schedule_macs(const Schedule& s) {
  std::uint64_t macs = 0;
  for (const Command& c : s.commands) macs += c.macs + c.vector_macs;
  return macs;
}
std::uint64_t graph_macs(const Graph& g) {
  std::uint64_t macs = 0;
  for (const Layer& l : g.layers) macs += layer_macs(g, l);
  return macs;
}

CompileOptions greedy(bool residency) {
  CompileOptions o;
  o.search = "greedy";  // weights outer, one chunk per conv: each weight loaded once
  o.residency = residency;
  return o;
}

}  // namespace

TEST(Residency, ATensorTwoLaterGroupsReadStaysOnChipAndDramMovesOnlyTheCompulsoryBytes) {
  const HwConfig config = load_hw_config("default");  // 512 KiB: every tensor is 1 KiB
  const Graph g = diamond();
  const Schedule s = compile_schedule(g, config, greedy(true));
  // DMA_IN moves the weights once and x once, nothing else:
  //   conv1: w1 16*16 = 256 B + x 16*8*8 = 1024 B (1x1 tiles of rows: no halo);
  //   conv2: w2 16*16*9 = 2304 B, a read on chip; conv3 + add: w3 256 B, a and b on chip.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "conv1"), 256u + 1024u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "conv2"), 2304u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "fused(conv3+add)"), 256u);
  // DMA_OUT writes y (1024 B). a and b are not stored, but for one piece each: a conv's 8 rows
  // are two tiles of 4 rows (one per slice), and the second tile's store is the command that
  // frees the weight chunk after both tiles read it, so it stays and writes its 4*8*16 = 512 B
  // (docs/compiler.md, "Outputs kept on chip").
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv1"), 512u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv2"), 512u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "fused(conv3+add)"), 1024u);
  // a's and b's buffers are freed by the last command of the last group that reads them.
  const std::vector<Command>& cmds = s.commands;
  std::vector<std::string> conv1_outputs, conv2_outputs;
  for (const Command& c : cmds) {
    if (!on_slice(c.engine)) continue;
    for (const BufferAlloc& b : c.alloc) {
      if (c.layer == "conv1") conv1_outputs.push_back(b.buffer);
      if (c.layer == "conv2") conv2_outputs.push_back(b.buffer);
    }
  }
  ASSERT_FALSE(conv1_outputs.empty());
  const Command& last = cmds.back();
  EXPECT_EQ(last.layer, "fused(conv3+add)");
  for (const std::string& b : conv1_outputs) {
    EXPECT_NE(std::find(last.free.begin(), last.free.end(), b), last.free.end()) << b;
  }
  for (const std::string& b : conv2_outputs) {
    EXPECT_NE(std::find(last.free.begin(), last.free.end(), b), last.free.end()) << b;
  }
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
  // Fewer DRAM trips: faster than the same mappings through DRAM.
  const Schedule through_dram = compile_schedule(g, config, greedy(false));
  EXPECT_EQ(bytes_of(through_dram, EngineKind::kDmaOut, "conv1"), 1024u);
  EXPECT_LT(estimate(s, config).total_cycles(), estimate(through_dram, config).total_cycles());
  // The simulation runs the on-chip dependencies and frees as the estimate does: equal, as for
  // any schedule whose transfers do not contend for DRAM (these are a few KiB, far apart).
  EXPECT_EQ(simulate(s, config).total_cycles(), estimate(s, config).total_cycles());
}

TEST(Residency, GraphOutputsAndTheirViewsGoThroughDram) {
  const HwConfig config = load_hw_config("default");
  // a is a graph output: it must reach DRAM, so conv1 stores it (1024 B) and its readers load it.
  const Schedule out = compile_schedule(diamond(/*extra_output=*/true), config, greedy(true));
  EXPECT_EQ(bytes_of(out, EngineKind::kDmaOut, "conv1"), 1024u);
  // A Reshape of a that is a graph output: the view aliases a, so a must reach DRAM too.
  const Schedule view = compile_schedule(diamond(false, /*view=*/true), config, greedy(true));
  EXPECT_EQ(bytes_of(view, EngineKind::kDmaOut, "conv1"), 1024u);
  // b is still resident in both (only conv3's group reads it): conv2 stores only the 512 B piece
  // whose store frees its weights, as in the test above.
  EXPECT_EQ(bytes_of(out, EngineKind::kDmaOut, "conv2"), 512u);
  EXPECT_EQ(bytes_of(view, EngineKind::kDmaOut, "conv2"), 512u);
  // ... and loads it: 2304 B of weights and two tiles of 4 rows plus a halo row of a:
  // 2304 + 2 * 5 * 8 * 16 = 3584 B.
  EXPECT_EQ(bytes_of(out, EngineKind::kDmaIn, "conv2"), 3584u);
}

// x -> conv1 (1x1, 16 -> 16) -> a; x -> conv2 (1x1) -> b; cat = Concat(a, b) on channels;
// conv3 (1x1, 32 -> 16) reads cat -> y. The Concat is a view: cat aliases a and b on chip.
TEST(Residency, AConcatOfResidentTensorsIsReadOnChip) {
  const Json doc = Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "cat",
    "tensors": [{"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w1", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "w2", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "w3", "shape": [16, 32, 1, 1], "constant": true},
      {"name": "a", "shape": [1, 16, 8, 8]}, {"name": "b", "shape": [1, 16, 8, 8]},
      {"name": "cat", "shape": [1, 32, 8, 8]}, {"name": "y", "shape": [1, 16, 8, 8]}],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["a"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "conv2", "op": "Conv", "inputs": ["x", "w2"], "outputs": ["b"], "attrs": {"kernel_shape": [1, 1]}},
      {"name": "concat", "op": "Concat", "inputs": ["a", "b"], "outputs": ["cat"], "attrs": {"axis": 1}},
      {"name": "conv3", "op": "Conv", "inputs": ["cat", "w3"], "outputs": ["y"], "attrs": {"kernel_shape": [1, 1]}}]})");
  const Graph g = parse_graph_json(doc, "cat.json");
  const HwConfig config = load_hw_config("default");
  const Schedule s = compile_schedule(g, config, greedy(true));
  // conv3 loads its weights alone: 16 * 32 = 512 B; cat is read on chip.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "conv3"), 512u);
  // conv1 and conv2 store only the 512 B piece whose store frees their weights (as above), and
  // conv3 stores y: 16 * 8 * 8 = 1024 B.
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv1"), 512u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv2"), 512u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv3"), 1024u);
  // Through DRAM, conv3 loads all of cat too: 512 + 32 * 8 * 8 = 2560 B.
  EXPECT_EQ(bytes_of(compile_schedule(g, config, greedy(false)), EngineKind::kDmaIn, "conv3"),
            2560u);
  // conv3's last command frees a's and b's buffers (the compute outputs of conv1 and conv2).
  std::size_t outputs = 0, freed = 0;
  for (const Command& c : s.commands) {
    if (!on_slice(c.engine) || (c.layer != "conv1" && c.layer != "conv2")) continue;
    for (const BufferAlloc& b : c.alloc) {
      ++outputs;
      const std::vector<std::string>& f = s.commands.back().free;
      if (std::find(f.begin(), f.end(), b.buffer) != f.end()) ++freed;
    }
  }
  EXPECT_EQ(s.commands.back().layer, "conv3");
  EXPECT_EQ(outputs, 4u);  // two tiles each
  EXPECT_EQ(freed, outputs);
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

TEST(Residency, ExplainSaysWhatWasKeptAndTheEstimatesThatDecided) {
  std::vector<std::string> explain;
  CompileOptions o = greedy(true);
  o.explain = &explain;
  compile_schedule(diamond(), load_hw_config("default"), o);
  const auto line = std::find_if(explain.begin(), explain.end(), [](const std::string& l) {
    return l.rfind("residency\t", 0) == 0;
  });
  ASSERT_NE(line, explain.end());
  // a and b (2 KiB) fit both caps (256 and 128 KiB): one plan, estimated against none, kept.
  EXPECT_NE(line->find("without: "), std::string::npos) << *line;
  EXPECT_NE(line->find("; 2 tensor(s) in up to L/2: "), std::string::npos) << *line;
  EXPECT_EQ(line->find("L/4"), std::string::npos) << *line;  // the same plan: not emitted again
  EXPECT_NE(line->find("; kept: 2 tensor(s) in up to L/2"), std::string::npos) << *line;
}

}  // namespace npusim
