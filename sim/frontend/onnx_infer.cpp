#include "sim/frontend/onnx_infer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "sim/util/math.h"

namespace npusim::onnx_detail {
namespace {

using TP = onnx::TensorProto;

[[noreturn]] void fail(const std::string& message) { throw OpError(message); }

// Shape arithmetic on sizes from the file: past 64 bits the model is malformed, not wrapped.
std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail("a size or window exceeds 64 bits");
  return r;
}
std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail("a size or window exceeds 64 bits");
  return r;
}
// ceil(a / b) for a >= 0 and b != 0 taken as |b| (INT64_MIN included), with util's ceil_div,
// which needs no a + b - 1 that could pass 64 bits.
std::int64_t ceil_div_by_magnitude(std::int64_t a, std::int64_t b) {
  const std::uint64_t magnitude =
      b < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
  return static_cast<std::int64_t>(ceil_div(static_cast<std::uint64_t>(a), magnitude));
}
// A dim computed in floating point (a Resize's scales): finite and within int64, else an error.
std::int64_t dim_from_double(double d) {
  if (!(d >= 0 && d < 9.2e18)) fail("scales give an output dim out of range");
  return static_cast<std::int64_t>(d);
}

// Integer arithmetic of folded constants wraps (two's complement), as in numpy and ONNX Runtime.
std::int64_t wrapping(std::uint64_t v) { return static_cast<std::int64_t>(v); }

std::int64_t product(const Dims& d, std::size_t from = 0,
                     std::size_t to = std::numeric_limits<std::size_t>::max()) {
  std::int64_t n = 1;
  for (std::size_t k = from; k < d.size() && k < to; ++k) {
    // Shapes come from the file: a product past 2^63 is a malformed model, not a wrap.
    if (__builtin_mul_overflow(n, d[k], &n))
      fail("shape " + dims_text(d) + " has more elements than fit 64 bits");
  }
  return n;
}

std::size_t elem_size(int type) {
  switch (type) {
    case TP::INT8:
    case TP::UINT8:
    case TP::BOOL:
      return 1;
    case TP::INT16:
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16:
      return 2;
    case TP::INT32:
    case TP::UINT32:
    case TP::FLOAT:
      return 4;
    case TP::INT64:
    case TP::UINT64:
    case TP::DOUBLE:
    case TP::COMPLEX64:
      return 8;
    case TP::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

// A little-endian value of type T at p (ONNX raw_data is little-endian, as is the host).
template <typename T>
T load(const char* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

float bits_to_float(std::uint32_t bits) {
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    while ((mant & 0x400u) == 0) {  // subnormal: normalise
      mant <<= 1;
      --exp;
    }
    ++exp;
    mant &= 0x3ffu;
  } else if (exp == 31) {
    return bits_to_float(sign | 0x7f800000u | (mant << 13));
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// Integer value stored in a tensor of `type`: wraps as the type would.
std::int64_t wrap_int(std::int64_t v, int type) {
  switch (type) {
    case TP::INT8:
      return static_cast<std::int8_t>(v);
    case TP::UINT8:
      return static_cast<std::uint8_t>(v);
    case TP::INT16:
      return static_cast<std::int16_t>(v);
    case TP::UINT16:
      return static_cast<std::uint16_t>(v);
    case TP::INT32:
      return static_cast<std::int32_t>(v);
    case TP::UINT32:
      return static_cast<std::uint32_t>(v);
    case TP::BOOL:
      return v != 0 ? 1 : 0;
    default:
      return v;
  }
}

std::int64_t double_to_int(double x, int type) {
  if (type == TP::BOOL) return x != 0.0 ? 1 : 0;
  if (std::isnan(x)) return 0;
  constexpr double kLimit = 9.2e18;
  const double t = std::trunc(std::clamp(x, -kLimit, kLimit));
  return wrap_int(static_cast<std::int64_t>(t), type);
}

Data make_data(int type, std::size_t n) {
  Data d;
  d.is_float = is_float_type(type);
  if (d.is_float) {
    d.f.assign(n, 0.0);
  } else {
    d.i.assign(n, 0);
  }
  return d;
}

// Stores `x` (computed as a double) at k, converting to the data's kind.
void put(Data& d, std::size_t k, double x, int type) {
  if (d.is_float) {
    d.f[k] = type == TP::FLOAT ? static_cast<double>(static_cast<float>(x)) : x;
  } else {
    d.i[k] = double_to_int(x, type);
  }
}

// Copies element `from` of `src` to element `to` of `dst` (same kind).
void copy_elem(const Data& src, std::size_t from, Data& dst, std::size_t to) {
  if (dst.is_float) {
    dst.f[to] = src.as_double(from);
  } else {
    dst.i[to] = src.as_int(from);
  }
}

Dims strides_of(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (std::size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

// For each element of `out` (row-major), the linear index of the element of `in` that numpy
// broadcasting reads.
std::vector<std::size_t> broadcast_map(const Dims& in, const Dims& out) {
  const std::size_t n = static_cast<std::size_t>(product(out));
  std::vector<std::size_t> map(n, 0);
  const Dims in_strides = strides_of(in);
  const std::size_t lead = out.size() - in.size();
  Dims idx(out.size(), 0);
  for (std::size_t e = 0; e < n; ++e) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (in[k] != 1) off += idx[lead + k] * in_strides[k];
    }
    map[e] = static_cast<std::size_t>(off);
    for (std::size_t k = out.size(); k-- > 0;) {
      if (++idx[k] < out[k]) break;
      idx[k] = 0;
    }
  }
  return map;
}

// A shape whose values are worth folding: at most kMaxFoldElements, and no negative dim making
// the product negative (such a shape is refused where it is made; this keeps a slip harmless).
bool small(const Dims& shape) {
  const std::int64_t n = product(shape);
  return n >= 0 && n <= kMaxFoldElements;
}

// Element type of an op's result: that of its first non-constant operand. A folded constant may
// keep a narrower type than the graph computes in (an int8 weight whose DequantizeLinear folded).
int result_type(const std::vector<const Value*>& xs) {
  for (const Value* x : xs) {
    if (x != nullptr && !x->constant) return x->elem_type;
  }
  for (const Value* x : xs) {
    if (x != nullptr) return x->elem_type;
  }
  return TP::FLOAT;
}

struct Ctx {
  const onnx::NodeProto& node;
  const std::vector<const Value*>& in;
  int opset;

  const Value* input(std::size_t k) const { return k < in.size() ? in[k] : nullptr; }
  const Value& need(std::size_t k) const {
    const Value* v = input(k);
    if (v == nullptr) fail("input " + std::to_string(k) + " is missing");
    return *v;
  }
  // True when inputs [0, n) that are present all carry data.
  bool all_data(std::size_t n) const {
    for (std::size_t k = 0; k < n && k < in.size(); ++k) {
      if (in[k] != nullptr && !in[k]->data) return false;
    }
    return true;
  }
};

Value make(int type, Dims shape) {
  Value v;
  v.elem_type = type;
  v.shape = std::move(shape);
  return v;
}

// Same shape and type as input 0, data copied (views: Identity, Reshape, Squeeze, ...).
Value view_of(const Value& x, Dims shape) {
  Value v = make(x.elem_type, std::move(shape));
  if (x.data) v.data = x.data;
  return v;
}

using UnaryFn = std::function<double(double)>;

Value unary(const Ctx& c, const UnaryFn& fn) {
  const Value& x = c.need(0);
  Value v = make(x.elem_type, x.shape);
  if (x.data) {
    Data d = make_data(x.elem_type, x.data->size());
    for (std::size_t k = 0; k < d.size(); ++k) put(d, k, fn(x.data->as_double(k)), x.elem_type);
    v.data = std::move(d);
  }
  return v;
}

enum class BinKind { kArith, kCompare, kLogic };

// Element-wise op over any number of broadcast inputs, folded left to right.
Value nary(const Ctx& c, BinKind kind, const std::function<double(double, double)>& ff,
           const std::function<std::int64_t(std::int64_t, std::int64_t)>& fi) {
  std::vector<const Value*> xs;
  for (const Value* v : c.in) {
    if (v != nullptr) xs.push_back(v);
  }
  if (xs.empty()) fail("has no inputs");
  Dims shape = xs[0]->shape;
  for (std::size_t k = 1; k < xs.size(); ++k) shape = broadcast_dims(shape, xs[k]->shape);
  const int out_type = kind == BinKind::kArith ? result_type(xs) : static_cast<int>(TP::BOOL);
  Value v = make(out_type, shape);
  bool have = small(shape);
  for (const Value* x : xs) have = have && x->data.has_value();
  if (!have) return v;
  const int in_type = xs[0]->elem_type;  // all constants here
  const std::size_t n = static_cast<std::size_t>(product(shape));
  // Accumulate in the input kind, then convert.
  const bool fl = is_float_type(in_type);
  std::vector<double> accf(n);
  std::vector<std::int64_t> acci(n);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const auto map = broadcast_map(xs[k]->shape, shape);
    for (std::size_t e = 0; e < n; ++e) {
      if (fl) {
        const double x = xs[k]->data->as_double(map[e]);
        accf[e] = k == 0 ? x : ff(accf[e], x);
      } else {
        const std::int64_t x = xs[k]->data->as_int(map[e]);
        acci[e] = k == 0 ? x : fi(acci[e], x);
      }
    }
  }
  Data d = make_data(out_type, n);
  for (std::size_t e = 0; e < n; ++e) {
    if (fl) {
      put(d, e, accf[e], out_type);
    } else if (d.is_float) {
      d.f[e] = static_cast<double>(acci[e]);
    } else {
      d.i[e] = wrap_int(acci[e], out_type);
    }
  }
  v.data = std::move(d);
  return v;
}

Value where(const Ctx& c) {
  const Value& cond = c.need(0);
  const Value& x = c.need(1);
  const Value& y = c.need(2);
  const Dims shape = broadcast_dims(broadcast_dims(cond.shape, x.shape), y.shape);
  Value v = make(result_type({&x, &y}), shape);
  if (!(cond.data && x.data && y.data && small(shape))) return v;
  const auto mc = broadcast_map(cond.shape, shape);
  const auto mx = broadcast_map(x.shape, shape);
  const auto my = broadcast_map(y.shape, shape);
  Data d = make_data(x.elem_type, mc.size());
  for (std::size_t e = 0; e < mc.size(); ++e) {
    if (cond.data->as_int(mc[e]) != 0) {
      copy_elem(*x.data, mx[e], d, e);
    } else {
      copy_elem(*y.data, my[e], d, e);
    }
  }
  v.data = std::move(d);
  return v;
}

Value cast_to(const Value& x, int type) {
  Value v = make(type, x.shape);
  if (x.data) {
    Data d = make_data(type, x.data->size());
    for (std::size_t k = 0; k < d.size(); ++k) {
      if (x.data->is_float || d.is_float) {
        put(d, k, x.data->as_double(k), type);
      } else {
        d.i[k] = wrap_int(x.data->i[k], type);
      }
    }
    v.data = std::move(d);
  }
  return v;
}

Value reshape(const Ctx& c) {
  const Value& x = c.need(0);
  Dims target = c.opset < 5 ? attr_ints(c.node, "shape", {}) : const_ints(c.input(1), "shape");
  const bool allow_zero = attr_int(c.node, "allowzero", 0) != 0;
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allow_zero) {
      if (k >= x.shape.size())
        fail("shape " + dims_text(target) + ": 0 at an axis the input lacks");
      target[k] = x.shape[k];
    }
    if (target[k] == -1) {
      if (infer_at >= 0) fail("shape " + dims_text(target) + " has more than one -1");
      infer_at = static_cast<int>(k);
    } else if (target[k] < 0) {
      fail("shape " + dims_text(target) + " has a negative dim");
    } else if (__builtin_mul_overflow(known, target[k], &known)) {
      fail("shape " + dims_text(target) + " has more elements than fit 64 bits");
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || x.elements() % known != 0) {
      fail("cannot reshape " + dims_text(x.shape) + " to " + dims_text(target));
    }
    target[static_cast<std::size_t>(infer_at)] = x.elements() / known;
  }
  if (product(target) != x.elements()) {
    fail("cannot reshape " + dims_text(x.shape) + " to " + dims_text(target));
  }
  return view_of(x, target);
}

Value transpose(const Ctx& c) {
  const Value& x = c.need(0);
  const std::size_t r = x.shape.size();
  Dims rev(r);
  for (std::size_t k = 0; k < r; ++k) rev[k] = static_cast<std::int64_t>(r - 1 - k);
  const Dims perm = attr_ints(c.node, "perm", rev);
  if (perm.size() != r) fail("perm " + dims_text(perm) + " does not fit rank " + std::to_string(r));
  Dims shape(r);
  std::vector<bool> seen(r, false);
  for (std::size_t k = 0; k < r; ++k) {
    const std::int64_t p = normalize_axis(perm[k], static_cast<std::int64_t>(r));
    if (seen[static_cast<std::size_t>(p)]) fail("perm " + dims_text(perm) + " repeats an axis");
    seen[static_cast<std::size_t>(p)] = true;
    shape[k] = x.shape[static_cast<std::size_t>(p)];
  }
  Value v = make(x.elem_type, shape);
  if (x.data) {
    const Dims in_strides = strides_of(x.shape);
    const std::size_t n = x.data->size();
    Data d = make_data(x.elem_type, n);
    Dims idx(r, 0);
    for (std::size_t e = 0; e < n; ++e) {
      std::int64_t off = 0;
      for (std::size_t k = 0; k < r; ++k)
        off += idx[k] * in_strides[static_cast<std::size_t>(perm[k])];
      copy_elem(*x.data, static_cast<std::size_t>(off), d, e);
      for (std::size_t k = r; k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
    v.data = std::move(d);
  }
  return v;
}

Value concat(const Ctx& c) {
  std::vector<const Value*> xs;
  for (const Value* v : c.in) {
    if (v != nullptr) xs.push_back(v);
  }
  if (xs.empty()) fail("has no inputs");
  const std::int64_t rank = static_cast<std::int64_t>(xs[0]->shape.size());
  const std::int64_t axis = normalize_axis(attr_int(c.node, "axis", 0), rank);
  const std::size_t ax = static_cast<std::size_t>(axis);
  Dims shape = xs[0]->shape;
  shape[ax] = 0;
  bool have = true;
  for (const Value* x : xs) {
    if (static_cast<std::int64_t>(x->shape.size()) != rank) fail("inputs have different ranks");
    for (std::size_t k = 0; k < x->shape.size(); ++k) {
      if (k != ax && x->shape[k] != xs[0]->shape[k]) {
        fail("input shapes " + dims_text(xs[0]->shape) + " and " + dims_text(x->shape) +
             " differ outside axis " + std::to_string(axis));
      }
    }
    shape[ax] = checked_add(shape[ax], x->shape[ax]);
    have = have && x->data.has_value();
  }
  Value v = make(result_type(xs), shape);
  if (have && small(shape)) {
    Data d = make_data(v.elem_type, static_cast<std::size_t>(product(shape)));
    const std::int64_t outer = product(shape, 0, ax);
    std::size_t o = 0;
    for (std::int64_t b = 0; b < outer; ++b) {
      for (const Value* x : xs) {
        const std::int64_t block = product(x->shape, ax);
        for (std::int64_t k = 0; k < block; ++k) {
          copy_elem(*x->data, static_cast<std::size_t>(b * block + k), d, o++);
        }
      }
    }
    v.data = std::move(d);
  }
  return v;
}

Value gather(const Ctx& c) {
  const Value& x = c.need(0);
  const Value& idx = c.need(1);
  const std::int64_t rank = static_cast<std::int64_t>(x.shape.size());
  const std::size_t ax =
      static_cast<std::size_t>(normalize_axis(attr_int(c.node, "axis", 0), rank));
  Dims shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(ax));
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(ax) + 1, x.shape.end());
  Value v = make(x.elem_type, shape);
  if (idx.data) {
    for (std::size_t k = 0; k < idx.data->size(); ++k) {
      const std::int64_t i = idx.data->as_int(k);
      if (i < -x.shape[ax] || i >= x.shape[ax]) {
        fail("index " + std::to_string(i) + " is out of range for axis of size " +
             std::to_string(x.shape[ax]));
      }
    }
  }
  if (x.data && idx.data && small(shape)) {
    const std::int64_t outer = product(x.shape, 0, ax);
    const std::int64_t inner = product(x.shape, ax + 1);
    const std::int64_t dim = x.shape[ax];
    Data d = make_data(x.elem_type, static_cast<std::size_t>(product(shape)));
    std::size_t o = 0;
    for (std::int64_t b = 0; b < outer; ++b) {
      for (std::size_t k = 0; k < idx.data->size(); ++k) {
        std::int64_t i = idx.data->as_int(k);
        if (i < 0) i += dim;
        for (std::int64_t e = 0; e < inner; ++e) {
          copy_elem(*x.data, static_cast<std::size_t>((b * dim + i) * inner + e), d, o++);
        }
      }
    }
    v.data = std::move(d);
  }
  return v;
}

Value slice(const Ctx& c) {
  const Value& x = c.need(0);
  const std::size_t r = x.shape.size();
  Dims starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = attr_ints(c.node, "starts", {});
    ends = attr_ints(c.node, "ends", {});
    axes = attr_ints(c.node, "axes", {});
  } else {
    starts = const_ints(c.input(1), "starts");
    ends = const_ints(c.input(2), "ends");
    if (c.input(3) != nullptr) axes = const_ints(c.input(3), "axes");
    if (c.input(4) != nullptr) steps = const_ints(c.input(4), "steps");
  }
  if (axes.empty()) {
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    fail("starts, ends, axes and steps have different lengths");
  }
  Dims begin(r, 0), step(r, 1), shape = x.shape;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t a =
        static_cast<std::size_t>(normalize_axis(axes[k], static_cast<std::int64_t>(r)));
    const std::int64_t dim = x.shape[a];
    const std::int64_t st = steps[k];
    if (st == 0) fail("step 0");
    std::int64_t s = starts[k];
    std::int64_t e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      shape[a] = e > s ? ceil_div_by_magnitude(e - s, st) : 0;
    } else if (dim == 0) {  // nothing to take, and clamping to [0, dim - 1] would be empty
      s = 0;
      shape[a] = 0;
    } else {
      s = std::clamp<std::int64_t>(s, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      shape[a] = s > e ? ceil_div_by_magnitude(s - e, st) : 0;
    }
    begin[a] = s;
    step[a] = st;
  }
  Value v = make(x.elem_type, shape);
  if (x.data && small(shape)) {
    const Dims in_strides = strides_of(x.shape);
    const std::size_t n = static_cast<std::size_t>(product(shape));
    Data d = make_data(x.elem_type, n);
    Dims idx(r, 0);
    for (std::size_t e = 0; e < n; ++e) {
      std::int64_t off = 0;
      for (std::size_t k = 0; k < r; ++k) off += (begin[k] + idx[k] * step[k]) * in_strides[k];
      copy_elem(*x.data, static_cast<std::size_t>(off), d, e);
      for (std::size_t k = r; k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
    v.data = std::move(d);
  }
  return v;
}

std::vector<Value> split(const Ctx& c) {
  const Value& x = c.need(0);
  const std::size_t ax = static_cast<std::size_t>(
      normalize_axis(attr_int(c.node, "axis", 0), static_cast<std::int64_t>(x.shape.size())));
  const std::size_t n = static_cast<std::size_t>(c.node.output_size());
  if (n == 0) fail("split has no outputs");  // the parts would be cut 0 ways
  Dims sizes;
  if (c.opset < 13) {
    sizes = attr_ints(c.node, "split", {});
  } else if (c.input(1) != nullptr) {
    sizes = const_ints(c.input(1), "split");
  }
  const std::int64_t dim = x.shape[ax];
  if (sizes.empty()) {
    const std::int64_t parts = static_cast<std::int64_t>(n);
    // ceil(dim / parts), without dim + parts - 1 (dim comes from the file); opset 18: the last
    // part is smaller.
    const std::int64_t chunk = ceil_div_by_magnitude(dim, parts);
    for (std::int64_t k = 0; k < parts; ++k) {
      sizes.push_back(std::min(chunk, dim - checked_mul(k, chunk)));
    }
  }
  if (sizes.size() != n)
    fail("split has " + std::to_string(sizes.size()) + " parts for " + std::to_string(n) +
         " outputs");
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0) fail("split " + dims_text(sizes) + " has a negative part");
    total = checked_add(total, s);
  }
  if (total != dim)
    fail("split " + dims_text(sizes) + " does not add up to " + std::to_string(dim));
  std::vector<Value> outs;
  std::int64_t offset = 0;
  const std::int64_t outer = product(x.shape, 0, ax);
  const std::int64_t inner = product(x.shape, ax + 1);
  for (std::int64_t s : sizes) {
    Dims shape = x.shape;
    shape[ax] = s;
    Value v = make(x.elem_type, shape);
    if (x.data && small(shape)) {
      Data d = make_data(x.elem_type, static_cast<std::size_t>(product(shape)));
      std::size_t o = 0;
      for (std::int64_t b = 0; b < outer; ++b) {
        for (std::int64_t k = 0; k < s * inner; ++k) {
          copy_elem(*x.data, static_cast<std::size_t>((b * dim + offset) * inner + k), d, o++);
        }
      }
      v.data = std::move(d);
    }
    offset += s;
    outs.push_back(std::move(v));
  }
  return outs;
}

Value squeeze(const Ctx& c) {
  const Value& x = c.need(0);
  const std::int64_t r = static_cast<std::int64_t>(x.shape.size());
  Dims axes = c.opset < 13 ? attr_ints(c.node, "axes", {})
                           : (c.input(1) != nullptr ? const_ints(c.input(1), "axes") : Dims{});
  std::vector<bool> drop(x.shape.size(), false);
  if (axes.empty()) {
    for (std::size_t k = 0; k < x.shape.size(); ++k) drop[k] = x.shape[k] == 1;
  }
  for (std::int64_t a : axes) {
    const std::size_t k = static_cast<std::size_t>(normalize_axis(a, r));
    if (x.shape[k] != 1)
      fail("cannot squeeze axis " + std::to_string(a) + " of " + dims_text(x.shape));
    drop[k] = true;
  }
  Dims shape;
  for (std::size_t k = 0; k < x.shape.size(); ++k) {
    if (!drop[k]) shape.push_back(x.shape[k]);
  }
  return view_of(x, shape);
}

Value unsqueeze(const Ctx& c) {
  const Value& x = c.need(0);
  const Dims axes = c.opset < 13 ? attr_ints(c.node, "axes", {}) : const_ints(c.input(1), "axes");
  const std::int64_t r = static_cast<std::int64_t>(x.shape.size() + axes.size());
  std::vector<bool> ins(static_cast<std::size_t>(r), false);
  for (std::int64_t a : axes) {
    const std::size_t k = static_cast<std::size_t>(normalize_axis(a, r));
    if (ins[k]) fail("axes " + dims_text(axes) + " repeat an axis");
    ins[k] = true;
  }
  Dims shape;
  std::size_t src = 0;
  for (std::size_t k = 0; k < ins.size(); ++k) shape.push_back(ins[k] ? 1 : x.shape[src++]);
  return view_of(x, shape);
}

Value flatten(const Ctx& c) {
  const Value& x = c.need(0);
  const std::int64_t r = static_cast<std::int64_t>(x.shape.size());
  std::int64_t axis = attr_int(c.node, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) fail("axis " + std::to_string(axis) + " is out of range");
  const std::size_t a = static_cast<std::size_t>(axis);
  return view_of(x, {product(x.shape, 0, a), product(x.shape, a)});
}

Value expand(const Ctx& c) {
  const Value& x = c.need(0);
  const Dims shape = broadcast_dims(x.shape, const_ints(c.input(1), "shape"));
  Value v = make(x.elem_type, shape);
  if (x.data && small(shape)) {
    const auto map = broadcast_map(x.shape, shape);
    Data d = make_data(x.elem_type, map.size());
    for (std::size_t e = 0; e < map.size(); ++e) copy_elem(*x.data, map[e], d, e);
    v.data = std::move(d);
  }
  return v;
}

Value tile(const Ctx& c) {
  const Value& x = c.need(0);
  const Dims reps = const_ints(c.input(1), "repeats");
  if (reps.size() != x.shape.size())
    fail("repeats " + dims_text(reps) + " do not fit " + dims_text(x.shape));
  Dims shape(x.shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (reps[k] < 0) fail("repeats " + dims_text(reps) + " are negative");
    shape[k] = checked_mul(x.shape[k], reps[k]);
  }
  Value v = make(x.elem_type, shape);
  if (x.data && small(shape)) {
    const Dims in_strides = strides_of(x.shape);
    const std::size_t n = static_cast<std::size_t>(product(shape));
    Data d = make_data(x.elem_type, n);
    Dims idx(shape.size(), 0);
    for (std::size_t e = 0; e < n; ++e) {
      std::int64_t off = 0;
      for (std::size_t k = 0; k < shape.size(); ++k) off += (idx[k] % x.shape[k]) * in_strides[k];
      copy_elem(*x.data, static_cast<std::size_t>(off), d, e);
      for (std::size_t k = shape.size(); k-- > 0;) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
    v.data = std::move(d);
  }
  return v;
}

double scalar_of(const Value* v, const std::string& what) {
  if (v == nullptr || !v->data || v->data->size() != 1) {
    fail(what + " must be a constant scalar known at import time");
  }
  return v->data->as_double(0);
}

Value range(const Ctx& c) {
  const Value& start = c.need(0);
  const double s = scalar_of(c.input(0), "start");
  const double limit = scalar_of(c.input(1), "limit");
  const double delta = scalar_of(c.input(2), "delta");
  if (delta == 0) fail("delta is 0");
  const double count = std::max(0.0, std::ceil((limit - s) / delta));
  if (count > 1e12) fail("range is too long");
  const std::int64_t n = static_cast<std::int64_t>(count);
  Value v = make(start.elem_type, {n});
  if (n <= kMaxFoldElements) {
    Data d = make_data(start.elem_type, static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      put(d, static_cast<std::size_t>(k), s + static_cast<double>(k) * delta, start.elem_type);
    }
    v.data = std::move(d);
  }
  return v;
}

Value constant_of_shape(const Ctx& c) {
  const Dims shape = const_ints(c.input(0), "shape");
  for (std::int64_t d : shape) {
    if (d < 0) fail("shape " + dims_text(shape) + " has a negative dim");
  }
  int type = TP::FLOAT;
  double fill = 0;
  if (const auto* a = find_attr(c.node, "value"); a != nullptr && a->has_t()) {
    const Value val = value_from_tensor(a->t());
    type = val.elem_type;
    if (val.data && val.data->size() >= 1) fill = val.data->as_double(0);
  }
  Value v = make(type, shape);
  if (small(shape)) {
    Data d = make_data(type, static_cast<std::size_t>(product(shape)));
    for (std::size_t k = 0; k < d.size(); ++k) put(d, k, fill, type);
    v.data = std::move(d);
  }
  return v;
}

Value reduce(const Ctx& c, const std::string& op) {
  const Value& x = c.need(0);
  const std::int64_t r = static_cast<std::int64_t>(x.shape.size());
  const bool axes_as_input = (op == "ReduceSum" && c.opset >= 13) || c.opset >= 18;
  Dims axes = axes_as_input ? (c.input(1) != nullptr ? const_ints(c.input(1), "axes") : Dims{})
                            : attr_ints(c.node, "axes", {});
  const bool keep = attr_int(c.node, "keepdims", 1) != 0;
  if (axes.empty() && attr_int(c.node, "noop_with_empty_axes", 0) != 0) return view_of(x, x.shape);
  std::vector<bool> red(x.shape.size(), axes.empty());
  for (std::int64_t a : axes) red[static_cast<std::size_t>(normalize_axis(a, r))] = true;
  Dims shape, kept_shape;
  for (std::size_t k = 0; k < x.shape.size(); ++k) {
    kept_shape.push_back(red[k] ? 1 : x.shape[k]);
    if (!red[k]) {
      shape.push_back(x.shape[k]);
    } else if (keep) {
      shape.push_back(1);
    }
  }
  Value v = make(x.elem_type, shape);
  if (!x.data) return v;
  const std::size_t n_out = static_cast<std::size_t>(product(kept_shape));
  std::vector<double> acc(n_out, op == "ReduceProd" ? 1.0 : 0.0);
  std::vector<bool> first(n_out, true);
  const Dims out_strides = strides_of(kept_shape);
  Dims idx(x.shape.size(), 0);
  for (std::size_t e = 0; e < x.data->size(); ++e) {
    std::int64_t o = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) o += (red[k] ? 0 : idx[k]) * out_strides[k];
    const std::size_t oi = static_cast<std::size_t>(o);
    const double val = x.data->as_double(e);
    if (op == "ReduceMax") {
      acc[oi] = first[oi] ? val : std::max(acc[oi], val);
    } else if (op == "ReduceMin") {
      acc[oi] = first[oi] ? val : std::min(acc[oi], val);
    } else if (op == "ReduceProd") {
      acc[oi] *= val;
    } else {
      acc[oi] += val;
    }
    first[oi] = false;
    for (std::size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < x.shape[k]) break;
      idx[k] = 0;
    }
  }
  const double count = static_cast<double>(x.elements()) / static_cast<double>(n_out);
  Data d = make_data(x.elem_type, n_out);
  for (std::size_t k = 0; k < n_out; ++k) {
    put(d, k, op == "ReduceMean" ? acc[k] / count : acc[k], x.elem_type);
  }
  v.data = std::move(d);
  return v;
}

// Spatial output dims of a Conv or pool.
Dims window_output(const Dims& in_spatial, const Dims& kernel, const Dims& strides,
                   const Dims& dilations, const Dims& pads, bool ceil_mode) {
  const std::size_t n = in_spatial.size();
  Dims out(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (kernel[k] < 1 || strides[k] < 1 || dilations[k] < 1) {
      fail("kernel_shape, strides and dilations must be positive");
    }
    const std::int64_t padded = checked_add(checked_add(in_spatial[k], pads[k]), pads[k + n]);
    const std::int64_t span = checked_add(checked_mul(dilations[k], kernel[k] - 1), 1);
    if (padded < span) {
      fail("window " + std::to_string(span) + " is larger than the padded input " +
           std::to_string(padded));
    }
    const std::int64_t steps = padded - span;
    out[k] = (ceil_mode ? checked_add(steps, strides[k] - 1) : steps) / strides[k] + 1;
  }
  return out;
}

struct Window {
  Dims kernel, strides, dilations, pads;
};

Window window_attrs(const Ctx& c, const Dims& in_spatial, const Dims& default_kernel) {
  const std::size_t n = in_spatial.size();
  Window w;
  w.kernel = attr_ints(c.node, "kernel_shape", default_kernel);
  if (w.kernel.size() != n)
    fail("kernel_shape " + dims_text(w.kernel) + " does not fit a " + std::to_string(n) +
         "-d input");
  w.strides = attr_ints(c.node, "strides", Dims(n, 1));
  w.dilations = attr_ints(c.node, "dilations", Dims(n, 1));
  if (w.strides.size() != n || w.dilations.size() != n)
    fail("strides or dilations do not fit the input rank");
  w.pads = resolve_pads(c.node, in_spatial, w.kernel, w.strides, w.dilations);
  return w;
}

Value conv(const Ctx& c, std::size_t w_input, int out_type) {
  const Value& x = c.need(0);
  const Value& w = c.need(w_input);
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size()) {
    fail("input " + dims_text(x.shape) + " and weight " + dims_text(w.shape) + " do not fit");
  }
  const std::int64_t group = attr_int(c.node, "group", 1);
  if (group < 1 || checked_mul(w.shape[1], group) != x.shape[1] || w.shape[0] % group != 0) {
    fail("weight " + dims_text(w.shape) + " does not fit input " + dims_text(x.shape) +
         " with group " + std::to_string(group));
  }
  const Dims spatial(x.shape.begin() + 2, x.shape.end());
  const Window win = window_attrs(c, spatial, Dims(w.shape.begin() + 2, w.shape.end()));
  const Dims out = window_output(spatial, win.kernel, win.strides, win.dilations, win.pads, false);
  Dims shape = {x.shape[0], w.shape[0]};
  shape.insert(shape.end(), out.begin(), out.end());
  return make(out_type, shape);
}

std::vector<Value> pool(const Ctx& c, const std::string& op) {
  const Value& x = c.need(0);
  if (x.shape.size() < 3) fail("input " + dims_text(x.shape) + " has no spatial dims");
  const Dims spatial(x.shape.begin() + 2, x.shape.end());
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    Dims shape = {x.shape[0], x.shape[1]};
    shape.resize(x.shape.size(), 1);
    return {make(x.elem_type, shape)};
  }
  if (find_attr(c.node, "kernel_shape") == nullptr) fail("has no kernel_shape");
  const Window win = window_attrs(c, spatial, {});
  const Dims out = window_output(spatial, win.kernel, win.strides, win.dilations, win.pads,
                                 attr_int(c.node, "ceil_mode", 0) != 0);
  Dims shape = {x.shape[0], x.shape[1]};
  shape.insert(shape.end(), out.begin(), out.end());
  std::vector<Value> outs = {make(x.elem_type, shape)};
  if (c.node.output_size() > 1) outs.push_back(make(TP::INT64, shape));  // MaxPool indices
  return outs;
}

Value matmul(const Value& a, const Value& b, int out_type) {
  Dims sa = a.shape, sb = b.shape;
  if (sa.empty() || sb.empty()) fail("operands must not be scalars");
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2]) {
    fail("operands " + dims_text(a.shape) + " x " + dims_text(b.shape) + " do not multiply");
  }
  Dims shape = broadcast_dims(Dims(sa.begin(), sa.end() - 2), Dims(sb.begin(), sb.end() - 2));
  if (!a1) shape.push_back(sa[sa.size() - 2]);
  if (!b1) shape.push_back(sb.back());
  return make(out_type, shape);
}

Value gemm(const Ctx& c) {
  const Value& a = c.need(0);
  const Value& b = c.need(1);
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    fail("operands " + dims_text(a.shape) + " and " + dims_text(b.shape) + " must be 2-d");
  }
  const bool ta = attr_int(c.node, "transA", 0) != 0;
  const bool tb = attr_int(c.node, "transB", 0) != 0;
  const std::int64_t m = ta ? a.shape[1] : a.shape[0];
  const std::int64_t k = ta ? a.shape[0] : a.shape[1];
  const std::int64_t kb = tb ? b.shape[1] : b.shape[0];
  const std::int64_t n = tb ? b.shape[0] : b.shape[1];
  if (k != kb) {
    fail("operands " + dims_text(a.shape) + (ta ? "^T" : "") + " x " + dims_text(b.shape) +
         (tb ? "^T" : "") + " do not multiply");
  }
  if (const Value* bias = c.input(2)) broadcast_dims(bias->shape, {m, n});
  return make(result_type({&a, &b}), {m, n});
}

Value pad(const Ctx& c) {
  const Value& x = c.need(0);
  const std::size_t r = x.shape.size();
  Dims pads = c.opset < 11 ? attr_ints(c.node, "pads", {}) : const_ints(c.input(1), "pads");
  Dims axes;
  if (c.input(3) != nullptr) {
    axes = const_ints(c.input(3), "axes");
  } else {
    for (std::size_t k = 0; k < r; ++k) axes.push_back(static_cast<std::int64_t>(k));
  }
  if (pads.size() != 2 * axes.size())
    fail("pads " + dims_text(pads) + " do not fit rank " + std::to_string(r));
  Dims shape = x.shape;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::size_t a =
        static_cast<std::size_t>(normalize_axis(axes[k], static_cast<std::int64_t>(r)));
    shape[a] = checked_add(shape[a], checked_add(pads[k], pads[k + axes.size()]));
    if (shape[a] < 0) fail("pads " + dims_text(pads) + " remove more than the input has");
  }
  return make(x.elem_type, shape);
}

Value resize(const Ctx& c, const std::string& op) {
  const Value& x = c.need(0);
  const std::size_t r = x.shape.size();
  const Value* scales_in = nullptr;
  const Value* sizes_in = nullptr;
  if (op == "Upsample") {
    if (c.opset < 9) {
      const auto* a = find_attr(c.node, "scales");
      if (a == nullptr) fail("has no scales");
      Dims shape(r);
      if (static_cast<std::size_t>(a->floats_size()) != r) fail("scales do not fit the input rank");
      for (std::size_t k = 0; k < r; ++k) {
        shape[k] = dim_from_double(
            std::floor(static_cast<double>(x.shape[k]) * a->floats(static_cast<int>(k))));
      }
      return make(x.elem_type, shape);
    }
    scales_in = c.input(1);
  } else if (c.opset < 11) {
    scales_in = c.input(1);
  } else {
    scales_in = c.input(2);
    sizes_in = c.input(3);
  }
  if (sizes_in != nullptr && sizes_in->elements() > 0) {
    const Dims sizes = const_ints(sizes_in, "sizes");
    if (sizes.size() != r)
      fail("sizes " + dims_text(sizes) + " do not fit rank " + std::to_string(r));
    return make(x.elem_type, sizes);
  }
  if (scales_in == nullptr || !scales_in->data || scales_in->data->size() != r) {
    fail("scales or sizes must be a constant known at import time, one value per input dim");
  }
  Dims shape(r);
  for (std::size_t k = 0; k < r; ++k) {
    shape[k] = dim_from_double(
        std::floor(static_cast<double>(x.shape[k]) * scales_in->data->as_double(k)));
  }
  return make(x.elem_type, shape);
}

double erf_fn(double x) { return std::erf(x); }

const std::map<std::string, UnaryFn>& unary_table() {
  static const std::map<std::string, UnaryFn> table = {
      {"Relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Erf", erf_fn},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Round", [](double x) { return std::nearbyint(x); }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Sign", [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {"HardSwish", [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }},
  };
  return table;
}

}  // namespace

std::int64_t Value::elements() const { return product(shape); }

bool is_float_type(int t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16;
}

std::string elem_type_name(int t) {
  switch (t) {
    case TP::FLOAT:
      return "float32";
    case TP::UINT8:
      return "uint8";
    case TP::INT8:
      return "int8";
    case TP::UINT16:
      return "uint16";
    case TP::INT16:
      return "int16";
    case TP::INT32:
      return "int32";
    case TP::INT64:
      return "int64";
    case TP::STRING:
      return "string";
    case TP::BOOL:
      return "bool";
    case TP::FLOAT16:
      return "float16";
    case TP::DOUBLE:
      return "float64";
    case TP::UINT32:
      return "uint32";
    case TP::UINT64:
      return "uint64";
    case TP::COMPLEX64:
      return "complex64";
    case TP::COMPLEX128:
      return "complex128";
    case TP::BFLOAT16:
      return "bfloat16";
    default:
      return "type " + std::to_string(t);
  }
}

Dims broadcast_dims(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()));
  for (std::size_t k = 0; k < out.size(); ++k) {
    const std::int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const std::int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da < 0 || db < 0) {
      fail("shapes " + dims_text(a) + " and " + dims_text(b) + " have a negative dim");
    }
    if (da != db && da != 1 && db != 1) {
      fail("shapes " + dims_text(a) + " and " + dims_text(b) + " do not broadcast");
    }
    out[out.size() - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

std::string dims_text(const Dims& dims) {
  std::string s = "[";
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
  return s + "]";
}

Value value_from_tensor(const TP& t) {
  Value v;
  v.elem_type = t.data_type();
  v.constant = true;
  v.tensor = t.name();
  for (std::int64_t d : t.dims()) {
    if (d < 0) fail("tensor '" + t.name() + "' has a negative dim");
    v.shape.push_back(d);
  }
  const std::int64_t n = v.elements();
  if (t.data_location() == TP::EXTERNAL) return v;  // values in another file; the shape suffices
  const int type = v.elem_type;
  const std::size_t esize = elem_size(type);
  if (esize == 0 || type == TP::COMPLEX64 || type == TP::COMPLEX128) return v;
  const std::size_t count = static_cast<std::size_t>(n);
  const bool raw = t.has_raw_data();
  std::size_t stored = 0;
  if (raw) {
    if (t.raw_data().size() != count * esize) {
      fail("tensor '" + t.name() + "' holds " + std::to_string(t.raw_data().size()) +
           " bytes, its shape " + dims_text(v.shape) + " of " + elem_type_name(type) + " needs " +
           std::to_string(count * esize));
    }
    stored = count;
  } else {
    switch (type) {
      case TP::FLOAT:
        stored = static_cast<std::size_t>(t.float_data_size());
        break;
      case TP::DOUBLE:
        stored = static_cast<std::size_t>(t.double_data_size());
        break;
      case TP::INT64:
        stored = static_cast<std::size_t>(t.int64_data_size());
        break;
      case TP::UINT32:
      case TP::UINT64:
        stored = static_cast<std::size_t>(t.uint64_data_size());
        break;
      default:
        stored = static_cast<std::size_t>(t.int32_data_size());
        break;
    }
    if (stored != count) {
      fail("tensor '" + t.name() + "' holds " + std::to_string(stored) + " values, its shape " +
           dims_text(v.shape) + " needs " + std::to_string(count));
    }
  }
  if (n > kMaxFoldElements) return v;
  Data d = make_data(type, count);
  const char* bytes = raw ? t.raw_data().data() : nullptr;
  for (std::size_t k = 0; k < count; ++k) {
    double f = 0;
    std::int64_t i = 0;
    if (raw) {
      const char* p = bytes + k * esize;
      switch (type) {
        case TP::FLOAT:
          f = load<float>(p);
          break;
        case TP::DOUBLE:
          f = load<double>(p);
          break;
        case TP::FLOAT16:
          f = half_to_float(load<std::uint16_t>(p));
          break;
        case TP::BFLOAT16:
          f = bits_to_float(std::uint32_t{load<std::uint16_t>(p)} << 16);
          break;
        case TP::INT8:
          i = load<std::int8_t>(p);
          break;
        case TP::UINT8:
        case TP::BOOL:
          i = load<std::uint8_t>(p);
          break;
        case TP::INT16:
          i = load<std::int16_t>(p);
          break;
        case TP::UINT16:
          i = load<std::uint16_t>(p);
          break;
        case TP::INT32:
          i = load<std::int32_t>(p);
          break;
        case TP::UINT32:
          i = load<std::uint32_t>(p);
          break;
        case TP::INT64:
          i = load<std::int64_t>(p);
          break;
        case TP::UINT64:
          i = static_cast<std::int64_t>(load<std::uint64_t>(p));
          break;
        default:
          break;
      }
    } else {
      const int ki = static_cast<int>(k);
      switch (type) {
        case TP::FLOAT:
          f = t.float_data(ki);
          break;
        case TP::DOUBLE:
          f = t.double_data(ki);
          break;
        case TP::FLOAT16:
          f = half_to_float(static_cast<std::uint16_t>(t.int32_data(ki)));
          break;
        case TP::BFLOAT16:
          f = bits_to_float(static_cast<std::uint32_t>(t.int32_data(ki) & 0xffff) << 16);
          break;
        case TP::INT64:
          i = t.int64_data(ki);
          break;
        case TP::UINT32:
        case TP::UINT64:
          i = static_cast<std::int64_t>(t.uint64_data(ki));
          break;
        default:
          i = wrap_int(t.int32_data(ki), type);
          break;
      }
    }
    if (d.is_float) {
      d.f[k] = f;
    } else {
      d.i[k] = i;
    }
  }
  v.data = std::move(d);
  return v;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t attr_int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  const auto* a = find_attr(node, name);
  return a != nullptr && a->has_i() ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attr(node, name);
  return a != nullptr && a->has_f() ? a->f() : fallback;
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attr(node, name);
  return a != nullptr && a->has_s() ? a->s() : fallback;
}

Dims attr_ints(const onnx::NodeProto& node, const std::string& name, const Dims& fallback) {
  const auto* a = find_attr(node, name);
  if (a == nullptr) return fallback;
  return Dims(a->ints().begin(), a->ints().end());
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

Dims const_ints(const Value* v, const std::string& what) {
  if (v == nullptr) fail(what + " is missing");
  if (!v->constant || !v->data) {
    fail(what + " is not a constant known at import time (it depends on data, not only on shapes)");
  }
  Dims out(v->data->size());
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = v->data->as_int(k);
  return out;
}

Dims resolve_pads(const onnx::NodeProto& node, const Dims& in_spatial, const Dims& kernel,
                  const Dims& strides, const Dims& dilations) {
  const std::size_t n = in_spatial.size();
  const std::string mode = attr_string(node, "auto_pad", "NOTSET");
  if (mode == "NOTSET" || mode.empty()) {
    Dims pads = attr_ints(node, "pads", Dims(2 * n, 0));
    if (pads.size() != 2 * n)
      fail("pads " + dims_text(pads) + " do not fit a " + std::to_string(n) + "-d input");
    for (std::int64_t p : pads) {
      if (p < 0) fail("pads " + dims_text(pads) + " are negative");
    }
    return pads;
  }
  if (mode == "VALID") return Dims(2 * n, 0);
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") fail("unknown auto_pad '" + mode + "'");
  Dims pads(2 * n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    if (kernel[k] < 1 || strides[k] < 1 || dilations[k] < 1) {
      fail("kernel_shape, strides and dilations must be positive");
    }
    const std::int64_t out = checked_add(in_spatial[k], strides[k] - 1) / strides[k];
    const std::int64_t total =
        std::max<std::int64_t>(0, checked_add(checked_add(checked_mul(out - 1, strides[k]),
                                                          checked_mul(kernel[k] - 1, dilations[k])),
                                              1) -
                                      in_spatial[k]);
    const std::int64_t small_half = total / 2;
    pads[k] = mode == "SAME_UPPER" ? small_half : total - small_half;
    pads[k + n] = total - pads[k];
  }
  return pads;
}

std::optional<std::vector<Value>> infer_node(const onnx::NodeProto& node,
                                             const std::vector<const Value*>& inputs, int opset) {
  const Ctx c{node, inputs, opset};
  const std::string& op = node.op_type();
  using V = std::vector<Value>;

  if (op == "Constant") {
    if (const auto* a = find_attr(node, "value"); a != nullptr && a->has_t()) {
      return V{value_from_tensor(a->t())};
    }
    Value v;
    Data d;
    if (const auto* a = find_attr(node, "value_float")) {
      v = make(TP::FLOAT, {});
      d = make_data(TP::FLOAT, 1);
      d.f[0] = a->f();
    } else if (const auto* ai = find_attr(node, "value_int")) {
      v = make(TP::INT64, {});
      d = make_data(TP::INT64, 1);
      d.i[0] = ai->i();
    } else if (const auto* af = find_attr(node, "value_floats")) {
      v = make(TP::FLOAT, {af->floats_size()});
      d = make_data(TP::FLOAT, static_cast<std::size_t>(af->floats_size()));
      for (int k = 0; k < af->floats_size(); ++k) d.f[static_cast<std::size_t>(k)] = af->floats(k);
    } else if (const auto* ais = find_attr(node, "value_ints")) {
      v = make(TP::INT64, {ais->ints_size()});
      d = make_data(TP::INT64, static_cast<std::size_t>(ais->ints_size()));
      for (int k = 0; k < ais->ints_size(); ++k) d.i[static_cast<std::size_t>(k)] = ais->ints(k);
    } else {
      return std::nullopt;  // sparse_value, strings: not for an NPU
    }
    v.data = std::move(d);
    v.constant = true;
    return V{v};
  }
  if (op == "Shape") {
    const Value& x = c.need(0);
    const std::int64_t r = static_cast<std::int64_t>(x.shape.size());
    std::int64_t start = attr_int(node, "start", 0);
    std::int64_t end = attr_int(node, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<std::int64_t>(start, 0, r);
    end = std::clamp<std::int64_t>(end, start, r);
    Value v = make(TP::INT64, {end - start});
    Data d = make_data(TP::INT64, static_cast<std::size_t>(end - start));
    for (std::int64_t k = start; k < end; ++k) {
      d.i[static_cast<std::size_t>(k - start)] = x.shape[static_cast<std::size_t>(k)];
    }
    v.data = std::move(d);
    return V{v};
  }
  if (op == "Size") {
    Value v = make(TP::INT64, {});
    Data d = make_data(TP::INT64, 1);
    d.i[0] = c.need(0).elements();
    v.data = std::move(d);
    return V{v};
  }
  if (op == "ConstantOfShape") return V{constant_of_shape(c)};
  if (op == "Range") return V{range(c)};
  if (op == "Identity") return V{view_of(c.need(0), c.need(0).shape)};
  if (op == "Dropout") {
    V outs = {view_of(c.need(0), c.need(0).shape)};
    if (node.output_size() > 1) outs.push_back(make(TP::BOOL, c.need(0).shape));
    return outs;
  }
  if (op == "Cast") {
    const auto* to = find_attr(node, "to");
    if (to == nullptr || !to->has_i()) fail("has no 'to'");
    return V{cast_to(c.need(0), static_cast<int>(to->i()))};
  }
  if (op == "CastLike") return V{cast_to(c.need(0), c.need(1).elem_type)};
  if (op == "Reshape") return V{reshape(c)};
  if (op == "Flatten") return V{flatten(c)};
  if (op == "Squeeze") return V{squeeze(c)};
  if (op == "Unsqueeze") return V{unsqueeze(c)};
  if (op == "Transpose") return V{transpose(c)};
  if (op == "Concat") return V{concat(c)};
  if (op == "Gather") return V{gather(c)};
  if (op == "Slice") return V{slice(c)};
  if (op == "Split") return split(c);
  if (op == "Expand") return V{expand(c)};
  if (op == "Tile") return V{tile(c)};
  if (op == "Where") return V{where(c)};

  if (const auto it = unary_table().find(op); it != unary_table().end())
    return V{unary(c, it->second)};
  if (op == "Not") return V{unary(c, [](double x) { return x == 0 ? 1.0 : 0.0; })};
  if (op == "LeakyRelu") {
    const double alpha = attr_float(node, "alpha", 0.01f);
    return V{unary(c, [alpha](double x) { return x >= 0 ? x : alpha * x; })};
  }
  if (op == "HardSigmoid") {
    const double alpha = attr_float(node, "alpha", 0.2f);
    const double beta = attr_float(node, "beta", 0.5f);
    return V{unary(c, [alpha, beta](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); })};
  }
  if (op == "Clip") {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    if (opset < 11) {
      lo = attr_float(node, "min", -std::numeric_limits<float>::max());
      hi = attr_float(node, "max", std::numeric_limits<float>::max());
    } else {
      if (c.input(1) != nullptr && c.input(1)->data) lo = c.input(1)->data->as_double(0);
      if (c.input(2) != nullptr && c.input(2)->data) hi = c.input(2)->data->as_double(0);
      const bool missing = (c.input(1) != nullptr && !c.input(1)->data) ||
                           (c.input(2) != nullptr && !c.input(2)->data);
      if (missing) return V{make(c.need(0).elem_type, c.need(0).shape)};
    }
    return V{unary(c, [lo, hi](double x) { return std::clamp(x, lo, hi); })};
  }
  if (op == "Softmax" || op == "LogSoftmax" || op == "LRN") {
    normalize_axis(attr_int(node, "axis", -1), static_cast<std::int64_t>(c.need(0).shape.size()));
    return V{make(c.need(0).elem_type, c.need(0).shape)};
  }

  using U = std::uint64_t;
  if (op == "Add" || op == "Sum") {
    return V{nary(
        c, BinKind::kArith, [](double a, double b) { return a + b; },
        [](std::int64_t a, std::int64_t b) { return wrapping(U(a) + U(b)); })};
  }
  if (op == "Sub") {
    return V{nary(
        c, BinKind::kArith, [](double a, double b) { return a - b; },
        [](std::int64_t a, std::int64_t b) { return wrapping(U(a) - U(b)); })};
  }
  if (op == "Mul") {
    return V{nary(
        c, BinKind::kArith, [](double a, double b) { return a * b; },
        [](std::int64_t a, std::int64_t b) { return wrapping(U(a) * U(b)); })};
  }
  if (op == "Div") {
    return V{nary(
        c, BinKind::kArith, [](double a, double b) { return a / b; },
        [](std::int64_t a, std::int64_t b) {
          if (b == 0) fail("integer division by zero");
          if (b == -1) return wrapping(U(0) - U(a));  // INT64_MIN / -1 wraps
          return a / b;
        })};
  }
  if (op == "Pow") {
    if (c.input(1) == nullptr) fail("input 1 is missing");
    Value v = nary(
        c, BinKind::kArith, [](double a, double b) { return std::pow(a, b); },
        [](std::int64_t a, std::int64_t b) {
          return double_to_int(std::pow(static_cast<double>(a), static_cast<double>(b)), TP::INT64);
        });
    return V{v};
  }
  if (op == "Min" || op == "Max") {
    const bool mn = op == "Min";
    return V{nary(
        c, BinKind::kArith,
        [mn](double a, double b) { return mn ? std::min(a, b) : std::max(a, b); },
        [mn](std::int64_t a, std::int64_t b) { return mn ? std::min(a, b) : std::max(a, b); })};
  }
  if (op == "Mod") {
    return V{nary(
        c, BinKind::kArith, [](double a, double b) { return std::fmod(a, b); },
        [](std::int64_t a, std::int64_t b) {
          if (b == 0) fail("integer modulo by zero");
          if (b == -1) return std::int64_t{0};  // INT64_MIN % -1 would trap
          const std::int64_t m = a % b;         // Python-style sign, as ONNX with fmod=0
          return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
        })};
  }
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
      op == "GreaterOrEqual") {
    const std::function<bool(double, double)> cmp =
        op == "Equal"
            ? std::function<bool(double, double)>([](double a, double b) { return a == b; })
        : op == "Less"
            ? std::function<bool(double, double)>([](double a, double b) { return a < b; })
        : op == "Greater"
            ? std::function<bool(double, double)>([](double a, double b) { return a > b; })
        : op == "LessOrEqual"
            ? std::function<bool(double, double)>([](double a, double b) { return a <= b; })
            : std::function<bool(double, double)>([](double a, double b) { return a >= b; });
    if (c.in.size() != 2) fail("needs 2 inputs");
    // Compare whole inputs, not a left fold: evaluate pairwise and return bools.
    Value v = nary(
        c, BinKind::kCompare, [cmp](double a, double b) { return cmp(a, b) ? 1.0 : 0.0; },
        [cmp](std::int64_t a, std::int64_t b) -> std::int64_t {
          return cmp(static_cast<double>(a), static_cast<double>(b)) ? 1 : 0;
        });
    return V{v};
  }
  if (op == "And" || op == "Or" || op == "Xor") {
    const auto f = [op](std::int64_t a, std::int64_t b) -> std::int64_t {
      const bool x = a != 0, y = b != 0;
      return op == "And" ? (x && y) : op == "Or" ? (x || y) : (x != y);
    };
    return V{nary(
        c, BinKind::kLogic,
        [f](double a, double b) { return static_cast<double>(f(a != 0 ? 1 : 0, b != 0 ? 1 : 0)); },
        f)};
  }
  if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" ||
      op == "ReduceMin") {
    return V{reduce(c, op)};
  }

  if (op == "Conv") return V{conv(c, 1, c.need(0).elem_type)};
  if (op == "ConvInteger") return V{conv(c, 1, TP::INT32)};
  if (op == "QLinearConv") {
    return V{
        conv(c, 3, c.input(7) != nullptr ? c.input(7)->elem_type : static_cast<int>(TP::UINT8))};
  }
  if (op == "MatMul") return V{matmul(c.need(0), c.need(1), result_type({c.input(0), c.input(1)}))};
  if (op == "MatMulInteger") return V{matmul(c.need(0), c.need(1), TP::INT32)};
  if (op == "QLinearMatMul") {
    return V{matmul(c.need(0), c.need(3),
                    c.input(7) != nullptr ? c.input(7)->elem_type : static_cast<int>(TP::UINT8))};
  }
  if (op == "Gemm") return V{gemm(c)};
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
      op == "GlobalMaxPool") {
    return pool(c, op);
  }
  if (op == "BatchNormalization") {
    const Value& x = c.need(0);
    if (x.shape.size() < 2) fail("input " + dims_text(x.shape) + " has no channel dim");
    V outs = {make(x.elem_type, x.shape)};
    for (int k = 1; k < node.output_size(); ++k) outs.push_back(make(x.elem_type, {x.shape[1]}));
    return outs;
  }
  if (op == "LayerNormalization") {
    const Value& x = c.need(0);
    const std::int64_t r = static_cast<std::int64_t>(x.shape.size());
    const std::size_t axis =
        static_cast<std::size_t>(normalize_axis(attr_int(node, "axis", -1), r));
    Dims stat = x.shape;
    for (std::size_t k = axis; k < stat.size(); ++k) stat[k] = 1;
    V outs = {make(x.elem_type, x.shape)};
    for (int k = 1; k < node.output_size(); ++k) outs.push_back(make(TP::FLOAT, stat));
    return outs;
  }
  if (op == "Pad") return V{pad(c)};
  if (op == "Resize" || op == "Upsample") return V{resize(c, op)};
  if (op == "QuantizeLinear") {
    const Value* zp = c.input(2);
    return V{make(zp != nullptr ? zp->elem_type : static_cast<int>(TP::UINT8), c.need(0).shape)};
  }
  if (op == "DequantizeLinear") {
    const Value* scale = c.input(1);
    return V{
        make(scale != nullptr ? scale->elem_type : static_cast<int>(TP::FLOAT), c.need(0).shape)};
  }
  if (op == "DynamicQuantizeLinear") {
    return V{make(TP::UINT8, c.need(0).shape), make(TP::FLOAT, {}), make(TP::UINT8, {})};
  }
  return std::nullopt;
}

}  // namespace npusim::onnx_detail
