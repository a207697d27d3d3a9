#include "sim/frontend/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <queue>
#include <set>

#include "profiler/input_file.h"
#include "sim/compiler/passes/fold_dequantize.h"
#include "sim/compiler/passes/fuse_layer_norm_gelu.h"
#include "sim/frontend/onnx_infer.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

using onnx_detail::attr_float;
using onnx_detail::attr_int;
using onnx_detail::attr_ints;
using onnx_detail::attr_string;
using onnx_detail::Data;
using onnx_detail::Dims;
using onnx_detail::dims_text;
using onnx_detail::elem_type_name;
using onnx_detail::find_attr;
using onnx_detail::normalize_axis;
using onnx_detail::OpError;
using onnx_detail::Value;
using TP = onnx::TensorProto;

std::optional<DType> to_dtype(int type) {
  switch (type) {
    case TP::FLOAT:
      return DType::kFloat32;
    case TP::UINT8:
      return DType::kUInt8;
    case TP::INT8:
      return DType::kInt8;
    case TP::INT16:
    case TP::UINT16:
      return DType::kInt16;
    case TP::INT32:
    case TP::UINT32:
      return DType::kInt32;
    case TP::INT64:
    case TP::UINT64:
      return DType::kInt64;
    case TP::FLOAT16:
      return DType::kFloat16;
    case TP::BFLOAT16:
      return DType::kBFloat16;
    case TP::BOOL:
      return DType::kBool;
    default:
      return std::nullopt;
  }
}

// ONNX ops that become layers when their inputs are not all constants. Everything else that
// infer_node knows (Shape, Range, Equal, ...) only folds.
const std::set<std::string>& live_ops() {
  static const std::set<std::string> ops = {"Conv",
                                            "ConvInteger",
                                            "QLinearConv",
                                            "Gemm",
                                            "MatMul",
                                            "MatMulInteger",
                                            "QLinearMatMul",
                                            "BatchNormalization",
                                            "Relu",
                                            "Clip",
                                            "LeakyRelu",
                                            "Sigmoid",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Tanh",
                                            "Erf",
                                            "Exp",
                                            "Sqrt",
                                            "Reciprocal",
                                            "Log",
                                            "Neg",
                                            "Abs",
                                            "Min",
                                            "Max",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Sum",
                                            "ReduceMean",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "LRN",
                                            "Concat",
                                            "Reshape",
                                            "Flatten",
                                            "Transpose",
                                            "Squeeze",
                                            "Unsqueeze",
                                            "Slice",
                                            "Split",
                                            "Gather",
                                            "Where",
                                            "Expand",
                                            "Resize",
                                            "Upsample",
                                            "Softmax",
                                            "LogSoftmax",
                                            "LayerNormalization",
                                            "Identity",
                                            "Cast",
                                            "Dropout",
                                            "Pad",
                                            "QuantizeLinear",
                                            "DynamicQuantizeLinear",
                                            "DequantizeLinear"};
  return ops;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::vector<std::int64_t> to_i64(const std::vector<std::uint64_t>& v) {
  return std::vector<std::int64_t>(v.begin(), v.end());
}

std::string u64_dims_text(const std::vector<std::uint64_t>& v) { return dims_text(to_i64(v)); }

// The IR versions and default-domain opsets the importer reads: IR 3 introduced opset imports;
// IR 10 and opset 21 are ONNX 1.16's. A newer model may use ops or semantics this importer does not
// know, so it is refused rather than read wrongly.
constexpr std::int64_t kMinIrVersion = 3;
constexpr std::int64_t kMaxIrVersion = 10;
constexpr std::int64_t kMaxOpset = 21;

class Importer {
 public:
  Importer(std::string path, const OnnxImportOptions& options, std::vector<std::string>* notes)
      : path_(std::move(path)), options_(options), notes_(notes), diag_(path_) {
    base_ = profiler::escape_invalid_utf8(std::filesystem::path(path_).filename().string());
  }

  Graph run() {
    load();
    read_graph_inputs();
    sort_nodes();
    propagate();
    index_consumers();
    emit();
    // Decomposed LayerNorm and GELU become one layer each: a graph pass, given the values of
    // the scalar constants it needs, which only the importer knows.
    fuse_layer_norm_gelu(g_, scalar_values());
    // QDQ models: readers of a dequantised activation read the integer tensor itself.
    fold_dequantize(g_);
    return std::move(g_);
  }

 private:
  // ---- helpers -----------------------------------------------------------------------------
  const onnx::NodeProto& nd(int n) const { return model_.graph().node(n); }

  std::string node_name(int n) const {
    const auto& node = nd(n);
    return node.name().empty() ? node.op_type() + "_" + std::to_string(n) : node.name();
  }

  std::string where(int n) const { return "node '" + node_name(n) + "' (" + nd(n).op_type() + ")"; }

  std::string loc(int n) const {
    return "loc(" + quoted(base_) + ":node " + std::to_string(n) + " " + quoted(node_name(n)) + ")";
  }

  [[noreturn]] void fail_file(const std::string& message) const {
    throw InputError(path_, "", message);
  }

  [[noreturn]] void fail_node(int n, const std::string& message) const {
    if (n < 0) fail_file(message);
    throw InputError(path_, where(n), message);
  }

  void note(const std::string& text) {
    if (notes_ != nullptr) notes_->push_back(text);  // the caller names the file
  }

  const Value& value(const std::string& name) const { return values_.at(name); }

  std::string fresh_name(const std::string& base) const {
    if (values_.count(base) == 0 && tensor_names_.count(base) == 0) return base;
    for (int k = 1;; ++k) {
      const std::string s = base + "_" + std::to_string(k);
      if (values_.count(s) == 0 && tensor_names_.count(s) == 0) return s;
    }
  }

  // ---- 1. the file ------------------------------------------------------------------------
  void load() {
    std::string bytes;
    if (const auto problem = profiler::read_input_file(path_, bytes)) fail_file(*problem);
    if (bytes.empty()) fail_file("the file is empty, not an ONNX model");
    if (!model_.ParseFromString(bytes)) {
      fail_file("not a readable ONNX model (the protobuf does not parse: truncated or not ONNX)");
    }
    bytes = std::string();  // the parsed model holds what is needed
    if (!model_.has_graph() || model_.ir_version() <= 0 || model_.opset_import_size() == 0) {
      fail_file("not an ONNX model (no graph, IR version or opset)");
    }
    if (model_.ir_version() < kMinIrVersion || model_.ir_version() > kMaxIrVersion) {
      throw InputError(path_, "ir_version",
                       "IR version " + std::to_string(model_.ir_version()) +
                           " is not supported (npusim reads IR versions " +
                           std::to_string(kMinIrVersion) + " to " + std::to_string(kMaxIrVersion) +
                           ")");
    }
    std::int64_t opset = 0;
    for (const auto& o : model_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    }
    if (opset == 0) fail_file("the model imports no version of the default ONNX op set");
    if (opset < 1 || opset > kMaxOpset) {
      throw InputError(path_, "opset_import",
                       "default-domain opset " + std::to_string(opset) +
                           " is not supported (npusim reads opsets 1 to " +
                           std::to_string(kMaxOpset) + ")");
    }
    opset_ = static_cast<int>(opset);
    check_external_data();
    const auto& graph = model_.graph();
    g_.name = graph.name().empty()
                  ? profiler::escape_invalid_utf8(std::filesystem::path(path_).stem().string())
                  : graph.name();
    g_.source_file = path_;
    for (const auto& t : graph.initializer()) {
      try {
        Value v = onnx_detail::value_from_tensor(t);
        v.tensor = t.name();
        values_[t.name()] = std::move(v);
      } catch (const OpError& e) {
        fail_file(std::string("initializer: ") + e.what());
      }
    }
  }

  // A tensor whose values live in another file (ONNX external data) is imported from its shape
  // alone, but the file must be there: a model copied without it is incomplete, and a tool that
  // runs it would fail. The file is named relative to the model's folder, as ONNX specifies.
  void check_external_data() {
    const std::filesystem::path folder = std::filesystem::path(path_).parent_path();
    auto check = [&](const onnx::TensorProto& t, const std::string& what) {
      if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
      std::string location;
      std::uint64_t offset = 0, length = 0;
      bool has_length = false;
      for (const auto& entry : t.external_data()) {
        const auto number = [&]() -> std::uint64_t {
          const std::string& v = entry.value();
          if (v.empty() || v.size() > 19 ||
              v.find_first_not_of("0123456789") != std::string::npos) {
            throw InputError(path_, what,
                             "external data " + entry.key() + " '" + v + "' is not a byte count");
          }
          return std::stoull(v);
        };
        if (entry.key() == "location") location = entry.value();
        if (entry.key() == "offset") offset = number();
        if (entry.key() == "length") {
          length = number();
          has_length = true;
        }
      }
      if (location.empty()) throw InputError(path_, what, "external data without a location");
      const std::filesystem::path file = folder / location;
      if (std::filesystem::path(location).is_absolute()) {
        throw InputError(path_, what,
                         "external data location '" + location +
                             "' is absolute; ONNX names it relative to the model's folder");
      }
      if (const auto problem = profiler::input_file_problem(file.string())) {
        throw InputError(
            path_, what,
            "external data file '" + location + "' (" + file.string() + "): " + *problem);
      }
      std::error_code ec;
      const std::uint64_t size = std::filesystem::file_size(file, ec);
      if (ec || offset > size || (has_length && length > size - offset)) {
        throw InputError(path_, what,
                         "external data file '" + location + "' has " + std::to_string(size) +
                             " bytes, fewer than offset " + std::to_string(offset) +
                             (has_length ? " + length " + std::to_string(length) : std::string()));
      }
    };
    const auto& graph = model_.graph();
    for (const auto& t : graph.initializer()) check(t, "initializer '" + t.name() + "'");
    for (int n = 0; n < graph.node_size(); ++n) {
      for (const auto& a : graph.node(n).attribute()) {
        if (a.has_t()) check(a.t(), where(n) + " attribute '" + a.name() + "'");
        for (const auto& t : a.tensors()) check(t, where(n) + " attribute '" + a.name() + "'");
      }
    }
  }

  // ---- 2. graph inputs with static shapes -------------------------------------------------
  void read_graph_inputs() {
    std::set<std::string> known;
    for (const auto& in : model_.graph().input()) {
      if (values_.count(in.name()) != 0) continue;  // an initializer listed as input (IR < 4)
      known.insert(in.name());
      if (!in.type().has_tensor_type()) fail_file("input '" + in.name() + "' is not a tensor");
      const auto& tt = in.type().tensor_type();
      Value v;
      v.elem_type = tt.elem_type();
      v.tensor = in.name();
      const auto given = options_.input_shapes.find(in.name());
      if (given != options_.input_shapes.end()) {
        const auto& dims = given->second;
        if (tt.has_shape() && static_cast<std::size_t>(tt.shape().dim_size()) != dims.size()) {
          fail_file("input '" + in.name() + "': the given shape " + u64_dims_text(dims) +
                    " has rank " + std::to_string(dims.size()) + ", the model's input has rank " +
                    std::to_string(tt.shape().dim_size()));
        }
        for (std::size_t k = 0; k < dims.size(); ++k) {
          if (dims[k] == 0)
            fail_file("input '" + in.name() + "': the given shape " + u64_dims_text(dims) +
                      " has a zero dim");
          if (tt.has_shape()) {
            const auto& d = tt.shape().dim(static_cast<int>(k));
            if (d.has_dim_value() && d.dim_value() > 0 &&
                static_cast<std::uint64_t>(d.dim_value()) != dims[k]) {
              fail_file("input '" + in.name() + "': the given shape " + u64_dims_text(dims) +
                        " contradicts the model's static dim " + std::to_string(k) + " = " +
                        std::to_string(d.dim_value()));
            }
          }
          v.shape.push_back(static_cast<std::int64_t>(dims[k]));
        }
      } else {
        if (!tt.has_shape()) {
          fail_file("input '" + in.name() +
                    "' has no shape in the model; give one with --input-shape " + in.name() +
                    "=...");
        }
        std::string dynamic;
        for (int k = 0; k < tt.shape().dim_size(); ++k) {
          const auto& d = tt.shape().dim(k);
          if (d.has_dim_value() && d.dim_value() > 0) {
            v.shape.push_back(d.dim_value());
          } else {
            if (options_.default_dynamic_dim == 0) fail_file("the size for dynamic dims is 0");
            v.shape.push_back(static_cast<std::int64_t>(options_.default_dynamic_dim));
            dynamic += (dynamic.empty() ? "" : ", ") + std::to_string(k) +
                       (d.dim_param().empty() ? "" : " (" + d.dim_param() + ")");
          }
        }
        if (!dynamic.empty()) {
          std::string example;
          for (std::int64_t d : v.shape)
            example += (example.empty() ? "" : "x") + std::to_string(d);
          note("input '" + in.name() + "' has dynamic dims " + dynamic + "; using " +
               std::to_string(options_.default_dynamic_dim) + ", i.e. --input-shape " + in.name() +
               "=" + example);
        }
      }
      values_[in.name()] = v;
      graph_inputs_.push_back(in.name());
    }
    for (const auto& [name, dims] : options_.input_shapes) {
      if (known.count(name) == 0) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail_file("there is no graph input named '" + name + "' (inputs: " + list + ")");
      }
    }
  }

  // ---- 3. topological order ---------------------------------------------------------------
  void sort_nodes() {
    const auto& graph = model_.graph();
    const int count = graph.node_size();
    std::map<std::string, int> producer;
    for (int n = 0; n < count; ++n) {
      // Every ONNX op's first output is required; the importer names each layer by it.
      if (nd(n).output_size() == 0 || nd(n).output(0).empty()) {
        fail_node(n, "has no first output (every ONNX operator has one)");
      }
      for (const auto& out : nd(n).output()) {
        if (out.empty()) continue;
        if (values_.count(out) != 0 || !producer.emplace(out, n).second) {
          fail_node(n, "output '" + out + "' is already defined elsewhere in the graph");
        }
      }
    }
    std::vector<int> pending(static_cast<std::size_t>(count), 0);
    std::vector<std::vector<int>> users(static_cast<std::size_t>(count));
    for (int n = 0; n < count; ++n) {
      std::set<int> deps;
      for (const auto& in : nd(n).input()) {
        if (in.empty() || values_.count(in) != 0) continue;
        const auto it = producer.find(in);
        if (it == producer.end()) {
          fail_node(n,
                    "input '" + in + "' is not a graph input, an initializer or any node's output");
        }
        deps.insert(it->second);
      }
      pending[static_cast<std::size_t>(n)] = static_cast<int>(deps.size());
      for (int d : deps) users[static_cast<std::size_t>(d)].push_back(n);
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int n = 0; n < count; ++n) {
      if (pending[static_cast<std::size_t>(n)] == 0) ready.push(n);
    }
    while (!ready.empty()) {
      const int n = ready.top();
      ready.pop();
      order_.push_back(n);
      for (int u : users[static_cast<std::size_t>(n)]) {
        if (--pending[static_cast<std::size_t>(u)] == 0) ready.push(u);
      }
    }
    if (static_cast<int>(order_.size()) != count) {
      for (int n = 0; n < count; ++n) {
        if (pending[static_cast<std::size_t>(n)] > 0) fail_node(n, "is part of a cycle");
      }
    }
    live_.assign(static_cast<std::size_t>(count), false);
    host_.assign(static_cast<std::size_t>(count), false);
  }

  // ---- 4. shapes, dtypes and folding -------------------------------------------------------
  void propagate() {
    for (int n : order_) {
      try {
        propagate_node(n);
      } catch (const OpError& e) {
        diag_.error(where(n), e.what());
        poison(n);
      }
    }
    for (const auto& out : model_.graph().output()) {
      if (values_.count(out.name()) == 0 && poisoned_.count(out.name()) == 0) {
        fail_file("graph output '" + out.name() + "' is not produced by any node");
      }
    }
    diag_.throw_if_any();
  }

  void poison(int n) {
    for (const auto& out : nd(n).output()) {
      if (!out.empty()) poisoned_.insert(out);
    }
  }

  // Why a live node cannot become a layer, or "" when it can.
  std::string unsupported_reason(int n, const std::vector<const Value*>& ins) const {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return "unsupported op '" + node.domain() + "." + op + "' (not in the default ONNX domain)";
    }
    if (live_ops().count(op) == 0) return "unsupported op '" + op + "'";
    const bool spatial = op == "Conv" || op == "ConvInteger" || op == "QLinearConv" ||
                         op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
                         op == "GlobalMaxPool";
    if (spatial && ins[0]->shape.size() != 4) {
      return op + " on a " + std::to_string(ins[0]->shape.size()) +
             "-d input is not supported (only 2-d, NCHW)";
    }
    return "";
  }

  void propagate_node(int n) {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    std::vector<const Value*> ins;
    for (const auto& in : node.input()) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      if (poisoned_.count(in) != 0) {
        poison(n);
        return;
      }
      ins.push_back(&values_.at(in));
    }
    bool all_const = !ins.empty() || op == "Constant";
    for (const Value* v : ins) all_const = all_const && (v == nullptr || v->constant);
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";

    // A DequantizeLinear of a constant (a quantised weight or bias) folds into that constant,
    // which keeps its integer dtype: the NPU reads the int8 weight.
    if (default_domain && op == "DequantizeLinear" && !ins.empty() && ins[0] != nullptr &&
        ins[0]->constant) {
      Value v = *ins[0];
      v.data.reset();
      values_[node.output(0)] = v;
      return;
    }

    std::optional<std::vector<Value>> outs;
    if (default_domain) outs = onnx_detail::infer_node(node, ins, opset_);
    const bool always_folds = op == "Shape" || op == "Size" || op == "Constant";
    if (outs && (all_const || always_folds)) {
      // Identity and Dropout of a constant alias it; anything else is a new constant.
      const bool alias = (op == "Identity" || op == "Dropout") && ins[0] != nullptr;
      for (std::size_t k = 0; k < outs->size() && k < static_cast<std::size_t>(node.output_size());
           ++k) {
        const std::string& name = node.output(static_cast<int>(k));
        if (name.empty()) continue;
        Value v = std::move((*outs)[k]);
        v.constant = true;
        v.tensor = alias && k == 0 ? ins[0]->tensor : name;
        if (v.data && v.elements() > onnx_detail::kMaxFoldElements) v.data.reset();
        values_[name] = std::move(v);
      }
      return;
    }
    std::string reason = unsupported_reason(n, ins);
    if (!outs && reason.empty()) reason = "unsupported op '" + op + "'";
    if (!reason.empty()) {
      if (!options_.host_fallback) {
        diag_.error(where(n), reason + " (--host-fallback runs it on the host)");
        // Keep going past it, so that every unsupported node is reported at once: its outputs
        // get the shapes a Host layer would, and only when there are none are they poisoned
        // (and their readers skipped).
        if (!outs) outs = shapes_for_report(n, ins);
        if (!outs) {
          poison(n);
          return;
        }
      } else {
        host_[static_cast<std::size_t>(n)] = true;
        if (!outs) outs = host_shapes(n, ins);
      }
    }
    live_[static_cast<std::size_t>(n)] = true;
    for (std::size_t k = 0; k < outs->size() && k < static_cast<std::size_t>(node.output_size());
         ++k) {
      const std::string& name = node.output(static_cast<int>(k));
      if (name.empty()) continue;
      Value v = std::move((*outs)[k]);
      v.constant = false;
      v.data.reset();
      v.tensor = name;
      values_[name] = std::move(v);
    }
  }

  // host_shapes for a node that is already an error: no notes, and nothing when ONNX shape
  // inference cannot tell.
  std::optional<std::vector<Value>> shapes_for_report(int n, const std::vector<const Value*>& ins) {
    std::vector<std::string>* notes = notes_;
    notes_ = nullptr;
    std::optional<std::vector<Value>> outs;
    try {
      outs = host_shapes(n, ins);
    } catch (const OpError&) {
      outs.reset();
    }
    notes_ = notes;
    return outs;
  }

  // Output shapes of an op npusim does not know, from ONNX's own shape inference run on the
  // node alone with its inputs' static shapes (and values, where known).
  std::vector<Value> host_shapes(int n, const std::vector<const Value*>& ins) {
    const auto& node = nd(n);
    onnx::ModelProto m;
    m.set_ir_version(model_.ir_version());
    *m.mutable_opset_import() = model_.opset_import();
    auto* g = m.mutable_graph();
    g->set_name("host_node");
    *g->add_node() = node;
    std::set<std::string> added;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      const std::string& name = node.input(static_cast<int>(k));
      if (ins[k] == nullptr || !added.insert(name).second) continue;
      const Value& v = *ins[k];
      auto* vi = g->add_input();
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(v.elem_type);
      auto* shape = tt->mutable_shape();
      for (std::int64_t d : v.shape) shape->add_dim()->set_dim_value(d);
      if (v.data && (v.elem_type == TP::FLOAT || v.elem_type == TP::INT64 ||
                     v.elem_type == TP::INT32 || v.elem_type == TP::DOUBLE)) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(v.elem_type);
        for (std::int64_t d : v.shape) t->add_dims(d);
        for (std::size_t e = 0; e < v.data->size(); ++e) {
          switch (v.elem_type) {
            case TP::FLOAT:
              t->add_float_data(static_cast<float>(v.data->as_double(e)));
              break;
            case TP::DOUBLE:
              t->add_double_data(v.data->as_double(e));
              break;
            case TP::INT64:
              t->add_int64_data(v.data->as_int(e));
              break;
            default:
              t->add_int32_data(static_cast<std::int32_t>(v.data->as_int(e)));
              break;
          }
        }
      }
    }
    try {
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const std::exception& e) {
      throw OpError(std::string("ONNX shape inference failed for this host op: ") + e.what());
    }
    std::vector<Value> outs;
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& name = node.output(k);
      Value v;
      if (name.empty()) {
        outs.push_back(v);
        continue;
      }
      const onnx::ValueInfoProto* info = nullptr;
      for (const auto& vi : m.graph().value_info()) {
        if (vi.name() == name) info = &vi;
      }
      if (info == nullptr || !info->type().has_tensor_type() ||
          !info->type().tensor_type().has_shape()) {
        throw OpError("cannot determine the shape of output '" + name +
                      "' of this host op (ONNX shape inference does not know it)");
      }
      const auto& tt = info->type().tensor_type();
      v.elem_type = tt.elem_type();
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() > 0) {
          v.shape.push_back(dim.dim_value());
        } else {
          v.shape.push_back(static_cast<std::int64_t>(options_.default_dynamic_dim));
          note(where(n) + ": output '" + name + "' dim " + std::to_string(d) +
               " depends on data; using " + std::to_string(options_.default_dynamic_dim));
        }
      }
      outs.push_back(v);
    }
    return outs;
  }

  // ---- 5. readers of each value ------------------------------------------------------------
  std::optional<double> scalar(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end() || !it->second.constant || !it->second.data ||
        it->second.data->size() != 1) {
      return std::nullopt;
    }
    return it->second.data->as_double(0);
  }

  void index_consumers() {
    for (const auto& out : model_.graph().output()) graph_outputs_.insert(out.name());
    for (int n : order_) {
      if (!live_[static_cast<std::size_t>(n)]) continue;
      for (const auto& in : nd(n).input()) {
        if (!in.empty()) consumers_[in].insert(n);
      }
    }
  }

  // The value of every constant tensor of the graph that has one element, for the LayerNorm /
  // GELU pass. A tensor that some name reads without a value (a DequantizeLinear folded into
  // it) or with another value gets none.
  ScalarValues scalar_values() const {
    ScalarValues known;
    std::set<std::uint32_t> unknown;
    for (const auto& [name, v] : values_) {
      if (!v.constant) continue;
      const auto id = tensor_ids_.find(v.tensor.empty() ? name : v.tensor);
      if (id == tensor_ids_.end()) continue;
      const auto s = scalar(name);
      const auto it = known.find(id->second);
      if (!s || (it != known.end() && it->second != *s)) {
        unknown.insert(id->second);
      } else {
        known[id->second] = *s;
      }
    }
    for (std::uint32_t t : unknown) known.erase(t);
    return known;
  }

  // ---- 6. layers ----------------------------------------------------------------------------
  std::uint32_t tensor_id(const std::string& name, int n, bool as_output) {
    const Value& v = value(name);
    const std::string key = v.tensor.empty() ? name : v.tensor;
    if (!as_output && !v.constant && produced_.count(key) == 0 && input_tensors_.count(key) == 0) {
      fail_node(n, "reads '" + name +
                       "', which the importer does not produce (an unsupported "
                       "extra output of the node that makes it)");
    }
    const auto it = tensor_ids_.find(key);
    if (it != tensor_ids_.end()) return it->second;
    const auto dtype = to_dtype(v.elem_type);
    if (!dtype) {
      fail_node(n, "tensor '" + key + "' has element type " + elem_type_name(v.elem_type) +
                       ", which npusim does not support");
    }
    Tensor t;
    t.name = key;
    t.dtype = *dtype;
    for (std::int64_t d : v.shape) t.shape.push_back(static_cast<std::uint64_t>(d));
    t.constant = v.constant;
    if (!v.constant) t.layout = v.shape.size() == 4 ? "NCHW" : v.shape.size() == 2 ? "NC" : "";
    const auto id = static_cast<std::uint32_t>(g_.tensors.size());
    g_.tensors.push_back(std::move(t));
    tensor_ids_[key] = id;
    tensor_names_.insert(key);
    return id;
  }

  std::string unique_layer_name(const std::string& want) {
    std::string name = want;
    for (int k = 1; !layer_names_.insert(name).second; ++k) name = want + "_" + std::to_string(k);
    return name;
  }

  Layer& add_layer(int n, const std::string& op, const std::vector<std::string>& ins,
                   const std::vector<std::string>& outs, const std::string& name = "") {
    Layer l;
    l.name = unique_layer_name(name.empty() ? node_name(n) : name);
    l.op = op;
    l.loc = loc(n);
    for (const auto& in : ins) {
      if (!in.empty()) l.inputs.push_back(tensor_id(in, n, false));
    }
    for (const auto& out : outs) {
      if (out.empty()) continue;
      l.outputs.push_back(tensor_id(out, n, true));
      const Value& v = value(out);
      produced_.insert(v.tensor.empty() ? out : v.tensor);
    }
    g_.layers.push_back(std::move(l));
    return g_.layers.back();
  }

  // A new live value made by an auxiliary layer.
  std::string aux_value(const std::string& base, int elem_type, const Dims& shape) {
    const std::string name = fresh_name(base);
    Value v;
    v.elem_type = elem_type;
    v.shape = shape;
    v.tensor = name;
    values_[name] = v;
    return name;
  }

  // `name` reshaped: a constant gets a reshaped twin, an activation a Reshape layer.
  std::string reshaped(int n, const std::string& name, const Dims& shape) {
    const Value& v = value(name);
    if (v.constant) {
      const std::string twin = fresh_name(v.tensor + "_reshaped");
      Value c = v;
      c.shape = shape;
      c.data.reset();
      c.tensor = twin;
      values_[twin] = c;
      return twin;
    }
    const std::string out = aux_value(name + "/reshaped", v.elem_type, shape);
    Layer& l = add_layer(n, "Reshape", {name}, {out}, node_name(n) + "/reshape");
    l.attrs.ints["shape"] = shape;
    return out;
  }

  // `name` (2-d) transposed: a transposed twin of a constant, else a Transpose layer.
  std::string transposed(int n, const std::string& name) {
    const Value& v = value(name);
    const Dims shape = {v.shape[1], v.shape[0]};
    if (v.constant) {
      const std::string twin_name = v.tensor + "_transposed";
      const auto it = values_.find(twin_name);
      if (it != values_.end() && it->second.constant && it->second.shape == shape) return twin_name;
      const std::string twin = fresh_name(twin_name);
      Value c = v;
      c.shape = shape;
      c.data.reset();
      c.tensor = twin;
      values_[twin] = c;
      return twin;
    }
    const std::string out = aux_value(name + "/transposed", v.elem_type, shape);
    Layer& l = add_layer(n, "Transpose", {name}, {out}, node_name(n) + "/transpose");
    l.attrs.ints["perm"] = {1, 0};
    return out;
  }

  std::string in(int n, int k) const {
    const auto& node = nd(n);
    return k < node.input_size() ? node.input(k) : "";
  }

  std::int64_t rank_of(const std::string& name) const {
    return static_cast<std::int64_t>(value(name).shape.size());
  }

  Dims axes_input_or_attr(int n, int input, bool as_input) const {
    if (!as_input) return attr_ints(nd(n), "axes", {});
    const std::string name = in(n, input);
    if (name.empty()) return {};
    return onnx_detail::const_ints(&value(name), "axes");
  }

  void emit() {
    for (const auto& name : graph_inputs_) {
      const std::uint32_t id = tensor_id(name, -1, true);
      g_.inputs.push_back(id);
      input_tensors_.insert(name);
    }
    if (!graph_inputs_.empty()) {
      const Value& first = value(graph_inputs_.front());
      if (first.shape.size() >= 2) g_.batch = static_cast<std::uint64_t>(first.shape[0]);
    }
    for (int n : order_) {
      if (!live_[static_cast<std::size_t>(n)]) continue;
      try {
        emit_node(n);
      } catch (const OpError& e) {
        fail_node(n, e.what());
      }
      for (int k = 0; k < nd(n).output_size(); ++k) {
        const std::string& out = nd(n).output(k);
        if (out.empty() || values_.count(out) == 0) continue;
        const Value& v = value(out);
        const std::string key = v.tensor.empty() ? out : v.tensor;
        const bool used = consumers_.count(out) != 0 || graph_outputs_.count(out) != 0;
        if (used && !v.constant && produced_.count(key) == 0 && input_tensors_.count(key) == 0) {
          fail_node(n,
                    "output " + std::to_string(k) + " ('" + out + "') is used but not supported");
        }
      }
    }
    for (const auto& out : model_.graph().output())
      g_.outputs.push_back(tensor_id(out.name(), -1, true));
  }

  void emit_node(int n) {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    const std::string y = node.output(0);
    if (host_[static_cast<std::size_t>(n)]) {
      std::vector<std::string> ins(node.input().begin(), node.input().end());
      std::vector<std::string> outs(node.output().begin(), node.output().end());
      Layer& l = add_layer(n, "Host", ins, outs);
      copy_simple_attrs(node, l.attrs);
      l.attrs.strings["onnx_op"] =
          node.domain().empty() || node.domain() == "ai.onnx" ? op : node.domain() + "." + op;
      return;
    }
    if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") return emit_conv(n);
    if (op == "Gemm" || op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul") {
      return emit_matmul(n);
    }
    if (op == "Sum" || op == "Min" || op == "Max") {
      // Variadic: a chain of the binary op (Sum -> Add).
      const std::string binary = op == "Sum" ? "Add" : op;
      const std::string lower = op == "Sum" ? "add" : op == "Min" ? "min" : "max";
      std::vector<std::string> xs;
      for (const auto& x : node.input()) {
        if (!x.empty()) xs.push_back(x);
      }
      if (xs.size() == 1) {
        add_layer(n, "Identity", {xs[0]}, {y});
        return;
      }
      std::string acc = xs[0];
      for (std::size_t k = 1; k < xs.size(); ++k) {
        std::string out = y;
        if (k + 1 < xs.size()) {
          const Dims shape = onnx_detail::broadcast_dims(value(acc).shape, value(xs[k]).shape);
          out = aux_value(y + "/" + (op == "Sum" ? "sum" : lower) + std::to_string(k),
                          value(y).elem_type, shape);
        }
        add_layer(n, binary, {acc, xs[k]}, {out},
                  k == 1 ? "" : node_name(n) + "/" + lower + std::to_string(k));
        acc = out;
      }
      return;
    }
    if (op == "Cast") {
      if (value(in(n, 0)).elem_type == value(y).elem_type) {
        values_[y].tensor = value(in(n, 0)).tensor;  // a no-op: the output is the input
        return;
      }
      Layer& l = add_layer(n, "Cast", {in(n, 0)}, {y});
      l.attrs.strings["to"] = dtype_name(*to_dtype(value(y).elem_type));
      return;
    }
    if (op == "Where") {
      Layer& l = add_layer(n, "Gather", {in(n, 1), in(n, 2), in(n, 0)}, {y});
      l.attrs.strings["onnx_op"] = "Where";
      return;
    }
    if (op == "Expand") {
      Layer& l = add_layer(n, "Resize", {in(n, 0)}, {y});
      l.attrs.strings["onnx_op"] = "Expand";
      return;
    }
    if (op == "Clip") {
      std::vector<std::string> ins = {in(n, 0)};
      Attributes attrs;
      if (opset_ < 11) {
        if (find_attr(node, "min") != nullptr) attrs.floats["min"] = attr_float(node, "min", 0);
        if (find_attr(node, "max") != nullptr) attrs.floats["max"] = attr_float(node, "max", 0);
      } else {
        for (int k = 1; k <= 2; ++k) {
          const std::string b = in(n, k);
          if (b.empty()) continue;
          const auto s = scalar(b);
          if (s) {
            attrs.floats[k == 1 ? "min" : "max"] = *s;
          } else {
            ins.push_back(b);
          }
        }
      }
      add_layer(n, "Clip", ins, {y}).attrs = attrs;
      return;
    }
    if (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear") {
      const bool quant = op != "DequantizeLinear";
      std::vector<std::string> outs(node.output().begin(), node.output().end());
      Layer& l = add_layer(n, quant ? "Quantize" : "Dequantize", {in(n, 0)}, outs);
      l.attrs.strings["onnx_op"] = op;
      const std::string scale = in(n, 1);
      if (op != "DynamicQuantizeLinear" && !scale.empty()) {
        const Value& s = value(scale);
        if (s.elements() == 1 && s.data) {
          l.attrs.floats["scale"] = s.data->as_double(0);
        } else if (s.elements() > 1) {
          l.attrs.ints["axis"] = {normalize_axis(attr_int(node, "axis", 1), rank_of(in(n, 0)))};
        }
        const std::string zp = in(n, 2);
        if (!zp.empty() && value(zp).elements() == 1 && value(zp).data) {
          l.attrs.ints["zero_point"] = {value(zp).data->as_int(0)};
        }
      }
      return;
    }
    if (op == "LayerNormalization") {
      Layer& l = add_layer(n, "LayerNorm", {in(n, 0), in(n, 1), in(n, 2)}, {y});
      l.attrs.ints["axis"] = {normalize_axis(attr_int(node, "axis", -1), rank_of(in(n, 0)))};
      l.attrs.floats["epsilon"] = attr_float(node, "epsilon", 1e-5f);
      return;
    }
    if (op == "BatchNormalization") {
      Layer& l = add_layer(n, op, {in(n, 0), in(n, 1), in(n, 2), in(n, 3), in(n, 4)}, {y});
      l.attrs.floats["epsilon"] = attr_float(node, "epsilon", 1e-5f);
      return;
    }
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalMaxPool") return emit_pool(n);
    if (op == "GlobalAveragePool") {
      add_layer(n, op, {in(n, 0)}, {y});
      return;
    }
    if (op == "Resize" || op == "Upsample") {
      Layer& l = add_layer(n, "Resize", {in(n, 0)}, {y});
      l.attrs.strings["mode"] = attr_string(node, "mode", "nearest");
      if (find_attr(node, "coordinate_transformation_mode") != nullptr) {
        l.attrs.strings["coordinate_transformation_mode"] =
            attr_string(node, "coordinate_transformation_mode", "");
      }
      if (op == "Upsample") l.attrs.strings["onnx_op"] = op;
      return;
    }
    if (op == "Pad") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      const Dims& xs = value(in(n, 0)).shape;
      const Dims& ys = value(y).shape;
      // Pads per dim, begin then end; recovered from the shapes when given per axis.
      Dims pads = opset_ < 11 ? attr_ints(node, "pads", {})
                              : onnx_detail::const_ints(&value(in(n, 1)), "pads");
      if (pads.size() != 2 * xs.size()) {
        pads.assign(2 * xs.size(), 0);
        for (std::size_t k = 0; k < xs.size(); ++k) pads[k + xs.size()] = ys[k] - xs[k];
      }
      l.attrs.ints["pads"] = pads;
      l.attrs.strings["mode"] = attr_string(node, "mode", "constant");
      const std::string cv = in(n, 2);
      if (opset_ < 11) {
        l.attrs.floats["value"] = attr_float(node, "value", 0);
      } else if (!cv.empty() && scalar(cv)) {
        l.attrs.floats["value"] = *scalar(cv);
      }
      return;
    }
    if (op == "Concat") {
      std::vector<std::string> ins;
      for (const auto& x : node.input()) {
        if (!x.empty() && value(x).elements() > 0) ins.push_back(x);
      }
      Layer& l = add_layer(n, op, ins, {y});
      l.attrs.ints["axis"] = {normalize_axis(attr_int(node, "axis", 0), rank_of(y))};
      return;
    }
    if (op == "Split") {
      std::vector<std::string> outs(node.output().begin(), node.output().end());
      Layer& l = add_layer(n, op, {in(n, 0)}, outs);
      const std::size_t axis =
          static_cast<std::size_t>(normalize_axis(attr_int(node, "axis", 0), rank_of(in(n, 0))));
      l.attrs.ints["axis"] = {static_cast<std::int64_t>(axis)};
      Dims sizes;
      for (const auto& o : node.output()) {
        if (!o.empty()) sizes.push_back(value(o).shape[axis]);
      }
      l.attrs.ints["split"] = sizes;
      return;
    }
    if (op == "Gather") {
      Layer& l = add_layer(n, op, {in(n, 0), in(n, 1)}, {y});
      l.attrs.ints["axis"] = {normalize_axis(attr_int(node, "axis", 0), rank_of(in(n, 0)))};
      return;
    }
    if (op == "Slice") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      if (opset_ < 10) {
        l.attrs.ints["starts"] = attr_ints(node, "starts", {});
        l.attrs.ints["ends"] = attr_ints(node, "ends", {});
        if (find_attr(node, "axes") != nullptr) l.attrs.ints["axes"] = attr_ints(node, "axes", {});
      } else {
        l.attrs.ints["starts"] = onnx_detail::const_ints(&value(in(n, 1)), "starts");
        l.attrs.ints["ends"] = onnx_detail::const_ints(&value(in(n, 2)), "ends");
        if (!in(n, 3).empty())
          l.attrs.ints["axes"] = onnx_detail::const_ints(&value(in(n, 3)), "axes");
        if (!in(n, 4).empty())
          l.attrs.ints["steps"] = onnx_detail::const_ints(&value(in(n, 4)), "steps");
      }
      return;
    }
    if (op == "Transpose") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      Dims rev;
      for (std::int64_t k = rank_of(y) - 1; k >= 0; --k) rev.push_back(k);
      l.attrs.ints["perm"] = attr_ints(node, "perm", rev);
      return;
    }
    if (op == "Reshape" || op == "Flatten") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      l.attrs.ints["shape"] = value(y).shape;
      if (op == "Flatten") l.attrs.ints["axis"] = {attr_int(node, "axis", 1)};
      return;
    }
    if (op == "Squeeze" || op == "Unsqueeze") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      const Dims axes = axes_input_or_attr(n, 1, opset_ >= 13);
      if (!axes.empty()) l.attrs.ints["axes"] = axes;
      return;
    }
    if (op == "Identity" || op == "Dropout") {
      add_layer(n, op, {in(n, 0)}, {y});
      return;
    }
    if (op == "ReduceMean") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      Dims axes = axes_input_or_attr(n, 1, opset_ >= 18);
      const std::int64_t r = rank_of(in(n, 0));
      if (axes.empty()) {
        for (std::int64_t k = 0; k < r; ++k) axes.push_back(k);
      }
      for (auto& a : axes) a = normalize_axis(a, r);
      std::sort(axes.begin(), axes.end());
      l.attrs.ints["axes"] = axes;
      l.attrs.ints["keepdims"] = {attr_int(node, "keepdims", 1)};
      return;
    }
    if (op == "Softmax" || op == "LogSoftmax") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      l.attrs.ints["axis"] = {
          normalize_axis(attr_int(node, "axis", opset_ < 13 ? 1 : -1), rank_of(y))};
      return;
    }
    if (op == "LRN") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      l.attrs.ints["size"] = {attr_int(node, "size", 1)};
      l.attrs.floats["alpha"] = attr_float(node, "alpha", 1e-4f);
      l.attrs.floats["beta"] = attr_float(node, "beta", 0.75f);
      l.attrs.floats["bias"] = attr_float(node, "bias", 1.0f);
      return;
    }
    if (op == "LeakyRelu" || op == "HardSigmoid") {
      Layer& l = add_layer(n, op, {in(n, 0)}, {y});
      l.attrs.floats["alpha"] = attr_float(node, "alpha", op == "LeakyRelu" ? 0.01f : 0.2f);
      if (op == "HardSigmoid") l.attrs.floats["beta"] = attr_float(node, "beta", 0.5f);
      return;
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      add_layer(n, op, {in(n, 0), in(n, 1)}, {y});
      return;
    }
    // Unary vector ops: Relu Sigmoid HardSwish Tanh Erf Exp Sqrt Reciprocal Log Neg Abs.
    add_layer(n, op, {in(n, 0)}, {y});
  }

  void emit_conv(int n) {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    const std::string x = in(n, 0);
    const std::string w = op == "QLinearConv" ? in(n, 3) : in(n, 1);
    const std::string b = op == "Conv" ? in(n, 2) : op == "QLinearConv" ? in(n, 8) : "";
    const Dims& xs = value(x).shape;
    const Dims& ws = value(w).shape;
    const Dims spatial(xs.begin() + 2, xs.end());
    const Dims kernel = attr_ints(node, "kernel_shape", Dims(ws.begin() + 2, ws.end()));
    const Dims strides = attr_ints(node, "strides", {1, 1});
    const Dims dilations = attr_ints(node, "dilations", {1, 1});
    Layer& l = add_layer(n, "Conv", {x, w, b}, {node.output(0)});
    l.attrs.ints["kernel_shape"] = kernel;
    l.attrs.ints["strides"] = strides;
    l.attrs.ints["pads"] = onnx_detail::resolve_pads(node, spatial, kernel, strides, dilations);
    l.attrs.ints["dilations"] = dilations;
    l.attrs.ints["group"] = {attr_int(node, "group", 1)};
    if (op != "Conv") l.attrs.strings["onnx_op"] = op;
  }

  void emit_pool(int n) {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    const std::string x = in(n, 0);
    const Dims& xs = value(x).shape;
    const Dims spatial(xs.begin() + 2, xs.end());
    Layer& l = add_layer(n, op == "AveragePool" ? "AveragePool" : "MaxPool", {x}, {node.output(0)});
    if (op == "GlobalMaxPool") {
      l.attrs.ints["kernel_shape"] = spatial;
      l.attrs.ints["strides"] = {1, 1};
      l.attrs.ints["pads"] = {0, 0, 0, 0};
      l.attrs.strings["onnx_op"] = op;
      return;
    }
    const Dims kernel = attr_ints(node, "kernel_shape", {});
    const Dims strides = attr_ints(node, "strides", {1, 1});
    const Dims dilations = attr_ints(node, "dilations", {1, 1});
    l.attrs.ints["kernel_shape"] = kernel;
    l.attrs.ints["strides"] = strides;
    l.attrs.ints["pads"] = onnx_detail::resolve_pads(node, spatial, kernel, strides, dilations);
    l.attrs.ints["ceil_mode"] = {attr_int(node, "ceil_mode", 0)};
    if (find_attr(node, "dilations") != nullptr) l.attrs.ints["dilations"] = dilations;
    if (op == "AveragePool") {
      l.attrs.ints["count_include_pad"] = {attr_int(node, "count_include_pad", 0)};
    }
  }

  void emit_matmul(int n) {
    const auto& node = nd(n);
    const std::string& op = node.op_type();
    const std::string y = node.output(0);
    std::string a = in(n, 0);
    std::string b = op == "QLinearMatMul" ? in(n, 3) : in(n, 1);
    if (op == "Gemm") {
      if (attr_int(node, "transA", 0) != 0) a = transposed(n, a);
      if (attr_int(node, "transB", 0) != 0) b = transposed(n, b);
      Layer& l = add_layer(n, "MatMul", {a, b, in(n, 2)}, {y});
      l.attrs.strings["onnx_op"] = op;
      const float alpha = attr_float(node, "alpha", 1.0f);
      const float beta = attr_float(node, "beta", 1.0f);
      if (alpha != 1.0f) l.attrs.floats["alpha"] = alpha;
      if (beta != 1.0f) l.attrs.floats["beta"] = beta;
      return;
    }
    const Dims as = value(a).shape;
    const Dims bs = value(b).shape;
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) a = reshaped(n, a, {1, as[0]});
    if (b1) b = reshaped(n, b, {bs[0], 1});
    std::string out = y;
    if (a1 || b1) {
      const Dims& sa = value(a).shape;
      const Dims& sb = value(b).shape;
      Dims shape = onnx_detail::broadcast_dims(Dims(sa.begin(), sa.end() - 2),
                                               Dims(sb.begin(), sb.end() - 2));
      shape.push_back(sa[sa.size() - 2]);
      shape.push_back(sb.back());
      out = aux_value(y + "/matmul", value(y).elem_type, shape);
    }
    Layer& l = add_layer(n, "MatMul", {a, b}, {out});
    if (op != "MatMul") l.attrs.strings["onnx_op"] = op;
    if (out != y) {
      Layer& r = add_layer(n, "Reshape", {out}, {y}, node_name(n) + "/reshape");
      r.attrs.ints["shape"] = value(y).shape;
    }
  }

  static void copy_simple_attrs(const onnx::NodeProto& node, Attributes& attrs) {
    for (const auto& a : node.attribute()) {
      switch (a.type()) {
        case onnx::AttributeProto::INT:
          attrs.ints[a.name()] = {a.i()};
          break;
        case onnx::AttributeProto::INTS:
          attrs.ints[a.name()] = Dims(a.ints().begin(), a.ints().end());
          break;
        case onnx::AttributeProto::FLOAT:
          attrs.floats[a.name()] = a.f();
          break;
        case onnx::AttributeProto::STRING:
          attrs.strings[a.name()] = a.s();
          break;
        default:
          break;
      }
    }
  }

  std::string path_;
  std::string base_;
  const OnnxImportOptions& options_;
  std::vector<std::string>* notes_;
  Diagnostics diag_;
  onnx::ModelProto model_;
  int opset_ = 0;

  std::map<std::string, Value> values_;  // every tensor of the ONNX graph, by name
  std::vector<std::string> graph_inputs_;
  std::set<std::string> poisoned_;  // outputs of nodes that failed (errors already recorded)
  std::vector<int> order_;          // node indices in topological order
  std::vector<bool> live_;          // the node becomes layers (not folded)
  std::vector<bool> host_;          // ... a Host layer

  std::map<std::string, std::set<int>> consumers_;  // live consumers
  std::set<std::string> graph_outputs_;

  Graph g_;
  std::map<std::string, std::uint32_t> tensor_ids_;
  std::set<std::string> tensor_names_;
  std::set<std::string> produced_;
  std::set<std::string> input_tensors_;
  std::set<std::string> layer_names_;
};

}  // namespace

Graph import_onnx(const std::string& path, const OnnxImportOptions& options,
                  std::vector<std::string>* notes) {
  return Importer(path, options, notes).run();
}

}  // namespace npusim
