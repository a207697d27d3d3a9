// Decoder-only language models ("format": "npusim-llm", docs/llm.md): a model described by its
// hyperparameters (layers, hidden size, heads, ...) and a scenario (batch, prefill tokens, decode
// tokens). The front-end builds one graph per phase: the prefill of all prompt tokens, and each
// decode step, whose attention reads the KV cache of every earlier position and appends one.
#pragma once

#include <cstdint>
#include <string>

#include "sim/ir/graph.h"
#include "sim/util/json_reader.h"

namespace npusim {

enum class LlmNorm : std::uint8_t { kRmsNorm, kLayerNorm };
enum class LlmMlp : std::uint8_t { kSwiGlu, kGelu };
enum class LlmPosition : std::uint8_t { kRope, kLearned };

struct LlmSpec {
  std::string name;
  std::string source_file;
  std::uint64_t layers = 0;
  std::uint64_t hidden = 0;
  std::uint64_t heads = 0;
  std::uint64_t kv_heads = 0;  // < heads: grouped-query attention
  std::uint64_t head_dim = 0;  // hidden / heads unless given
  std::uint64_t intermediate = 0;
  std::uint64_t vocab = 0;
  LlmNorm norm = LlmNorm::kRmsNorm;
  LlmMlp mlp = LlmMlp::kSwiGlu;
  LlmPosition position = LlmPosition::kRope;
  bool bias = false;  // projections and MLP have biases (GPT-2)
  // The projections' and the lm_head's weights. int8 and int4 are weight-only quantisation:
  // with int4 the other constants (norms, biases, tables) take the activation dtype, as GPTQ
  // and AWQ checkpoints keep them.
  DType weight_dtype = DType::kInt8;
  DType activation_dtype = DType::kInt8;  // also the KV cache's
  // The dtype of the constants that are not projection weights.
  DType constant_dtype() const {
    return weight_dtype == DType::kInt4 ? activation_dtype : weight_dtype;
  }
  // Compile and simulate one decoder layer per phase and replay it (docs/llm.md); false: the
  // whole model as one schedule.
  bool replay = true;
  // Decoder layers per replayed part (docs/llm.md, "Replay"): the layers of one part are compiled
  // and simulated together, so a barrier stands only every `replay_layers` layers. Divides layers.
  std::uint64_t replay_layers = 1;
  // The scenario.
  std::uint64_t batch = 1;
  std::uint64_t prefill_tokens = 0;
  std::uint64_t decode_tokens = 0;
};

// Throws InputError listing every problem with the file and a JSON pointer.
LlmSpec load_llm_spec(const std::string& path);
LlmSpec parse_llm_spec(const Json& root, const std::string& origin);

// A phase: `tokens` new tokens per sequence after `past` cached positions. The prefill has
// tokens = prefill_tokens and past 0; decode step t has 1 token after prefill_tokens + t.
struct LlmPhase {
  std::string name;  // "prefill", "decode0", ...
  std::uint64_t tokens = 0;
  std::uint64_t past = 0;
};
LlmPhase prefill_phase(const LlmSpec& spec);
LlmPhase decode_phase(const LlmSpec& spec, std::uint64_t step);

// Which part of a phase a graph holds. kWhole is the model: the learned position embedding (if
// any), every decoder layer, then the head (the final norm and the lm_head, for the last token
// of each sequence). The parts cut it where the layers meet, for replay (docs/llm.md): the
// prologue (only with learned positions), decoder layers 0 to replay_layers - 1, and the head.
enum class LlmPart : std::uint8_t { kWhole, kPrologue, kLayer, kHead };
bool llm_has_prologue(const LlmSpec& spec);
// In the prefill every layer writes its K and V caches; in a decode step it reads them and
// appends one position in place. Throws InputError if the graph breaks a graph check.
Graph build_llm_graph(const LlmSpec& spec, const LlmPhase& phase, LlmPart part);

// Analytic counts (docs/llm.md), for tests and for people checking a run.
std::uint64_t llm_weight_elements(const LlmSpec& spec);  // every weight the phases read
// Their bytes: the projections' and the lm_head's in weight_dtype (int4 packed two to a byte),
// the norms' and biases' in constant_dtype().
std::uint64_t llm_weight_bytes(const LlmSpec& spec);
// MACs of a phase with `tokens` new tokens per sequence attending to `context` positions each
// (the prefill: tokens = context = prefill_tokens; decode step t: tokens 1, context
// prefill_tokens + t + 1).
std::uint64_t llm_phase_macs(const LlmSpec& spec, std::uint64_t tokens, std::uint64_t context);

}  // namespace npusim
