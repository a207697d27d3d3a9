// The one engine enum: what kind of hardware unit runs a command queue. The schedule, the
// compiler, the cost model, the estimator, the platform and the profiler all read this one.
#pragma once

#include <cstdint>

namespace npusim::profiler {

enum class EngineKind : std::uint8_t { kArray, kVector, kDmaIn, kDmaOut, kHost };

// The array and the vector unit of a slice run the schedule's SLICE commands.
constexpr bool on_slice(EngineKind kind) {
  return kind == EngineKind::kArray || kind == EngineKind::kVector;
}
constexpr bool is_dma(EngineKind kind) {
  return kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut;
}

}  // namespace npusim::profiler
