#include "sim/ir/ops.h"

namespace npusim {

const std::vector<OpInfo>& op_table() {
  // Transcendental and divide-like ops take several passes of a lane's pipeline; multi-pass
  // normalisations (softmax: max, exp, sum, divide) cost the sum of their passes.
  static const std::vector<OpInfo> table = {
      {"Gemm", Unit::kArray, ShapeKind::kGemm, 0},
      {"Conv", Unit::kArray, ShapeKind::kConv, 0},
      {"DepthwiseConv", Unit::kVector, ShapeKind::kConv, 1},
      {"MaxPool", Unit::kVector, ShapeKind::kPool, 1},
      {"AveragePool", Unit::kVector, ShapeKind::kPool, 1},
      {"GlobalAveragePool", Unit::kVector, ShapeKind::kGlobalPool, 1},
      {"Add", Unit::kVector, ShapeKind::kElements, 1},
      {"Sub", Unit::kVector, ShapeKind::kElements, 1},
      {"Mul", Unit::kVector, ShapeKind::kElements, 1},
      {"Div", Unit::kVector, ShapeKind::kElements, 4},
      {"Relu", Unit::kVector, ShapeKind::kElements, 1},
      {"Clip", Unit::kVector, ShapeKind::kElements, 1},
      {"LeakyRelu", Unit::kVector, ShapeKind::kElements, 1},
      {"HardSigmoid", Unit::kVector, ShapeKind::kElements, 1},
      {"HardSwish", Unit::kVector, ShapeKind::kElements, 2},
      {"Sigmoid", Unit::kVector, ShapeKind::kElements, 4},
      {"Tanh", Unit::kVector, ShapeKind::kElements, 4},
      {"Erf", Unit::kVector, ShapeKind::kElements, 4},
      {"Exp", Unit::kVector, ShapeKind::kElements, 4},
      {"Sqrt", Unit::kVector, ShapeKind::kElements, 4},
      {"Pow", Unit::kVector, ShapeKind::kElements, 4},
      {"Gelu", Unit::kVector, ShapeKind::kElements, 6},
      {"Softmax", Unit::kVector, ShapeKind::kElements, 8},
      {"LogSoftmax", Unit::kVector, ShapeKind::kElements, 8},
      {"LayerNorm", Unit::kVector, ShapeKind::kElements, 6},
      {"ReduceMean", Unit::kVector, ShapeKind::kElements, 1},
      {"Quantize", Unit::kVector, ShapeKind::kElements, 1},
      {"Dequantize", Unit::kVector, ShapeKind::kElements, 1},
      {"BatchNorm", Unit::kVector, ShapeKind::kElements, 2},
      {"LRN", Unit::kVector, ShapeKind::kElements, 6},
      {"Copy", Unit::kVector, ShapeKind::kElements, 1},
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
