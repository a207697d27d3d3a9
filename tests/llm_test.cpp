// Language models (docs/llm.md): the spec's checks, MACs and DRAM bytes per phase against hand
// arithmetic, the figures (TTFT, TPOT percentiles), and replay against a full simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "profiler/llm_report.h"
#include "profiler/stats.h"
#include "sim/api/llm_run.h"
#include "sim/api/session.h"
#include "sim/api/simulate_child.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/llm.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

namespace fs = std::filesystem;

// Tiny: 2 layers, hidden 256, 4 query heads sharing 2 KV heads (head_dim 64), SwiGLU 512,
// vocab 1000, int8 throughout, batch 1, prefill 16 tokens.
const char* kTiny = R"({"format": "npusim-llm", "version": 1, "name": "tiny", "layers": 2,
  "hidden": 256, "heads": 4, "kv_heads": 2, "intermediate": 512, "vocab": 1000,
  "prefill_tokens": 16, "decode_tokens": 2})";

LlmSpec tiny() { return parse_llm_spec(parse_json_text(kTiny, "tiny.json"), "tiny.json"); }

class TempModel {
 public:
  explicit TempModel(const std::string& text)
      : path_(fs::temp_directory_path() / ("npusim_llm_" + std::to_string(::getpid()) + ".json")) {
    std::ofstream(path_) << text;
  }
  ~TempModel() { fs::remove(path_); }
  TempModel(const TempModel&) = delete;
  TempModel& operator=(const TempModel&) = delete;
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::uint64_t plan_macs(const api::LlmPhasePlan& plan) {
  std::uint64_t macs = 0;
  for (const auto& part : plan.parts) {
    for (const Command& c : part.schedule.commands) macs += c.macs * part.copies;
  }
  return macs;
}

// Per token, one layer's projections and MLP: q 256x256 = 65536, k and v 256x128 each = 65536,
// o 256x256 = 65536, gate, up and down 3 x 256x512 = 393216: 589824.
TEST(Llm, PhaseMacsEqualTheAnalyticCount) {
  const LlmSpec s = tiny();
  // Prefill: 2 layers x (16 tokens x 589824 + Q.K and P.V 2 x 4 heads x 16 x 16 x 64 = 131072)
  // + lm_head 256 x 1000 for the last token = 19136512 + 256000.
  EXPECT_EQ(llm_phase_macs(s, 16, 16), 19392512u);
  // Decode step 0 attends to 17 positions: 2 x (589824 + 2 x 4 x 17 x 64 = 8704) + 256000.
  EXPECT_EQ(llm_phase_macs(s, 1, 17), 1453056u);
  const HwConfig config = api::load_config("default", {});
  EXPECT_EQ(plan_macs(api::compile_llm_phase(s, prefill_phase(s), config)), 19392512u);
  EXPECT_EQ(plan_macs(api::compile_llm_phase(s, decode_phase(s, 0), config)), 1453056u);
  // Both layers in one replayed part: one copy of two layers, the same work.
  LlmSpec pair = s;
  pair.replay_layers = 2;
  const api::LlmPhasePlan pair_plan = api::compile_llm_phase(pair, prefill_phase(pair), config);
  EXPECT_EQ(plan_macs(pair_plan), 19392512u);
  EXPECT_EQ(plan_macs(api::compile_llm_phase(pair, decode_phase(pair, 0), config)), 1453056u);
  // Without replay the whole model is one schedule, with the same work.
  LlmSpec whole = s;
  whole.replay = false;
  EXPECT_EQ(plan_macs(api::compile_llm_phase(whole, decode_phase(whole, 1), config)),
            1453056u + 2 * 2 * 4 * 64);
}

// Llama-2-7B's layer on `server` (int8 weights, float16 activations, prefill 512): its MLP's
// down projection is a K-split MatMul whose tiles took the whole local memory, 8 slices x
// (512 x 512 x 2 = 524288 B of output + 2 steps of 512 x 688 x 2 + 688 x 512 = 1056768 B) =
// 21102592 B, while the attention's residual (512 x 4096 x 2 = 4194304 B) stayed resident for
// it: 25296896 B of the 25165824 (a bench run found it). Every part now fits.
TEST(Llm, Llama7bLayerFitsLocalMemoryOnServer) {
  LlmSpec s = load_llm_spec(std::string(NPUSIM_SOURCE_DIR) + "/models/llm/llama2_7b.json");
  s.layers = 1;
  const HwConfig config = api::load_config("server", {});
  const api::LlmPhasePlan plan = api::compile_llm_phase(s, prefill_phase(s), config);
  ASSERT_FALSE(plan.parts.empty());
  std::uint64_t peak = 0;
  for (const auto& part : plan.parts) {
    const profiler::RunStats stats = profiler::compute_stats(make_workload(part.schedule, config),
                                                             estimate(part.schedule, config));
    EXPECT_LE(stats.lram.peak_bytes, config.lram_bytes);
    EXPECT_FALSE(stats.lram.overflow.has_value());
    peak = std::max(peak, stats.lram.peak_bytes);
  }
  // The K-split tiles still take past the tiles' half: the case stays covered.
  EXPECT_GT(peak, config.lram_bytes / 2);
}

TEST(Llm, GroupedQueryAttentionAndGeluCount) {
  LlmSpec s = tiny();
  s.kv_heads = 1;
  s.mlp = LlmMlp::kGelu;
  // q 65536 + k, v 2 x 256x64 = 32768 + o 65536 + up and down 2 x 131072 = 425984 per token.
  EXPECT_EQ(llm_phase_macs(s, 1, 10), 2 * (425984 + 2 * 4 * 10 * 64) + 256000u);
}

// A decode step reads every weight once and the whole KV cache; what else it moves is the
// activations of one token.
TEST(Llm, DecodeStepReadsTheWeightsAndTheKvCache) {
  const LlmSpec s = tiny();
  // Weights (int8): 2 layers x (589824 + 2 RMSNorm x 256) + final norm 256 + lm_head 256000.
  EXPECT_EQ(llm_weight_elements(s), 1436928u);
  TempModel model(kTiny);
  api::RunRequest req;
  req.model = model.path();
  const api::Session session = api::Session::open(req);
  const api::Measured m = session.measure(true);
  ASSERT_TRUE(m.failure.empty()) << m.failure;
  ASSERT_TRUE(m.llm);
  ASSERT_EQ(m.llm->steps.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i) {
    const profiler::LlmStep& step = m.llm->steps[i];
    // KV cache before step t: 2 layers x (K and V) x 2 KV heads x 64 x (16 + t) bytes
    // = 512 x (16 + t).
    const std::uint64_t kv = std::uint64_t{512} * (16 + (i - 1));
    // RoPE tables for one position (2 x 64 = 128), the scale (1): constants too.
    const std::uint64_t floor = 1436928 + kv + std::uint64_t{128} + 1;
    EXPECT_GE(step.dram_read_bytes, floor) << i;
    // Activations of one token: at most a few dozen vectors of hidden or intermediate width
    // (64 x 512 = 32768 bytes).
    EXPECT_LE(step.dram_read_bytes, floor + std::uint64_t{32768}) << i;
    // The new K and V rows: 2 layers x 2 x 2 KV heads x 64 bytes, at least.
    EXPECT_GE(step.dram_write_bytes, 2u * 2 * 2 * 64) << i;
    EXPECT_EQ(step.macs, llm_phase_macs(s, 1, 17 + (i - 1))) << i;
    EXPECT_GE(*step.runtime_cycles, step.bounds.cycles(*step.bounds.binding())) << i;
  }
}

// int4 weight-only quantisation: the projections' and the lm_head's weights pack two to a byte,
// the norms and tables stay in the activation dtype (int8 here), the MACs do not change.
TEST(Llm, Int4WeightsHalveTheProjectionBytesOfADecodeStep) {
  std::string text = kTiny;
  text.insert(text.rfind('}'), R"(, "weight_dtype": "int4")");
  const LlmSpec s = parse_llm_spec(parse_json_text(text, "tiny4.json"), "tiny4.json");
  EXPECT_EQ(s.weight_dtype, DType::kInt4);
  EXPECT_EQ(s.constant_dtype(), DType::kInt8);
  // Projections 2 x 589824 + lm_head 256 x 1000 = 1435648 weights -> 717824 bytes; norms
  // 2 layers x 2 x 256 + final 256 = 1280 bytes at int8: 719104.
  EXPECT_EQ(llm_weight_bytes(s), 719104u);
  EXPECT_EQ(llm_weight_bytes(tiny()), 1436928u);  // int8: one byte each
  TempModel model(text);
  api::RunRequest req;
  req.model = model.path();
  const api::Measured m = api::Session::open(req).measure(true);
  ASSERT_TRUE(m.failure.empty()) << m.failure;
  ASSERT_TRUE(m.llm);
  ASSERT_EQ(m.llm->steps.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i) {
    const profiler::LlmStep& step = m.llm->steps[i];
    // As for int8 (DecodeStepReadsTheWeightsAndTheKvCache): KV 512 x (16 + t), the RoPE tables
    // 128 and the scale 1, activations within 32768 bytes.
    const std::uint64_t floor = 719104 + std::uint64_t{512} * (16 + (i - 1)) + 128 + 1;
    EXPECT_GE(step.dram_read_bytes, floor) << i;
    EXPECT_LE(step.dram_read_bytes, floor + std::uint64_t{32768}) << i;
    EXPECT_EQ(step.macs, llm_phase_macs(s, 1, 17 + (i - 1))) << i;
  }
  // Sharded over two devices, each reads its part of every int4 weight, still packed: the step
  // reads the same floor, plus what both devices read whole (the norms, 1280 bytes, and the
  // tables, 129) and two devices' activations; weights counted a byte each would add 717824.
  req.overrides = {"devices.count=2"};
  const api::Measured two = api::Session::open(req).measure(true);
  ASSERT_TRUE(two.failure.empty()) << two.failure;
  ASSERT_TRUE(two.llm);
  const std::uint64_t floor = 719104 + std::uint64_t{512} * 16 + 128 + 1;
  EXPECT_GE(two.llm->steps[1].dram_read_bytes, floor);
  EXPECT_LE(two.llm->steps[1].dram_read_bytes, floor + 1280 + 129 + 2 * std::uint64_t{32768});
  EXPECT_EQ(two.llm->steps[1].macs, llm_phase_macs(s, 1, 17));
}

// Replay is exact: the assembled schedule simulated whole gives every command the times the
// replay gives it (each layer starts on an idle NPU after a barrier).
void expect_replay_equals_full_simulation(const api::Session& session) {
  const api::Measured m = session.measure(true);
  ASSERT_TRUE(m.runtime);
  const profiler::Timeline full = api::simulate_in_child(session.schedule(), session.config());
  ASSERT_EQ(full.commands.size(), m.runtime->commands.size());
  for (std::size_t i = 0; i < full.commands.size(); ++i) {
    ASSERT_EQ(full.commands[i].start, m.runtime->commands[i].start) << i;
    ASSERT_EQ(full.commands[i].end, m.runtime->commands[i].end) << i;
  }
  EXPECT_EQ(full.dram.bursts, m.runtime->dram.bursts);
}

TEST(Llm, ReplayEqualsTheFullSimulation) {
  TempModel model(kTiny);
  api::RunRequest req;
  req.model = model.path();
  const api::Session session = api::Session::open(req);
  expect_replay_equals_full_simulation(session);
  // Layer 1's commands are named as layer 1's.
  bool layer1 = false;
  for (const Command& c : session.schedule().commands)
    layer1 |= c.layer.str().rfind("layers.1.", 0) == 0;
  EXPECT_TRUE(layer1);
}

// Parts of two decoder layers (replay_layers): 4 layers as two copies of layers 0 and 1, each
// copy named as its layers (copy 1 holds layers 2 and 3), and the replay still exact.
TEST(Llm, ReplayOfTwoLayerPartsEqualsTheFullSimulation) {
  std::string text = kTiny;
  text.replace(text.find("\"layers\": 2"), 11, "\"layers\": 4, \"replay_layers\": 2");
  TempModel model(text);
  api::RunRequest req;
  req.model = model.path();
  const api::Session session = api::Session::open(req);
  expect_replay_equals_full_simulation(session);
  std::set<std::string> layers;
  for (const Command& c : session.schedule().commands) {
    const std::string name = c.layer.str();
    if (name.rfind("layers.", 0) == 0) layers.insert(name.substr(0, name.find('.', 7)));
  }
  EXPECT_EQ(layers, (std::set<std::string>{"layers.0", "layers.1", "layers.2", "layers.3"}));
}

// The same on two devices: each part of the sharded phase starts and ends with a barrier
// across the devices, so replaying the layer's timeline is still exact.
TEST(Llm, ReplayOnTwoDevicesEqualsTheFullSimulation) {
  TempModel model(kTiny);
  api::RunRequest req;
  req.model = model.path();
  req.overrides = {"devices.count=2"};
  const api::Session session = api::Session::open(req);
  expect_replay_equals_full_simulation(session);
  std::set<std::uint32_t> devices;
  for (const Command& c : session.schedule().commands) devices.insert(c.device);
  EXPECT_EQ(devices, (std::set<std::uint32_t>{0, 1}));
}

TEST(Llm, FiguresFromSteps) {
  profiler::LlmRun run;
  run.batch = 2;
  profiler::LlmStep prefill;
  prefill.prefill = true;
  prefill.runtime_cycles = 800000;  // 1 ms at 800 MHz
  run.steps.push_back(prefill);
  // Decode steps of 0.1, 0.2, ..., 1.0 ms.
  for (int i = 1; i <= 10; ++i) {
    profiler::LlmStep s;
    s.runtime_cycles = 80000u * static_cast<unsigned>(i);
    s.dram_read_bytes = 1000;
    run.steps.push_back(s);
  }
  const profiler::LlmFigures f = profiler::llm_figures(run, profiler::Clock{800000});
  EXPECT_DOUBLE_EQ(f.ttft_ms, 1.0);
  EXPECT_NEAR(f.tpot_mean_ms, 0.55, 1e-12);  // (0.1 + ... + 1.0) / 10
  EXPECT_NEAR(f.tpot_p50_ms, 0.5, 1e-12);    // nearest rank: the 5th of 10
  EXPECT_NEAR(f.tpot_p99_ms, 1.0, 1e-12);    // the 10th
  EXPECT_NEAR(f.decode_tokens_per_s, 2 * 10 / 5.5e-3, 1e-6);
  EXPECT_NEAR(f.decode_dram_bytes_per_token, 500, 1e-12);  // 1000 B per step, 2 sequences
  EXPECT_NEAR(f.end_to_end_ms, 6.5, 1e-12);
}

TEST(Llm, BadSpecsNameTheField) {
  auto problems = [](const std::string& text) {
    try {
      parse_llm_spec(parse_json_text(text, "m.json"), "m.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string base = R"({"format": "npusim-llm", "version": 1, "name": "m", "layers": 2,
    "hidden": 256, "intermediate": 512, "vocab": 10, "prefill_tokens": 4, )";
  EXPECT_NE(problems(base + R"("heads": 4, "kv_heads": 3})").find("/kv_heads"), std::string::npos);
  EXPECT_NE(problems(base + R"("heads": 3})").find("/heads"), std::string::npos);
  EXPECT_NE(problems(base + R"("heads": 4, "mlp": "relu"})").find("/mlp"), std::string::npos);
  EXPECT_NE(problems(base + R"("heads": 4, "weight_dtype": "int2"})").find("/weight_dtype"),
            std::string::npos);
  // int4 is for weights only: activations and the KV cache are never packed.
  EXPECT_NE(problems(base + R"("heads": 4, "activation_dtype": "int4"})").find("/activation_dtype"),
            std::string::npos);
  EXPECT_EQ(problems(base + R"("heads": 4, "weight_dtype": "int4"})"), "");
  EXPECT_NE(problems(base + R"("heads": 4, "layers": 0})").find("/layers"), std::string::npos);
  // A part of 3 layers cannot replay a model of 2.
  EXPECT_NE(problems(base + R"("heads": 4, "replay_layers": 3})").find("/replay_layers"),
            std::string::npos);
  EXPECT_EQ(problems(base + R"("heads": 4, "replay_layers": 2})"), "");
  EXPECT_EQ(problems(base + R"("heads": 4})"), "");
}

}  // namespace
}  // namespace npusim
