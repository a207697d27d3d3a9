#include "sim/api/models.h"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "profiler/input_file.h"
#include "sim/compiler/compiler.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/onnx_import.h"
#include "sim/frontend/scalesim.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim::api {

const char* model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::kSchedule:
      return "schedule";
    case ModelKind::kGraphJson:
      return "graph JSON";
    case ModelKind::kTopology:
      return "SCALE-Sim topology";
    case ModelKind::kOnnx:
      return "ONNX";
  }
  return "?";
}

void add_input_shape(ModelOptions& options, const std::string& text) {
  const auto eq = text.rfind('=');
  const std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
  std::vector<std::uint64_t> dims;
  std::string rest = eq == std::string::npos ? "" : text.substr(eq + 1);
  std::size_t from = 0;
  bool ok = !name.empty() && !rest.empty();
  while (ok && from <= rest.size()) {
    const auto x = rest.find('x', from);
    const std::string part =
        rest.substr(from, x == std::string::npos ? std::string::npos : x - from);
    ok = !part.empty() && part.size() <= 10 &&
         part.find_first_not_of("0123456789") == std::string::npos && std::stoull(part) > 0;
    if (ok) dims.push_back(std::stoull(part));
    if (x == std::string::npos) break;
    from = x + 1;
  }
  if (!ok) {
    throw InputError("--input-shape " + text, "",
                     "expected NAME=DxDx... with positive dimensions, e.g. input=1x3x224x224");
  }
  options.input_shapes[name] = dims;
}

ModelKind detect_model_kind(const std::string& path) {
  // Checked here too, before any loader opens the file, whichever way the loader reads it.
  if (const auto problem = profiler::input_file_problem(path)) throw InputError(path, "", *problem);
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") return ModelKind::kOnnx;
  if (ext == ".csv") return ModelKind::kTopology;
  const Json root = read_json_file(path);
  const std::string format =
      root.is_object() && root.contains("format") && root["format"].is_string()
          ? root["format"].get<std::string>()
          : "";
  if (format == "npusim-schedule") return ModelKind::kSchedule;
  if (format == "npusim-graph") return ModelKind::kGraphJson;
  throw InputError(
      path, "/format",
      "not a model npusim reads: expected \"npusim-schedule\" or \"npusim-graph\" JSON, "
      "a SCALE-Sim topology (.csv) or an ONNX model (.onnx)");
}

std::optional<Graph> load_graph(const std::string& path, ModelKind kind,
                                const ModelOptions& options) {
  switch (kind) {
    case ModelKind::kSchedule:
      return std::nullopt;
    case ModelKind::kGraphJson:
      return load_graph_json(path);
    case ModelKind::kTopology:
      return load_scalesim_topology(path);
    case ModelKind::kOnnx: {
      OnnxImportOptions onnx;
      onnx.input_shapes = options.input_shapes;
      onnx.host_fallback = options.host_fallback;
      std::vector<std::string> notes;
      Graph g = import_onnx(path, onnx, &notes);
      for (const std::string& note : notes) spdlog::warn("{}: {}", path, note);
      return g;
    }
  }
  return std::nullopt;
}

Schedule load_or_compile(const std::string& path, const HwConfig& config,
                         const ModelOptions& options) {
  const ModelKind kind = detect_model_kind(path);
  if (kind == ModelKind::kSchedule) return load_schedule(path, config);
  const Graph graph = *load_graph(path, kind, options);
  spdlog::info("{}: {} with {} layers, compiling for '{}'", path, model_kind_name(kind),
               graph.layers.size(), config.name);
  return compile_schedule(graph, config);
}

}  // namespace npusim::api
