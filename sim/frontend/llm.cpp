#include "sim/frontend/llm.h"

#include <optional>
#include <utility>

#include "sim/util/error.h"

namespace npusim {
namespace {

using Shape = std::vector<std::uint64_t>;

// Limits that keep every phase's graph and tensors far from overflow; the compiler's own limits
// (commands per layer, local memory) apply after these.
constexpr std::uint64_t kMaxLayers = 1024;
constexpr std::uint64_t kMaxWidth = std::uint64_t{1} << 20;  // hidden, intermediate, head_dim
constexpr std::uint64_t kMaxHeads = 4096;
constexpr std::uint64_t kMaxVocab = std::uint64_t{1} << 22;
constexpr std::uint64_t kMaxBatch = 4096;
constexpr std::uint64_t kMaxTokens = std::uint64_t{1} << 20;  // prefill + decode

// Builds a phase's graph: tensors and layers in order, with a loc naming the model layer.
class Builder {
 public:
  Builder(const LlmSpec& spec, const std::string& phase) : s_(spec) {
    g_.name = spec.name + "." + phase;
    g_.source_file = spec.source_file;
    g_.batch = spec.batch;
  }

  std::uint32_t tensor(const std::string& name, Shape shape, DType dtype, bool constant) {
    Tensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.constant = constant;
    g_.tensors.push_back(std::move(t));
    return static_cast<std::uint32_t>(g_.tensors.size() - 1);
  }
  std::uint32_t input(const std::string& name, Shape shape) {
    const std::uint32_t t = tensor(name, std::move(shape), s_.activation_dtype, false);
    g_.inputs.push_back(t);
    return t;
  }
  // A constant other than a projection's weights (norms, biases, tables).
  std::uint32_t weight(const std::string& name, Shape shape) {
    return tensor(name, std::move(shape), s_.constant_dtype(), true);
  }
  // One layer writing one new activation tensor named "<name>.out".
  std::uint32_t layer(const std::string& name, const std::string& op,
                      std::vector<std::uint32_t> inputs, Shape out_shape, Attributes attrs = {}) {
    const std::uint32_t out =
        tensor(name + ".out", std::move(out_shape), s_.activation_dtype, false);
    Layer l;
    l.name = name;
    l.op = op;
    l.inputs = std::move(inputs);
    l.outputs = {out};
    l.attrs = std::move(attrs);
    l.loc = "llm " + name;
    g_.layers.push_back(std::move(l));
    return out;
  }
  const Shape& shape(std::uint32_t t) const { return g_.tensors[t].shape; }
  void output(std::uint32_t t) { g_.outputs.push_back(t); }
  Graph take() { return std::move(g_); }

  // x [.., K] times a [K, n] weight (plus a bias), as the model's nn.Linear.
  std::uint32_t linear(const std::string& name, std::uint32_t x, std::uint64_t n,
                       bool has_bias = true) {
    Shape out = shape(x);
    const std::uint64_t k = out.back();
    out.back() = n;
    std::vector<std::uint32_t> in = {x, tensor(name + ".weight", {k, n}, s_.weight_dtype, true)};
    if (s_.bias && has_bias) in.push_back(weight(name + ".bias", {n}));
    return layer(name, "MatMul", std::move(in), out);
  }
  // RMSNorm is a LayerNorm without the mean and the bias: the same vector work per element.
  std::uint32_t norm(const std::string& name, std::uint32_t x) {
    std::vector<std::uint32_t> in = {x, weight(name + ".weight", {s_.hidden})};
    if (s_.norm == LlmNorm::kLayerNorm) in.push_back(weight(name + ".bias", {s_.hidden}));
    Attributes a;
    a.ints["axis"] = {-1};
    return layer(name, "LayerNorm", std::move(in), shape(x), a);
  }
  std::uint32_t binary(const std::string& name, const std::string& op, std::uint32_t a,
                       std::uint32_t b) {
    return layer(name, op, {a, b}, shape(a));
  }
  std::uint32_t view(const std::string& name, std::uint32_t x, Shape to) {
    return layer(name, "Reshape", {x}, std::move(to));
  }
  std::uint32_t transpose(const std::string& name, std::uint32_t x,
                          std::vector<std::int64_t> perm) {
    Shape out;
    for (std::int64_t p : perm) out.push_back(shape(x)[static_cast<std::size_t>(p)]);
    Attributes a;
    a.ints["perm"] = std::move(perm);
    return layer(name, "Transpose", {x}, out, a);
  }
  // Rotary embedding of x [B, T, heads, d]: x·cos + rotate_half(x)·sin, with the tables
  // [T, 1, d] (rotate_half is a permutation the vector unit applies as it reads).
  std::uint32_t rope(const std::string& name, std::uint32_t x, std::uint32_t cos,
                     std::uint32_t sin) {
    const std::uint32_t a = binary(name + ".cos", "Mul", x, cos);
    const std::uint32_t b = binary(name + ".sin", "Mul", x, sin);
    return binary(name, "Add", a, b);
  }

 private:
  const LlmSpec& s_;
  Graph g_;
};

// What one decoder layer attends with: the phase's token count and the shared constants.
struct Phase {
  std::uint64_t tokens = 0;  // new tokens per sequence
  std::uint64_t past = 0;    // cached positions before them (decode); 0 in the prefill
  std::uint32_t cos = 0, sin = 0;
  std::uint32_t scale = 0;
  std::optional<std::uint32_t> mask;  // causal mask [tokens, tokens] (prefill)
  bool prefill() const { return past == 0; }
};

// Attention of one layer: returns the context [B, T, heads·d] before the output projection.
std::uint32_t attention(Builder& b, const LlmSpec& s, const Phase& ph, const std::string& p,
                        std::uint32_t x) {
  const std::uint64_t B = s.batch, T = ph.tokens, H = s.heads, KV = s.kv_heads, d = s.head_dim;
  const std::uint64_t g = H / KV;  // query heads per KV head
  std::uint32_t q = b.view(p + "q_heads", b.linear(p + "q_proj", x, H * d), {B, T, H, d});
  std::uint32_t k = b.view(p + "k_heads", b.linear(p + "k_proj", x, KV * d), {B, T, KV, d});
  const std::uint32_t v = b.view(p + "v_heads", b.linear(p + "v_proj", x, KV * d), {B, T, KV, d});
  if (s.position == LlmPosition::kRope) {
    q = b.rope(p + "q_rope", q, ph.cos, ph.sin);
    k = b.rope(p + "k_rope", k, ph.cos, ph.sin);
  }
  std::uint32_t keys = 0, values = 0, queries = 0;
  if (ph.prefill()) {
    // The caches in the layouts attention reads: K as [B, KV, d, T] (a copy), V as [B, KV, T, d]
    // (a view, moves_no_data: V stays as v_proj stored it, [B, T, KV, d], and attention reads its
    // rows of d in head order). Queries of one KV group stack as rows: [B, KV, g·T, d].
    keys = b.transpose(p + "k_cache", k, {0, 2, 3, 1});
    values = b.transpose(p + "v_cache", v, {0, 2, 1, 3});
    b.output(keys);
    b.output(values);
    queries = g == 1 ? b.transpose(p + "q_t", q, {0, 2, 1, 3})
                     : b.view(p + "q_group",
                              b.transpose(p + "q_t", b.view(p + "q_split", q, {B, T, KV, g, d}),
                                          {0, 2, 3, 1, 4}),
                              {B, KV, g * T, d});
  } else {
    // One new position (T = 1): its K column and V row are views, appended to the cache in
    // place (Concat is a view), and written to DRAM as the step's outputs.
    const std::uint64_t n = ph.past + T;
    const std::uint32_t k_new = b.view(p + "k_new", k, {B, KV, d, T});
    const std::uint32_t v_new = b.view(p + "v_new", v, {B, KV, T, d});
    b.output(k_new);
    b.output(v_new);
    Attributes at3, at2;
    at3.ints["axis"] = {3};
    at2.ints["axis"] = {2};
    keys = b.layer(p + "k_append", "Concat", {b.input(p + "k_cache", {B, KV, d, ph.past}), k_new},
                   {B, KV, d, n}, at3);
    values = b.layer(p + "v_append", "Concat", {b.input(p + "v_cache", {B, KV, ph.past, d}), v_new},
                     {B, KV, n, d}, at2);
    queries = b.view(p + "q_group", q, {B, KV, g * T, d});
  }
  const std::uint64_t n = ph.past + T;
  std::uint32_t sc = b.layer(p + "scores", "MatMul", {queries, keys}, {B, KV, g * T, n});
  sc = b.binary(p + "scale", "Mul", sc, ph.scale);
  if (ph.mask && g == 1) {
    // [B, H, T, T] + [T, T]: the Add reads the scores as they are, so that the Softmax after it
    // can join it as one vector group (docs/compiler.md, "Groups and fusion").
    sc = b.binary(p + "causal_mask", "Add", sc, *ph.mask);
  } else if (ph.mask) {
    // [B, KV, g, T, T] + [T, T]: the same mask for every query head of a group.
    sc = b.view(p + "scores_split", sc, {B, KV, g, T, T});
    sc = b.view(p + "scores_rows", b.binary(p + "causal_mask", "Add", sc, *ph.mask),
                {B, KV, g * T, T});
  }
  Attributes axis;
  axis.ints["axis"] = {-1};
  const std::uint32_t probs = b.layer(p + "softmax", "Softmax", {sc}, b.shape(sc), axis);
  const std::uint32_t ctx = b.layer(p + "context", "MatMul", {probs, values}, {B, KV, g * T, d});
  if (T == 1) return b.view(p + "merge", ctx, {B, T, H * d});
  const std::uint32_t heads_first =
      g == 1 ? b.transpose(p + "context_t", ctx, {0, 2, 1, 3})
             : b.transpose(p + "context_t", b.view(p + "context_split", ctx, {B, KV, g, T, d}),
                           {0, 3, 1, 2, 4});
  return b.view(p + "merge", heads_first, {B, T, H * d});
}

std::uint32_t decoder_layer(Builder& b, const LlmSpec& s, const Phase& ph, std::uint64_t i,
                            std::uint32_t x) {
  const std::string p = "layers." + std::to_string(i) + ".";
  const std::uint32_t ctx = attention(b, s, ph, p + "self_attn.", b.norm(p + "input_norm", x));
  const std::uint32_t y =
      b.binary(p + "attn_residual", "Add", x, b.linear(p + "self_attn.o_proj", ctx, s.hidden));
  const std::uint32_t n = b.norm(p + "post_attention_norm", y);
  std::uint32_t h = 0;
  if (s.mlp == LlmMlp::kSwiGlu) {
    const std::uint32_t gate = b.linear(p + "mlp.gate_proj", n, s.intermediate);
    const std::uint32_t up = b.linear(p + "mlp.up_proj", n, s.intermediate);
    const std::uint32_t sig = b.layer(p + "mlp.silu_sigmoid", "Sigmoid", {gate}, b.shape(gate));
    const std::uint32_t silu = b.binary(p + "mlp.silu", "Mul", gate, sig);
    h = b.binary(p + "mlp.gate_up", "Mul", silu, up);
  } else {
    const std::uint32_t up = b.linear(p + "mlp.fc_in", n, s.intermediate);
    h = b.layer(p + "mlp.gelu", "Gelu", {up}, b.shape(up));
  }
  const std::uint32_t down =
      b.linear(p + (s.mlp == LlmMlp::kSwiGlu ? "mlp.down_proj" : "mlp.fc_out"), h, s.hidden);
  return b.binary(p + "mlp_residual", "Add", y, down);
}

// The graph input a part starts from: the embedded tokens, or the hidden state between parts.
std::uint32_t phase_input(Builder& b, const LlmSpec& s, const Phase& ph, LlmPart part) {
  const char* name = part == LlmPart::kWhole || part == LlmPart::kPrologue ? "embeddings"
                     : part == LlmPart::kLayer                             ? "layers.0.input"
                                                                           : "final_norm.input";
  return b.input(name, {s.batch, ph.tokens, s.hidden});
}

Graph build_phase(const LlmSpec& s, const LlmPhase& phase, LlmPart part) {
  Builder b(s, phase.name);
  Phase ph;
  ph.tokens = phase.tokens;
  ph.past = phase.past;
  const std::uint64_t B = s.batch, tokens = phase.tokens;
  std::uint32_t x = phase_input(b, s, ph, part);
  const bool whole = part == LlmPart::kWhole;
  if ((whole || part == LlmPart::kPrologue) && s.position == LlmPosition::kLearned) {
    x = b.binary("position_embedding", "Add", x, b.weight("position.weight", {tokens, s.hidden}));
  }
  if (whole || part == LlmPart::kLayer) {
    if (s.position == LlmPosition::kRope) {
      // The tables of the phase's positions, shared by every layer.
      ph.cos = b.weight("rope.cos", {tokens, 1, s.head_dim});
      ph.sin = b.weight("rope.sin", {tokens, 1, s.head_dim});
    }
    ph.scale = b.weight("attention.scale", {1});
    if (ph.prefill() && tokens > 1) ph.mask = b.weight("attention.causal_mask", {tokens, tokens});
    const std::uint64_t layers = whole ? s.layers : s.replay_layers;
    for (std::uint64_t i = 0; i < layers; ++i) x = decoder_layer(b, s, ph, i, x);
  }
  if (whole || part == LlmPart::kHead) {
    // Only the last position's logits are needed to pick the next token.
    if (tokens > 1) {
      Attributes a;
      a.ints["axes"] = {1};
      a.ints["starts"] = {static_cast<std::int64_t>(tokens - 1)};
      a.ints["ends"] = {static_cast<std::int64_t>(tokens)};
      x = b.layer("last_token", "Slice", {x}, {B, 1, s.hidden}, a);
    }
    x = b.linear("lm_head", b.norm("final_norm", x), s.vocab, /*has_bias=*/false);
  }
  b.output(x);
  Graph g = b.take();
  check_graph(g);
  return g;
}

std::uint64_t layer_linear_macs(const LlmSpec& s) {
  const std::uint64_t h = s.hidden, qd = s.heads * s.head_dim, kvd = s.kv_heads * s.head_dim;
  const std::uint64_t mlp = (s.mlp == LlmMlp::kSwiGlu ? 3 : 2) * h * s.intermediate;
  return h * qd + 2 * h * kvd + qd * h + mlp;
}

template <typename Enum>
Enum parse_choice(JsonObject& o, const std::string& key, const std::string& fallback,
                  const std::vector<std::pair<std::string, Enum>>& choices) {
  const std::string text = o.get_string(key, fallback);
  std::string names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names += (names.empty() ? "" : ", ") + name;
  }
  o.diagnostics().error(o.pointer(key), "expected one of " + names + ", found '" + text + "'");
  return choices.front().second;
}

// `int4`: whether int4 is allowed (the weights only).
DType parse_dtype_field(JsonObject& o, const std::string& key, const std::string& fallback,
                        bool int4) {
  const std::string text = o.get_string(key, fallback);
  const auto d = parse_dtype(text);
  const bool ok = d && (*d == DType::kInt8 || *d == DType::kFloat16 || *d == DType::kBFloat16 ||
                        *d == DType::kFloat32 || (int4 && *d == DType::kInt4));
  if (!ok) {
    o.diagnostics().error(o.pointer(key), std::string("expected ") + (int4 ? "int4, " : "") +
                                              "int8, float16, bfloat16 or float32, found '" + text +
                                              "'");
    return DType::kInt8;
  }
  return *d;
}

}  // namespace

LlmSpec parse_llm_spec(const Json& root, const std::string& origin) {
  Diagnostics diag(origin);
  LlmSpec s;
  s.source_file = origin;
  JsonObject top(root, "", diag);
  const std::string format = top.require_string("format").value_or("");
  if (top.has("format") && format != "npusim-llm") {
    diag.error("/format", "expected \"npusim-llm\", found \"" + format + "\"");
  }
  const auto version = top.require_uint("version", 0, 1000);
  if (version && *version != 1)
    diag.error("/version", "unsupported version " + std::to_string(*version));
  s.name = top.require_string("name").value_or("");
  top.get_string("description", "");  // free text, for people
  s.layers = top.require_uint("layers", 1, kMaxLayers).value_or(1);
  s.hidden = top.require_uint("hidden", 1, kMaxWidth).value_or(1);
  s.heads = top.require_uint("heads", 1, kMaxHeads).value_or(1);
  s.kv_heads = top.get_uint("kv_heads", s.heads, 1, kMaxHeads);
  s.head_dim = top.get_uint("head_dim", s.hidden / s.heads, 1, kMaxWidth);
  s.intermediate = top.require_uint("intermediate", 1, kMaxWidth).value_or(1);
  s.vocab = top.require_uint("vocab", 1, kMaxVocab).value_or(1);
  s.norm = parse_choice<LlmNorm>(
      top, "norm", "rmsnorm", {{"rmsnorm", LlmNorm::kRmsNorm}, {"layernorm", LlmNorm::kLayerNorm}});
  s.mlp = parse_choice<LlmMlp>(top, "mlp", "swiglu",
                               {{"swiglu", LlmMlp::kSwiGlu}, {"gelu", LlmMlp::kGelu}});
  s.position = parse_choice<LlmPosition>(
      top, "position", "rope", {{"rope", LlmPosition::kRope}, {"learned", LlmPosition::kLearned}});
  if (const Json* bias = top.get("bias")) {
    if (bias->is_boolean()) {
      s.bias = bias->get<bool>();
    } else {
      diag.error("/bias", "expected true or false");
    }
  }
  if (const Json* replay = top.get("replay")) {
    if (replay->is_boolean()) {
      s.replay = replay->get<bool>();
    } else {
      diag.error("/replay", "expected true or false");
    }
  }
  s.replay_layers = top.get_uint("replay_layers", 1, 1, kMaxLayers);
  s.weight_dtype = parse_dtype_field(top, "weight_dtype", "int8", /*int4=*/true);
  s.activation_dtype = parse_dtype_field(top, "activation_dtype", "int8", /*int4=*/false);
  s.batch = top.get_uint("batch", 1, 1, kMaxBatch);
  s.prefill_tokens = top.require_uint("prefill_tokens", 1, kMaxTokens).value_or(1);
  s.decode_tokens = top.get_uint("decode_tokens", 0, 0, kMaxTokens);
  top.finish();
  if (s.heads % s.kv_heads != 0) {
    diag.error("/kv_heads", "heads (" + std::to_string(s.heads) +
                                ") must be a multiple of kv_heads (" + std::to_string(s.kv_heads) +
                                ")");
  }
  if (!top.has("head_dim") && s.hidden % s.heads != 0) {
    diag.error("/heads", "hidden (" + std::to_string(s.hidden) + ") is not a multiple of heads (" +
                             std::to_string(s.heads) + "): give head_dim");
  }
  if (s.layers % s.replay_layers != 0) {
    diag.error("/replay_layers", "replay_layers (" + std::to_string(s.replay_layers) +
                                     ") must divide layers (" + std::to_string(s.layers) + ")");
  }
  if (s.prefill_tokens + s.decode_tokens > kMaxTokens) {
    diag.error("/decode_tokens", "prefill_tokens + decode_tokens exceed " +
                                     std::to_string(kMaxTokens) + " positions");
  }
  diag.throw_if_any();
  return s;
}

LlmSpec load_llm_spec(const std::string& path) {
  return parse_llm_spec(read_json_file(path), path);
}

LlmPhase prefill_phase(const LlmSpec& spec) { return {"prefill", spec.prefill_tokens, 0}; }

LlmPhase decode_phase(const LlmSpec& spec, std::uint64_t step) {
  return {"decode" + std::to_string(step), 1, spec.prefill_tokens + step};
}

bool llm_has_prologue(const LlmSpec& spec) { return spec.position == LlmPosition::kLearned; }

Graph build_llm_graph(const LlmSpec& spec, const LlmPhase& phase, LlmPart part) {
  return build_phase(spec, phase, part);
}

std::uint64_t llm_weight_elements(const LlmSpec& s) {
  const std::uint64_t norm = s.norm == LlmNorm::kLayerNorm ? 2 * s.hidden : s.hidden;
  std::uint64_t bias = 0;
  if (s.bias) {
    const std::uint64_t mlp_bias = (s.mlp == LlmMlp::kSwiGlu ? 2 : 1) * s.intermediate + s.hidden;
    bias = (s.heads + 2 * s.kv_heads) * s.head_dim + s.hidden + mlp_bias;
  }
  const std::uint64_t per_layer = layer_linear_macs(s) + 2 * norm + bias;
  return s.layers * per_layer + norm + s.hidden * s.vocab;
}

std::uint64_t llm_weight_bytes(const LlmSpec& s) {
  // Every projection's and the lm_head's weight is [k, n] with n * k even in any real model; an
  // odd one rounds up per tensor, which this sum does not: tests use even shapes.
  const std::uint64_t projections = s.layers * layer_linear_macs(s) + s.hidden * s.vocab;
  const std::uint64_t others = llm_weight_elements(s) - projections;
  return packed_bytes(s.weight_dtype, projections) + others * dtype_bytes(s.constant_dtype());
}

std::uint64_t llm_phase_macs(const LlmSpec& s, std::uint64_t tokens, std::uint64_t context) {
  // Per layer: the projections and MLP for each new token; Q·Kᵀ and P·V over every attended
  // position (the prefill computes the whole square, masked). Then the lm_head for one token.
  const std::uint64_t attention = 2 * s.heads * tokens * context * s.head_dim;
  return s.batch * (s.layers * (tokens * layer_linear_macs(s) + attention) + s.hidden * s.vocab);
}

}  // namespace npusim
