// The slice operations a schedule may use: which unit runs each, what shape it takes, and the
// vector unit's default cost per element. One table, read by the loader, the cost model and docs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/engine_kind.h"

namespace npusim {

// An op runs on the array (EngineKind::kArray) or the vector unit (kVector) of a slice.
using profiler::EngineKind;

// Which `shape` fields an op takes (docs/schedule.md lists them).
enum class ShapeKind : std::uint8_t {
  kGemm,        // batch, m, n, k
  kConv,        // batch, in_h, in_w, in_c, out_c, kernel_h/w, stride_h/w, pad_h/w, groups
  kPool,        // batch, in_h, in_w, channels, kernel_h/w, stride_h/w, pad_h/w
  kGlobalPool,  // batch, in_h, in_w, channels
  kElements,    // elements
};

using OpId = std::uint16_t;

struct OpInfo {
  std::string_view name;
  EngineKind unit;  // kArray or kVector
  ShapeKind shape;
  // Vector unit only: cycles one lane spends per unit of work (an element, a MAC, a window
  // element). Overridable per op with the config's slices.vector_op_cycles.
  std::uint32_t cycles_per_element;
};

const std::vector<OpInfo>& op_table();
// Index into op_table(), or op_table().size() if no op has that name.
OpId find_op(std::string_view name);
std::string known_op_names();

}  // namespace npusim
