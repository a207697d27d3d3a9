#include "sim/cost/cost_model.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <stdexcept>

namespace npusim::cost {
namespace {

std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("product exceeds 64 bits");
  return r;
}

std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("sum exceeds 64 bits");
  return r;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// Vector-unit cycles: `work` units at `cycles_per_unit` each, spread over `lanes`.
Cycles vector_cycles(std::uint64_t work, std::uint32_t cycles_per_unit, std::uint32_t lanes) {
  return std::max<Cycles>(1, ceil_div(mul(work, cycles_per_unit), lanes));
}

}  // namespace

Cycles systolic_gemm_cycles(std::uint32_t rows, std::uint32_t cols, Dataflow dataflow,
                            std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  std::uint64_t sr = 0;  // operand dimension mapped onto the array's rows
  std::uint64_t sc = 0;  // ... onto its columns
  std::uint64_t t = 0;   // ... streamed through it in time
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      sr = m, sc = n, t = k;
      break;
    case Dataflow::kWeightStationary:
      sr = k, sc = n, t = m;
      break;
    case Dataflow::kInputStationary:
      sr = k, sc = m, t = n;
      break;
  }
  const std::uint64_t folds = mul(ceil_div(sr, rows), ceil_div(sc, cols));
  // Fill (rows), stream (t), drain through the array (rows + cols - 2).
  const std::uint64_t per_fold = add(2u * std::uint64_t{rows} + cols - 2, t);
  return mul(folds, per_fold);
}

SliceCost slice_op_cost(OpId op, const Shape& shape, const HwConfig& config) {
  const OpInfo& info = op_table().at(op);
  const SliceConfig& s = config.slices;
  const std::uint32_t cpe = s.vector_op_cycles.at(op);
  SliceCost cost;
  switch (info.shape) {
    case ShapeKind::kGemm: {
      const auto& g = std::get<GemmShape>(shape);
      cost.cycles = mul(g.batch, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, g.m, g.n, g.k));
      cost.macs = mul(mul(mul(g.batch, g.m), g.n), g.k);
      return cost;
    }
    case ShapeKind::kConv: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t pixels = mul(mul(c.batch, c.out_h()), c.out_w());
      const std::uint64_t window = mul(c.kernel_h, c.kernel_w);
      if (info.unit == Unit::kArray) {
        // im2col: each group is a GEMM of (pixels) x (window * in_c/groups) x (out_c/groups).
        const std::uint64_t k = mul(window, c.in_c / c.groups);
        const std::uint64_t n = c.out_c / c.groups;
        cost.cycles = mul(c.groups, systolic_gemm_cycles(s.rows, s.cols, s.dataflow, pixels, n, k));
        cost.macs = mul(mul(mul(pixels, n), k), c.groups);
      } else {
        // DepthwiseConv on the vector unit: one MAC per output element per window element.
        cost.vector_macs = mul(mul(pixels, c.out_c), window);
        cost.cycles = vector_cycles(cost.vector_macs, cpe, s.vector_lanes);
      }
      return cost;
    }
    case ShapeKind::kPool:
    case ShapeKind::kGlobalPool: {
      const auto& c = std::get<ConvShape>(shape);
      const std::uint64_t outputs = mul(mul(mul(c.batch, c.out_h()), c.out_w()), c.out_c);
      cost.cycles = vector_cycles(mul(outputs, mul(c.kernel_h, c.kernel_w)), cpe, s.vector_lanes);
      return cost;
    }
    case ShapeKind::kElements: {
      const auto& e = std::get<ElementsShape>(shape);
      cost.cycles = vector_cycles(e.elements, cpe, s.vector_lanes);
      return cost;
    }
  }
  throw std::logic_error("unhandled shape kind");
}

DramTiming::DramTiming(const HwConfig& config)
    : latency_cycles(config.dram_latency_cycles()), channels(config.dram.channels) {
  // One cycle is 1 / (khz * 1e3) s; one byte on one channel is channels / (mbps * 1e6) s. In
  // ticks of 1 / (khz * mbps * 1e6) s: a cycle is mbps * 1000 ticks and a byte channels * khz.
  Ticks per_cycle = Ticks{config.dram.bandwidth_mbps} * 1000u;
  Ticks per_byte = Ticks{config.clock_khz} * config.dram.channels;
  const auto g = std::gcd(static_cast<std::uint64_t>(per_cycle), static_cast<std::uint64_t>(per_byte));
  ticks_per_cycle = per_cycle / g;
  ticks_per_byte = per_byte / g;
}

DramState::DramState(const DramTiming& timing) : timing_(timing), free_at_(timing.channels, 0) {}

std::uint32_t DramState::earliest_channel() const {
  return static_cast<std::uint32_t>(std::min_element(free_at_.begin(), free_at_.end()) -
                                    free_at_.begin());
}

Cycles DramState::serve(std::uint32_t channel, Cycles arrival, std::uint64_t bytes) {
  const Ticks start = std::max(free_at_[channel], Ticks{arrival} * timing_.ticks_per_cycle);
  const Ticks end = start + Ticks{bytes} * timing_.ticks_per_byte;
  free_at_[channel] = end;
  const Ticks end_cycle = (end + timing_.ticks_per_cycle - 1) / timing_.ticks_per_cycle;
  return static_cast<Cycles>(end_cycle) + timing_.latency_cycles;
}

DmaTiming::DmaTiming(const HwConfig& config)
    : max_burst_bytes(config.dma.burst_bytes),
      bytes_per_cycle(config.dma.bytes_per_cycle),
      setup_cycles(config.dma.setup_cycles),
      max_outstanding(config.dma.max_outstanding) {}

std::uint64_t DmaTiming::burst_count(std::uint64_t bytes) const {
  return ceil_div(bytes, max_burst_bytes);
}

std::uint64_t DmaTiming::burst_bytes(std::uint64_t bytes, std::uint64_t burst) const {
  return std::min(max_burst_bytes, bytes - burst * max_burst_bytes);
}

Cycles DmaTiming::port_cycles(std::uint64_t bytes) const { return ceil_div(bytes, bytes_per_cycle); }

Cycles isolated_transfer_cycles(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram) {
  DramState state(dram);
  // Completion cycles of the bursts in flight, earliest first.
  std::priority_queue<Cycles, std::vector<Cycles>, std::greater<>> in_flight;
  Cycles now = dma.setup_cycles;
  Cycles last_done = now;
  const std::uint64_t bursts = dma.burst_count(bytes);
  for (std::uint64_t b = 0; b < bursts; ++b) {
    // Wait for a slot: a burst's slot frees when its data has arrived.
    while (in_flight.size() >= dma.max_outstanding) {
      now = std::max(now, in_flight.top());
      in_flight.pop();
    }
    const std::uint64_t size = dma.burst_bytes(bytes, b);
    now += dma.port_cycles(size);
    const Cycles done = state.serve(state.earliest_channel(), now, size);
    in_flight.push(done);
    last_done = std::max(last_done, done);
  }
  return last_done;
}

}  // namespace npusim::cost
