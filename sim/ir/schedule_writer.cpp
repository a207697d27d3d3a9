#include "sim/ir/schedule_writer.h"

#include <algorithm>
#include <string_view>

#include "profiler/json_writer.h"
#include "profiler/text_out.h"

namespace npusim {
namespace {

using profiler::TextOut;

// A JSON string literal, escaped as nlohmann::json::dump() escapes it (profiler/json_writer.h).
void quoted(TextOut& out, std::string_view text) { profiler::put_json_string(out, text); }

// Writes "key": value pairs of an object, skipping fields at their default value.
class Fields {
 public:
  explicit Fields(TextOut& out) : out_(out) {}
  void add(const char* key, std::uint64_t value, std::uint64_t fallback) {
    if (value != fallback) add(key, value);
  }
  void add(const char* key, std::uint64_t value) { key_of(key).num(value); }
  void add_string(const char* key, std::string_view text) { quoted(key_of(key), text); }
  // Starts the field and leaves its value to the caller.
  TextOut& key_of(const char* key) {
    out_.put(first_ ? "\"" : ", \"").put(key).put("\": ");
    first_ = false;
    return out_;
  }

 private:
  TextOut& out_;
  bool first_ = true;
};

void write_shape(TextOut& out, const Command& c) {
  const OpInfo& op = op_table().at(c.op);
  out.put('{');
  Fields f(out);
  if (const auto* g = std::get_if<GemmShape>(&c.shape)) {
    f.add("batch", g->batch, 1);
    f.add("m", g->m);
    f.add("n", g->n);
    f.add("k", g->k);
  } else if (const auto* v = std::get_if<ConvShape>(&c.shape)) {
    f.add("batch", v->batch, 1);
    f.add("in_h", v->in_h);
    f.add("in_w", v->in_w);
    if (op.shape == ShapeKind::kConv) {
      f.add("in_c", v->in_c);
      f.add("out_c", v->out_c);
    } else {
      f.add("channels", v->in_c);
    }
    if (op.shape != ShapeKind::kGlobalPool) {
      f.add("kernel_h", v->kernel_h);
      f.add("kernel_w", v->kernel_w);
      f.add("stride_h", v->stride_h, 1);
      f.add("stride_w", v->stride_w, 1);
      f.add("pad_h", v->pad_h, 0);
      f.add("pad_w", v->pad_w, 0);
    }
    if (op.shape == ShapeKind::kConv && op.unit == EngineKind::kArray)
      f.add("groups", v->groups, 1);
  } else if (const auto* e = std::get_if<ElementsShape>(&c.shape)) {
    f.add("elements", e->elements);
  }
  out.put('}');
}

void write_tensors(TextOut& out, const std::vector<TensorInfo>& tensors) {
  out.put('[');
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    out.put(i ? ", " : "").put("{\"name\": ");
    quoted(out, t.name);
    out.put(", \"dtype\": ");
    quoted(out, t.dtype);
    out.put(", \"layout\": ");
    quoted(out, t.layout);
    out.put(", \"shape\": [");
    for (std::size_t d = 0; d < t.shape.size(); ++d) out.put(d ? ", " : "").num(t.shape[d]);
    out.put("]}");
  }
  out.put(']');
}

void write_command(TextOut& out, const Schedule& s, const Command& c) {
  out.put("    {");
  Fields f(out);
  f.add_string("id", c.id);
  f.add_string("engine", schedule_engine_name(c.engine));
  f.add("device", c.device, 0);
  if (c.engine == EngineKind::kSync) {
    f.key_of("peers").put('[');
    for (std::size_t p = 0; p < c.peers.size(); ++p) out.put(p ? ", " : "").num(c.peers[p]);
    out.put(']');
  } else if (c.engine == EngineKind::kHost) {
    f.add_string("op", "Host");
    out.put(", \"shape\": {\"elements\": ").num(c.elements).put('}');
  } else if (on_slice(c.engine)) {
    f.add("slice", c.slice);
    f.add_string("op", op_table().at(c.op).name);
    out.put(", \"shape\": ");
    write_shape(out, c);
  } else {
    f.add("bytes", c.bytes);
    if (c.engine == EngineKind::kExtHdma) {
      f.add_string("direction", c.to_device ? "to_device" : "to_host");
    }
    if (c.engine == EngineKind::kDevHdma) f.add("peer", c.peer);
  }
  if (!c.deps.empty()) {
    f.key_of("deps").put('[');
    for (std::size_t d = 0; d < c.deps.size(); ++d) {
      out.put(d ? ", " : "");
      quoted(out, s.commands[c.deps[d]].id);
    }
    out.put(']');
  }
  if (!c.layer.empty()) f.add_string("layer", c.layer.str());
  if (!c.loc.empty()) f.add_string("loc", c.loc.str());
  f.add("program", c.program, 0);
  if (!c.alloc.empty()) {
    f.key_of("alloc").put('[');
    for (std::size_t a = 0; a < c.alloc.size(); ++a) {
      out.put(a ? ", " : "").put("{\"buffer\": ");
      quoted(out, c.alloc[a].buffer);
      out.put(", \"bytes\": ").num(c.alloc[a].bytes).put('}');
    }
    out.put(']');
  }
  if (!c.free.empty()) {
    f.key_of("free").put('[');
    for (std::size_t a = 0; a < c.free.size(); ++a) {
      out.put(a ? ", " : "");
      quoted(out, c.free[a]);
    }
    out.put(']');
  }
  out.put('}');
}

}  // namespace

void write_schedule_json(std::ostream& stream, const Schedule& s) {
  TextOut out(stream);
  // Version 2 adds devices; a schedule that uses none is written as version 1, as before.
  const bool devices = std::any_of(s.commands.begin(), s.commands.end(), [](const Command& c) {
    return c.device != 0 || is_multi_device(c.engine);
  });
  out.put("{\n  \"format\": \"npusim-schedule\",\n  \"version\": ").num(devices ? 2 : 1);
  out.put(",\n  \"model\": {\"name\": ");
  quoted(out, s.model.name);
  out.put(", \"batch\": ").num(s.model.batch);
  out.put(", \"weights_bytes\": ").num(s.model.weights_bytes).put(", \"inputs\": ");
  write_tensors(out, s.model.inputs);
  out.put(", \"outputs\": ");
  write_tensors(out, s.model.outputs);
  out.put("},\n");
  if (!s.target_config.empty() || s.target_slices != 0) {
    out.put("  \"target\": {");
    Fields f(out);
    if (!s.target_config.empty()) f.add_string("config", s.target_config);
    f.add("slices", s.target_slices, 0);
    out.put("},\n");
  }
  out.put("  \"programs\": [\n");
  for (std::size_t p = 0; p < s.programs.size(); ++p) {
    out.put("    {\"name\": ");
    quoted(out, s.programs[p].name);
    out.put(", \"loc\": ");
    quoted(out, s.programs[p].loc);
    out.put('}').put(p + 1 < s.programs.size() ? "," : "").put('\n');
  }
  if (!s.layers.empty()) {
    // Each layer's untiled array GEMM, for reports that compare tiles with the whole layer.
    out.put("  ],\n  \"layers\": [\n");
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      const LayerView& v = s.layers[l];
      out.put("    {");
      Fields f(out);
      f.add_string("name", v.name);
      if (v.on_array) {
        f.key_of("gemm").put('{');
        Fields g(out);
        g.add("batch", v.gemm.batch, 1);
        g.add("m", v.gemm.m);
        g.add("n", v.gemm.n);
        g.add("k", v.gemm.k);
        out.put('}');
      }
      out.put('}').put(l + 1 < s.layers.size() ? "," : "").put('\n');
    }
  }
  out.put("  ],\n  \"commands\": [\n");
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    write_command(out, s, s.commands[i]);
    out.put(i + 1 < s.commands.size() ? "," : "").put('\n');
  }
  out.put("  ]\n}\n");
}

}  // namespace npusim
