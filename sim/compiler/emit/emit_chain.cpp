// Emission of a chain of convolutions depth first (Chain; docs/compiler.md, "Chains of
// convolutions"): the members' tiles interleaved in the chain's order, their intermediate outputs
// kept in local memory and freed as their reader moves past them.
#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <unordered_map>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/cost/compute.h"
#include "sim/ir/graph.h"
#include "sim/util/math.h"

namespace npusim {

namespace {

// Where a chain's steps go (list scheduling): each to the chain's slice where it would end first
// on its unit. Members run on different units (the array, the vector unit) at different costs, so
// a plain round-robin can leave one slice's vector unit with every depthwise tile while the
// other's idles. The clock counts compute cycles only: a step's loads and stores share the DMA
// engines wherever it runs.
class StepClock {
 public:
  explicit StepClock(std::uint32_t slices) : free_at_(slices) {}
  // The slice (of the chain's, 0-based) for a step of `cycles` on `unit` after `deps`, the
  // round-robin's `rr` on a tie.
  std::uint32_t place(EngineKind unit, std::uint64_t cycles, const std::vector<std::uint32_t>& deps,
                      std::uint32_t rr) {
    std::uint64_t ready = 0;
    for (const std::uint32_t d : deps) {
      if (const auto e = ends_.find(d); e != ends_.end()) ready = std::max(ready, e->second);
    }
    const auto n_slices = static_cast<std::uint32_t>(free_at_.size());
    std::uint32_t best = rr;
    for (std::uint32_t n = 0; n < n_slices; ++n) {
      const std::uint32_t j = (rr + n) % n_slices;
      const std::uint64_t end = std::max(ready, free(j, unit)) + cycles;
      if (n == 0 || end < last_end_) {
        best = j;
        last_end_ = end;
      }
    }
    free(best, unit) = last_end_;
    return best;
  }
  // The step just placed was emitted as `command`.
  void placed(std::uint32_t command) { ends_.emplace(command, last_end_); }

 private:
  std::uint64_t& free(std::uint32_t slice, EngineKind unit) {
    return unit == EngineKind::kVector ? free_at_[slice].vector : free_at_[slice].array;
  }
  struct UnitClock {
    std::uint64_t array = 0, vector = 0;  // estimated cycle at which each unit is free
  };
  std::vector<UnitClock> free_at_;
  std::unordered_map<std::uint32_t, std::uint64_t> ends_;  // the chain's computes, estimated
  std::uint64_t last_end_ = 0;
};

// A chain step's compute cycles: `c`'s, and a pointwise member's fused ops' after it.
std::uint64_t step_cycles(const Command& c, const SpatialLayer& m, const HwConfig& config) {
  std::uint64_t cycles = cost::slice_op_cost(c.op, c.shape, config).cycles;
  for (const std::string& op : m.pointwise_then_ops)
    cycles += cost::slice_op_cost(find_op(op), c.shape, config).cycles;
  return cycles;
}

// Whether every read of `t` from DRAM waits for all its writers, whatever byte range it names: a
// graph input (it has none) or a view's output (emit_view: every writer of what it views). Told
// from the graph, not the writers so far, so that a chain costed alone (an emitter with none yet)
// decides as the model's emission does.
bool read_whole_always(const Graph& g, std::uint32_t t) {
  if (std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()) return true;
  const Layer* w = writer_of(g, t);
  return w != nullptr && moves_no_data(g, *w);
}

}  // namespace

// Checks a chain's `residency` (one per member, or none) against the chain and the emitter's
// state, and starts keeping the last member's output when it is to stay resident (its tiles then
// leave it in local memory, as emit_group's do); returns whether it is.
bool Emitter::begin_chain_output(const std::vector<const LayerGroup*>& members,
                                 const std::vector<Residency>& residency) {
  // A chain's steps reserve their room apart from the ring: nothing prefetched may be held.
  if (prefetched_bytes_ > 0 || prefetch_at_.count(members.front()) > 0) {
    throw PrefetchDoesNotFit(*members.front(), true, "a chain with prefetched bytes held");
  }
  if (kept_ || keeping_) {
    throw std::logic_error("emit_chain: '" + members.front()->name +
                           "' cannot read or keep an output kept on chip");
  }
  if (members.size() < 2) {  // a first member is never the last (their ring entries differ)
    throw std::logic_error("emit_chain: '" + members.front()->name + "' a chain of one");
  }
  if (!residency.empty() && residency.size() != members.size()) {
    throw std::logic_error("emit_chain: '" + members.front()->name + "' residency per member");
  }
  for (std::size_t i = 0; i + 1 < residency.size(); ++i) {
    if (residency[i].output) {
      throw std::logic_error("emit_chain: '" + members[i]->name +
                             "' cannot leave its output resident inside a chain");
    }
  }
  if (residency.empty() || !residency.back().output) return false;
  const std::uint32_t out = members.back()->output;
  keeping_ = OnChip{out, g_.tensors[out].bytes(), true, {}, {}, {}};
  return true;
}

Emitter::ChainInput Emitter::chain_input(const Chain& chain, const SpatialLayer& first) const {
  ChainInput in;
  const std::uint64_t rows = chain.mappings.front().tile_rows;
  // Only windows that overlap have a halo; an input on chip is read where it is. The rows lent
  // between tiles wait for the writers of their bytes as an image lays them out: so the input is
  // an image, or a tensor whose every read waits for all its writers anyway (a view, as
  // ShuffleNet's channel halves).
  in.reuse_halo = chain.reuse_halo && first.span_h > first.stride_h && rows < first.oh &&
                  !on_chip(first.input) &&
                  (layouts_.is_image(first.input) || read_whole_always(g_, first.input));
  if (in.reuse_halo) in.halo = first.halo_pieces(rows);
  return in;
}

std::uint64_t Emitter::load_chain_input(const LayerGroup& group, const SpatialLayer& m,
                                        const TileWindow& v, std::uint64_t tile, ChainInput& in,
                                        std::vector<std::string>& in_buffers,
                                        std::vector<CommandIndex>& deps) {
  const std::uint64_t in_c = m.chunk_in_c(m.units);
  HaloRows rows;
  std::uint64_t bytes = 0;
  if (!in.reuse_halo) {
    rows.own.push_back(spatial_input(m, 0, v, in_c));
  } else {
    rows = halo_rows(m, 0, v, in_c, in.halo.at(tile), tile);
    // The tile holds the rows lent to it and those it lends, besides its own.
    for (const LentRows& l : in.live) {
      bytes += l.bytes;
      deps.push_back(l.load);
    }
    bytes += rows.lent_bytes;
  }
  for (const Piece& p : rows.own) bytes += p.bytes;
  const CommandIndex wait = bytes > 0 ? ring_wait(bytes) : kNone;
  const std::vector<CommandIndex> after =
      wait != kNone ? std::vector<CommandIndex>{wait} : std::vector<CommandIndex>{};
  for (const Piece& p : rows.own) {
    if (p.bytes > 0) load_piece(group, p, after, in_buffers, deps);
  }
  lend_rows(group, rows, wait, in.live, deps);
  if (wait != kNone) deps.push_back(wait);
  return bytes;
}

void Emitter::free_chain_input(ChainInput& in, std::uint64_t tile, CommandIndex compute) {
  for (auto l = in.live.begin(); l != in.live.end();) {
    if (l->last != tile) {
      l->readers.push_back(compute);
      ++l;
      continue;
    }
    add_deps(compute, last_per_queue(l->readers));
    sched_.commands[compute].free.push_back(l->buffer);
    l = in.live.erase(l);
  }
}

Emitter::CommandIndex Emitter::emit_step(Command c, const std::vector<std::string>& then_ops,
                                         const LayerGroup& group, std::vector<CommandIndex> deps) {
  std::vector<std::string> frees;
  if (!then_ops.empty()) std::swap(frees, c.free);
  const std::uint32_t slice = c.slice;
  const Shape shape = c.shape;
  CommandIndex last = emit(std::move(c), "S", s_, group, std::move(deps));
  for (std::size_t i = 0; i < then_ops.size(); ++i) {
    Command then = compute(then_ops[i], slice, shape);
    if (i + 1 == then_ops.size()) then.free.swap(frees);
    last = emit(std::move(then), "S", s_, group, {last});
  }
  return last;
}

// Every member's weights, one load each after `room`, into buffers named in `buffers`; kNone for
// a member without weights (a pool).
std::vector<Emitter::CommandIndex> Emitter::load_chain_weights(
    const std::vector<const LayerGroup*>& members, const std::vector<SpatialLayer>& s,
    const std::vector<std::uint32_t>& programs, CommandIndex room,
    std::vector<std::string>& buffers) {
  std::vector<CommandIndex> weights(members.size(), kNone);
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::uint64_t bytes = s[i].chunk_weight_bytes(s[i].units);
    if (bytes == 0) continue;
    program_ = programs[i];
    Command load = dma(EngineKind::kDmaIn, bytes);
    buffers.push_back(buffer_name());
    load.alloc.push_back({buffers.back(), load.bytes});
    std::vector<CommandIndex> deps;
    if (room != kNone) deps.push_back(room);
    weights[i] = emit(std::move(load), "DI", di_, *members[i], std::move(deps));
  }
  return weights;
}

// A chain of row bands (below), or of channel blocks (emit_channel_chain.cpp).
void Emitter::emit_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                         const std::vector<Residency>& residency) {
  if (chain.channel_block > 0) {
    emit_channel_chain(members, chain, residency);
  } else {
    emit_row_chain(members, chain, residency);
  }
}

// A chain of row bands. Each member is a program of its own; its commands go to it however they
// interleave.
// 1. Every member's weights, one load each, after the ring has room for what the chain reserves
//    (Chain::reserved_bytes, taken from the tiles' half while the chain runs).
// 2. The steps in order, round-robin over all slices. The first member loads its input rows as a
//    weights-outer tile does; a later member loads nothing and waits for the tiles of the member
//    before that wrote its input rows. A member's tile also waits for the step that freed its tile
//    live_tiles back, so that no member runs further ahead than the reservation holds. The last
//    member's tiles store as usual (with a fused residual loaded per tile); the others' outputs
//    stay, and each step frees the member before's tiles that no later step reads.
// 3. The last store frees the weights and waits for every compute of the chain; the ring counts
//    the reservation as its from there.
void Emitter::emit_row_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                             const std::vector<Residency>& residency) {
  const std::size_t k = members.size();
  group_ = members.front();
  const bool output_resident = begin_chain_output(members, residency);
  std::vector<SpatialLayer> s;
  std::vector<std::uint32_t> programs;
  for (std::size_t i = 0; i < k; ++i) {
    s.push_back(describe_spatial(g_, *members[i], budgets_));
    sched_.programs.push_back({members[i]->name, members[i]->loc});
    programs.push_back(static_cast<std::uint32_t>(sched_.programs.size() - 1));
  }
  begin_slices(chain.mappings.front());  // its slices are the chain's
  // 1. Weights.
  const CommandIndex room = ring_wait(chain.reserved_bytes);
  resident_bytes_ += chain.reserved_bytes;
  std::vector<std::string> frees_at_end;
  const std::vector<CommandIndex> weights =
      load_chain_weights(members, s, programs, room, frees_at_end);
  // 2. The steps.
  struct Written {
    std::uint64_t r0 = 0, r1 = 0;  // output rows
    CommandIndex compute = 0;
    std::string buffer;
    std::vector<CommandIndex> readers;  // the next member's computes that read it
  };
  std::vector<std::vector<Written>> written(k);     // per member but the last: its tiles so far
  std::vector<std::vector<CommandIndex>> freer(k);  // per member: the step that freed each tile
  std::vector<std::uint64_t> freed(k, 0);
  std::vector<CommandIndex> computes;
  CommandIndex last_store = kNone;
  StepClock clock(group_slices_);
  ChainInput input = chain_input(chain, s.front());
  for (const ChainStep& step : chain.order) {
    const std::size_t i = step.member;
    const LayerGroup& group = *members[i];
    const SpatialLayer& m = s[i];
    program_ = programs[i];
    const TileWindow v = m.window(step.tile, chain.mappings[i].tile_rows, m.ow);
    const std::uint64_t tr = v.r1 - v.r0;
    const std::uint64_t out_bytes = m.output_bytes(tr, m.ow, m.units);
    const bool last_member = i + 1 == k;
    std::vector<CommandIndex> deps;
    std::vector<std::string> in_buffers;
    if (weights[i] != kNone) deps.push_back(weights[i]);
    if (room != kNone) deps.push_back(room);  // a pool's tiles have no weights to wait behind
    // Room for the member's new tile: the steps that freed its tiles up to live_tiles back (frees
    // on different slices may end out of order).
    if (!last_member && step.tile >= chain.live_tiles[i]) {
      const std::vector<CommandIndex>& f = freer[i];
      const std::uint64_t back = step.tile - chain.live_tiles[i];
      if (back >= f.size()) throw std::logic_error("emit_chain: a tile runs past its reservation");
      const std::vector<CommandIndex> room_made = last_per_queue(
          std::vector<CommandIndex>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(back + 1)));
      deps.insert(deps.end(), room_made.begin(), room_made.end());
    }
    // The first member's input, and the last member's residual share: transient tiles on the
    // ring (with the first member's lent rows, held longer).
    std::uint64_t ring_bytes = 0;
    if (i == 0) ring_bytes = load_chain_input(group, m, v, step.tile, input, in_buffers, deps);
    if (last_member) {
      const std::vector<Piece> pieces = with_residual(g_, group, layouts_, m, {}, 0, v.r0, v.r1, 0,
                                                      m.ow, m.units * m.out_per_unit);
      ring_bytes = std::max<std::uint64_t>(out_bytes, 1);
      for (const Piece& p : pieces) ring_bytes += p.bytes;
      const CommandIndex wait = ring_wait(ring_bytes);
      for (const Piece& p : pieces) {
        if (p.bytes == 0) continue;
        std::vector<CommandIndex> load_deps;
        if (wait != kNone) load_deps.push_back(wait);
        load_piece(group, p, std::move(load_deps), in_buffers, deps);
      }
      if (wait != kNone) deps.push_back(wait);
    }
    // The tiles of the member before that wrote its input rows.
    std::vector<std::size_t> reads;
    if (i > 0) {
      for (std::size_t w = freed[i - 1]; w < written[i - 1].size(); ++w) {
        if (written[i - 1][w].r1 > v.lo && written[i - 1][w].r0 < v.hi) {
          deps.push_back(written[i - 1][w].compute);
          reads.push_back(w);
        }
      }
    }
    Command c = compute(m.op, next_slice(), m.compute_shape(tr, m.ow, m.units));
    // Ties go to the round-robin's slice, so steps of equal cost spread as before.
    const std::uint32_t place = clock.place(c.engine, step_cycles(c, m, cfg_), deps,
                                            (c.slice + slices_ - group_base_) % slices_);
    c.slice = (group_base_ + place) % slices_;
    const std::string out_buffer = buffer_name();
    c.alloc.push_back({out_buffer, std::max<std::uint64_t>(out_bytes, 1)});
    c.free = in_buffers;
    // The member before's tiles that no step from here on reads: the free waits for their
    // writer and every reader (earlier steps of this member).
    std::vector<CommandIndex> readers;
    if (i > 0) {
      for (; freed[i - 1] < step.freed_before; ++freed[i - 1]) {
        const Written& w = written[i - 1].at(freed[i - 1]);
        c.free.push_back(w.buffer);
        deps.push_back(w.compute);
        readers.insert(readers.end(), w.readers.begin(), w.readers.end());
      }
    }
    const std::vector<CommandIndex> readers_done = last_per_queue(readers);
    deps.insert(deps.end(), readers_done.begin(), readers_done.end());
    const CommandIndex comp = emit_step(std::move(c), m.pointwise_then_ops, group, std::move(deps));
    clock.placed(comp);
    computes.push_back(comp);
    for (const std::size_t w : reads) written[i - 1][w].readers.push_back(comp);
    if (i > 0) freer[i - 1].resize(step.freed_before, comp);
    if (i == 0) {
      free_chain_input(input, step.tile, comp);
      if (ring_bytes > 0) push_ring(comp, ring_bytes);  // its compute frees its input
    }
    if (!last_member) {
      written[i].push_back({v.r0, v.r1, comp, out_buffer, {}});
      continue;
    }
    const std::uint64_t y_row_bytes = m.ow * m.k * m.out_elem_bytes;
    last_store = store_tile(group, {comp}, out_buffer, out_bytes, v.r0 * y_row_bytes,
                            v.r1 * y_row_bytes, nullptr);
    push_ring(last_store, ring_bytes);
  }
  // 3. The last store frees what the chain reserved.
  if (last_store == kNone) throw std::logic_error("emit_chain: the chain stored nothing");
  if (!input.live.empty()) throw std::logic_error("emit_chain: input rows were never freed");
  std::vector<CommandIndex> after = last_per_queue(computes);
  std::copy_if(weights.begin(), weights.end(), std::back_inserter(after),
               [](CommandIndex w) { return w != kNone; });
  for (std::size_t i = 0; i + 1 < k; ++i) {
    for (; freed[i] < written[i].size(); ++freed[i]) {
      frees_at_end.push_back(written[i][freed[i]].buffer);
      after.push_back(written[i][freed[i]].compute);
    }
  }
  // (A last store that is the last compute, its output resident, waits for the others.)
  after.erase(std::remove(after.begin(), after.end(), last_store), after.end());
  add_deps(last_store, after);
  std::vector<std::string>& free = sched_.commands[last_store].free;
  free.insert(free.end(), frees_at_end.begin(), frees_at_end.end());
  resident_bytes_ -= chain.reserved_bytes;
  push_ring(last_store, chain.reserved_bytes);
  end_slices();
  if (output_resident) keep_resident();
  // Resident tensors read by the chain: its last command ends after every member's computes.
  for (const Residency& r : residency) {
    for (const std::uint32_t t : r.release) release_resident(t, last_store);
  }
  track_other_outputs(*members.back());
  program_ = programs.back();
}

}  // namespace npusim
