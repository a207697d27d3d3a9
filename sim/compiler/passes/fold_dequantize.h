// Pass: folds each DequantizeLinear of an activation into its readers, so that QDQ-quantised
// models (QuantizeLinear -> DequantizeLinear around every op, as ONNX Runtime's and TensorFlow's
// quantisers export them) move int8 tensors, not float ones.
//
// For a `Dequantize` layer whose input q is not a constant, every reader of its output d reads q
// instead, and the layer is removed unless d is a graph output (then it stays, for that output
// alone): the reader loads the integer tensor and
// dequantises it as it loads (an integer Conv or MatMul needs no dequantised operand at all).
// A layer that moves no data (moves_no_data: `Reshape`, `Concat`, `Slice`, a row-keeping
// `Transpose`, ...) and then reads only integer tensors of one dtype,
// so its outputs take that dtype, and so on down the chain. The matching `Quantize` that wrote q
// stays a layer; fuse_layer_groups fuses it into its producer's epilogue, which then stores q.
//
// The ONNX importer runs this pass on every graph it imports (sim/frontend/onnx_import.h), after
// folding the DequantizeLinear of constant weights. A graph JSON keeps its Dequantize layers.
#pragma once

#include <cstddef>

#include "sim/ir/graph.h"

namespace npusim {

// Returns how many Dequantize layers it removed. Tensors no layer reads or writes any longer are
// removed, and the others renumbered in their order.
std::size_t fold_dequantize(Graph& graph);

}  // namespace npusim
