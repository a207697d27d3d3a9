// Pass: cuts the graph's layers into layer groups, the unit the compiler tiles and emits. A group
// is one layer, or an array layer with the layers it fuses into its epilogue, in this order: a
// Cast of its output to any dtype (the output stage converts every element on its way out, as
// ConvInteger/MatMulInteger's int32 -> float); a Conv's BatchNormalization or a MatMul's Add of a
// bias (per output column, or a scalar); a MatMul's Mul/Div by a scalar constant, and a bias
// after it; a Conv's Mul/Div then Add/Sub of per-channel constants (Caffe's Scale); a Conv's
// residual Add of an earlier activation; one activation, or x * sigmoid(x) / x * hardsigmoid(x)
// (SiLU, HardSwish, the Mul reading x a second time); a Quantize, and after a Conv's Quantize
// with no residual yet, a residual Add, an activation and a second Quantize (QDQ models
// requantise before the residual). An element-wise vector layer
// takes a chain of element-wise layers whose other operands are constants, which may end with a
// Softmax or LayerNorm over the last axis of a row-major tensor; a vector layer's group may end
// with a Quantize.
// A layer fuses only when it is the only reader of the previous one's output (the x * f(x) form:
// the f and the Mul are x's only two readers) and that output is not a graph output
// (docs/compiler.md, "Groups and fusion").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/ir/graph.h"

namespace npusim {

// Layers compiled as one: the head's op runs on the tiles and the fused layers cost nothing.
struct LayerGroup {
  std::vector<std::uint32_t> layers;           // indices into Graph::layers; the first is the head
  std::uint32_t output = 0;                    // the tensor the group writes
  std::vector<std::uint32_t> extra_constants;  // fused bias tensors, loaded with the weights
  // A fused residual Add's other operand: each tile also loads its share of it (same shape and
  // dtype as the Add's output).
  std::optional<std::uint32_t> residual;
  std::string name;  // the layer's, or fused(<name>+<name>+...)
  std::string loc;   // the layer's, or loc(fused[<loc>, <loc>, ...])
};

// How a group compiles, by its head layer's op (docs/compiler.md, "What each kind of layer
// becomes").
enum class GroupKind : std::uint8_t {
  kView,        // moves_no_data (Reshape, Concat, Slice, row-keeping Transpose, ...): no command
  kHost,        // one HOST command
  kSpatial,     // Conv, MaxPool, AveragePool: tiles of rows, columns and channel chunks
  kMatMul,      // row and column tiles of Gemm, or K-split tiles
  kGlobalPool,  // channel tiles
  kVector,      // other vector and copy ops: tiles of rows
  kUnknown,     // an op the NPU cannot run: an error
};
GroupKind group_kind(const Graph& graph, const LayerGroup& group);

// The groups in the order the compiler emits them: by head, in layer order. Every layer is in
// exactly one group. An element-wise chain stops before a layer that would take the constants it
// loads once (its head's included) past `chain_constant_bytes`: the compiler passes its
// weight-chunk budget, so a chain fits wherever its head alone does. `image` (per tensor: an NHWC
// image, as assign_layouts lays out groups made without it; fusion changes no tensor's layout)
// tells which constants the tiles stream by rows rather than load once (without it, all count),
// and which tensors are row-major, the only ones a chain may end on a Softmax or LayerNorm of
// (without it, none does).
std::vector<LayerGroup> fuse_layer_groups(
    const Graph& graph,
    std::uint64_t chain_constant_bytes = std::numeric_limits<std::uint64_t>::max(),
    const std::vector<bool>* image = nullptr);

}  // namespace npusim
