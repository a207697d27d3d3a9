// What `--model` may name, and how each kind becomes a schedule: a compiled schedule (JSON with
// "format": "npusim-schedule") is used as it is; a graph JSON ("npusim-graph"), a SCALE-Sim
// topology (.csv) or an ONNX model (.onnx) is compiled for the config.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim::api {

enum class ModelKind { kSchedule, kGraphJson, kTopology, kOnnx, kLlm };
const char* model_kind_name(ModelKind kind);

struct ModelOptions {
  std::map<std::string, std::vector<std::uint64_t>> input_shapes;  // ONNX inputs
  bool host_fallback = false;
};

// Parses "name=1x3x224x224"; throws InputError naming the option on a malformed value.
void add_input_shape(ModelOptions& options, const std::string& text);

// By extension (.onnx, .csv) or, for .json, by its "format" field. Reads the whole file (as a
// stream, keeping nothing), so malformed JSON is reported here.
ModelKind detect_model_kind(const std::string& path);
// The same, reading a JSON file only up to a "format" that names a schedule or a graph: for a
// caller that loads the model next, whose loader reports malformed JSON further on alike.
ModelKind detect_model_kind_to_load(const std::string& path);

// The model as a graph; nullopt for a schedule, which has none. A language model's graph is its
// whole prefill; its decode steps are built per step by the run.
std::optional<Graph> load_graph(const std::string& path, ModelKind kind,
                                const ModelOptions& options);

// The model as a schedule for `config`: loaded, or compiled from its graph.
Schedule load_or_compile(const std::string& path, const HwConfig& config,
                         const ModelOptions& options);

}  // namespace npusim::api
