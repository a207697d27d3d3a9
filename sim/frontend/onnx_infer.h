// Internal to the ONNX front-end: tensor values as the importer tracks them, and the per-op
// inference of output shapes, dtypes and (for small constants) element values. This is the
// importer's constant evaluator and shape propagation in one: a node whose inputs all carry data
// gets outputs with data; otherwise only shapes and dtypes.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace npusim::onnx_detail {

using Dims = std::vector<std::int64_t>;

// Constants with more elements than this keep their shape but not their values: shape arithmetic
// never needs them, and a weight's values do not matter for a cost model.
constexpr std::int64_t kMaxFoldElements = std::int64_t{1} << 16;

// A problem with one node (malformed attributes, shapes that do not fit). The importer adds the
// file and node to the message.
class OpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element values: doubles for floating-point types, int64 for integers and bool.
struct Data {
  bool is_float = false;
  std::vector<double> f;
  std::vector<std::int64_t> i;
  std::size_t size() const { return is_float ? f.size() : i.size(); }
  double as_double(std::size_t k) const { return is_float ? f[k] : static_cast<double>(i[k]); }
  // Floats truncate toward zero; NaN reads as 0 and values beyond +-9.2e18 as that bound (a cast
  // of them would be undefined).
  std::int64_t as_int(std::size_t k) const {
    if (!is_float) return i[k];
    if (!(f[k] == f[k])) return 0;
    return static_cast<std::int64_t>(f[k] < -9.2e18 ? -9.2e18 : f[k] > 9.2e18 ? 9.2e18 : f[k]);
  }
};

struct Value {
  int elem_type = 0;  // onnx::TensorProto::DataType
  Dims shape;         // every dim static
  bool constant = false;
  std::optional<Data> data;  // element values, for constants with at most kMaxFoldElements
  std::string tensor;        // graph tensor that holds it (values that alias share one)
  std::int64_t elements() const;
};

bool is_float_type(int elem_type);
std::string elem_type_name(int elem_type);  // "float32", "int64", ... as in ONNX docs
std::string dims_text(const Dims& dims);    // "[1,3,224,224]"
// numpy broadcasting; throws OpError when the shapes do not broadcast.
Dims broadcast_dims(const Dims& a, const Dims& b);

// A TensorProto as a constant Value (data when small and stored in the file). Throws OpError when
// the stored data does not match the declared shape.
Value value_from_tensor(const onnx::TensorProto& t);

// Attribute accessors with defaults.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name);
std::int64_t attr_int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback);
std::string attr_string(const onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback);
Dims attr_ints(const onnx::NodeProto& node, const std::string& name, const Dims& fallback);

// Normalises a possibly negative axis into [0, rank); throws OpError when out of range.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank);

// Integer values of a constant input (e.g. a Reshape's shape); throws OpError naming `what` when
// the input is not a constant whose values are known.
Dims const_ints(const Value* v, const std::string& what);

// Begin and end pads per spatial dim ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]) of a Conv
// or pool node, with auto_pad (SAME_UPPER, SAME_LOWER, VALID) resolved.
Dims resolve_pads(const onnx::NodeProto& node, const Dims& in_spatial, const Dims& kernel,
                  const Dims& strides, const Dims& dilations);

// Output values of `node` given its inputs (`inputs[k]` null for an absent optional input):
// shapes and dtypes, plus data when every input the op reads has data and the result is small.
// Returns nullopt for an op it does not know. Throws OpError for a malformed node or when a
// shape-defining input (a Reshape's shape, ...) is not a known constant.
std::optional<std::vector<Value>> infer_node(const onnx::NodeProto& node,
                                             const std::vector<const Value*>& inputs, int opset);

}  // namespace npusim::onnx_detail
