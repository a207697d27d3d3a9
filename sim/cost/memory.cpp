#include "sim/cost/memory.h"

#include <algorithm>
#include <array>
#include <deque>
#include <numeric>
#include <unordered_map>

#include "sim/util/math.h"

namespace npusim::cost {

DramTiming::DramTiming(const HwConfig& config)
    : latency_cycles(config.dram_latency_cycles()), dram_channels(config.dram.channels) {
  // One cycle is 1 / (khz * 1e3) s; one byte on one channel is channels / (mbps * 1e6) s. In
  // ticks of 1 / (khz * mbps * 1e6) s: a cycle is mbps * 1000 ticks and a byte channels * khz.
  Ticks per_cycle = Ticks{config.dram.bandwidth_mbps} * 1000u;
  Ticks per_byte = Ticks{config.clock_khz} * config.dram.channels;
  const auto g =
      std::gcd(static_cast<std::uint64_t>(per_cycle), static_cast<std::uint64_t>(per_byte));
  ticks_per_cycle = per_cycle / g;
  ticks_per_byte = per_byte / g;
}

DramState::DramState(const DramTiming& timing)
    : timing_(timing), free_at_(timing.dram_channels, 0) {}

std::uint32_t DramState::earliest_channel() const {
  return static_cast<std::uint32_t>(std::min_element(free_at_.begin(), free_at_.end()) -
                                    free_at_.begin());
}

Cycles DramState::first_free_cycle() const {
  return static_cast<Cycles>(*std::min_element(free_at_.begin(), free_at_.end()) /
                             timing_.ticks_per_cycle);
}

bool DramState::all_free_by(Cycles cycle) const {
  const Ticks by = Ticks{cycle} * timing_.ticks_per_cycle;
  return std::all_of(free_at_.begin(), free_at_.end(), [by](Ticks t) { return t <= by; });
}

void DramState::add_shifted(const DramState& fresh, Cycles shift) {
  const Ticks offset = Ticks{shift} * timing_.ticks_per_cycle;
  for (std::size_t c = 0; c < free_at_.size() && fresh.free_at_[c] != 0; ++c) {
    free_at_[c] = offset + fresh.free_at_[c];
  }
}

Cycles DramState::serve(std::uint32_t dram_channel, Cycles arrival, std::uint64_t bytes) {
  const Ticks start = std::max(free_at_[dram_channel], Ticks{arrival} * timing_.ticks_per_cycle);
  const Ticks end = start + Ticks{bytes} * timing_.ticks_per_byte;
  free_at_[dram_channel] = end;
  const Ticks end_cycle = (end + timing_.ticks_per_cycle - 1) / timing_.ticks_per_cycle;
  return static_cast<Cycles>(end_cycle) + timing_.latency_cycles;
}

DmaTiming::DmaTiming(const HwConfig& config)
    : max_burst_bytes(config.dma.burst_bytes),
      bytes_per_cycle(config.dma.bytes_per_cycle),
      setup_cycles(config.dma.setup_cycles),
      max_outstanding(config.dma.max_outstanding),
      ideal(config.ideal_memory) {}

std::uint64_t DmaTiming::burst_count(std::uint64_t bytes) const {
  return ceil_div(bytes, max_burst_bytes);
}

std::uint64_t DmaTiming::burst_bytes(std::uint64_t bytes, std::uint64_t burst) const {
  return std::min(max_burst_bytes, bytes - burst * max_burst_bytes);
}

Cycles DmaTiming::port_cycles(std::uint64_t bytes) const {
  return ceil_div(bytes, bytes_per_cycle);
}

DmaTransfer::DmaTransfer(const DmaTiming& timing, std::uint64_t bytes, Cycles start)
    : timing_(timing),
      bytes_(bytes),
      bursts_(timing.burst_count(bytes)),
      port_free_(start),
      last_done_(start) {}

DmaTransfer::Burst DmaTransfer::issue(Cycles ready) {
  const std::uint64_t size = timing_.burst_bytes(bytes_, next_burst_++);
  port_free_ = std::max(port_free_, ready) + timing_.port_cycles(size);
  return {port_free_, size};
}

std::vector<DmaTransfer::Burst> DmaTransfer::start_bursts() {
  std::vector<Burst> first;
  while (next_burst_ < std::min<std::uint64_t>(bursts_, timing_.max_outstanding)) {
    first.push_back(issue(port_free_));
  }
  return first;
}

DmaTransfer::Burst DmaTransfer::served(Cycles done) {
  // Bursts have their data in issue order; the slot of burst `served_` goes to the burst
  // max_outstanding after it, which enters the port no earlier than `done`.
  last_done_ = std::max(last_done_, done);
  ++served_;
  if (next_burst_ < bursts_) return issue(done);
  return {};
}

namespace {

// A transfer's size and every timing figure its cycles depend on.
using TransferKey = std::array<std::uint64_t, 11>;

struct TransferKeyHash {
  std::size_t operator()(const TransferKey& k) const {
    std::uint64_t h = 1469598103934665603u;  // FNV-1a over the fields
    for (const std::uint64_t v : k) h = (h ^ v) * 1099511628211u;
    return static_cast<std::size_t>(h);
  }
};

Cycles replay_alone(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram) {
  DramState state(dram);
  DmaTransfer transfer(dma, bytes, dma.setup_cycles);
  const std::vector<DmaTransfer::Burst> first = transfer.start_bursts();
  std::deque<DmaTransfer::Burst> waiting(first.begin(), first.end());
  serve_alone(transfer, waiting, state, kNever, [](const DmaTransfer::Burst&, Cycles) {});
  return transfer.end();
}

}  // namespace

Cycles isolated_transfer_cycles(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram) {
  if (dma.ideal) return 0;
  // The compiler finalizes a scratch schedule per candidate, each with a fresh Evaluator: the
  // replays are remembered per thread (no lock), for the sizes and timings seen.
  constexpr std::size_t kMostRemembered = 1 << 16;
  thread_local std::unordered_map<TransferKey, Cycles, TransferKeyHash> replayed;
  const TransferKey key = {bytes,
                           dma.max_burst_bytes,
                           dma.bytes_per_cycle,
                           dma.setup_cycles,
                           dma.max_outstanding,
                           static_cast<std::uint64_t>(dram.ticks_per_cycle),
                           static_cast<std::uint64_t>(dram.ticks_per_cycle >> 64),
                           static_cast<std::uint64_t>(dram.ticks_per_byte),
                           static_cast<std::uint64_t>(dram.ticks_per_byte >> 64),
                           dram.latency_cycles,
                           dram.dram_channels};
  if (const auto it = replayed.find(key); it != replayed.end()) return it->second;
  if (replayed.size() >= kMostRemembered) replayed.clear();
  const Cycles cycles = replay_alone(bytes, dma, dram);
  replayed.emplace(key, cycles);
  return cycles;
}

}  // namespace npusim::cost
