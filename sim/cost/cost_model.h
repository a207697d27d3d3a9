// The cost model: pure functions of a command and the config, shared by the estimator and the
// SystemC platform so that their difference is exactly the dynamic effects (docs/cost-model.md).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim::cost {

using Cycles = std::uint64_t;
__extension__ using Ticks = unsigned __int128;

// Cycles of one GEMM (m x k times k x n) on a rows x cols systolic array, after SCALE-Sim's
// analytical model: the operands fold onto the array in ceil(Sr/rows) * ceil(Sc/cols) folds, each
// costing its fill, stream and drain, 2*rows + cols + T - 2 cycles, where the dataflow picks
// (Sr, Sc, T): os (m, n, k), ws (k, n, m), is (k, m, n). Throws std::overflow_error.
Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k);

struct SliceCost {
  Cycles cycles = 0;       // on the command's unit, at least 1
  std::uint64_t macs = 0;         // multiply-accumulates on the systolic array
  std::uint64_t vector_macs = 0;  // multiply-accumulates on the vector unit (DepthwiseConv)
};
// Throws std::overflow_error when a figure does not fit 64 bits.
SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config);

// DRAM service in exact rational time: a cycle is `ticks_per_cycle` ticks and one byte on one
// channel takes `ticks_per_byte` ticks, so no rounding accumulates across bursts.
struct DramTiming {
  explicit DramTiming(const HwConfig& config);
  Ticks ticks_per_cycle = 1;
  Ticks ticks_per_byte = 1;  // per channel: each channel has 1/channels of the bandwidth
  Cycles latency_cycles = 0;
  std::uint32_t channels = 1;
};

// The state of the DRAM channels: when each is next free. The estimator gives each transfer a
// fresh one (no contention); the platform shares one between all DMA channels.
class DramState {
 public:
  explicit DramState(const DramTiming& timing);
  // The channel that frees first (lowest index on ties).
  std::uint32_t earliest_channel() const;
  Ticks channel_free_at(std::uint32_t channel) const { return free_at_[channel]; }
  // Serves a burst of `bytes` that reached DRAM at cycle `arrival` on `channel`: it starts when
  // both it and the channel are there. Returns the cycle by which its data has arrived: the end
  // of service rounded up to a cycle, plus the latency.
  Cycles serve(std::uint32_t channel, Cycles arrival, std::uint64_t bytes);
  const DramTiming& timing() const { return timing_; }

 private:
  DramTiming timing_;
  std::vector<Ticks> free_at_;
};

// How a DMA channel moves a transfer: a setup, then bursts of burst_bytes (the last may be
// shorter), each pushed through the channel's port at bytes_per_cycle and then served by DRAM,
// with at most max_outstanding bursts waiting for their data at once.
struct DmaTiming {
  explicit DmaTiming(const HwConfig& config);
  std::uint64_t burst_count(std::uint64_t bytes) const;
  std::uint64_t burst_bytes(std::uint64_t bytes, std::uint64_t burst) const;
  Cycles port_cycles(std::uint64_t burst_bytes) const;  // ceil(bytes / bytes_per_cycle)
  std::uint64_t max_burst_bytes = 1;
  std::uint32_t bytes_per_cycle = 1;
  Cycles setup_cycles = 0;
  std::uint32_t max_outstanding = 1;
};

// Cycles of a whole transfer when nothing else uses DRAM: the estimator's DMA cost. Replays, on a
// fresh DramState, exactly the steps the platform's DMA channel takes (sim/platform/dma_channel).
Cycles isolated_transfer_cycles(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram);

}  // namespace npusim::cost
