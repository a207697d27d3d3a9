#include "sim/frontend/graph_json.h"

#include <filesystem>
#include <unordered_map>

#include "profiler/input_file.h"

namespace npusim {
namespace {

std::vector<std::uint64_t> parse_dims(const Json& value, const std::string& pointer,
                                      Diagnostics& diag) {
  std::vector<std::uint64_t> dims;
  if (!value.is_array()) {
    diag.error(pointer, "expected an array of dimensions");
    return dims;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto d = json_uint(value[i]);
    if (!d || *d == 0 || *d > (std::uint64_t{1} << 32)) {
      diag.error(pointer + "/" + std::to_string(i),
                 "expected a dimension in [1, 2^32], found " + value[i].dump());
      continue;
    }
    dims.push_back(*d);
  }
  return dims;
}

Attributes parse_attrs(const Json& value, const std::string& pointer, Diagnostics& diag) {
  Attributes attrs;
  if (!value.is_object()) {
    diag.error(pointer, "expected an object of attributes");
    return attrs;
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string ptr = pointer + "/" + pointer_token(it.key());
    const Json& v = it.value();
    if (v.is_number_integer()) {
      attrs.ints[it.key()] = {v.get<std::int64_t>()};
    } else if (v.is_number_float()) {
      attrs.floats[it.key()] = v.get<double>();
    } else if (v.is_string()) {
      attrs.strings[it.key()] = v.get<std::string>();
    } else if (v.is_array()) {
      std::vector<std::int64_t> ints;
      for (const Json& e : v) {
        if (!e.is_number_integer()) {
          diag.error(ptr, "an attribute list holds integers only");
          break;
        }
        ints.push_back(e.get<std::int64_t>());
      }
      attrs.ints[it.key()] = ints;
    } else {
      diag.error(ptr, std::string("unsupported attribute type ") + v.type_name());
    }
  }
  return attrs;
}

}  // namespace

Graph parse_graph_json(const Json& root, const std::string& origin) {
  Diagnostics diag(origin);
  Graph g;
  g.source_file = origin;
  JsonObject top(root, "", diag);
  const std::string format = top.require_string("format").value_or("");
  if (top.has("format") && format != "npusim-graph") {
    diag.error("/format", "expected \"npusim-graph\", found \"" + format + "\"");
  }
  const auto version = top.require_uint("version", 0, 1000);
  if (version && *version != 1)
    diag.error("/version", "unsupported version " + std::to_string(*version));
  g.name = top.require_string("name").value_or("");
  g.batch = top.get_uint("batch", 1, 1, std::uint64_t{1} << 32);
  top.get_string("description", "");  // free text, for people

  std::unordered_map<std::string, std::uint32_t> by_name;
  const Json& tensors = top.get_array("tensors", true);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    JsonObject t(tensors[i], "/tensors/" + std::to_string(i), diag);
    Tensor tensor;
    tensor.name = t.require_string("name").value_or("");
    const std::string dtype = t.get_string("dtype", "int8");
    if (const auto d = parse_dtype(dtype)) {
      tensor.dtype = *d;
    } else {
      diag.error(t.pointer("dtype"), "unknown dtype '" + dtype + "'");
    }
    if (const Json* shape = t.get("shape")) {
      tensor.shape = parse_dims(*shape, t.pointer("shape"), diag);
    } else {
      diag.error(t.pointer("shape"), "missing required field");
    }
    tensor.layout = t.get_string("layout", "");
    if (const Json* c = t.get("constant")) {
      if (!c->is_boolean()) {
        diag.error(t.pointer("constant"), "expected true or false");
      } else {
        tensor.constant = c->get<bool>();
      }
    }
    t.finish();
    if (!by_name.emplace(tensor.name, static_cast<std::uint32_t>(g.tensors.size())).second) {
      diag.error("/tensors/" + std::to_string(i) + "/name",
                 "duplicate tensor '" + tensor.name + "'");
    }
    g.tensors.push_back(std::move(tensor));
  }

  auto resolve = [&](const Json& list, const std::string& pointer) {
    std::vector<std::uint32_t> ids;
    if (!list.is_array()) {
      diag.error(pointer, "expected an array of tensor names");
      return ids;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string ptr = pointer + "/" + std::to_string(i);
      if (!list[i].is_string()) {
        diag.error(ptr, "expected a tensor name");
        continue;
      }
      auto it = by_name.find(list[i].get<std::string>());
      if (it == by_name.end()) {
        diag.error(ptr, "unknown tensor '" + list[i].get<std::string>() + "'");
        continue;
      }
      ids.push_back(it->second);
    }
    return ids;
  };
  g.inputs = resolve(top.get_array("inputs", true), "/inputs");
  g.outputs = resolve(top.get_array("outputs", true), "/outputs");

  const Json& layers = top.get_array("layers", true);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string ptr = "/layers/" + std::to_string(i);
    JsonObject l(layers[i], ptr, diag);
    Layer layer;
    layer.name = l.require_string("name").value_or("");
    layer.op = l.require_string("op").value_or("");
    if (l.has("op") && classify_op(layer.op) == OpClass::kUnknown) {
      diag.error(l.pointer("op"), "unknown graph op '" + layer.op + "' (docs/graph.md lists them)");
    }
    layer.inputs = resolve(l.get_array("inputs", true), l.pointer("inputs"));
    layer.outputs = resolve(l.get_array("outputs", true), l.pointer("outputs"));
    if (const Json* a = l.get("attrs")) layer.attrs = parse_attrs(*a, l.pointer("attrs"), diag);
    layer.loc = l.get_string("loc", "loc(\"" +
                                        profiler::escape_invalid_utf8(
                                            std::filesystem::path(origin).filename().string()) +
                                        "\":" + ptr + ")");
    l.finish();
    g.layers.push_back(std::move(layer));
  }
  top.finish();
  diag.throw_if_any();
  check_graph(g);
  return g;
}

Graph load_graph_json(const std::string& path) {
  return parse_graph_json(read_json_file(path), path);
}

}  // namespace npusim
