// DRAM and DMA timing: exact rational DRAM service, and the one description of how a DMA channel
// steps a transfer through its port in bursts (DmaTransfer) and how DRAM serves a transfer that has
// it to itself (serve_alone). The estimator replays a transfer alone on a fresh DRAM
// (isolated_transfer_cycles); the SystemC platform drives DmaTransfer burst by burst where
// transfers contend and calls serve_alone where one transfer has DRAM to itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/config/hw_config.h"

namespace npusim::cost {

using Cycles = std::uint64_t;
__extension__ using Ticks = unsigned __int128;

// DRAM service in exact rational time: a cycle is `ticks_per_cycle` ticks and one byte on one
// DRAM channel takes `ticks_per_byte` ticks, so no rounding accumulates across bursts.
struct DramTiming {
  explicit DramTiming(const HwConfig& config);
  Ticks ticks_per_cycle = 1;
  Ticks ticks_per_byte = 1;  // per DRAM channel: each has 1/dram_channels of the bandwidth
  Cycles latency_cycles = 0;
  std::uint32_t dram_channels = 1;
};

// The state of the DRAM channels: when each is next free. The estimator gives each transfer a
// fresh one (no contention); the platform shares one between all DMA channels.
class DramState {
 public:
  explicit DramState(const DramTiming& timing);
  // The DRAM channel that frees first (lowest index on ties).
  std::uint32_t earliest_channel() const;
  Ticks channel_free_at(std::uint32_t dram_channel) const { return free_at_[dram_channel]; }
  // The first cycle in which some channel is free for part of the cycle: the earliest cycle in
  // which DRAM can take a burst (the platform's arbiter grants once per cycle, 1 ps into it).
  Cycles first_free_cycle() const;
  // Whether every channel is free by the start of cycle `cycle`.
  bool all_free_by(Cycles cycle) const;
  // Adds what a transfer left on `fresh` (a state that was fresh when the transfer started at
  // cycle 0) as if the same transfer had started at cycle `shift` here, where every channel is
  // free by its first burst's arrival (all_free_by). Such channels are all alike: every burst
  // from then on starts on arrival on any of them, so the channels `fresh` used (0, 1, ... in
  // order) get their free times plus `shift` here and the others keep theirs, which are past.
  void add_shifted(const DramState& fresh, Cycles shift);
  // Serves a burst of `bytes` that reached DRAM at cycle `arrival` on `dram_channel`: it starts
  // when both it and the channel are there. Returns the cycle by which its data has arrived: the
  // end of service rounded up to a cycle, plus the latency.
  Cycles serve(std::uint32_t dram_channel, Cycles arrival, std::uint64_t bytes);
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
  // ideal_memory: transfers take no cycles and send no bursts, so a run measures compute alone.
  bool ideal = false;
};

// One transfer on one DMA channel, step by step. The caller hands each issued burst to a DRAM
// (with its arrival cycle) and reports, in issue order, when each burst's data arrived; every
// such report frees an outstanding slot, which issues the next burst.
class DmaTransfer {
 public:
  struct Burst {
    Cycles arrival = 0;  // the cycle it has left the port and reaches DRAM
    std::uint64_t bytes = 0;
  };
  // A transfer of `bytes` whose first burst may enter the port at cycle `start` (after setup).
  DmaTransfer(const DmaTiming& timing, std::uint64_t bytes, Cycles start);
  // The bursts that go out back to back at the start: up to max_outstanding.
  std::vector<Burst> start_bursts();
  // The oldest outstanding burst has its data at `done`. Returns the burst this frees a slot for,
  // if any is left (bytes == 0 otherwise).
  Burst served(Cycles done);
  bool finished() const { return served_ == bursts_; }
  Cycles end() const { return last_done_; }  // meaningful once finished()
  std::uint64_t bytes() const { return bytes_; }

 private:
  Burst issue(Cycles ready);

  const DmaTiming& timing_;
  std::uint64_t bytes_;
  std::uint64_t bursts_;
  std::uint64_t next_burst_ = 0;  // next to issue
  std::uint64_t served_ = 0;
  Cycles port_free_;  // cycle the port finishes its last issued burst
  Cycles last_done_;
};

// Serves a transfer that has DRAM to itself: `waiting` holds the bursts `transfer` has issued and
// DRAM has not served, oldest first, and each one served may let it issue the next. Each burst is
// granted in the first cycle in which it has arrived and a channel is free (first_free_cycle), and
// served on the channel that frees first, in issue order: the platform's arbiter with one
// requester, and the estimator's isolated transfer. Serves every burst granted before cycle
// `until` (all of them with kNever), calls on_served(burst, done_cycle) for each and returns how
// many it served. Per burst it does arithmetic only: no event, no allocation.
inline constexpr Cycles kNever = ~Cycles{0};
template <typename OnServed>
std::uint64_t serve_alone(DmaTransfer& transfer, std::deque<DmaTransfer::Burst>& waiting,
                          DramState& dram, Cycles until, OnServed&& on_served) {
  std::uint64_t served = 0;
  while (!waiting.empty()) {
    const DmaTransfer::Burst burst = waiting.front();
    if (until != kNever && std::max(burst.arrival, dram.first_free_cycle()) >= until) break;
    waiting.pop_front();
    const Cycles done = dram.serve(dram.earliest_channel(), burst.arrival, burst.bytes);
    on_served(burst, done);
    ++served;
    const DmaTransfer::Burst next = transfer.served(done);
    if (next.bytes != 0) waiting.push_back(next);
  }
  return served;
}

// Cycles of a whole transfer (setup included) when nothing else uses DRAM: the estimator's DMA
// cost, DmaTransfer's steps on a fresh DramState; 0 with ideal memory.
// Remembered per thread by the size and every field of the two timings (a field added to them
// must be added to the key in memory.cpp).
Cycles isolated_transfer_cycles(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram);

}  // namespace npusim::cost
