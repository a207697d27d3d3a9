// The sharding compiler (docs/multi-device.md, "The sharding compiler"): placements, the
// collectives it inserts and what they cost, MACs summed over devices against hand counts, and
// estimate = simulation on an uncontended sharded schedule. Runs in npusim_platform_tests (one
// process per test: SystemC elaborates once per process).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/api/llm_run.h"
#include "sim/api/models.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/shard/tensor_parallel.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/llm.h"
#include "sim/platform/platform.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

// A small graph builder: float16 tensors, weights constant.
class G {
 public:
  std::uint32_t input(const std::string& name, std::vector<std::uint64_t> shape) {
    const std::uint32_t t = tensor(name, std::move(shape), false);
    g.inputs.push_back(t);
    return t;
  }
  std::uint32_t weight(const std::string& name, std::vector<std::uint64_t> shape) {
    return tensor(name, std::move(shape), true);
  }
  std::uint32_t layer(const std::string& name, const std::string& op,
                      std::vector<std::uint32_t> inputs, std::vector<std::uint64_t> shape,
                      Attributes attrs = {}) {
    const std::uint32_t out = tensor(name + ".out", std::move(shape), false);
    g.layers.push_back({name, op, std::move(inputs), {out}, std::move(attrs), name});
    return out;
  }
  Graph g;

 private:
  std::uint32_t tensor(const std::string& name, std::vector<std::uint64_t> shape, bool constant) {
    Tensor t;
    t.name = name;
    t.dtype = DType::kFloat16;
    t.shape = std::move(shape);
    t.constant = constant;
    g.tensors.push_back(t);
    return static_cast<std::uint32_t>(g.tensors.size() - 1);
  }
};

// 1 GHz; device links 10 GB/s per direction with 100 ns latency (0.1 cycle per byte, 100
// cycles); the host link 2 lanes of 16 GB/s with 1000 ns latency; DRAM 100 GB/s, faster than
// both links, so the links' own rates hold (a link is no faster than DRAM).
HwConfig system_of(std::uint32_t devices, const std::string& topology) {
  return parse_hw_config(
      "{}", "cfg",
      {"devices.count=" + std::to_string(devices), "devices.topology=" + topology, "clock_mhz=1000",
       "devices.link_gbps=10", "devices.link_latency_ns=100", "host.link_gbps=16",
       "host.link_latency_ns=1000", "dram.bandwidth_gbps=100"});
}

std::map<std::uint32_t, std::uint64_t> macs_per_device(const Schedule& s) {
  std::map<std::uint32_t, std::uint64_t> macs;
  for (const Command& c : s.commands) macs[c.device] += c.macs;
  return macs;
}

std::vector<const Command*> of_engine(const Schedule& s, EngineKind kind) {
  std::vector<const Command*> out;
  for (const Command& c : s.commands) {
    if (c.engine == kind) out.push_back(&c);
  }
  return out;
}

// x [16, 64] -> MatMul W1 [64, 128] -> MatMul W2 [128, 64]: the MLP pattern.
Graph mlp() {
  G b;
  const std::uint32_t x = b.input("x", {16, 64});
  const std::uint32_t h = b.layer("fc1", "MatMul", {x, b.weight("w1", {64, 128})}, {16, 128});
  b.g.outputs = {b.layer("fc2", "MatMul", {h, b.weight("w2", {128, 64})}, {16, 64})};
  b.g.name = "mlp";
  return b.g;
}

TEST(Sharding, ColumnThenRowParallelNeedsOneAllReduce) {
  // fc1 is column-parallel (each device: W1's 64 columns, h split along its last dimension), so
  // fc2 is row-parallel (W2's 64 rows of its half of h) and its output is partial: one
  // all-reduce, of fc2's output, and nothing replicated.
  const shard::ShardedGraph sg = shard::shard_tensor_parallel(mlp(), system_of(2, "ring"));
  std::vector<shard::Collective> collectives;
  for (const auto& step : sg.steps) {
    collectives.insert(collectives.end(), step.collectives.begin(), step.collectives.end());
  }
  ASSERT_EQ(collectives.size(), 1u);
  EXPECT_EQ(collectives[0].kind, shard::CollectiveKind::kAllReduce);
  EXPECT_EQ(sg.device.tensors[collectives[0].source].name, "fc2.out");
  EXPECT_EQ(sg.device.tensors[collectives[0].source].shape, (std::vector<std::uint64_t>{16, 64}));
  EXPECT_TRUE(sg.replicated_layers.empty());
  const auto w1 = sg.device.find_tensor("w1.part");
  const auto w2 = sg.device.find_tensor("w2.part");
  ASSERT_TRUE(w1 && w2);
  EXPECT_EQ(sg.device.tensors[*w1].shape, (std::vector<std::uint64_t>{64, 64}));
  EXPECT_EQ(sg.device.tensors[*w2].shape, (std::vector<std::uint64_t>{64, 64}));
}

TEST(Sharding, RingAllReduceOnTwoDevicesCostsTheHandComputedCycles) {
  const HwConfig config = system_of(2, "ring");
  const Schedule s = compile_schedule(mlp(), config);
  // MACs: fc1 16 x 64 x 128 = 131072 and fc2 16 x 128 x 64 = 131072; each device does half.
  const auto macs = macs_per_device(s);
  EXPECT_EQ(macs.at(0), 131072u);
  EXPECT_EQ(macs.at(1), 131072u);
  // The all-reduce of fc2's output, 16 x 64 float16 = 2048 bytes, on a ring of 2: a
  // reduce-scatter step (each device sends the 1024-byte half it does not keep) and an
  // all-gather step (each sends its reduced half). A 1024-byte transfer alone:
  // ceil(1024 x 0.1) = 103 cycles on the link + 100 latency = 203.
  const auto transfers = of_engine(s, EngineKind::kDevHdma);
  ASSERT_EQ(transfers.size(), 4u);
  for (const Command* c : transfers) {
    EXPECT_EQ(c->bytes, 1024u);
    EXPECT_EQ(c->isolated_cycles, 203u) << c->id;
    EXPECT_EQ(c->peer, 1 - c->device);
    EXPECT_EQ(c->layer, "collective.all_reduce.fc2.out.reduced");
  }
  // The inputs (16 x 64 float16 = 2048 bytes) go to both devices, the output (2048 bytes) comes
  // back from device 0; a barrier starts and ends the run.
  const auto host = of_engine(s, EngineKind::kExtHdma);
  ASSERT_EQ(host.size(), 3u);
  EXPECT_TRUE(host[0]->to_device && host[1]->to_device && !host[2]->to_device);
  EXPECT_EQ(host[2]->device, 0u);
  for (const Command* c : host) EXPECT_EQ(c->bytes, 2048u);
  EXPECT_EQ(of_engine(s, EngineKind::kSync).size(), 2u);
  // Every DEV_HDMA has the link to itself (one transfer per direction at a time) and the two
  // host loads fit the host link's two lanes: the simulation is the estimate, command for
  // command.
  const profiler::Timeline est = estimate(s, config);
  const profiler::Timeline sim = simulate(s, config);
  ASSERT_EQ(est.commands.size(), sim.commands.size());
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    if (s.commands[i].engine != EngineKind::kDevHdma) continue;
    EXPECT_EQ(est.commands[i].end - est.commands[i].start, 203u) << s.commands[i].id;
    EXPECT_EQ(sim.commands[i].end - sim.commands[i].start, 203u) << s.commands[i].id;
  }
  EXPECT_EQ(est.total_cycles(), sim.total_cycles());
}

// x [1, C, 8, 8] -> Conv C out 3x3 pad 1 -> Relu -> Conv C out 3x3 pad 1, float16.
Graph two_convs(std::uint64_t c) {
  G b;
  Attributes conv;
  conv.ints["kernel_shape"] = {3, 3};
  conv.ints["pads"] = {1, 1, 1, 1};
  const std::uint32_t x = b.input("x", {1, c, 8, 8});
  const std::uint32_t c1 =
      b.layer("conv1", "Conv", {x, b.weight("w1", {c, c, 3, 3})}, {1, c, 8, 8}, conv);
  const std::uint32_t r = b.layer("relu", "Relu", {c1}, {1, c, 8, 8});
  b.g.outputs = {b.layer("conv2", "Conv", {r, b.weight("w2", {c, c, 3, 3})}, {1, c, 8, 8}, conv)};
  b.g.name = "convs";
  return b.g;
}

TEST(Sharding, ConvsAreOutputChannelParallelAndGatherAtTheRoot) {
  // Two 64-channel convs on 4 devices in a tree (device 0 linked to each other), on `default`
  // (2 slices of 16 x 16: 512 MACs per cycle). Each conv: 64 pixels x 64 x 64 x 9 = 2359296
  // MACs; split 4 ways it saves 2359296 / 512 x 3/4 = 3456 array cycles, more than gathering
  // its 8192-byte output costs (below: 305 + 715 = 1020), so both are split.
  const HwConfig config = system_of(4, "tree");
  const Schedule s = compile_schedule(two_convs(64), config);
  for (const auto& [device, macs] : macs_per_device(s)) EXPECT_EQ(macs, 1179648u) << device;
  // conv2 needs all of the ReLU output: each leaf sends its 16 channels x 64 pixels float16 =
  // 2048 bytes to device 0 (ceil(204.8) = 205 cycles + 100 latency), which sends the other
  // 6144 bytes back to each leaf (ceil(614.4) = 615 + 100).
  const auto transfers = of_engine(s, EngineKind::kDevHdma);
  ASSERT_EQ(transfers.size(), 6u);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(transfers[i]->device, i + 1);
    EXPECT_EQ(transfers[i]->peer, 0u);
    EXPECT_EQ(transfers[i]->bytes, 2048u);
    EXPECT_EQ(transfers[i]->isolated_cycles, 305u);
    EXPECT_EQ(transfers[3 + i]->device, 0u);
    EXPECT_EQ(transfers[3 + i]->peer, i + 1);
    EXPECT_EQ(transfers[3 + i]->bytes, 6144u);
    EXPECT_EQ(transfers[3 + i]->isolated_cycles, 715u);
  }
  // conv2's output stays split: each device sends its 2048 bytes to the host.
  std::vector<std::uint32_t> senders;
  for (const Command* c : of_engine(s, EngineKind::kExtHdma)) {
    if (c->to_device) continue;
    senders.push_back(c->device);
    EXPECT_EQ(c->bytes, 2048u);
  }
  EXPECT_EQ(senders, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  // The gather's two transfers lie on the simulation's critical path.
  EXPECT_GE(simulate(s, config).total_cycles(), 305u + 715u);
}

TEST(Sharding, AConvWhoseGatherCostsMoreThanItSavesRunsWholeOnEveryDevice) {
  // Two 8-channel convs: each is 64 x 8 x 8 x 9 = 36864 MACs; split 4 ways it would save
  // 36864 / 512 x 3/4 = 54 array cycles, but gathering its 1024-byte output costs 256 bytes to
  // the root (ceil(25.6) + 100 = 126) and 768 back (ceil(76.8) + 100 = 177). Both run whole on
  // every device: no transfer, and each device does all 73728 MACs.
  const HwConfig config = system_of(4, "tree");
  const shard::ShardedGraph sg = shard::shard_tensor_parallel(two_convs(8), config);
  EXPECT_EQ(sg.replicated_layers, (std::vector<std::string>{"conv1", "conv2"}));
  const Schedule s = compile_schedule(two_convs(8), config);
  EXPECT_TRUE(of_engine(s, EngineKind::kDevHdma).empty());
  for (const auto& [device, macs] : macs_per_device(s)) EXPECT_EQ(macs, 73728u) << device;
}

TEST(Sharding, ABatchThatDividesRunsDataParallelWithoutTransfers) {
  // x [4, 8, 8, 8] -> Conv 16 out 3x3 pad 1 -> Relu -> Conv: on 4 devices each takes one image
  // of the batch, so no layer needs another device's data: no DEV_HDMA at all. MACs per device:
  // one image, 64 pixels x (16 x 8 + 16 x 16) x 9 = 221184 (a quarter of the batch's 884736).
  G b;
  Attributes conv;
  conv.ints["kernel_shape"] = {3, 3};
  conv.ints["pads"] = {1, 1, 1, 1};
  const std::uint32_t x = b.input("x", {4, 8, 8, 8});
  const std::uint32_t c1 =
      b.layer("conv1", "Conv", {x, b.weight("w1", {16, 8, 3, 3})}, {4, 16, 8, 8}, conv);
  const std::uint32_t r = b.layer("relu", "Relu", {c1}, {4, 16, 8, 8});
  b.g.outputs = {
      b.layer("conv2", "Conv", {r, b.weight("w2", {16, 16, 3, 3})}, {4, 16, 8, 8}, conv)};
  b.g.name = "batch";
  b.g.batch = 4;
  const Schedule s = compile_schedule(b.g, system_of(4, "ring"));
  EXPECT_TRUE(of_engine(s, EngineKind::kDevHdma).empty());
  for (const auto& [device, macs] : macs_per_device(s)) EXPECT_EQ(macs, 221184u) << device;
  // Each device loads its image (8 x 64 float16 = 1024 bytes) and returns its output (2048).
  for (const Command* c : of_engine(s, EngineKind::kExtHdma)) {
    EXPECT_EQ(c->bytes, c->to_device ? 1024u : 2048u);
  }
  EXPECT_EQ(of_engine(s, EngineKind::kExtHdma).size(), 8u);
}

TEST(Sharding, UploadedWeightsCrossTheHostLinkBeforeTheFirstCommand) {
  // mlp()'s weights, W1 64 x 128 and W2 128 x 64 float16: 32768 bytes. On the host link
  // (16 GB/s per lane at 1 GHz: 16 bytes per cycle, 1000 cycles latency) alone: 2048 + 1000 =
  // 3048 cycles. On 2 devices each loads its halves, 16384 bytes: 1024 + 1000 = 2024.
  for (const std::uint32_t devices : {1u, 2u}) {
    HwConfig config = system_of(devices, "ring");
    config.host.upload_weights = true;
    const Schedule s = compile_schedule(mlp(), config);
    std::vector<const Command*> weights;
    for (const Command* c : of_engine(s, EngineKind::kExtHdma)) {
      if (c->layer == "host.weights") weights.push_back(c);
    }
    ASSERT_EQ(weights.size(), devices);
    for (const Command* c : weights) {
      EXPECT_EQ(c->bytes, 32768u / devices);
      EXPECT_EQ(c->isolated_cycles, devices == 1 ? 3048u : 2024u);
    }
    // No array command starts before the weights are in.
    const profiler::Timeline t = estimate(s, config);
    for (std::size_t i = 0; i < s.commands.size(); ++i) {
      if (s.commands[i].engine == EngineKind::kArray) {
        EXPECT_GE(t.commands[i].start, devices == 1 ? 3048u : 2024u) << s.commands[i].id;
      }
    }
  }
}

TEST(Sharding, AnAllReduceOfFewerElementsThanDevicesSkipsEmptyChunks) {
  // x [1, 64] -> MatMul [64, 64] (column-parallel) -> MatMul [64, 2] (row-parallel): the partial
  // output has 2 elements for 8 devices, so 6 of the ring's 8 chunks are empty. Only chunks with
  // elements move: the reduce-scatter passes 2 one-element chunks on in each of its 7 steps (they
  // start at devices 0 and 1) and the all-gather the same, 2 x 7 x 2 = 28 transfers of 2 bytes.
  G b;
  const std::uint32_t x = b.input("x", {1, 64});
  const std::uint32_t h = b.layer("fc1", "MatMul", {x, b.weight("w1", {64, 64})}, {1, 64});
  b.g.outputs = {b.layer("fc2", "MatMul", {h, b.weight("w2", {64, 2})}, {1, 2})};
  b.g.name = "narrow";
  const HwConfig config = system_of(8, "ring");
  const Schedule s = compile_schedule(b.g, config);
  const auto transfers = of_engine(s, EngineKind::kDevHdma);
  EXPECT_EQ(transfers.size(), 28u);
  for (const Command* c : transfers) EXPECT_EQ(c->bytes, 2u);
  EXPECT_GT(simulate(s, config).total_cycles(), 0u);
}

TEST(Sharding, CopiesPastTheCommandLimitAreAnInputErrorNamingTheLayer) {
  // A ReLU over 64 x 2048 x 2048 float16 elements runs whole on every device (nothing splits an
  // element-wise op of a replicated input). With 8 KiB of local memory one device's copy takes
  // more than 2^24 / 64 = 262144 commands, so 64 copies would pass the schedule's limit: the
  // compiler says so before making them.
  G b;
  const std::uint32_t x = b.input("x", {1, 64, 2048, 2048});
  b.g.outputs = {b.layer("relu", "Relu", {x}, {1, 64, 2048, 2048})};
  b.g.name = "wide";
  HwConfig config = system_of(64, "ring");
  config.lram_bytes = std::uint64_t{8} * 1024;
  try {
    compile_schedule(b.g, config);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'relu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("64 devices"), std::string::npos) << e.what();
  }
}

TEST(Sharding, RingAllGatherPassesPartsOnInDevicesMinusOneSteps) {
  // x [16, 64] -> MatMul W [64, 128] -> output, 4 devices on a ring: the output is split by
  // columns and goes to the host from every device; Softmax over the last dimension needs it
  // whole, so an all-gather: 3 steps of 4 transfers of a 16 x 32 float16 part (1024 bytes).
  G b;
  const std::uint32_t x = b.input("x", {16, 64});
  const std::uint32_t y = b.layer("fc", "MatMul", {x, b.weight("w", {64, 128})}, {16, 128});
  Attributes axis;
  axis.ints["axis"] = {-1};
  b.g.outputs = {b.layer("softmax", "Softmax", {y}, {16, 128}, axis)};
  b.g.name = "fc_softmax";
  const Schedule s = compile_schedule(b.g, system_of(4, "ring"));
  const auto transfers = of_engine(s, EngineKind::kDevHdma);
  ASSERT_EQ(transfers.size(), 12u);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    EXPECT_EQ(transfers[i]->bytes, 1024u);
    EXPECT_EQ(transfers[i]->peer, (transfers[i]->device + 1) % 4);
    EXPECT_EQ(transfers[i]->layer, "collective.all_gather.fc.out.gathered");
  }
}

// An LLM with multi-head attention (4 KV heads, so they split 4 ways): 2 layers, hidden 256,
// head_dim 64, SwiGLU 512, vocab 1000, int8, prefill 16 tokens.
const char* kMha = R"({"format": "npusim-llm", "version": 1, "name": "mha", "layers": 2,
  "hidden": 256, "heads": 4, "kv_heads": 4, "intermediate": 512, "vocab": 1000,
  "prefill_tokens": 16, "decode_tokens": 1})";

TEST(Sharding, FourDeviceLlmMacsSumToTheSingleDeviceCount) {
  const LlmSpec spec = parse_llm_spec(parse_json_text(kMha, "mha.json"), "mha.json");
  // Per token and layer: q, k, v, o 4 x 256 x 256 = 262144, gate, up, down 3 x 256 x 512 =
  // 393216: 655360. Prefill: 2 layers x (16 x 655360 + Q.K and P.V 2 x 4 heads x 16 x 16 x 64
  // = 131072) + lm_head 256 x 1000 for the last token = 21233664 + 256000 = 21489664.
  ASSERT_EQ(llm_phase_macs(spec, 16, 16), 21489664u);
  std::uint64_t total = 0;
  std::map<std::uint32_t, std::uint64_t> per_device;
  const api::LlmPhasePlan plan =
      api::compile_llm_phase(spec, prefill_phase(spec), system_of(4, "ring"));
  for (const auto& part : plan.parts) {
    for (const auto& [device, macs] : macs_per_device(part.schedule)) {
      per_device[device] += macs * part.copies;
      total += macs * part.copies;
    }
  }
  EXPECT_EQ(total, 21489664u);
  // Every projection, attention head and the lm_head split: each device a quarter.
  ASSERT_EQ(per_device.size(), 4u);
  for (const auto& [device, macs] : per_device) EXPECT_EQ(macs, 21489664u / 4) << device;
  // A decoder layer: Megatron's two all-reduces, after o_proj and after down_proj.
  const shard::ShardedGraph layer = shard::shard_tensor_parallel(
      build_llm_graph(spec, prefill_phase(spec), LlmPart::kLayer), system_of(4, "ring"));
  std::vector<std::string> reduced;
  for (const auto& step : layer.steps) {
    for (const auto& c : step.collectives) {
      EXPECT_EQ(c.kind, shard::CollectiveKind::kAllReduce);
      reduced.push_back(layer.device.tensors[c.source].name);
    }
  }
  EXPECT_EQ(reduced.size(), 2u);
  EXPECT_TRUE(layer.replicated_layers.empty());
}

TEST(Sharding, BertLayerOnFourDevicesDoesTheSingleDeviceMacs) {
  // bert_base_layer: sequence 128, hidden 768, FFN 3072, 12 heads of 64. Per token: Q, K, V,
  // output 4 x 768 x 768 = 2359296 and the FFN 2 x 768 x 3072 = 4718592; 128 tokens:
  // 905969664. Attention: Q.K and P.V 2 x 12 x 128 x 128 x 64 = 25165824. Sum: 931135488.
  const HwConfig config = parse_hw_config("{}", "cfg", {"devices.count=4"});
  const Schedule s = api::load_or_compile(
      std::string(NPUSIM_SOURCE_DIR) + "/models/zoo/bert_base_layer.json", config, {});
  std::uint64_t total = 0;
  for (const auto& [device, macs] : macs_per_device(s)) {
    EXPECT_EQ(macs, 931135488u / 4) << device;
    total += macs;
  }
  EXPECT_EQ(total, 931135488u);
}

}  // namespace
}  // namespace npusim
