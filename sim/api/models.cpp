#include "sim/api/models.h"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "profiler/input_file.h"
#include "sim/api/llm_run.h"
#include "sim/compiler/compiler.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/llm.h"
#include "sim/frontend/onnx_import.h"
#include "sim/frontend/scalesim.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/json_stream.h"

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
    case ModelKind::kLlm:
      return "language model";
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

namespace {

// Finds a JSON file's top-level "format" (the last one, if repeated), keeping nothing else. With
// stop_at_known, it stops as soon as one names a schedule or a graph; a file with no such format
// is read to the end, so that malformed JSON is reported as such.
class FormatSniffer final : public JsonSaxHandler {
 public:
  explicit FormatSniffer(bool stop_at_known) : stop_at_known_(stop_at_known) {}
  const std::string& format() const { return format_; }

  bool null() override { return scalar(); }
  bool boolean(bool /*v*/) override { return scalar(); }
  bool number_integer(number_integer_t /*v*/) override { return scalar(); }
  bool number_unsigned(number_unsigned_t /*v*/) override { return scalar(); }
  bool number_float(number_float_t /*v*/, const string_t& /*text*/) override { return scalar(); }
  bool string(string_t& v) override {
    if (!at_format()) return true;
    format_ = v;
    format_key_ = false;
    return !stop_at_known_ ||
           (format_ != "npusim-schedule" && format_ != "npusim-graph" && format_ != "npusim-llm");
  }
  bool start_object(std::size_t /*size*/) override { return container(); }
  bool start_array(std::size_t /*size*/) override {
    if (depth() == 0) root_is_object_ = false;
    return container();
  }
  bool key(string_t& k) override {
    format_key_ = root_is_object_ && depth() == 1 && k == "format";
    return true;
  }
  bool end_object() override {
    leave();
    return true;
  }
  bool end_array() override {
    leave();
    return true;
  }

 private:
  bool at_format() const { return format_key_ && depth() == 1; }
  bool scalar() {
    if (at_format()) format_.clear();  // not a string: no format, as a later key may still give
    format_key_ = false;
    return true;
  }
  bool container() {
    scalar();
    return enter();
  }
  bool stop_at_known_;
  std::string format_;
  bool format_key_ = false;
  bool root_is_object_ = true;
};

ModelKind model_kind(const std::string& path, bool stop_at_known) {
  // Checked here too, before any loader opens the file, whichever way the loader reads it.
  if (const auto problem = profiler::input_file_problem(path)) throw InputError(path, "", *problem);
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") return ModelKind::kOnnx;
  if (ext == ".csv") return ModelKind::kTopology;
  FormatSniffer sniffer(stop_at_known);
  sax_parse_json_file(path, sniffer);
  const std::string& format = sniffer.format();
  if (format == "npusim-schedule") return ModelKind::kSchedule;
  if (format == "npusim-graph") return ModelKind::kGraphJson;
  if (format == "npusim-llm") return ModelKind::kLlm;
  throw InputError(path, "/format",
                   "not a model npusim reads: expected \"npusim-schedule\", \"npusim-graph\" or "
                   "\"npusim-llm\" JSON, "
                   "a SCALE-Sim topology (.csv) or an ONNX model (.onnx)");
}

}  // namespace

ModelKind detect_model_kind(const std::string& path) { return model_kind(path, false); }

ModelKind detect_model_kind_to_load(const std::string& path) { return model_kind(path, true); }

std::optional<Graph> load_graph(const std::string& path, ModelKind kind,
                                const ModelOptions& options) {
  switch (kind) {
    case ModelKind::kSchedule:
      return std::nullopt;
    case ModelKind::kGraphJson:
      return load_graph_json(path);
    case ModelKind::kTopology:
      return load_scalesim_topology(path);
    case ModelKind::kLlm: {
      const LlmSpec spec = load_llm_spec(path);
      return build_llm_graph(spec, prefill_phase(spec), LlmPart::kWhole);
    }
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
  const ModelKind kind = detect_model_kind_to_load(path);
  if (kind == ModelKind::kSchedule) return load_schedule(path, config);
  if (kind == ModelKind::kLlm) {
    const LlmSpec spec = load_llm_spec(path);
    return assemble_llm_phase(compile_llm_phase(spec, prefill_phase(spec), config));
  }
  const Graph graph = *load_graph(path, kind, options);
  spdlog::info("{}: {} with {} layers, compiling for '{}'", path, model_kind_name(kind),
               graph.layers.size(), config.name);
  return compile_schedule(graph, config);
}

}  // namespace npusim::api
