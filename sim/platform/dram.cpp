#include "sim/platform/dram.h"

#include <algorithm>

#include "sim/platform/sc_time.h"

namespace npusim::platform {

namespace {
// The arbiter decides 1 ps into a cycle, after every burst arriving in that cycle is queued.
// (A function, not a constant: no sc_time may exist before the time resolution is set.)
sc_core::sc_time decision_offset() { return sc_core::sc_time::from_value(1); }

// Undoing a closed form computed mid-transfer throws away the bursts computed past the
// competitor's start; a transfer that has had this many undone goes on burst by burst, so that
// many short transfers cutting into one long one cost no more than a few passes over it.
constexpr std::uint32_t kMaxUndone = 2;
}  // namespace

void add_activity(profiler::DramActivity& total, const profiler::DramActivity& part) {
  total.bursts += part.bursts;
  total.bytes += part.bytes;
  total.total_latency_cycles += part.total_latency_cycles;
  total.max_latency_cycles = std::max(total.max_latency_cycles, part.max_latency_cycles);
  const std::size_t buckets =
      std::min(total.latency_histogram.size(), part.latency_histogram.size());
  for (std::size_t b = 0; b < buckets; ++b) {
    total.latency_histogram[b] += part.latency_histogram[b];
  }
}

Dram::Dram(const sc_core::sc_module_name& name, const cost::DramTiming& timing,
           const cost::DmaTiming& dma, profiler::EventSink& sink, bool closed_form)
    : sc_core::sc_module(name), state_(timing), dma_(dma), sink_(sink), closed_form_(closed_form) {
  SC_METHOD(arbitrate);
  sensitive << arbitrate_event_;
  dont_initialize();
}

std::uint32_t Dram::add_requester() {
  requesters_.emplace_back();
  last_granted_ = static_cast<std::uint32_t>(requesters_.size() - 1);
  return last_granted_;
}

void Dram::notify_arbiter(std::uint64_t cycle) {
  // Keeps an earlier pending decision if there is one.
  arbitrate_event_.notify(until_cycle(cycle) + decision_offset());
}

void Dram::start_transfer(std::uint32_t requester, std::uint64_t bytes, sc_core::sc_event& done) {
  leave_lone();
  Requester& q = requesters_[requester];
  q.transfer.emplace(dma_, bytes, now_cycles());
  q.done = &done;
  q.undone = 0;
  for (const cost::DmaTransfer::Burst& b : q.transfer->start_bursts()) q.waiting.push_back(b);
  pending_count_ += q.waiting.size();
  if (closed_form_ && pending_count_ == q.waiting.size()) {
    go_lone(requester, true);
    return;
  }
  // The first burst arrives first; the arbiter keeps itself woken while bursts wait.
  notify_arbiter(q.waiting.front().arrival);
}

void Dram::end_transfer(std::uint32_t requester) {
  if (lone_.active && lone_.requester == requester) settle_lone();
  requesters_[requester].transfer.reset();
}

void Dram::arbitrate() {
  if (lone_.active) return;  // cannot happen: going lone cancels the pending decision
  const std::uint64_t now = now_cycles();
  const auto requesters = static_cast<std::uint32_t>(requesters_.size());
  while (pending_count_ > 0) {
    // Only bursts that have arrived compete; the others come back when they arrive.
    std::uint64_t next_arrival = ~std::uint64_t{0};
    bool any_arrived = false;
    for (const Requester& q : requesters_) {
      if (q.waiting.empty()) continue;
      any_arrived = any_arrived || q.waiting.front().arrival <= now;
      next_arrival = std::min(next_arrival, q.waiting.front().arrival);
    }
    if (!any_arrived) {
      notify_arbiter(next_arrival);
      break;
    }
    const std::uint64_t free_cycle = state_.first_free_cycle();
    if (free_cycle > now) {
      // Busy through this cycle: decide again in the cycle in which a channel frees, when a
      // burst arriving in that cycle can compete too.
      notify_arbiter(free_cycle);
      break;
    }
    // Round-robin: the first requester after the last one granted whose burst has arrived.
    std::uint32_t r = last_granted_;
    do {
      r = (r + 1) % requesters;
    } while (requesters_[r].waiting.empty() || requesters_[r].waiting.front().arrival > now);
    grant(r, state_.earliest_channel());
  }
  if (!closed_form_) return;
  const std::optional<std::uint32_t> alone = only_waiting();
  if (alone && requesters_[*alone].undone < kMaxUndone) go_lone(*alone, false);
}

void Dram::grant(std::uint32_t requester, std::uint32_t channel) {
  Requester& q = requesters_[requester];
  last_granted_ = requester;
  const cost::DmaTransfer::Burst burst = q.waiting.front();
  q.waiting.pop_front();
  --pending_count_;
  ++bursts_served_;
  const std::uint64_t done = state_.serve(channel, burst.arrival, burst.bytes);
  sink_.dram_burst({burst.arrival, done, burst.bytes});
  // The slot this burst frees issues the next one.
  const cost::DmaTransfer::Burst next = q.transfer->served(done);
  if (next.bytes != 0) {
    q.waiting.push_back(next);
    ++pending_count_;
    notify_arbiter(next.arrival);
  }
  if (q.transfer->finished()) q.done->notify(until_cycle(q.transfer->end()));
}

std::optional<std::uint32_t> Dram::only_waiting() const {
  if (pending_count_ == 0) return std::nullopt;
  for (std::uint32_t r = 0; r < requesters_.size(); ++r) {
    const std::size_t waiting = requesters_[r].waiting.size();
    if (waiting == pending_count_) return r;
    if (waiting != 0) return std::nullopt;
  }
  return std::nullopt;
}

// With one requester there is nothing to arbitrate: cost::serve_alone grants its bursts exactly
// when the arbiter would, so its whole transfer is served now, and the state before it is kept in
// case another transfer starts before it ends.
void Dram::go_lone(std::uint32_t requester, bool transfer_start) {
  Requester& q = requesters_[requester];
  arbitrate_event_.cancel();
  pending_count_ -= q.waiting.size();
  lone_.active = true;
  lone_.requester = requester;
  lone_.saved_last_granted = last_granted_;
  lone_.saved_dram = state_;
  last_granted_ = requester;
  const std::uint64_t now = now_cycles();
  if (transfer_start && state_.all_free_by(q.waiting.front().arrival)) {
    // Idle DRAM: the transfer runs as it does from cycle 0 on a fresh DRAM, shifted to now.
    const FreshTransfer& fresh = fresh_transfer(q.transfer->bytes());
    lone_.fresh = &fresh;
    lone_.start = now;
    lone_.end = now + fresh.cycles;
    lone_.bursts = fresh.bursts;
    state_.add_shifted(fresh.after, now);
  } else {
    lone_.fresh = nullptr;
    lone_.saved_transfer.emplace(*q.transfer);
    lone_.saved_waiting = q.waiting;
    lone_.activity = profiler::DramActivity{};
    lone_.bursts = cost::serve_alone(*q.transfer, q.waiting, state_, cost::kNever,
                                     [this](const cost::DmaTransfer::Burst& b, cost::Cycles done) {
                                       lone_.activity.add({b.arrival, done, b.bytes});
                                     });
    lone_.end = q.transfer->end();
  }
  q.done->notify(until_cycle(lone_.end));
}

void Dram::leave_lone() {
  if (!lone_.active) return;
  const std::uint64_t now = now_cycles();
  if (lone_.end <= now) {
    settle_lone();  // over (its requester has not called end_transfer yet)
    return;
  }
  // Undo the closed form and replay its bursts granted before now, as the arbiter would have.
  const std::uint32_t requester = lone_.requester;
  Requester& q = requesters_[requester];
  lone_.active = false;
  q.done->cancel();
  state_ = *lone_.saved_dram;
  last_granted_ = lone_.saved_last_granted;
  if (lone_.fresh == nullptr) {
    q.transfer.emplace(*lone_.saved_transfer);
    q.waiting = lone_.saved_waiting;
    ++q.undone;
  }
  const std::uint64_t served =
      cost::serve_alone(*q.transfer, q.waiting, state_, now,
                        [this](const cost::DmaTransfer::Burst& b, cost::Cycles done) {
                          sink_.dram_burst({b.arrival, done, b.bytes});
                        });
  if (served > 0) last_granted_ = requester;
  bursts_served_ += served;
  pending_count_ += q.waiting.size();
  if (q.transfer->finished()) q.done->notify(until_cycle(q.transfer->end()));
  if (!q.waiting.empty()) notify_arbiter(now);
}

void Dram::settle_lone() {
  lone_.active = false;
  bursts_served_ += lone_.bursts;
  if (lone_.fresh != nullptr) {
    add_activity(closed_form_activity_, lone_.fresh->activity);
    requesters_[lone_.requester].waiting.clear();  // left as they were at the start
  } else {
    add_activity(closed_form_activity_, lone_.activity);
  }
}

const Dram::FreshTransfer& Dram::fresh_transfer(std::uint64_t bytes) {
  const auto found = fresh_.find(bytes);
  if (found != fresh_.end()) return found->second;
  FreshTransfer fresh{0, cost::DramState(state_.timing()), profiler::DramActivity{}, 0};
  cost::DmaTransfer transfer(dma_, bytes, 0);
  const std::vector<cost::DmaTransfer::Burst> first = transfer.start_bursts();
  std::deque<cost::DmaTransfer::Burst> waiting(first.begin(), first.end());
  fresh.bursts = cost::serve_alone(transfer, waiting, fresh.after, cost::kNever,
                                   [&fresh](const cost::DmaTransfer::Burst& b, cost::Cycles done) {
                                     fresh.activity.add({b.arrival, done, b.bytes});
                                   });
  fresh.cycles = transfer.end();
  return fresh_.emplace(bytes, std::move(fresh)).first->second;
}

}  // namespace npusim::platform
