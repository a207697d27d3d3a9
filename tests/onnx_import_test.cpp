#include "sim/frontend/onnx_import.h"
#include "sim/compiler/compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <variant>

#include "sim/util/error.h"

namespace npusim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using TP = onnx::TensorProto;
using Dims = std::vector<std::int64_t>;
using Shape = std::vector<std::uint64_t>;

// A dim of a graph input: a size, or the name of a dynamic dim.
using Dim = std::variant<std::int64_t, std::string>;

// Builds a small ONNX model with the protobuf API and writes it to a temp file.
class ModelBuilder {
 public:
  explicit ModelBuilder(std::int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("npusim-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test_graph");
  }

  ModelBuilder& input(const std::string& name, const std::vector<Dim>& dims, int type = TP::FLOAT) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
      if (std::holds_alternative<std::int64_t>(d)) {
        shape->add_dim()->set_dim_value(std::get<std::int64_t>(d));
      } else {
        shape->add_dim()->set_dim_param(std::get<std::string>(d));
      }
    }
    return *this;
  }

  ModelBuilder& output(const std::string& name) {
    auto* vi = model_.mutable_graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
    return *this;
  }

  // A float initializer; values default to 0.1 each.
  ModelBuilder& weight(const std::string& name, const Dims& dims, std::vector<float> values = {}) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (auto d : dims) t->add_dims(d);
    const auto n = std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
    if (values.empty()) values.assign(static_cast<std::size_t>(n), 0.1f);
    for (float v : values) t->add_float_data(v);
    return *this;
  }

  ModelBuilder& scalar(const std::string& name, float value) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    t->add_float_data(value);
    return *this;
  }

  // An integer initializer (int64, int8, uint8, ...), values given.
  ModelBuilder& ints(const std::string& name, const Dims& dims, const Dims& values,
                     int type = TP::INT64) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) {
      if (type == TP::INT64) {
        t->add_int64_data(v);
      } else {
        t->add_int32_data(static_cast<std::int32_t>(v));
      }
    }
    return *this;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  std::string bytes() const { return model_.SerializeAsString(); }

  std::string save(const std::string& file) const { return write_file(file, bytes()); }

  static std::string write_file(const std::string& file, const std::string& contents) {
    const auto dir = std::filesystem::path(::testing::TempDir()) / "npusim_onnx_test";
    std::filesystem::create_directories(dir);
    const auto path = (dir / file).string();
    std::ofstream out(path, std::ios::binary);
    out << contents;
    return path;
  }

 private:
  onnx::ModelProto model_;
};

void set_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints(onnx::NodeProto& n, const std::string& name, const Dims& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& l : g.layers) ops.push_back(l.op);
  return ops;
}

const Tensor& out_of(const Graph& g, std::size_t layer, std::size_t k = 0) {
  return g.tensors.at(g.layers.at(layer).outputs.at(k));
}

const Tensor& in_of(const Graph& g, std::size_t layer, std::size_t k) {
  return g.tensors.at(g.layers.at(layer).inputs.at(k));
}

std::uint64_t total_macs(const Graph& g) {
  std::uint64_t macs = 0;
  for (const auto& l : g.layers) macs += layer_macs(g, l);
  return macs;
}

std::size_t count_op(const Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const auto& l : g.layers) n += l.op == op ? 1 : 0;
  return n;
}

std::string import_error(const std::string& path, const OnnxImportOptions& options = {}) {
  try {
    import_onnx(path, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// ---- (a) Conv + BatchNormalization + Relu ------------------------------------------------------

TEST(OnnxImport, ConvBatchNormRelu) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{3}, std::int64_t{32}, std::int64_t{32}})
      .weight("w", {16, 3, 3, 3})
      .weight("b", {16})
      .weight("scale", {16})
      .weight("shift", {16})
      .weight("mean", {16})
      .weight("var", {16});
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"}, "conv0");
  set_ints(conv, "pads", {1, 1, 1, 1});
  set_ints(conv, "strides", {2, 2});
  set_ints(conv, "kernel_shape", {3, 3});
  auto& bn = m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn0");
  set_float(bn, "epsilon", 1e-3f);
  m.node("Relu", {"n"}, {"y"}, "relu0");
  m.output("y");
  const Graph g = import_onnx(m.save("conv_bn_relu.onnx"), {});
  check_graph(g);

  EXPECT_EQ(g.name, "test_graph");
  EXPECT_THAT(ops_of(g), ElementsAre("Conv", "BatchNormalization", "Relu"));
  EXPECT_EQ(g.layers[0].name, "conv0");
  EXPECT_EQ(g.layers[0].loc, "loc(\"conv_bn_relu.onnx\":node 0 \"conv0\")");
  EXPECT_EQ(g.layers[2].loc, "loc(\"conv_bn_relu.onnx\":node 2 \"relu0\")");
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(out_of(g, k).shape, (Shape{1, 16, 16, 16}));
  EXPECT_EQ(g.layers[0].attrs.get_ints("pads", {}), (Dims{1, 1, 1, 1}));
  EXPECT_EQ(g.layers[0].attrs.get_ints("strides", {}), (Dims{2, 2}));
  EXPECT_EQ(g.layers[0].attrs.get_int("group", 0), 1);
  EXPECT_EQ(g.layers[1].inputs.size(), 5u);
  EXPECT_FLOAT_EQ(static_cast<float>(g.layers[1].attrs.get_float("epsilon", 0)), 1e-3f);
  // Weights: w 16*3*3*3 + b 16 + four BN vectors of 16, float32.
  EXPECT_EQ(g.weights_bytes(), (432u + 16u + 4u * 16u) * 4u);
  // 16x16x16 outputs, each 3*3*3 products.
  EXPECT_EQ(layer_macs(g, g.layers[0]), 16u * 16u * 16u * 27u);
  EXPECT_EQ(in_of(g, 0, 1).dtype, DType::kFloat32);
  EXPECT_TRUE(in_of(g, 0, 1).constant);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.tensors[g.inputs[0]].name, "x");
  EXPECT_EQ(g.tensors[g.inputs[0]].layout, "NCHW");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.tensors[g.outputs[0]].name, "y");
}

TEST(OnnxImport, AutoPadAndDepthwiseConv) {
  // in 5, kernel 2, stride 1: SAME pads 1 in total, at the end (UPPER) or the beginning (LOWER).
  for (const std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    ModelBuilder m;
    m.input("x", {std::int64_t{1}, std::int64_t{8}, std::int64_t{5}, std::int64_t{5}})
        .weight("w", {8, 1, 2, 2});
    auto& conv = m.node("Conv", {"x", "w"}, {"y"});
    set_int(conv, "group", 8);
    set_string(conv, "auto_pad", mode);
    m.output("y");
    const Graph g = import_onnx(m.save("autopad.onnx"), {});
    check_graph(g);
    ASSERT_EQ(g.layers.size(), 1u);
    EXPECT_EQ(g.layers[0].name, "Conv_0");  // unnamed node
    const Dims want = mode == "SAME_UPPER"   ? Dims{0, 0, 1, 1}
                      : mode == "SAME_LOWER" ? Dims{1, 1, 0, 0}
                                             : Dims{0, 0, 0, 0};
    EXPECT_EQ(g.layers[0].attrs.get_ints("pads", {}), want) << mode;
    EXPECT_EQ(out_of(g, 0).shape, mode == "VALID" ? (Shape{1, 8, 4, 4}) : (Shape{1, 8, 5, 5}));
    EXPECT_EQ(g.layers[0].attrs.get_int("group", 0), 8);
    // Depthwise: each output reads 1 channel * 2*2.
    EXPECT_EQ(layer_macs(g, g.layers[0]), mode == "VALID" ? 8u * 16u * 4u : 8u * 25u * 4u);
  }
}

// ---- (b) Gemm -----------------------------------------------------------------------------------

TEST(OnnxImport, GemmTransBWithBiasIsOneMatMul) {
  ModelBuilder m;
  m.input("a", {std::int64_t{4}, std::int64_t{64}}).weight("B", {10, 64}).weight("C", {10});
  auto& gemm = m.node("Gemm", {"a", "B", "C"}, {"y"}, "fc");
  set_int(gemm, "transB", 1);
  set_float(gemm, "alpha", 1.0f);
  m.output("y");
  const Graph g = import_onnx(m.save("gemm.onnx"), {});
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("MatMul"));
  EXPECT_EQ(in_of(g, 0, 0).shape, (Shape{4, 64}));
  EXPECT_EQ(in_of(g, 0, 1).shape, (Shape{64, 10}));  // [K,N]: B transposed at import
  EXPECT_TRUE(in_of(g, 0, 1).constant);
  EXPECT_EQ(in_of(g, 0, 1).name, "B_transposed");
  EXPECT_EQ(in_of(g, 0, 2).shape, (Shape{10}));
  EXPECT_EQ(out_of(g, 0).shape, (Shape{4, 10}));
  EXPECT_EQ(layer_macs(g, g.layers[0]), 4u * 10u * 64u);
  EXPECT_EQ(g.weights_bytes(), (640u + 10u) * 4u);
}

TEST(OnnxImport, GemmTransAOfActivationGetsTransposeLayer) {
  ModelBuilder m;
  m.input("a", {std::int64_t{64}, std::int64_t{4}}).weight("B", {64, 10});
  auto& gemm = m.node("Gemm", {"a", "B"}, {"y"}, "fc");
  set_int(gemm, "transA", 1);
  m.output("y");
  const Graph g = import_onnx(m.save("gemm_ta.onnx"), {});
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Transpose", "MatMul"));
  EXPECT_EQ(g.layers[0].name, "fc/transpose");
  EXPECT_EQ(out_of(g, 0).shape, (Shape{4, 64}));
  EXPECT_EQ(out_of(g, 1).shape, (Shape{4, 10}));
  EXPECT_EQ(layer_macs(g, g.layers[1]), 4u * 10u * 64u);
}

// ---- (c) shape sub-graphs fold
// -------------------------------------------------------------------

ModelBuilder flatten_by_shape_model() {
  ModelBuilder m;
  m.input("x", {std::string("batch"), std::int64_t{3}, std::int64_t{4}, std::int64_t{4}})
      .ints("zero", {}, {0})
      .ints("axes0", {1}, {0})
      .ints("minus_one", {1}, {-1});
  m.node("Shape", {"x"}, {"s"}, "shape");
  set_int(m.node("Gather", {"s", "zero"}, {"n"}, "gather"), "axis", 0);
  m.node("Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
  set_int(m.node("Concat", {"n1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"r"}, "reshape");
  m.node("Relu", {"r"}, {"y"}, "relu");
  m.output("y");
  return m;
}

TEST(OnnxImport, ShapeSubgraphFoldsToConstants) {
  const std::string path = flatten_by_shape_model().save("reshape_by_shape.onnx");
  OnnxImportOptions options;
  options.input_shapes["x"] = {2, 3, 4, 4};
  std::vector<std::string> notes;
  const Graph g = import_onnx(path, options, &notes);
  check_graph(g);
  EXPECT_THAT(ops_of(g), ElementsAre("Reshape", "Relu"));  // Shape, Gather, Unsqueeze, Concat fold
  EXPECT_EQ(out_of(g, 0).shape, (Shape{2, 48}));
  EXPECT_EQ(g.layers[0].attrs.get_ints("shape", {}), (Dims{2, 48}));
  EXPECT_EQ(g.layers[0].inputs.size(), 1u);
  EXPECT_EQ(g.tensors[g.inputs[0]].shape, (Shape{2, 3, 4, 4}));
  EXPECT_EQ(g.batch, 2u);
  EXPECT_EQ(g.weights_bytes(), 0u);
  EXPECT_TRUE(notes.empty());
}

TEST(OnnxImport, DynamicDimDefaultsAndIsReported) {
  const std::string path = flatten_by_shape_model().save("reshape_default.onnx");
  OnnxImportOptions options;
  options.default_dynamic_dim = 3;
  std::vector<std::string> notes;
  const Graph g = import_onnx(path, options, &notes);
  EXPECT_EQ(out_of(g, 0).shape, (Shape{3, 48}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(
      notes[0],
      HasSubstr("input 'x' has dynamic dims 0 (batch); using 3, i.e. --input-shape x=3x3x4x4"));
}

TEST(OnnxImport, BadInputShapesAreNamed) {
  const std::string path = flatten_by_shape_model().save("reshape_bad.onnx");
  OnnxImportOptions rank;
  rank.input_shapes["x"] = {2, 48};
  EXPECT_THAT(import_error(path, rank),
              HasSubstr("reshape_bad.onnx: input 'x': the given shape [2,48] has rank 2, the "
                        "model's input has rank 4"));
  OnnxImportOptions contradiction;
  contradiction.input_shapes["x"] = {2, 5, 4, 4};
  EXPECT_THAT(
      import_error(path, contradiction),
      HasSubstr("input 'x': the given shape [2,5,4,4] contradicts the model's static dim 1 = 3"));
  OnnxImportOptions unknown;
  unknown.input_shapes["image"] = {1, 3, 4, 4};
  EXPECT_THAT(import_error(path, unknown),
              HasSubstr("there is no graph input named 'image' (inputs: x)"));
}

TEST(OnnxImport, FoldedShapesAreExactAndErrorsNameTheNode) {
  // Range, Mul, Equal, Where, Expand, Cast, Slice and ConstantOfShape on constants fold; the
  // folded shapes are exact, so the Mul that does not broadcast is named.
  ModelBuilder m;
  m.input("x", {std::int64_t{2}, std::int64_t{3}})
      .ints("start", {}, {0})
      .ints("limit", {}, {3})
      .ints("delta", {}, {1})
      .ints("two", {}, {2})
      .ints("shape23", {2}, {2, 3})
      .ints("s0", {1}, {1})
      .ints("e0", {1}, {3})
      .ints("ax", {1}, {0});
  m.node("Range", {"start", "limit", "delta"}, {"r"});  // [0,1,2]
  m.node("Mul", {"r", "two"}, {"r2"});                  // [0,2,4]
  m.node("Equal", {"r2", "two"}, {"eq"});               // [F,T,F]
  m.node("Where", {"eq", "r2", "r"}, {"w"});            // [0,2,2]
  m.node("Expand", {"w", "shape23"}, {"e"});            // [2,3]
  set_int(m.node("Cast", {"e"}, {"ef"}), "to", TP::FLOAT);
  m.node("Add", {"x", "ef"}, {"y"}, "add");
  m.node("Slice", {"r", "s0", "e0", "ax"}, {"sl"});  // [1,2]
  m.node("ConstantOfShape", {"sl"}, {"z"});          // a [1,2] tensor
  m.node("Mul", {"y", "z"}, {"y2"}, "mul");          // [2,3] * [1,2]
  m.output("y2");
  EXPECT_THAT(import_error(m.save("fold.onnx")),
              HasSubstr("fold.onnx: node 'mul' (Mul): shapes [2,3] and [1,2] do not broadcast"));
}

TEST(OnnxImport, FoldedValuesFeedShapes) {
  // The Reshape target is computed by Range/Mul/Equal/Where/Concat: [0,2,2] -> where(eq, ..) ...
  ModelBuilder m;
  m.input("x", {std::int64_t{2}, std::int64_t{3}, std::int64_t{4}})
      .ints("start", {}, {1})
      .ints("limit", {}, {4})
      .ints("delta", {}, {1})
      .ints("two", {}, {2})
      .ints("minus_one", {1}, {-1});
  m.node("Range", {"start", "limit", "delta"}, {"r"});  // [1,2,3]
  m.node("Mul", {"r", "two"}, {"r2"});                  // [2,4,6]
  m.node("Equal", {"r", "two"}, {"eq"});                // [F,T,F]
  m.node("Where", {"eq", "r2", "r"}, {"w"});            // [1,4,3]
  m.node("ReduceProd", {"w"}, {"p"});                   // [12] (keepdims)
  set_int(m.node("Concat", {"minus_one", "p"}, {"target"}), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");  // [-1, 12] -> [2, 12]
  m.output("y");
  const Graph g = import_onnx(m.save("fold_values.onnx"), {});
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Reshape"));
  EXPECT_EQ(out_of(g, 0).shape, (Shape{2, 12}));
}

// ---- (d) decomposed LayerNorm and GELU
// -----------------------------------------------------------

// LayerNorm over the last axis of x, then GELU in one of three orders.
ModelBuilder layer_norm_gelu_model(int gelu_order, bool mean_is_output) {
  ModelBuilder m;
  m.input("x", {std::int64_t{2}, std::int64_t{5}, std::int64_t{16}})
      .scalar("two", 2.0f)
      .scalar("eps", 1e-5f)
      .weight("gamma", {16})
      .weight("beta", {16})
      .scalar("sqrt2", 1.4142135f)
      .scalar("one", 1.0f)
      .scalar("half", 0.5f);
  set_ints(m.node("ReduceMean", {"x"}, {"mean"}, "ln_mean"), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"}, "ln_sub");
  m.node("Pow", {"d", "two"}, {"d2"}, "ln_pow");
  set_ints(m.node("ReduceMean", {"d2"}, {"var"}, "ln_var"), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"}, "ln_add_eps");
  m.node("Sqrt", {"ve"}, {"std"}, "ln_sqrt");
  m.node("Div", {"d", "std"}, {"norm"}, "ln_div");
  m.node("Mul", {"norm", "gamma"}, {"scaled"}, "ln_scale");
  m.node("Add", {"scaled", "beta"}, {"h"}, "ln_bias");
  m.node("Div", {"h", "sqrt2"}, {"hs"}, "gelu_div");
  m.node("Erf", {"hs"}, {"erf"}, "gelu_erf");
  m.node("Add", {"erf", "one"}, {"e1"}, "gelu_add");
  if (gelu_order == 0) {  // (h * e1) * 0.5
    m.node("Mul", {"h", "e1"}, {"t"}, "gelu_mul");
    m.node("Mul", {"t", "half"}, {"y"}, "gelu_half");
  } else if (gelu_order == 1) {  // (h * 0.5) * e1, as in bert_toy
    m.node("Mul", {"h", "half"}, {"t"}, "gelu_half");
    m.node("Mul", {"t", "e1"}, {"y"}, "gelu_mul");
  } else {  // h * (e1 * 0.5)
    m.node("Mul", {"half", "e1"}, {"t"}, "gelu_half");
    m.node("Mul", {"h", "t"}, {"y"}, "gelu_mul");
  }
  m.output("y");
  if (mean_is_output) m.output("mean");
  return m;
}

TEST(OnnxImport, DecomposedLayerNormAndGeluFuse) {
  for (int order = 0; order < 3; ++order) {
    const Graph g = import_onnx(layer_norm_gelu_model(order, false).save("ln_gelu.onnx"), {});
    check_graph(g);
    ASSERT_THAT(ops_of(g), ElementsAre("LayerNorm", "Gelu")) << "GELU order " << order;
    const Layer& ln = g.layers[0];
    EXPECT_EQ(ln.name, "ln_mean");
    EXPECT_EQ(ln.loc, "loc(\"ln_gelu.onnx\":node 0 \"ln_mean\")");
    ASSERT_EQ(ln.inputs.size(), 3u);
    EXPECT_EQ(in_of(g, 0, 0).name, "x");
    EXPECT_EQ(in_of(g, 0, 1).name, "gamma");
    EXPECT_EQ(in_of(g, 0, 2).name, "beta");
    EXPECT_EQ(ln.attrs.get_int("axis", -1), 2);
    EXPECT_NEAR(ln.attrs.get_float("epsilon", 0), 1e-5, 1e-9);
    EXPECT_EQ(out_of(g, 0).name, "h");
    EXPECT_EQ(ln.attrs.get_string("fused_nodes", ""),
              "ln_mean+ln_sub+ln_pow+ln_var+ln_add_eps+ln_sqrt+ln_div+ln_scale+ln_bias");
    const Layer& gelu = g.layers[1];
    ASSERT_EQ(gelu.inputs.size(), 1u);
    EXPECT_EQ(in_of(g, 1, 0).name, "h");
    EXPECT_EQ(out_of(g, 1).name, "y");
    EXPECT_EQ(out_of(g, 1).shape, (Shape{2, 5, 16}));
    EXPECT_EQ(g.weights_bytes(), 2u * 16u * 4u);  // gamma and beta; the scalars fold away
  }
}

TEST(OnnxImport, NoFusionWhenAnIntermediateIsUsedElsewhere) {
  const Graph g = import_onnx(layer_norm_gelu_model(0, true).save("ln_used.onnx"), {});
  check_graph(g);
  // The mean is a graph output: the LayerNorm stays decomposed, the GELU still fuses.
  EXPECT_THAT(ops_of(g), ElementsAre("ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div",
                                     "Mul", "Add", "Gelu"));
}

// ---- (e) unsupported ops
// -------------------------------------------------------------------------

ModelBuilder nms_model() {
  ModelBuilder m(11);
  m.input("boxes", {std::int64_t{1}, std::int64_t{6}, std::int64_t{4}})
      .input("scores", {std::int64_t{1}, std::int64_t{1}, std::int64_t{6}})
      .ints("max_boxes", {1}, {3});
  m.node("NonMaxSuppression", {"boxes", "scores", "max_boxes"}, {"selected"}, "nms0");
  m.output("selected");
  return m;
}

TEST(OnnxImport, UnsupportedOpIsAnErrorNamingNodeAndOp) {
  const std::string path = nms_model().save("nms.onnx");
  EXPECT_THAT(import_error(path),
              HasSubstr("nms.onnx: node 'nms0' (NonMaxSuppression): unsupported op "
                        "'NonMaxSuppression' (--host-fallback runs it on the host)"));
}

TEST(OnnxImport, UnsupportedOpBecomesHostLayerWithFallback) {
  const std::string path = nms_model().save("nms_host.onnx");
  OnnxImportOptions options;
  options.host_fallback = true;
  std::vector<std::string> notes;
  const Graph g = import_onnx(path, options, &notes);
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Host"));
  EXPECT_EQ(g.layers[0].name, "nms0");
  EXPECT_EQ(g.layers[0].attrs.get_string("onnx_op", ""), "NonMaxSuppression");
  EXPECT_EQ(g.layers[0].inputs.size(), 3u);
  // ONNX shape inference gives [?, 3]: the data-dependent dim takes the default size.
  EXPECT_EQ(out_of(g, 0).shape, (Shape{1, 3}));
  EXPECT_EQ(out_of(g, 0).dtype, DType::kInt64);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(
      notes[0],
      HasSubstr(
          "node 'nms0' (NonMaxSuppression): output 'selected' dim 0 depends on data; using 1"));
}

TEST(OnnxImport, HostLayersCompileToHostCommands) {
  OnnxImportOptions options;
  options.host_fallback = true;
  const Graph g = import_onnx(nms_model().save("nms_compile.onnx"), options);
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  ASSERT_EQ(s.commands.size(), 1u);
  EXPECT_EQ(s.commands[0].id, "H0");
  EXPECT_EQ(s.commands[0].engine, EngineKind::kHost);
  // The default host call costs 5000 cycles plus 4 per output element: [1, 3] -> 5012.
  EXPECT_EQ(s.commands[0].isolated_cycles, 5000u + 3u * 4u);
}

TEST(OnnxImport, AllUnsupportedOpsAreReportedTogether) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{4}});
  m.node("Softsign", {"x"}, {"a"}, "softsign0");
  m.node("Relu", {"a"}, {"b"}, "relu0");
  m.node("Softplus", {"x"}, {"c"}, "softplus0");
  m.output("b").output("c");
  const std::string e = import_error(m.save("two_unsupported.onnx"));
  EXPECT_THAT(e, HasSubstr("node 'softsign0' (Softsign): unsupported op 'Softsign'"));
  EXPECT_THAT(e, HasSubstr("node 'softplus0' (Softplus): unsupported op 'Softplus'"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("relu0")));
}

// A chain of unsupported nodes, each after the other (and a supported one between them): every
// one is reported, not only the first, since the later ones get their shapes from ONNX shape
// inference as a Host layer would.
TEST(OnnxImport, EveryUnsupportedNodeOfAChainIsReported) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}, std::int64_t{8}});
  m.node("Softsign", {"x"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "between");
  m.node("Softplus", {"b"}, {"c"}, "second");
  m.node("Celu", {"c"}, {"d"}, "third");
  m.output("d");
  const std::string e = import_error(m.save("chain_unsupported.onnx"));
  EXPECT_THAT(e, HasSubstr("node 'first' (Softsign): unsupported op 'Softsign'"));
  EXPECT_THAT(e, HasSubstr("node 'second' (Softplus): unsupported op 'Softplus'"));
  EXPECT_THAT(e, HasSubstr("node 'third' (Celu): unsupported op 'Celu'"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("between")));
}

// The LayerNorm of a TensorFlow BERT as tf2onnx exports it: SquaredDifference as Sub + Mul, Rsqrt
// as Sqrt + Reciprocal, and the affine part as x * s + (beta - mean * s), s = gamma / std. It
// imports and compiles without --host-fallback: Sqrt + Reciprocal become one Rsqrt, the rest
// stays element-wise vector layers.
TEST(OnnxImport, TensorFlowLayerNormWithReciprocalCompilesOnTheNpu) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{7}, std::int64_t{16}})
      .scalar("eps", 1e-12f)
      .weight("gamma", {16})
      .weight("beta", {16});
  set_ints(m.node("ReduceMean", {"x"}, {"mean"}, "LayerNorm/moments/mean"), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"}, "LayerNorm/moments/SquaredDifference");
  m.node("Mul", {"d", "d"}, {"d2"}, "LayerNorm/moments/SquaredDifference__1");
  set_ints(m.node("ReduceMean", {"d2"}, {"var"}, "LayerNorm/moments/variance"), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"}, "LayerNorm/batchnorm/add");
  m.node("Sqrt", {"ve"}, {"sq"}, "LayerNorm/batchnorm/Rsqrt");
  m.node("Reciprocal", {"sq"}, {"rs"}, "LayerNorm/batchnorm/Rsqrt__1");
  m.node("Mul", {"rs", "gamma"}, {"s"}, "LayerNorm/batchnorm/mul");
  m.node("Mul", {"x", "s"}, {"xs"}, "LayerNorm/batchnorm/mul_1");
  m.node("Mul", {"mean", "s"}, {"ms"}, "LayerNorm/batchnorm/mul_2");
  m.node("Sub", {"beta", "ms"}, {"sh"}, "LayerNorm/batchnorm/sub");
  m.node("Add", {"xs", "sh"}, {"y"}, "LayerNorm/batchnorm/add_1");
  m.output("y");
  const Graph g = import_onnx(m.save("tf_layer_norm.onnx"), {});
  check_graph(g);
  EXPECT_THAT(ops_of(g), ElementsAre("ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Rsqrt",
                                     "Mul", "Mul", "Mul", "Sub", "Add"));
  EXPECT_EQ(g.layers[5].name, "LayerNorm/batchnorm/Rsqrt");
  EXPECT_EQ(g.layers[5].attrs.get_string("fused_nodes", ""),
            "LayerNorm/batchnorm/Rsqrt+LayerNorm/batchnorm/Rsqrt__1");
  // [1, 7, 1] in, [1, 7, 1] out.
  EXPECT_EQ(out_of(g, 5).shape, (Shape{1, 7, 1}));
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  bool rsqrt = false;
  for (const Command& c : s.commands) {
    EXPECT_NE(c.engine, EngineKind::kHost);
    rsqrt = rsqrt || (c.engine == EngineKind::kVector && op_table()[c.op].name == "Rsqrt");
  }
  EXPECT_TRUE(rsqrt);
}

// The element-wise ops that have a vector op of their own import as it; a Reciprocal whose input
// is not a Sqrt stays a Reciprocal, and Div(1, Sqrt) is an Rsqrt too.
TEST(OnnxImport, UnaryMathOpsRunOnTheVectorUnit) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}})
      .input("z", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}})
      .scalar("one", 1.0f);
  m.node("Reciprocal", {"x"}, {"a"}, "recip");
  m.node("Neg", {"a"}, {"b"}, "neg");
  m.node("Abs", {"b"}, {"c"}, "abs");
  m.node("Log", {"c"}, {"d"}, "log");
  m.node("Sqrt", {"d"}, {"e"}, "sqrt");
  m.node("Div", {"one", "e"}, {"f"}, "inv");
  m.node("Max", {"f", "z", "x"}, {"g"}, "max");
  m.node("Min", {"g", "z"}, {"y"}, "min");
  m.output("y");
  const Graph g = import_onnx(m.save("unary_math.onnx"), {});
  check_graph(g);
  EXPECT_THAT(ops_of(g),
              ElementsAre("Reciprocal", "Neg", "Abs", "Log", "Rsqrt", "Max", "Max", "Min"));
  EXPECT_EQ(g.layers[6].name, "max/max2");
  const Schedule s = compile_schedule(g, load_hw_config("default"));
  for (const Command& c : s.commands) EXPECT_NE(c.engine, EngineKind::kHost);
}

// ---- (f) files that are not ONNX models
// ----------------------------------------------------------

TEST(OnnxImport, TruncatedFileIsAnInputErrorNamingIt) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}, std::int64_t{8}})
      .weight("w", {8, 3, 3, 3});
  m.node("Conv", {"x", "w"}, {"y"});
  m.output("y");
  const std::string bytes = m.bytes();
  const std::string path =
      ModelBuilder::write_file("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  const std::string e = import_error(path);
  EXPECT_THAT(e, HasSubstr(path + ": not a readable ONNX model"));
}

TEST(OnnxImport, NonOnnxFileIsAnInputErrorNamingIt) {
  const std::string text =
      ModelBuilder::write_file("notes.onnx", "these are my notes, not a model\n");
  EXPECT_THAT(import_error(text), HasSubstr(text + ": not"));
  const std::string empty = ModelBuilder::write_file("empty.onnx", "");
  EXPECT_THAT(import_error(empty), HasSubstr(empty + ": the file is empty, not an ONNX model"));
  EXPECT_THAT(import_error("/nonexistent/model.onnx"),
              HasSubstr("/nonexistent/model.onnx: cannot open file: No such file or directory"));
}

// ---- more mappings ---------------------------------------------------------------------------

TEST(OnnxImport, QdqWeightFoldsIntoInt8Constant) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}, std::int64_t{8}})
      .scalar("xs", 0.05f)
      .ints("xz", {}, {128}, TP::UINT8)
      .ints("wq", {8, 4, 1, 1}, Dims(32, 3), TP::INT8)
      .weight("ws", {8})
      .ints("wz", {8}, Dims(8, 0), TP::INT8);
  m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, "q");
  m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}, "dq");
  set_int(m.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, "dq_w"), "axis", 0);
  m.node("Conv", {"xd", "w"}, {"y"}, "conv");
  m.output("y");
  const Graph g = import_onnx(m.save("qdq.onnx"), {});
  check_graph(g);
  // The activation's DequantizeLinear folds into its reader: the Conv reads the uint8 tensor.
  ASSERT_THAT(ops_of(g), ElementsAre("Quantize", "Conv"));
  EXPECT_EQ(out_of(g, 0).dtype, DType::kUInt8);
  EXPECT_NEAR(g.layers[0].attrs.get_float("scale", 0), 0.05, 1e-7);
  EXPECT_EQ(g.layers[0].attrs.get_int("zero_point", 0), 128);
  EXPECT_EQ(in_of(g, 1, 0).name, "xq");
  EXPECT_EQ(in_of(g, 1, 0).dtype, DType::kUInt8);
  EXPECT_EQ(in_of(g, 1, 1).name, "wq");  // the int8 weight itself
  EXPECT_EQ(in_of(g, 1, 1).dtype, DType::kInt8);
  EXPECT_FALSE(g.find_tensor("xd").has_value());
  EXPECT_EQ(g.weights_bytes(), 32u);
}

TEST(OnnxImport, SumWhereClipAndViews) {
  ModelBuilder m(13);
  m.input("a", {std::int64_t{2}, std::int64_t{8}})
      .input("b", {std::int64_t{2}, std::int64_t{8}})
      .input("c", {std::int64_t{8}})
      .scalar("lo", 0.0f)
      .scalar("hi", 6.0f);
  m.node("Sum", {"a", "b", "c"}, {"s"}, "sum");
  m.node("Clip", {"s", "lo", "hi"}, {"cl"}, "clip");
  m.node("Greater", {"a", "b"}, {"g"}, "greater");  // live comparison: unsupported
  m.output("cl");
  OnnxImportOptions host;
  host.host_fallback = true;
  const Graph g = import_onnx(m.save("sum.onnx"), host);
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Add", "Add", "Clip", "Host"));
  EXPECT_EQ(g.layers[0].name, "sum");
  EXPECT_EQ(g.layers[1].name, "sum/add2");
  EXPECT_EQ(out_of(g, 1).name, "s");
  EXPECT_EQ(g.layers[2].inputs.size(), 1u);
  EXPECT_EQ(g.layers[2].attrs.get_float("min", -1), 0.0);
  EXPECT_EQ(g.layers[2].attrs.get_float("max", -1), 6.0);
  EXPECT_EQ(out_of(g, 3).dtype, DType::kBool);
  EXPECT_EQ(out_of(g, 3).shape, (Shape{2, 8}));
}

TEST(OnnxImport, WhereSplitSliceGatherMapToCopyOps) {
  ModelBuilder m(13);
  m.input("x", {std::int64_t{1}, std::int64_t{6}, std::int64_t{4}})
      .ints("mask", {1, 1, 4}, {1, 0, 1, 0}, TP::BOOL)
      .scalar("fill", -1e4f)
      .ints("split", {2}, {2, 4})
      .ints("st", {1}, {1})
      .ints("en", {1}, {100})
      .ints("ax", {1}, {2})
      .ints("idx", {2}, {0, 3});
  m.node("Where", {"mask", "x", "fill"}, {"w"}, "where");
  set_int(m.node("Split", {"w", "split"}, {"p", "q"}, "split"), "axis", 1);
  m.node("Slice", {"q", "st", "en", "ax"}, {"sl"}, "slice");
  set_int(m.node("Gather", {"sl", "idx"}, {"ga"}, "gather"), "axis", 1);
  m.output("p").output("ga");
  const Graph g = import_onnx(m.save("copies.onnx"), {});
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Gather", "Split", "Slice", "Gather"));
  EXPECT_EQ(g.layers[0].attrs.get_string("onnx_op", ""), "Where");
  EXPECT_EQ(in_of(g, 0, 0).name, "x");
  EXPECT_EQ(in_of(g, 0, 2).name, "mask");
  EXPECT_EQ(out_of(g, 1, 0).shape, (Shape{1, 2, 4}));
  EXPECT_EQ(out_of(g, 1, 1).shape, (Shape{1, 4, 4}));
  EXPECT_EQ(out_of(g, 2).shape, (Shape{1, 4, 3}));
  EXPECT_EQ(out_of(g, 3).shape, (Shape{1, 2, 3}));
}

TEST(OnnxImport, ChainOfVectorCopyAndViewOps) {
  ModelBuilder m(13);
  m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}, std::int64_t{8}})
      .ints("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1})
      .weight("roi", {0})
      .weight("scales", {4}, {1, 1, 2, 2})
      .ints("sq_axes", {2}, {2, 3})
      .ints("unsq_axes", {1}, {1})
      .weight("gamma", {4});
  set_float(m.node("LeakyRelu", {"x"}, {"a"}, "leaky"), "alpha", 0.1f);
  m.node("HardSwish", {"a"}, {"b"}, "hswish");
  m.node("Pad", {"b", "pads"}, {"c"}, "pad");  // [1,4,10,10]
  auto& mp = m.node("MaxPool", {"c"}, {"d"}, "maxpool");
  set_ints(mp, "kernel_shape", {3, 3});
  set_ints(mp, "strides", {2, 2});
  set_int(mp, "ceil_mode", 1);  // ceil((10-3)/2)+1 = 5
  set_ints(m.node("AveragePool", {"d"}, {"e"}, "avgpool"), "kernel_shape", {2, 2});  // 4
  m.node("Resize", {"e", "roi", "scales"}, {"f"}, "resize");                         // 8
  m.node("GlobalMaxPool", {"f"}, {"g"}, "gmp");                                      // [1,4,1,1]
  m.node("Squeeze", {"g", "sq_axes"}, {"h"}, "squeeze");                             // [1,4]
  m.node("Unsqueeze", {"h", "unsq_axes"}, {"i"}, "unsqueeze");                       // [1,1,4]
  m.node("LayerNormalization", {"i", "gamma"}, {"j"}, "ln");
  m.node("Softmax", {"j"}, {"k"}, "softmax");
  set_ints(m.node("Transpose", {"k"}, {"l"}, "transpose"), "perm", {0, 2, 1});  // [1,4,1]
  m.node("Flatten", {"l"}, {"n"}, "flatten");                                   // [1,4]
  m.node("LogSoftmax", {"n"}, {"y"}, "logsoftmax");
  m.output("y");
  const Graph g = import_onnx(m.save("chain.onnx"), {});
  check_graph(g);
  EXPECT_THAT(ops_of(g), ElementsAre("LeakyRelu", "HardSwish", "Pad", "MaxPool", "AveragePool",
                                     "Resize", "MaxPool", "Squeeze", "Unsqueeze", "LayerNorm",
                                     "Softmax", "Transpose", "Flatten", "LogSoftmax"));
  const std::vector<Shape> shapes = {{1, 4, 8, 8}, {1, 4, 8, 8}, {1, 4, 10, 10}, {1, 4, 5, 5},
                                     {1, 4, 4, 4}, {1, 4, 8, 8}, {1, 4, 1, 1},   {1, 4},
                                     {1, 1, 4},    {1, 1, 4},    {1, 1, 4},      {1, 4, 1},
                                     {1, 4},       {1, 4}};
  for (std::size_t k = 0; k < shapes.size(); ++k) EXPECT_EQ(out_of(g, k).shape, shapes[k]) << k;
  EXPECT_EQ(g.layers[2].attrs.get_ints("pads", {}), (Dims{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(g.layers[3].attrs.get_int("ceil_mode", 0), 1);
  EXPECT_EQ(g.layers[6].attrs.get_ints("kernel_shape", {}), (Dims{8, 8}));  // GlobalMaxPool
  EXPECT_EQ(g.layers[9].attrs.get_int("axis", 0), 2);                       // LayerNorm, -1
  EXPECT_EQ(g.layers[10].attrs.get_int("axis", 0), 2);                      // Softmax opset 13
  EXPECT_EQ(g.layers[7].attrs.get_ints("axes", {}), (Dims{2, 3}));
}

TEST(OnnxImport, QLinearConvAndMatMul) {
  ModelBuilder m(13);
  m.input("x", {std::int64_t{1}, std::int64_t{2}, std::int64_t{4}, std::int64_t{4}}, TP::UINT8)
      .scalar("s", 0.1f)
      .ints("zu", {}, {0}, TP::UINT8)
      .ints("zi", {}, {0}, TP::INT8)
      .ints("w", {4, 2, 3, 3}, Dims(72, 1), TP::INT8)
      .ints("bias", {4}, {0, 0, 0, 0}, TP::INT32)
      .ints("b", {4, 3}, Dims(12, 1), TP::INT8);
  set_ints(
      m.node("QLinearConv", {"x", "s", "zu", "w", "s", "zi", "s", "zu", "bias"}, {"c"}, "qconv"),
      "pads", {1, 1, 1, 1});
  m.node("QLinearMatMul", {"c", "s", "zu", "b", "s", "zi", "s", "zu"}, {"y"}, "qmm");
  m.output("y");
  const Graph g = import_onnx(m.save("qlinear.onnx"), {});
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Conv", "MatMul"));
  EXPECT_EQ(g.layers[0].attrs.get_string("onnx_op", ""), "QLinearConv");
  ASSERT_EQ(g.layers[0].inputs.size(), 3u);  // x, w, bias: scales and zero points dropped
  EXPECT_EQ(in_of(g, 0, 1).dtype, DType::kInt8);
  EXPECT_EQ(out_of(g, 0).shape, (Shape{1, 4, 4, 4}));
  EXPECT_EQ(out_of(g, 0).dtype, DType::kUInt8);
  EXPECT_EQ(out_of(g, 1).shape, (Shape{1, 4, 4, 3}));
  EXPECT_EQ(layer_macs(g, g.layers[0]), 64u * 18u);
  EXPECT_EQ(layer_macs(g, g.layers[1]), 48u * 4u);
  EXPECT_EQ(g.weights_bytes(), 72u + 16u + 12u);
}

TEST(OnnxImport, OneDimensionalConvIsUnsupportedOrHost) {
  ModelBuilder m;
  m.input("x", {std::int64_t{1}, std::int64_t{2}, std::int64_t{10}}).weight("w", {4, 2, 3});
  m.node("Conv", {"x", "w"}, {"y"}, "conv1d");
  m.output("y");
  const std::string path = m.save("conv1d.onnx");
  EXPECT_THAT(
      import_error(path),
      HasSubstr("node 'conv1d' (Conv): Conv on a 3-d input is not supported (only 2-d, NCHW)"));
  OnnxImportOptions host;
  host.host_fallback = true;
  const Graph g = import_onnx(path, host);
  check_graph(g);
  ASSERT_THAT(ops_of(g), ElementsAre("Host"));
  EXPECT_EQ(g.layers[0].attrs.get_string("onnx_op", ""), "Conv");
  EXPECT_EQ(out_of(g, 0).shape, (Shape{1, 4, 8}));
}

// ---- the real models in ../shared/models/onnx ---------------------------------------------------

struct RealModel {
  std::string file;
  std::map<std::string, Shape> inputs;
  std::size_t layers;  // the importer's output, checked against the facts below
};

std::string shared_model(const std::string& file) {
  return std::string(NPUSIM_SHARED_MODELS) + "/onnx/" + file;
}

Graph import_real(const RealModel& m) {
  OnnxImportOptions options;
  for (const auto& [name, shape] : m.inputs) options.input_shapes[name] = shape;
  return import_onnx(shared_model(m.file), options);
}

void PrintTo(const RealModel& m, std::ostream* os) { *os << m.file; }

class RealModels : public ::testing::TestWithParam<RealModel> {};

TEST_P(RealModels, ImportsWithStaticShapesAndPassesCheckGraph) {
  const Graph g = import_real(GetParam());
  EXPECT_NO_THROW(check_graph(g));
  EXPECT_EQ(g.layers.size(), GetParam().layers);
  for (const auto& l : g.layers) {
    EXPECT_NE(classify_op(l.op), OpClass::kUnknown) << l.name;
    EXPECT_NE(l.op, "Host") << l.name;
    EXPECT_THAT(l.loc, HasSubstr("loc(\"" + GetParam().file + "\":node "));
  }
}

const std::vector<RealModel>& real_models() {
  static const std::vector<RealModel> models = {
      {"bert_toy.onnx",
       {{"input_ids", {1, 16}}, {"token_type_ids", {1, 16}}, {"input_mask", {1, 16}}},
       170},
      {"fastestdet.onnx", {}, 218},
      {"gpt2_attention_past.onnx", {{"input", {1, 8, 768}}, {"past", {2, 1, 12, 4, 64}}}, 26},
      {"light_bvlc_alexnet.onnx", {}, 24},
      {"light_densenet121.onnx", {}, 668},
      {"light_inception_v1.onnx", {}, 143},
      {"light_inception_v2.onnx", {}, 371},
      {"light_resnet50.onnx", {}, 176},
      {"light_shufflenet.onnx", {}, 203},
      {"light_squeezenet.onnx", {}, 66},
      {"light_vgg19.onnx", {}, 46},
      {"light_zfnet512.onnx", {}, 22},
      {"mnist-8.onnx", {}, 11},
      {"mnist_cnn_pytorch.onnx", {}, 12},
      {"mnist_int8_dynamic.onnx", {}, 20},
      // QDQ: 182 DequantizeLinear - 52 weights - 52 biases - 2 of the Gemm = 76 on activations;
      // all but the one whose output is the graph output fold into their readers: 242 - 75.
      {"mobilenetv2_qdq_int8.onnx", {{"image", {1, 3, 244, 244}}}, 167},
      // 9 QuantizeLinear, 6 Conv, 3 Add and 21 - 12 (the convs' weights and biases) = 9
      // activation DequantizeLinear, of which one writes a graph output: 27 - 8.
      {"qdq_mobilenet_edgetpu_block.onnx", {}, 19},
      {"ultraface_rfb_320.onnx", {}, 126},
  };
  return models;
}

std::string model_test_name(const ::testing::TestParamInfo<RealModel>& param) {
  std::string name = param.param.file.substr(0, param.param.file.size() - 5);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(OnnxImport, RealModels, ::testing::ValuesIn(real_models()),
                         model_test_name);

TEST(OnnxImportRealModels, EveryFileIsCovered) {
  std::size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(NPUSIM_SHARED_MODELS) + "/onnx")) {
    if (entry.path().extension() == ".onnx") ++files;
  }
  EXPECT_EQ(files, real_models().size());
}

RealModel real(const std::string& file) {
  for (const auto& m : real_models()) {
    if (m.file == file) return m;
  }
  throw std::runtime_error("no such model " + file);
}

// MAC totals below were computed independently with ONNX's own shape inference (the Conv, Gemm
// and MatMul output shapes it infers, times the reduction length), not with the importer.
TEST(OnnxImportRealModels, Resnet50) {
  const Graph g = import_real(real("light_resnet50.onnx"));
  EXPECT_EQ(count_op(g, "Conv"), 53u);
  EXPECT_EQ(count_op(g, "BatchNormalization"), 53u);
  EXPECT_EQ(count_op(g, "Add"), 16u);  // the Sum of each residual block
  EXPECT_EQ(count_op(g, "MatMul"), 1u);
  // The well-known 4.09 GMACs of ResNet-50 at 224x224: convs 4,087,136,256 + fc 2048*1000.
  EXPECT_EQ(total_macs(g), 4089184256u);
  // ResNet-50's 25,557,032 parameters plus the running mean and variance of its 26,560 batch-norm
  // channels, float32 (weights made by ConstantOfShape keep their shapes).
  EXPECT_EQ(g.weights_bytes(), (25557032u + 2u * 26560u) * 4u);
  EXPECT_EQ(g.tensors[g.outputs[0]].shape, (Shape{1, 1000}));
}

TEST(OnnxImportRealModels, Mnist8) {
  const Graph g = import_real(real("mnist-8.onnx"));
  EXPECT_THAT(ops_of(g), ElementsAre("Conv", "Add", "Relu", "MaxPool", "Conv", "Add", "Relu",
                                     "MaxPool", "Reshape", "MatMul", "Add"));
  // 28*28*8*25 + 14*14*16*8*25 + 256*10.
  EXPECT_EQ(total_macs(g), 156800u + 627200u + 2560u);
  // Parameter5 8*1*5*5, Parameter6 8, Parameter87 16*8*5*5, Parameter88 16, the [256,10] weight
  // (reshaped at import), Parameter194 10; float32.
  EXPECT_EQ(g.weights_bytes(), (200u + 8u + 3200u + 16u + 2560u + 10u) * 4u);
  EXPECT_EQ(g.layers[0].attrs.get_ints("pads", {}), (Dims{2, 2, 2, 2}));  // SAME_UPPER, 5x5
}

TEST(OnnxImportRealModels, StaticModelMacs) {
  const std::map<std::string, std::uint64_t> macs = {
      {"light_vgg19.onnx", 19632062464u},
      {"light_bvlc_alexnet.onnx", 654560384u},
      {"light_squeezenet.onnx", 349151936u},
      {"mnist_cnn_pytorch.onnx", 480500u},
      {"ultraface_rfb_320.onnx", 100418560u},
      {"fastestdet.onnx", 121491744u},
      {"light_inception_v1.onnx", 1431556352u},
      {"light_densenet121.onnx", 2834161664u},
      {"qdq_mobilenet_edgetpu_block.onnx", 385351680u},
      {"light_zfnet512.onnx", 1481727008u},
      {"light_shufflenet.onnx", 124664528u},
      {"light_inception_v2.onnx", 2018851840u},
  };
  for (const auto& [file, want] : macs)
    EXPECT_EQ(total_macs(import_real(real(file))), want) << file;
}

TEST(OnnxImportRealModels, BertToyFusesLayerNormAndGelu) {
  const Graph g = import_real(real("bert_toy.onnx"));
  // 5 layers x 2 + the embedding and prediction-head LayerNorms; 5 + 1 GELUs.
  EXPECT_EQ(count_op(g, "LayerNorm"), 12u);
  EXPECT_EQ(count_op(g, "Gelu"), 6u);
  for (const char* op : {"ReduceMean", "Pow", "Sqrt", "Erf"}) EXPECT_EQ(count_op(g, op), 0u) << op;
  // 42 MatMul + 2 Gemm; the position-embedding Gather folds (its indices come from Shape).
  EXPECT_EQ(count_op(g, "MatMul"), 44u);
  EXPECT_EQ(count_op(g, "Gather"), 3u);
  EXPECT_EQ(g.tensors[g.outputs[0]].shape, (Shape{1, 16, 99}));
  EXPECT_EQ(g.tensors[g.outputs[1]].shape, (Shape{1, 2}));
}

TEST(OnnxImportRealModels, Gpt2AttentionWithPast) {
  const Graph g = import_real(real("gpt2_attention_past.onnx"));
  EXPECT_EQ(g.tensors[g.outputs[0]].shape, (Shape{1, 8, 768}));
  EXPECT_EQ(g.tensors[g.outputs[1]].shape, (Shape{2, 1, 12, 12, 64}));  // past 4 + 8 new
  // Gemm 8x768x2304, Q.K^T 12 heads x 8x64x12, P.V 12 heads x 8x12x64.
  EXPECT_EQ(total_macs(g), 8u * 768u * 2304u + 12u * 8u * 64u * 12u + 12u * 8u * 12u * 64u);
  EXPECT_EQ(count_op(g, "Softmax"), 1u);
  EXPECT_EQ(count_op(g, "Split"), 1u);
}

TEST(OnnxImportRealModels, MobilenetV2QdqKeepsInt8Weights) {
  const Graph g = import_real(real("mobilenetv2_qdq_int8.onnx"));
  EXPECT_EQ(count_op(g, "Conv"), 52u);
  std::size_t depthwise = 0;
  for (const auto& l : g.layers) {
    if (l.op != "Conv") continue;
    EXPECT_EQ(g.tensors[l.inputs[1]].dtype, DType::kInt8) << l.name;
    EXPECT_EQ(g.tensors[l.inputs[2]].dtype, DType::kInt32) << l.name;
    if (l.attrs.get_int("group", 1) > 1) ++depthwise;
  }
  EXPECT_EQ(depthwise, 17u);
  EXPECT_EQ(count_op(g, "Quantize"), 66u);
  // 182 minus 52 weights, 52 biases, Gemm's 2 = 76 on activations; all fold into their readers
  // but the last, whose output is the graph output.
  EXPECT_EQ(count_op(g, "Dequantize"), 1u);
  EXPECT_EQ(g.tensors[g.outputs[0]].shape, (Shape{1, 1000}));
}

TEST(OnnxImportRealModels, MobilenetV2QdqQuantizesItsImageInsideTheFirstConvsChain) {
  // The input QuantizeLinear heads the first chain on `default` (docs/compiler.md, "Chains of
  // convolutions"): its tiles read the float32 image [1, 3, 244, 244] once, 244 x 244 x 3 x 4 =
  // 714432 bytes, and write nothing to DRAM; the int8 image lives in local memory only while the
  // first conv's tiles need its rows.
  const Graph g = import_real(real("mobilenetv2_qdq_int8.onnx"));
  std::vector<std::string> explain;
  const Schedule s = compile_schedule(g, load_hw_config("default"), &explain);
  EXPECT_THAT(explain, ::testing::Contains(::testing::HasSubstr("[QuantizeLinear_300 x")));
  std::uint64_t in = 0, out = 0, computes = 0;
  for (const Command& c : s.commands) {
    if (s.programs.at(c.program).name != "QuantizeLinear_300") continue;
    if (c.engine == EngineKind::kDmaIn) in += c.bytes;
    if (c.engine == EngineKind::kDmaOut) out += c.bytes;
    if (c.engine == EngineKind::kVector) ++computes;
  }
  EXPECT_EQ(in, 714432u);
  EXPECT_EQ(out, 0u);
  EXPECT_GT(computes, 1u);  // tiles of rows, not the whole image at once
}

}  // namespace
}  // namespace npusim
