// Pass: replaces a decomposed LayerNorm, GELU or reciprocal square root by one LayerNorm / Gelu /
// Rsqrt layer.
//
//  - LayerNorm: ReduceMean (keepdims, over trailing axes), Sub, Pow 2 or Mul x*x, ReduceMean over
//    the same axes, Add eps, Sqrt, Div, then optionally Mul by a constant scale and Add a
//    constant bias. The layer reads [x, scale?, bias?] and has int attr `axis` (the first
//    reduced axis) and float attr `epsilon`.
//  - GELU: 0.5 * x * (1 + Erf(x / sqrt 2)), with Div sqrt 2 or Mul 1/sqrt 2, in the orders
//    (x * e) * 0.5, x * (e * 0.5) and (x * 0.5) * e. The layer reads [x].
//  - Rsqrt: Sqrt then Reciprocal (TensorFlow's Rsqrt as tf2onnx exports it), or Div(1, Sqrt).
//    The layer reads [x].
//
// A pattern fuses only when its intermediate tensors are read by no layer outside it and are not
// graph outputs. The fused layer takes the place of the pattern's last layer, the name and `loc`
// of its first, and lists all of their names in string attr "fused_nodes" ("a+b+c"). Tensors
// only the removed layers read or wrote are removed; the others keep their order.
//
// The Graph IR carries no constant values, so the caller gives the values of the scalar
// constants it knows (one element each): the patterns hold only for particular ones (eps is any
// value; the exponent is 2, the GELU constants sqrt 2, 1 and 0.5). The ONNX importer runs this
// pass on every graph it imports (sim/frontend/onnx_import.h).
#pragma once

#include <cstdint>
#include <map>

#include "sim/ir/graph.h"

namespace npusim {

using ScalarValues = std::map<std::uint32_t, double>;  // constant tensor -> its one value

// Returns how many layers it made (LayerNorm, Gelu and Rsqrt).
std::size_t fuse_layer_norm_gelu(Graph& graph, const ScalarValues& scalars);

}  // namespace npusim
