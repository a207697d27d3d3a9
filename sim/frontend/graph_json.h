// The graph JSON format ("format": "npusim-graph", docs/graph.md): a model written out as
// tensors and layers, for architectures with no ONNX file at hand (the model zoo).
#pragma once

#include <string>

#include "sim/ir/graph.h"
#include "sim/util/json_reader.h"

namespace npusim {

// Throws InputError listing every problem with the file and a JSON pointer.
Graph load_graph_json(const std::string& path);
Graph parse_graph_json(const Json& root, const std::string& origin);

}  // namespace npusim
