// Dependencies linear in tiles (docs/compiler.md, "Joins" and "Limits"): the writer index's
// representatives imply every writer a read overlaps; YOLOX-style graphs at small local memories
// compile with dependencies bounded by a constant times the commands, or stop with an input error
// that names the lram_kib that fits; the size estimate matches what is emitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/size_estimate.h"
#include "sim/compiler/emit/writer_index.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/search/search.h"
#include "sim/config/hw_config.h"
#include "sim/frontend/graph_json.h"
#include "sim/util/error.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

const std::string kZoo = std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/";

using test::reaches;

// Random writers in passes (like channel chunks over the same rows) and whole-tensor writers;
// every read's representatives must imply every writer that overlaps it, and point backwards.
TEST(WriterIndex, RepresentativesImplyEveryOverlappingWriter) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<Command> cmds;
    WriterIndex index(2, cmds);
    struct W {
      std::uint64_t lo, hi;
      std::uint32_t c;
    };
    std::vector<W> writers;
    const int passes = 1 + static_cast<int>(rng() % 3);
    for (int p = 0; p < passes; ++p) {
      std::uint64_t at = 0;
      while (at < 1000) {
        const std::uint64_t len = 1 + rng() % (trial % 2 ? 7 : 90);
        const std::uint64_t hi = std::min<std::uint64_t>(1000, at + len);
        const bool whole = rng() % 50 == 0;
        cmds.emplace_back();
        const auto c = static_cast<std::uint32_t>(cmds.size() - 1);
        writers.push_back({whole ? 0 : at, whole ? 1000 : hi, c});
        index.add(0, writers.back().lo, writers.back().hi, c);
        at = hi;
      }
    }
    index.add_all_of(1, 0);  // a view of tensor 0
    for (int r = 0; r < 60; ++r) {
      const std::uint64_t lo = rng() % 1000, hi = lo + 1 + rng() % (r % 3 ? 40 : 1000);
      const std::uint32_t tensor = r % 7 == 0 ? 1 : 0;
      cmds.emplace_back();
      const auto reader = static_cast<std::uint32_t>(cmds.size() - 1);
      std::vector<std::uint32_t> deps;
      index.wait_for(tensor, lo, hi, deps);
      // kDirect segments, or two tree nodes per level of at most 1000 segments.
      EXPECT_LE(deps.size(), std::max<std::size_t>(WriterIndex::kDirect, std::size_t{2} * 11));
      for (std::uint32_t d : deps) ASSERT_LT(d, reader);
      cmds[reader].deps = deps;
      for (const W& w : writers) {
        if (tensor == 1 || (w.lo < hi && lo < w.hi)) {
          ASSERT_TRUE(reaches(cmds, reader, w.c)) << "trial " << trial << " read " << r;
        }
      }
    }
    for (std::uint32_t c = 0; c < cmds.size(); ++c) {
      for (std::uint32_t d : cmds[c].deps) ASSERT_LT(d, c);
    }
  }
}

TEST(WriterIndex, AWholeReadWaitsForOneCommand) {
  std::vector<Command> cmds(100);
  WriterIndex index(1, cmds);
  for (std::uint32_t c = 0; c < 100; ++c)
    index.add(0, std::uint64_t{c} * 10, std::uint64_t{c} * 10 + 10, c);
  std::vector<std::uint32_t> deps;
  index.wait_for(0, 0, 1000, deps);
  // The last store stands for all: it alone is joined to the 99 others.
  EXPECT_EQ(deps, (std::vector<std::uint32_t>{99}));
  EXPECT_EQ(cmds[99].deps.size(), 99u);
  for (std::uint32_t c = 0; c < 99; ++c) EXPECT_TRUE(cmds[c].deps.empty());
  // A narrow read still waits for its own writers only.
  deps.clear();
  index.wait_for(0, 15, 25, deps);
  EXPECT_EQ(deps, (std::vector<std::uint32_t>{1, 2}));
}

// ---- YOLOX-style graphs ------------------------------------------------------------------------

// A YOLOX-nano-like graph on a size x size image: a Focus (four Slices and a Concat), conv stems
// with BatchNorm and SiLU as x * Sigmoid(x) (two readers, so not fused), a stride-2 conv, a CSP
// split and Concat, a depthwise conv, an Upsample (Resize) and a Concat of two scales, a Reshape
// and a final Transpose.
std::string yolox_style(std::uint64_t size) {
  std::string tensors, layers;
  int n = 0;
  auto tensor = [&](const std::vector<std::uint64_t>& shape, bool constant) {
    std::string name = "t" + std::to_string(n++);
    std::string dims;
    for (std::uint64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    tensors += std::string(tensors.empty() ? "" : ",\n") + R"({"name":")" + name +
               R"(","shape":[)" + dims + "]" + (constant ? R"(,"constant":true})" : "}");
    return name;
  };
  auto layer = [&](const std::string& op, const std::vector<std::string>& in,
                   const std::string& out, const std::string& attrs) {
    std::string ins;
    for (const std::string& i : in) ins += (ins.empty() ? "\"" : ",\"") + i + "\"";
    layers += std::string(layers.empty() ? "" : ",\n") + R"({"name":"l)" + std::to_string(n) +
              R"(","op":")" + op + R"(","inputs":[)" + ins + R"(],"outputs":[")" + out + "\"]" +
              (attrs.empty() ? "" : ",\"attrs\":" + attrs) + "}";
  };
  struct Act {
    std::string name;
    std::uint64_t c, h;
  };
  auto conv = [&](const Act& x, std::uint64_t k, std::uint64_t ks, std::uint64_t s,
                  std::uint64_t group) {
    const std::uint64_t h = (x.h + 2 * (ks / 2) - ks) / s + 1, p = ks / 2;
    const std::string w = tensor({k, x.c / group, ks, ks}, true);
    const std::string y = tensor({1, k, h, h}, false);
    layer("Conv", {x.name, w}, y,
          "{\"kernel_shape\":[" + std::to_string(ks) + "," + std::to_string(ks) +
              "],\"strides\":[" + std::to_string(s) + "," + std::to_string(s) + "],\"pads\":[" +
              std::to_string(p) + "," + std::to_string(p) + "," + std::to_string(p) + "," +
              std::to_string(p) + "],\"group\":" + std::to_string(group) + "}");
    std::vector<std::string> bn = {y};
    for (int i = 0; i < 4; ++i) bn.push_back(tensor({k}, true));
    const std::string b = tensor({1, k, h, h}, false);
    layer("BatchNormalization", bn, b, "");
    const std::string sg = tensor({1, k, h, h}, false);
    layer("Sigmoid", {b}, sg, "");
    const std::string m = tensor({1, k, h, h}, false);
    layer("Mul", {b, sg}, m, "");  // SiLU: the BatchNorm output has two readers
    return Act{m, k, h};
  };
  auto concat = [&](const std::vector<Act>& xs) {
    std::uint64_t c = 0;
    std::vector<std::string> names;
    for (const Act& x : xs) {
      c += x.c;
      names.push_back(x.name);
    }
    const std::string y = tensor({1, c, xs[0].h, xs[0].h}, false);
    layer("Concat", names, y, R"({"axis":1})");
    return Act{y, c, xs[0].h};
  };
  const std::string image = tensor({1, 3, size, size}, false);
  std::vector<Act> focus;
  for (int i = 0; i < 4; ++i) {
    const std::string q = tensor({1, 3, size / 2, size / 2}, false);
    layer("Slice", {image}, q, "");
    focus.push_back({q, 3, size / 2});
  }
  const Act stem = conv(concat(focus), 16, 3, 1, 1);
  const Act d2 = conv(stem, 32, 3, 2, 1);
  const Act csp =
      conv(concat({conv(d2, 16, 1, 1, 1), conv(conv(d2, 16, 1, 1, 1), 16, 3, 1, 1)}), 32, 1, 1, 1);
  const Act d3 = conv(conv(csp, 32, 3, 2, 32), 64, 1, 1, 1);  // depthwise, then pointwise
  const std::string up = tensor({1, 64, d3.h * 2, d3.h * 2}, false);
  layer("Resize", {d3.name}, up, "");
  const Act head = conv(concat({Act{up, 64, d3.h * 2}, csp}), 85, 1, 1, 1);
  const std::string flat = tensor({1, 85, head.h * head.h}, false);
  layer("Reshape", {head.name}, flat, "");
  const std::string out = tensor({1, head.h * head.h, 85}, false);
  layer("Transpose", {flat}, out, R"({"perm":[0,2,1]})");
  return R"({"format":"npusim-graph","version":1,"name":"yolox_style","tensors":[)" + tensors +
         R"(],"inputs":[")" + image + R"("],"outputs":[")" + out + R"("],"layers":[)" + layers +
         "]}";
}

std::uint64_t dependencies(const Schedule& s) {
  std::uint64_t deps = 0;
  for (const Command& c : s.commands) deps += c.deps.size();
  return deps;
}

// The bound. Per tile (at least 3 commands: its loads, compute and store):
//  - a load waits for the ring store and for the segments of the bytes it reads: those of its
//    rows and halo (1 to 3), or for a whole-tensor read (Resize, Transpose, readers of a Concat)
//    up to kDirect = 32 segments listed exactly, else the one root;
//  - a compute for its loads, its weight chunk and the ring store;
//  - a store for its compute, and once per weight chunk for the last compute of each slice unit;
//  - joins add about one dependency per store (a segment's other chunks, tree nodes, the root).
// Narrow tiles thus take about 2 per command; only the tiles of the few whole-tensor readers of
// small tensors take up to 33 on a load. Measured: 4.2 at lram_kib=64 (small layers, many exact
// whole reads), falling to 2.2 as tiles multiply. 6 per command bounds it at every size, and as
// tiles multiply the ratio must stay about flat; on main it grew with the tiles (25 to 150 per
// command on a 640 x 640 YOLOX-style graph).
constexpr double kDepsPerCommand = 6;

TEST(YoloxStyle, CompilesWithDependenciesLinearInCommands) {
  const Graph g = parse_graph_json(Json::parse(yolox_style(256)), "yolox_style.json");
  std::vector<double> ratios;
  for (int kib : {64, 32, 16}) {
    // A 256 x 256 image stays far below the limits at these sizes, so it compiles; the error
    // path is Limits.TooManyCommandsNamesTheLayerAndTheLramThatFits.
    const HwConfig config = parse_hw_config("{}", "c.json", {"lram_kib=" + std::to_string(kib)});
    const Schedule s = compile_schedule(g, config);
    EXPECT_GT(s.commands.size(), 1000u);
    ratios.push_back(static_cast<double>(dependencies(s)) / static_cast<double>(s.commands.size()));
    EXPECT_LE(ratios.back(), kDepsPerCommand) << "lram_kib=" << kib;
  }
  // Quadratic growth would multiply the ratio as tiles multiply (25 to 150 before); the cost
  // search's mappings (fences, loop orders) move it by a few percent either way.
  EXPECT_LE(ratios[2], 1.25 * ratios[0]);
}

// A config past the command limit stops before emitting, names the layer, and the lram_kib it
// names compiles.
TEST(Limits, TooManyCommandsNamesTheLayerAndTheLramThatFits) {
  const Graph g = parse_graph_json(Json::parse(yolox_style(2048)), "yolox_style.json");
  const HwConfig config = parse_hw_config("{}", "c.json", {"lram_kib=1", "slices.count=1"});
  std::uint64_t kib = 0;
  try {
    compile_schedule(g, config);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("yolox_style.json: layer '"));
    // 4 GiB of schedule is reached before 2^24 commands (a command takes about 1 KB).
    EXPECT_THAT(what, HasSubstr("MiB for the schedule up to this layer, more than the compiler's "
                                "limit of 4096 MiB"));
    const std::size_t at = what.find("lram_kib=");
    ASSERT_NE(at, std::string::npos) << what;
    kib = std::stoull(what.substr(at + 9));
  }
  const HwConfig fits =
      parse_hw_config("{}", "c.json", {"lram_kib=" + std::to_string(kib), "slices.count=1"});
  // Compiling it would take long: check the estimate instead, as the driver does (with its
  // search, the cost search), at the named lram_kib (which must fit) and one below (which must
  // not).
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  const auto search = make_search("cost");
  auto fits_limits = [&](const HwConfig& c) {
    GroupSize total;
    for (const LayerGroup& group : groups) {
      const Mapping m = search->choose(make_map_space(g, group, layouts, c), c);
      total = total + estimate_group(g, group, m, layouts, budgets_of(c));
    }
    return total.commands <= kMaxCommands && total.bytes <= kMaxScheduleBytes;
  };
  EXPECT_TRUE(fits_limits(fits));
  const HwConfig below =
      parse_hw_config("{}", "c.json", {"lram_kib=" + std::to_string(kib - 1), "slices.count=1"});
  EXPECT_FALSE(fits_limits(below));
}

// A ReLU over 2^48 elements stops at once, before anything the size of the layer is allocated.
TEST(Limits, AHugeElementwiseLayerStopsBeforeAllocating) {
  const Graph g = parse_graph_json(Json::parse(R"({
    "format": "npusim-graph", "version": 1, "name": "huge",
    "tensors": [{"name": "x", "shape": [65536, 65536, 65536]},
                {"name": "y", "shape": [65536, 65536, 65536]}],
    "inputs": ["x"], "outputs": ["y"],
    "layers": [{"name": "relu", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]})"),
                                   "huge.json");
  try {
    compile_schedule(g, load_hw_config("default"));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("huge.json: layer 'relu'"));
    EXPECT_THAT(e.what(), HasSubstr("more than the 16777216 a schedule may have"));
    EXPECT_THAT(e.what(), HasSubstr("lram_kib="));
  }
}

// Emits `g` greedily, group by group, and counts the commands as the driver's size check does:
// the estimate must be what the emitter makes. With `halo`, every weights-outer spatial tiling
// reuses the halo; returns how many groups it applies to.
std::size_t expect_estimate_counts_emitted(const Graph& g, const HwConfig& config, bool halo) {
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  const auto search = make_search("greedy");
  Emitter emitter(g, config, layouts);
  GroupSize total;
  std::size_t reusing = 0;
  for (const LayerGroup& group : groups) {
    Mapping m = search->choose(make_map_space(g, group, layouts, config), config);
    if (halo && m.kind == MappingKind::kSpatial && m.order == LoopOrder::kWeightsOuter) {
      m.reuse_halo = true;
      reusing += describe_spatial(g, group, budgets_of(config)).reuses_halo(m) ? 1 : 0;
    }
    total = total + estimate_group(g, group, m, layouts, budgets_of(config));
    emitter.emit_group(group, m);
  }
  EXPECT_EQ(total.commands, emitter.finish().commands.size()) << g.name;
  return reusing;
}

// The estimate is what the emitter makes, group by group, for the zoo and a YOLOX-style graph.
TEST(Limits, TheEstimateCountsTheEmittedCommands) {
  const HwConfig config = parse_hw_config("{}", "c.json", {"lram_kib=64"});
  for (const Graph& g :
       {load_graph_json(kZoo + "resnet50.json"), load_graph_json(kZoo + "mobilenetv2.json"),
        load_graph_json(kZoo + "bert_base_layer.json"),
        parse_graph_json(Json::parse(yolox_style(128)), "y.json")}) {
    expect_estimate_counts_emitted(g, config, false);
  }
}

// The same with every weights-outer spatial tiling reusing the halo (docs/compiler.md, "Halo
// reuse"): its tiles load their new rows in as many pieces as halo_pieces cuts them into.
TEST(Limits, TheEstimateCountsTheEmittedCommandsWhenTilesReuseTheHalo) {
  for (const char* kib : {"64", "128"}) {
    SCOPED_TRACE(std::string("lram_kib=") + kib);
    const HwConfig config = parse_hw_config("{}", "c.json", {std::string("lram_kib=") + kib});
    for (const Graph& g :
         {load_graph_json(kZoo + "resnet50.json"), load_graph_json(kZoo + "mobilenetv2.json"),
          parse_graph_json(Json::parse(yolox_style(128)), "y.json")}) {
      EXPECT_GT(expect_estimate_counts_emitted(g, config, true), 0u) << g.name;
    }
  }
}

// One fp16 MatMul [1, k] x [k, n] (constant weights) on `server`, emitted with `m`: the commands
// emitted, and those the size estimate counts for it.
std::pair<std::size_t, std::uint64_t> server_gemv_commands(int k, int n, const Mapping& m) {
  const auto tensor = [](const char* name, std::vector<int> shape) {
    return Json{{"name", name}, {"dtype", "float16"}, {"shape", std::move(shape)}};
  };
  Json weights = tensor("w", {k, n});
  weights["constant"] = true;
  const Json graph = {
      {"format", "npusim-graph"},
      {"version", 1},
      {"name", "gemv"},
      {"tensors", {tensor("x", {1, k}), weights, tensor("y", {1, n})}},
      {"inputs", {"x"}},
      {"outputs", {"y"}},
      {"layers", {{{"name", "fc"}, {"op", "MatMul"}, {"inputs", {"x", "w"}}, {"outputs", {"y"}}}}}};
  const Graph g = parse_graph_json(graph, "gemv.json");
  const HwConfig config = load_hw_config("server");
  const std::vector<LayerGroup> groups = fuse_layer_groups(g);
  const TensorLayouts layouts = assign_layouts(g, groups);
  Emitter emitter(g, config, layouts);
  emitter.emit_group(groups[0], m);
  return {emitter.finish().commands.size(),
          estimate_group(g, groups[0], m, layouts, budgets_of(config)).commands};
}

Mapping matmul_mapping(LoopOrder order, std::uint64_t tile_cols, std::uint32_t k_parts) {
  Mapping m;
  m.kind = MappingKind::kMatMul;
  m.order = order;
  m.tile_rows = 1;
  m.tile_cols = tile_cols;
  m.k_parts = k_parts;
  return m;
}

// On `server` (4 DMA_IN channels, bursts of 1024 bytes) a shared load goes in up to 4 pieces
// (shared_pieces). [1, 3072] x [3072, 768] fp16, input outer, one row, chunks of 128 columns, its
// reduction split in 4 parts: the row of A, 6144 bytes = 6 bursts, loads in pieces of
// ceil(6 / 4) = 2 bursts, 3 pieces; each of the 6 chunks has 4 loads and 4 Gemms, one PartialSum
// (one row: one piece) and one store: 3 + 6 x 10 = 63 commands. The estimate counts the row's
// load as min(4 channels, 6 bursts) = 4: 64, at least the 63 (it was 61 when a shared load
// counted one).
TEST(Limits, TheEstimateCountsTheSharedLoadsPiecesOverTheChannels) {
  const auto [emitted, estimated] =
      server_gemv_commands(3072, 768, matmul_mapping(LoopOrder::kInputOuter, 128, 4));
  EXPECT_EQ(emitted, 63u);
  EXPECT_EQ(estimated, 64u);
}

// shared_pieces' count is not monotone in the bytes, so the estimate counts a piece per burst of
// the largest chunk, up to one per channel. [1, 64] x [64, 72] fp16 on `server`, weights outer,
// chunks of 40 columns: the first, 40 x 64 x 2 = 5120 bytes = 5 bursts, loads in pieces of
// ceil(5 / 4) = 2 bursts, 3 pieces; the last, 32 columns = 4096 bytes = 4 bursts, in 4. Each chunk
// then has one row tile: its row of A, a Gemm, a store. Emitted: 3 + 3 + 4 + 3 = 13; estimated:
// 2 x (min(4, 5) + 3) = 14.
TEST(Limits, TheEstimateBoundsASmallerLastChunkCutInMorePieces) {
  const auto [emitted, estimated] =
      server_gemv_commands(64, 72, matmul_mapping(LoopOrder::kWeightsOuter, 40, 1));
  EXPECT_EQ(emitted, 13u);
  EXPECT_EQ(estimated, 14u);
}

}  // namespace
}  // namespace npusim
