#include "sim/ir/schedule_writer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace npusim {
namespace {

// A JSON string literal, escaped as JSON requires.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

// Writes "key": value pairs of an object, skipping fields at their default value.
class Fields {
 public:
  explicit Fields(std::ostream& out) : out_(out) {}
  void add(const char* key, std::uint64_t value, std::uint64_t fallback) {
    if (value != fallback) raw(key, std::to_string(value));
  }
  void add(const char* key, std::uint64_t value) { raw(key, std::to_string(value)); }
  void raw(const char* key, const std::string& text) {
    out_ << (first_ ? "" : ", ") << '"' << key << "\": " << text;
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

void write_shape(std::ostream& out, const Command& c) {
  const OpInfo& op = op_table().at(c.op);
  out << '{';
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
  out << '}';
}

void write_tensors(std::ostream& out, const std::vector<TensorInfo>& tensors) {
  out << '[';
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    out << (i ? ", " : "") << "{\"name\": " << quoted(t.name) << ", \"dtype\": " << quoted(t.dtype)
        << ", \"layout\": " << quoted(t.layout) << ", \"shape\": [";
    for (std::size_t d = 0; d < t.shape.size(); ++d) out << (d ? ", " : "") << t.shape[d];
    out << "]}";
  }
  out << ']';
}

}  // namespace

void write_schedule_json(std::ostream& out, const Schedule& s) {
  // Version 2 adds devices; a schedule that uses none is written as version 1, as before.
  const bool devices = std::any_of(s.commands.begin(), s.commands.end(), [](const Command& c) {
    return c.device != 0 || is_multi_device(c.engine);
  });
  out << "{\n  \"format\": \"npusim-schedule\",\n  \"version\": " << (devices ? 2 : 1) << ",\n";
  out << "  \"model\": {\"name\": " << quoted(s.model.name) << ", \"batch\": " << s.model.batch
      << ", \"weights_bytes\": " << s.model.weights_bytes << ", \"inputs\": ";
  write_tensors(out, s.model.inputs);
  out << ", \"outputs\": ";
  write_tensors(out, s.model.outputs);
  out << "},\n";
  if (!s.target_config.empty() || s.target_slices != 0) {
    out << "  \"target\": {";
    Fields f(out);
    if (!s.target_config.empty()) f.raw("config", quoted(s.target_config));
    f.add("slices", s.target_slices, 0);
    out << "},\n";
  }
  out << "  \"programs\": [\n";
  for (std::size_t p = 0; p < s.programs.size(); ++p) {
    out << "    {\"name\": " << quoted(s.programs[p].name)
        << ", \"loc\": " << quoted(s.programs[p].loc) << '}'
        << (p + 1 < s.programs.size() ? "," : "") << '\n';
  }
  if (!s.layers.empty()) {
    // Each layer's untiled array GEMM, for reports that compare tiles with the whole layer.
    out << "  ],\n  \"layers\": [\n";
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      const LayerView& v = s.layers[l];
      out << "    {";
      Fields f(out);
      f.raw("name", quoted(v.name));
      if (v.on_array) {
        f.raw("gemm", "");
        out << '{';
        Fields g(out);
        g.add("batch", v.gemm.batch, 1);
        g.add("m", v.gemm.m);
        g.add("n", v.gemm.n);
        g.add("k", v.gemm.k);
        out << '}';
      }
      out << '}' << (l + 1 < s.layers.size() ? "," : "") << '\n';
    }
  }
  out << "  ],\n  \"commands\": [\n";
  for (std::size_t i = 0; i < s.commands.size(); ++i) {
    const Command& c = s.commands[i];
    out << "    {";
    Fields f(out);
    f.raw("id", quoted(c.id));
    f.raw("engine", quoted(schedule_engine_name(c.engine)));
    f.add("device", c.device, 0);
    if (c.engine == EngineKind::kSync) {
      std::string peers = "[";
      for (std::size_t p = 0; p < c.peers.size(); ++p) {
        peers += (p ? ", " : "") + std::to_string(c.peers[p]);
      }
      f.raw("peers", peers + "]");
    } else if (c.engine == EngineKind::kHost) {
      f.raw("op", quoted("Host"));
      out << ", \"shape\": {\"elements\": " << c.elements << '}';
    } else if (on_slice(c.engine)) {
      f.add("slice", c.slice);
      f.raw("op", quoted(std::string(op_table().at(c.op).name)));
      out << ", \"shape\": ";
      write_shape(out, c);
    } else {
      f.add("bytes", c.bytes);
      if (c.engine == EngineKind::kExtHdma)
        f.raw("direction", quoted(c.to_device ? "to_device" : "to_host"));
      if (c.engine == EngineKind::kDevHdma) f.add("peer", c.peer);
    }
    if (!c.deps.empty()) {
      std::string deps = "[";
      for (std::size_t d = 0; d < c.deps.size(); ++d) {
        deps += (d ? ", " : "") + quoted(s.commands[c.deps[d]].id);
      }
      f.raw("deps", deps + "]");
    }
    if (!c.layer.empty()) f.raw("layer", quoted(c.layer));
    if (!c.loc.empty()) f.raw("loc", quoted(c.loc));
    f.add("program", c.program, 0);
    if (!c.alloc.empty()) {
      std::string alloc = "[";
      for (std::size_t a = 0; a < c.alloc.size(); ++a) {
        alloc += std::string(a ? ", " : "") + "{\"buffer\": " + quoted(c.alloc[a].buffer) +
                 ", \"bytes\": " + std::to_string(c.alloc[a].bytes) + "}";
      }
      f.raw("alloc", alloc + "]");
    }
    if (!c.free.empty()) {
      std::string frees = "[";
      for (std::size_t a = 0; a < c.free.size(); ++a) frees += (a ? ", " : "") + quoted(c.free[a]);
      f.raw("free", frees + "]");
    }
    out << '}' << (i + 1 < s.commands.size() ? "," : "") << '\n';
  }
  out << "  ]\n}\n";
}

}  // namespace npusim
