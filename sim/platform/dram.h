// DRAM shared by every DMA channel: bursts queue per requester and are served round-robin across
// the requesters whose next burst has arrived, on the channel that frees first, with the cost
// model's exact service times. Decisions happen only when a burst arrives or a channel frees.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>

#include "profiler/timeline.h"
#include "sim/cost/memory.h"

namespace npusim::platform {

// What the DRAM calls back when it has scheduled a burst: the cycle its data will have arrived.
class DramRequester {
 public:
  virtual ~DramRequester() = default;
  virtual void burst_served(std::uint64_t done_cycle) = 0;
};

class Dram final : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Dram);
  Dram(const sc_core::sc_module_name& name, const cost::DramTiming& timing,
       profiler::EventSink& sink);
  Dram(const Dram&) = delete;
  Dram& operator=(const Dram&) = delete;

  // Requesters are served round-robin in the order they register.
  std::uint32_t add_requester(DramRequester& requester);
  // A burst of `bytes` reaches DRAM at cycle `arrival` (now or later). A requester's bursts
  // arrive in the order it requests them and are served in that order.
  void request(std::uint32_t requester, std::uint64_t arrival, std::uint64_t bytes);
  std::uint64_t bursts_served() const { return bursts_served_; }

 private:
  struct Burst {
    std::uint64_t arrival_cycle;
    std::uint64_t bytes;
  };
  void arbitrate();

  cost::DramState state_;
  profiler::EventSink& sink_;
  std::vector<DramRequester*> requesters_;
  std::vector<std::deque<Burst>> pending_;  // per requester, in arrival order
  std::size_t pending_count_ = 0;
  std::uint32_t last_granted_ = 0;
  std::uint64_t bursts_served_ = 0;
  sc_core::sc_event arbitrate_event_;
};

}  // namespace npusim::platform
