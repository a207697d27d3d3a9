// DRAM and DMA timing: exact rational DRAM service, and the one description of how a DMA channel
// steps a transfer through its port in bursts (DmaTransfer). The estimator replays it with DRAM
// to itself (isolated_transfer_cycles); the SystemC DMA channel drives it from DRAM callbacks.
#pragma once

#include <cstdint>
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

// Cycles of a whole transfer (setup included) when nothing else uses DRAM: the estimator's DMA
// cost, DmaTransfer's steps on a fresh DramState; 0 with ideal memory.
Cycles isolated_transfer_cycles(std::uint64_t bytes, const DmaTiming& dma, const DramTiming& dram);

}  // namespace npusim::cost
