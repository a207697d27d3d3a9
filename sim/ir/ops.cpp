#include "sim/ir/ops.h"

namespace npusim {

const std::vector<OpInfo>& op_table() {
  // Transcendental and divide-like ops take several passes of a lane's pipeline; multi-pass
  // normalisations (softmax: max, exp, sum, divide) cost the sum of their passes.
  static const std::vector<OpInfo> table = {
      {"Gemm", EngineKind::kArray, ShapeKind::kGemm, 0},
      {"Conv", EngineKind::kArray, ShapeKind::kConv, 0},
      {"DepthwiseConv", EngineKind::kVector, ShapeKind::kConv, 1},
      {"MaxPool", EngineKind::kVector, ShapeKind::kPool, 1},
      {"AveragePool", EngineKind::kVector, ShapeKind::kPool, 1},
      {"GlobalAveragePool", EngineKind::kVector, ShapeKind::kGlobalPool, 1},
      {"Add", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Sub", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Mul", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Div", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Relu", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Clip", EngineKind::kVector, ShapeKind::kElements, 1},
      {"LeakyRelu", EngineKind::kVector, ShapeKind::kElements, 1},
      {"HardSigmoid", EngineKind::kVector, ShapeKind::kElements, 1},
      {"HardSwish", EngineKind::kVector, ShapeKind::kElements, 2},
      {"Sigmoid", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Tanh", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Erf", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Exp", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Sqrt", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Pow", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Reciprocal", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Rsqrt", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Log", EngineKind::kVector, ShapeKind::kElements, 4},
      {"Neg", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Abs", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Min", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Max", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Gelu", EngineKind::kVector, ShapeKind::kElements, 6},
      {"Softmax", EngineKind::kVector, ShapeKind::kElements, 8},
      {"LogSoftmax", EngineKind::kVector, ShapeKind::kElements, 8},
      {"LayerNorm", EngineKind::kVector, ShapeKind::kElements, 6},
      {"ReduceMean", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Quantize", EngineKind::kVector, ShapeKind::kElements, 1},
      {"Dequantize", EngineKind::kVector, ShapeKind::kElements, 1},
      {"BatchNorm", EngineKind::kVector, ShapeKind::kElements, 2},
      {"LRN", EngineKind::kVector, ShapeKind::kElements, 6},
      {"Copy", EngineKind::kVector, ShapeKind::kElements, 1},
      // The partial sums of a conv split over slices, added (one element per partial added).
      {"PartialSum", EngineKind::kVector, ShapeKind::kElements, 1},
  };
  return table;
}

OpId find_op(std::string_view name) {
  const auto& table = op_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return static_cast<OpId>(i);
  }
  return static_cast<OpId>(table.size());
}

std::string known_op_names() {
  std::string names;
  for (const OpInfo& op : op_table()) names += (names.empty() ? "" : ", ") + std::string(op.name);
  return names;
}

}  // namespace npusim
