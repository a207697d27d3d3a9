// DRAM shared by every DMA channel, and the transfers it serves. Bursts queue per requester (one
// per DMA channel) and are served round-robin across the requesters whose next burst has arrived,
// on the channel that frees first, with the cost model's exact service times; decisions happen
// only when a burst arrives or a channel frees.
//
// While only one requester has bursts waiting, there is nothing to arbitrate: its transfer is
// served in closed form (cost::serve_alone, or a cached summary when it starts on idle DRAM), with
// one event at its end instead of one per burst. When another transfer starts before that end,
// the closed form is undone and replayed up to the current cycle, which leaves exactly the state
// the per-burst arbiter would have, and arbitration goes on burst by burst from there.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include <systemc>

#include "profiler/timeline.h"
#include "sim/cost/memory.h"

namespace npusim::platform {

// Adds `part`'s bursts to `total`.
void add_activity(profiler::DramActivity& total, const profiler::DramActivity& part);

class Dram final : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Dram);
  // `closed_form`: serve a transfer that meets no other in closed form; false arbitrates every
  // burst (the reference the closed form is tested against; the results are the same).
  Dram(const sc_core::sc_module_name& name, const cost::DramTiming& timing,
       const cost::DmaTiming& dma, profiler::EventSink& sink, bool closed_form);
  Dram(const Dram&) = delete;
  Dram& operator=(const Dram&) = delete;

  // Requesters are served round-robin in the order they register.
  std::uint32_t add_requester();
  // Starts a transfer of `bytes` on `requester` (idle until now) whose first burst may enter its
  // port now, a whole cycle; notifies `done` at the cycle its last burst's data has arrived.
  void start_transfer(std::uint32_t requester, std::uint64_t bytes, sc_core::sc_event& done);
  // Called at the cycle `done` fired: the requester's transfer is over.
  void end_transfer(std::uint32_t requester);
  std::uint64_t bursts_served() const { return bursts_served_; }
  // The bursts of transfers served in closed form, which are not reported to the event sink one
  // by one: the timeline's DRAM activity is the sink's plus this.
  const profiler::DramActivity& closed_form_activity() const { return closed_form_activity_; }

 private:
  struct Requester {
    std::optional<cost::DmaTransfer> transfer;     // in progress
    std::deque<cost::DmaTransfer::Burst> waiting;  // issued, not yet served, in arrival order
    sc_core::sc_event* done = nullptr;
    std::uint32_t undone = 0;  // closed forms of this transfer undone by a competitor
  };
  // A transfer that starts alone on idle DRAM, from cycle 0 on a fresh DRAM: the same at every
  // start cycle, so computed once per size.
  struct FreshTransfer {
    cost::Cycles cycles = 0;  // from its start to its end
    cost::DramState after;    // the fresh DRAM when it ends
    profiler::DramActivity activity;
    std::uint64_t bursts = 0;
  };
  // The transfer served in closed form, if any. Its effect on DRAM is applied at once, so the
  // state before it is kept to undo it.
  struct Lone {
    bool active = false;
    std::uint32_t requester = 0;
    cost::Cycles end = 0;
    // Started on idle DRAM: `fresh` holds its effect and the requester's transfer and bursts
    // were left as they were. Otherwise they were advanced, and saved first.
    const FreshTransfer* fresh = nullptr;
    cost::Cycles start = 0;
    std::optional<cost::DmaTransfer> saved_transfer;
    std::deque<cost::DmaTransfer::Burst> saved_waiting;
    std::optional<cost::DramState> saved_dram;
    std::uint32_t saved_last_granted = 0;
    profiler::DramActivity activity;  // when advanced
    std::uint64_t bursts = 0;
  };

  void arbitrate();
  void grant(std::uint32_t requester, std::uint32_t channel);
  void notify_arbiter(std::uint64_t cycle);
  // The one requester with bursts waiting, if exactly one has.
  std::optional<std::uint32_t> only_waiting() const;
  void go_lone(std::uint32_t requester, bool transfer_start);
  // Another transfer starts now: ends the closed form, replaying it up to now if it is not over.
  void leave_lone();
  void settle_lone();
  const FreshTransfer& fresh_transfer(std::uint64_t bytes);

  cost::DramState state_;
  const cost::DmaTiming& dma_;
  profiler::EventSink& sink_;
  bool closed_form_;
  std::vector<Requester> requesters_;
  std::size_t pending_count_ = 0;  // bursts waiting at the arbiter (not the lone transfer's)
  std::uint32_t last_granted_ = 0;
  std::uint64_t bursts_served_ = 0;
  Lone lone_;
  std::map<std::uint64_t, FreshTransfer> fresh_;  // by transfer size
  profiler::DramActivity closed_form_activity_;
  sc_core::sc_event arbitrate_event_;
};

}  // namespace npusim::platform
