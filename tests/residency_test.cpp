// Tensors resident on chip (docs/compiler.md, "Tensors resident on chip"): an output that only
// later tiled groups read stays in local memory, with no store and no loads, and is freed by its
// last reader group. Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/plan_chains.h"
#include "sim/compiler/passes/plan_residency.h"
#include "sim/compiler/search/greedy.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/schedule.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

#include "tests/schedule_support.h"

namespace npusim {
namespace {

using test::graph_macs;
using test::schedule_macs;

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

// x -> conv1 (1x1, 16 -> 16) -> a; x -> conv2 (1x1) -> b; cat = Concat(a, b) on channels;
// conv3 (1x1, 32 -> 16) reads cat -> y. The Concat is a view: cat aliases a and b on chip.
Graph concat_graph() {
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
  return parse_graph_json(doc, "cat.json");
}

std::uint32_t tensor_id(const Graph& g, const std::string& name) {
  for (std::uint32_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

std::uint64_t bytes_of(const Schedule& s, EngineKind engine, const std::string& layer) {
  std::uint64_t bytes = 0;
  for (const Command& c : s.commands) {
    if (c.engine == engine && c.layer == layer) bytes += c.bytes;
  }
  return bytes;
}

CompileOptions greedy(bool residency) {
  CompileOptions o;
  o.search = "greedy";  // weights outer, one chunk per conv: each weight loaded once
  o.residency = residency;
  o.fewer_slices = false;  // the bytes below are derived for tiles on both of default's slices
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

TEST(Residency, AConcatOfResidentTensorsIsReadOnChip) {
  const Graph g = concat_graph();
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

// Remapping under residency (docs/compiler.md, "Remapping under residency") costs a group as
// the plan emits it. What each group finds on chip, for a plan written by hand on the concat
// graph: a and b stay from their convs to conv3, which frees them.
TEST(Residency, EachGroupIsToldWhatIsOnChipWhileItRuns) {
  const Graph g = concat_graph();
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  ASSERT_EQ(groups.size(), 4u);  // conv1, conv2, the Concat (a view), conv3
  std::vector<Residency> plan(groups.size());
  plan[0].output = plan[1].output = true;
  plan[3].release = {tensor_id(g, "a"), tensor_id(g, "b")};
  const std::vector<OnChipContext> c = on_chip_contexts(g, groups, plan);
  ASSERT_EQ(c.size(), 4u);
  // conv1 reads x from DRAM and keeps a (1024 B); nothing else is on chip yet.
  EXPECT_TRUE(c[0].resident_inputs.empty());
  EXPECT_TRUE(c[0].output_resident);
  EXPECT_EQ(c[0].other_bytes, 0u);
  // conv2 reads x too and keeps b, while a (16 * 8 * 8 = 1024 B) takes room it does not read.
  EXPECT_TRUE(c[1].resident_inputs.empty());
  EXPECT_TRUE(c[1].output_resident);
  EXPECT_EQ(c[1].other_bytes, 1024u);
  // The view has nothing to cost.
  EXPECT_FALSE(c[2].any());
  // conv3 reads cat, a view of a and b, on chip: its 2048 B are all that is live.
  EXPECT_EQ(c[3].resident_inputs, std::vector<std::uint32_t>{tensor_id(g, "cat")});
  EXPECT_FALSE(c[3].output_resident);
  EXPECT_EQ(c[3].other_bytes, 0u);
}

// A group emitted alone as a plan emits it: its resident input is not loaded and its resident
// output is not stored, but for the piece whose store frees the weight chunk.
// The diamond's conv2 group on `default`, with the greedy search's mapping.
struct DiamondConv2 {
  Graph g = diamond();
  HwConfig config = load_hw_config("default");
  std::vector<LayerGroup> groups = fuse_layer_groups(g);
  TensorLayouts layouts = assign_layouts(g, groups);
  const LayerGroup& conv2() const { return groups[1]; }
  Mapping greedy_mapping() const {
    return GreedySearch().choose(make_map_space(g, conv2(), layouts, config), config);
  }
};

TEST(Residency, AGroupCostedUnderAPlanLoadsOnlyWhatIsNotOnChip) {
  const DiamondConv2 d;
  const Graph& g = d.g;
  const HwConfig& config = d.config;
  const TensorLayouts& layouts = d.layouts;
  const LayerGroup& conv2 = d.conv2();
  ASSERT_EQ(conv2.name, "conv2");
  const Mapping m = d.greedy_mapping();
  auto emitted = [&](bool under_plan) {
    Emitter e(g, config, layouts);
    Residency r;
    if (under_plan) {
      e.assume_resident(tensor_id(g, "a"));
      r.output = true;
    }
    e.emit_group(conv2, m, false, false, r);
    return e.finish();
  };
  // Alone (GraphOutputsAndTheirViewsGoThroughDram's figures): 2304 B of weights and two tiles
  // of 4 rows plus a halo row of a, 2304 + 2 * 5 * 8 * 16 = 3584 B in; all of b, 1024 B, out.
  const Schedule alone = emitted(false);
  EXPECT_EQ(bytes_of(alone, EngineKind::kDmaIn, "conv2"), 3584u);
  EXPECT_EQ(bytes_of(alone, EngineKind::kDmaOut, "conv2"), 1024u);
  // Under the plan: the weights alone in, and only the second tile's 4 * 8 * 16 = 512 B out.
  const Schedule under = emitted(true);
  EXPECT_EQ(bytes_of(under, EngineKind::kDmaIn, "conv2"), 2304u);
  EXPECT_EQ(bytes_of(under, EngineKind::kDmaOut, "conv2"), 512u);
}

// Whole models are emitted with drop_unread_stores: a tile whose resident output no DRAM reader
// needs, and whose compute alone read the weight chunk its store would free, stores nothing; its
// compute frees the chunk. conv2 of the diamond as one tile of all 8 rows, 16 channels: weights
// (16 * 16 * 3 * 3 = 2304 B) in, and without the option its store writes the whole output
// (16 * 8 * 8 = 1024 B) only to free them.
TEST(Residency, ATileThatAloneReadItsWeightsDoesNotStoreAResidentOutput) {
  const DiamondConv2 d;
  const Graph& g = d.g;
  const LayerGroup& conv2 = d.conv2();
  ASSERT_EQ(conv2.name, "conv2");
  Mapping m = d.greedy_mapping();
  m.tile_rows = 8;  // one tile: the chunk's only reader
  m.tile_cols = 8;
  m.slices = 1;
  auto emitted = [&](bool drop, bool release, bool stores_carry = false) {
    Emitter e(g, d.config, d.layouts);
    e.drop_unread_stores(drop);
    e.stores_carry_frees(stores_carry);
    e.assume_resident(tensor_id(g, "a"));
    Residency r;
    r.output = true;
    if (release) r.release = {tensor_id(g, "a")};
    e.emit_group(conv2, m, false, false, r);
    return e.finish();
  };
  const Schedule kept = emitted(false, false);
  EXPECT_EQ(bytes_of(kept, EngineKind::kDmaIn, "conv2"), 2304u);
  EXPECT_EQ(bytes_of(kept, EngineKind::kDmaOut, "conv2"), 1024u);
  const Schedule dropped = emitted(true, false);
  EXPECT_EQ(bytes_of(dropped, EngineKind::kDmaIn, "conv2"), 2304u);
  EXPECT_EQ(bytes_of(dropped, EngineKind::kDmaOut, "conv2"), 0u);
  // The weights' load, then the conv, which frees them (the only DMA_IN's buffer).
  ASSERT_EQ(dropped.commands.size(), 2u);
  const Command& load = dropped.commands[0];
  const Command& conv = dropped.commands[1];
  ASSERT_EQ(load.engine, EngineKind::kDmaIn);
  ASSERT_EQ(load.alloc.size(), 1u);
  EXPECT_EQ(conv.free, std::vector<std::string>{load.alloc[0].buffer});
  // When the group must also release a resident input, the conv carries the release (a,
  // assumed resident, has no buffer of its own here: the conv frees the weights alone) and
  // nothing is stored...
  const Schedule on_conv = emitted(true, true);
  EXPECT_EQ(bytes_of(on_conv, EngineKind::kDmaOut, "conv2"), 0u);
  ASSERT_EQ(on_conv.commands.size(), 2u);
  EXPECT_EQ(on_conv.commands[1].free,
            std::vector<std::string>{on_conv.commands[0].alloc[0].buffer});
  // a has no writer here and nothing ran since: the release adds no wait to the conv's on its
  // weights.
  EXPECT_EQ(on_conv.commands[1].deps, IndexList{0});
  // ...unless stores carry the frees (the driver estimates both): then the store comes back,
  // after the conv, to carry the release on the DMA_OUT queue rather than hold the conv's slice.
  const Schedule carried = emitted(true, true, true);
  EXPECT_EQ(bytes_of(carried, EngineKind::kDmaOut, "conv2"), 1024u);
  ASSERT_EQ(carried.commands.size(), 3u);
  EXPECT_EQ(carried.commands.back().engine, EngineKind::kDmaOut);
  EXPECT_EQ(carried.commands.back().deps, IndexList{1});
}

// On `server` (24 MiB) most of ResNet-50's tensors stay on chip, and its groups, costed alone
// with their loads and stores, were mapped for a DMA that residency removes. Remapped under the
// plan, the model is faster by the estimate that decided, and still does the graph's work.
TEST(Residency, ResNet50OnServerIsRemappedForItsResidentTensors) {
  const Graph g = load_graph_json(std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/resnet50.json");
  const HwConfig config = load_hw_config("server");
  std::vector<std::string> explain;
  CompileOptions o;
  o.explain = &explain;
  const Schedule s = compile_schedule(g, config, o);
  const auto line = std::find_if(explain.begin(), explain.end(),
                                 [](const std::string& l) { return l.rfind("remap\t", 0) == 0; });
  ASSERT_NE(line, explain.end());
  // "remap\tN group(s) mapped anew: C cycles estimated (before: B), kept: remapped[; then ...]"
  EXPECT_NE(line->find("kept: remapped"), std::string::npos) << *line;
  const std::uint64_t after = std::stoull(line->substr(line->find(": ") + 2));
  const std::uint64_t before = std::stoull(line->substr(line->find("(before: ") + 9));
  EXPECT_LT(after, before) << *line;
  EXPECT_LE(estimate(s, config).total_cycles(), after) << *line;
  EXPECT_EQ(schedule_macs(s), graph_macs(g));
}

// x -> conv0 (1x1) -> a -> conv1 (3x3, pad 1) -> b -> conv2 (1x1) -> c -> conv3 (1x1) -> y, all
// 16 channels of 8 x 8, int8; conv1 and conv2 chained (2-row tiles on both slices).
struct ChainedFour {
  Graph g;
  std::vector<LayerGroup> groups;
  TensorLayouts layouts;
  Chain chain;
};

static ChainedFour chained_four(const HwConfig& config) {
  ChainedFour f;
  f.g = parse_graph_json(Json::parse(R"({"format": "npusim-graph", "version": 1, "name": "four",
    "tensors": [{"name": "x", "shape": [1, 16, 8, 8]},
      {"name": "w0", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "w1", "shape": [16, 16, 3, 3], "constant": true},
      {"name": "w2", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "w3", "shape": [16, 16, 1, 1], "constant": true},
      {"name": "a", "shape": [1, 16, 8, 8]}, {"name": "b", "shape": [1, 16, 8, 8]},
      {"name": "c", "shape": [1, 16, 8, 8]}, {"name": "y", "shape": [1, 16, 8, 8]}],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [
      {"name": "conv0", "op": "Conv", "inputs": ["x", "w0"], "outputs": ["a"],
       "attrs": {"kernel_shape": [1, 1]}},
      {"name": "conv1", "op": "Conv", "inputs": ["a", "w1"], "outputs": ["b"],
       "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
      {"name": "conv2", "op": "Conv", "inputs": ["b", "w2"], "outputs": ["c"],
       "attrs": {"kernel_shape": [1, 1]}},
      {"name": "conv3", "op": "Conv", "inputs": ["c", "w3"], "outputs": ["y"],
       "attrs": {"kernel_shape": [1, 1]}}]})"),
                         "four.json");
  f.groups = fuse_layer_groups(f.g);
  f.layouts = assign_layouts(f.g, f.groups);
  // Costs that make plan_chains pick conv1 and conv2 at 2 rows: no chain from conv0 saves.
  const ChainCost chain_cost = [](const Chain& c) {
    const bool wanted = c.first == 1 && c.mappings.size() == 2 && c.mappings[0].tile_rows == 2 &&
                        c.slices == 0 && c.ahead == 0;
    return std::optional<std::uint64_t>(wanted ? 1 : 10);
  };
  const PlainCost plain_cost = [](std::size_t first, std::size_t) {
    return std::optional<std::uint64_t>(first == 1 ? 100 : 1);
  };
  const std::vector<Chain> chains =
      plan_chains(f.g, config, f.groups, std::vector<Mapping>(4), chain_cost, plain_cost);
  EXPECT_EQ(chains.size(), 1u);
  if (!chains.empty()) f.chain = chains[0];
  return f;
}

// A chain's input and output may stay on chip like any group's; its intermediate is never
// planned (it lives in the chain's reservation, not as a resident tensor).
TEST(Residency, AChainReadsAResidentInputAndLeavesItsOutputResident) {
  const HwConfig config = load_hw_config("default");
  const ChainedFour f = chained_four(config);
  ASSERT_EQ(f.chain.first, 1u);
  ASSERT_EQ(f.chain.mappings.size(), 2u);
  const GreedySearch greedy;
  const std::vector<Mapping> mappings = {
      greedy.choose(make_map_space(f.g, f.groups[0], f.layouts, config), config),
      f.chain.mappings[0], f.chain.mappings[1],
      greedy.choose(make_map_space(f.g, f.groups[3], f.layouts, config), config)};
  const std::vector<bool> kept(4, false);
  const std::vector<std::uint64_t> needs(4, 0);
  // Without telling the planner about the chain, b would be planned too (conv2 reads it through
  // its tiles).
  const std::vector<Residency> loose =
      plan_residency(f.g, config, f.groups, mappings, kept, needs, config.lram_bytes / 2);
  EXPECT_TRUE(loose[1].output);
  const std::vector<bool> internal = {false, true, false, false};
  const std::vector<Residency> plan = plan_residency(f.g, config, f.groups, mappings, kept, needs,
                                                     config.lram_bytes / 2, &internal);
  EXPECT_TRUE(plan[0].output);   // a: conv0 -> the chain's first member
  EXPECT_FALSE(plan[1].output);  // b: inside the chain
  EXPECT_TRUE(plan[2].output);   // c: the chain's last member -> conv3
  EXPECT_EQ(plan[1].release, std::vector<std::uint32_t>{tensor_id(f.g, "a")});
  EXPECT_EQ(plan[3].release, std::vector<std::uint32_t>{tensor_id(f.g, "c")});

  // Alone, the chain loads its weights, 16 x 16 x 9 = 2304 and 16 x 16 = 256 bytes, and its
  // input in 2-row tiles with their halo rows, [0, 3), [1, 5), [3, 7) and [5, 8): 14 rows of
  // 8 x 16 = 128 bytes; it stores all of c, 8 x 8 x 16 = 1024 bytes.
  Emitter alone(f.g, config, f.layouts);
  alone.emit_chain({&f.groups[1], &f.groups[2]}, f.chain);
  const Schedule a = alone.finish();
  EXPECT_EQ(bytes_of(a, EngineKind::kDmaIn, "conv1") + bytes_of(a, EngineKind::kDmaIn, "conv2"),
            2304u + 256u + 14u * 128u);
  EXPECT_EQ(bytes_of(a, EngineKind::kDmaOut, "conv2"), 1024u);
  // Under the plan it loads its weights alone and stores nothing; conv3 loads its 256 bytes of
  // weights alone.
  Emitter e(f.g, config, f.layouts);
  e.emit_group(f.groups[0], mappings[0], false, false, plan[0]);
  e.emit_chain({&f.groups[1], &f.groups[2]}, f.chain, {plan[1], plan[2]});
  e.emit_group(f.groups[3], mappings[3], false, false, plan[3]);
  Schedule s = e.finish();
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "conv1") + bytes_of(s, EngineKind::kDmaIn, "conv2"),
            2304u + 256u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaOut, "conv1") + bytes_of(s, EngineKind::kDmaOut, "conv2"),
            0u);
  EXPECT_EQ(bytes_of(s, EngineKind::kDmaIn, "conv3"), 256u);
  // Every buffer is freed once, after its allocator; the work is the graph's; the simulation
  // runs it (no deadlock, local memory within its size) in the estimate's cycles.
  Diagnostics diag("four.json");
  finalize_schedule(s, config, diag);
  ASSERT_TRUE(diag.empty());
  EXPECT_EQ(schedule_macs(s), graph_macs(f.g));
  EXPECT_EQ(simulate(s, config).total_cycles(), estimate(s, config).total_cycles());
}

}  // namespace npusim
