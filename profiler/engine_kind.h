// The one engine enum: what kind of hardware unit runs a command queue. The schedule, the
// compiler, the cost model, the estimator, the platform and the profiler all read this one.
#pragma once

#include <cstdint>

namespace npusim::profiler {

// kExtHdma moves data between host DRAM and a device's DRAM, kDevHdma between two devices'
// DRAM, and kSync is a barrier between devices (the RBLN profiler's External HDMA, Device HDMA and
// Device Sync); they exist when a run has several devices or uses them.
enum class EngineKind : std::uint8_t {
  kArray,
  kVector,
  kDmaIn,
  kDmaOut,
  kHost,
  kExtHdma,
  kDevHdma,
  kSync
};

// The array and the vector unit of a slice run the schedule's SLICE commands.
constexpr bool on_slice(EngineKind kind) {
  return kind == EngineKind::kArray || kind == EngineKind::kVector;
}
constexpr bool is_dma(EngineKind kind) {
  return kind == EngineKind::kDmaIn || kind == EngineKind::kDmaOut;
}
// Transfers over the host link or a device-to-device link (not through a device's DMA port).
constexpr bool is_link(EngineKind kind) {
  return kind == EngineKind::kExtHdma || kind == EngineKind::kDevHdma;
}
constexpr bool is_multi_device(EngineKind kind) {
  return is_link(kind) || kind == EngineKind::kSync;
}

}  // namespace npusim::profiler
