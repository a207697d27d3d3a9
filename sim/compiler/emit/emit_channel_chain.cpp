// Emission of a channel chain (Chain::channel_block; docs/compiler.md, "Channel chains"): an
// inverted residual block's expand, depthwise and project convs, block by block of the expand's
// output channels, so that each slice's vector unit filters one block while its array computes
// the next.
#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/epilogue.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"

namespace npusim {

// 1. The input map, loaded once after the room for what the chain reserves; every slice's
//    expands read it.
// 2. Block j (of `block` channels) runs on slice j mod S: the expand of those output channels
//    over the whole map (a Conv of all input channels), the depthwise conv of them (which frees
//    the expand's block), and the project conv's step over them, accumulating onto the slice's
//    earlier steps (which frees the depthwise block). With split outputs every slice runs a step
//    over block j, for its share of the output channels; the block's own slice runs its step last
//    and frees the block after the others' steps. Each loads its own share of its member's
//    weights; a weight load waits for the same member's compute two of the slice's steps back,
//    so that at most two are held per slice. The expand of a slice's block n + ahead is emitted
//    before the project step of its block n: the array queue is in order, and so the array
//    computes the next expand while the vector unit filters this block.
// 3. One slice, or split outputs: the last steps load the residual and write each slice's output
//    apart from its accumulator (which they free), and each is stored. Else
//    PartialSums add the slices' accumulators (and the residual), a piece of rows each on its
//    slice (emit_split_tile's reduction), and each piece is stored.
// 4. The last store frees the input and the accumulators, waits for every compute, and gives the
//    reservation back to the ring.
// One channel chain being emitted: its members, its slices and what its steps have emitted so far
// (per member and block, the compute and its output buffer; per slice, the accumulator and its
// last step).
struct Emitter::ChannelChainRun {
  ChannelChainRun(Emitter& emitter, const std::vector<const LayerGroup*>& chain_members)
      : em(emitter), members(chain_members) {}

  Emitter& em;
  const std::vector<const LayerGroup*>& members;
  std::vector<SpatialLayer> s;
  std::vector<std::uint32_t> programs;
  std::uint64_t block = 0, blocks = 0, slices = 0;
  bool split = false;
  std::vector<std::uint64_t> out_units;  // per slice: the project's output channel units
  std::vector<CommandIndex> after_room;
  std::vector<std::string> frees_at_end;
  std::vector<CommandIndex> input_loads;
  std::vector<std::vector<CommandIndex>> computes;  // [member < 2][block]
  std::vector<std::vector<std::string>> outputs;    // [member < 2][block]
  std::vector<std::vector<CommandIndex>> steps;     // [block][slice]: the project's steps
  std::vector<std::string> accumulators, outs;      // per slice (outs: its own output)
  std::vector<CommandIndex> last_step;              // per slice

  const SpatialLayer& expand() const { return s[0]; }
  const SpatialLayer& depthwise() const { return s[1]; }
  const SpatialLayer& project() const { return s[2]; }
  std::uint32_t slice_of(std::uint64_t j) const {
    return static_cast<std::uint32_t>((em.group_base_ + j % slices) % em.slices_);
  }
  std::uint64_t block_units(std::uint64_t j) const {
    return std::min(expand().k, (j + 1) * block) - j * block;
  }

  // Member i's `bytes` of weights into a buffer of their own (added to `frees`), after the room
  // and after `freed_by` (the same member's compute two of the slice's steps back, which freed
  // its weights), if any; the load joins `deps`.
  void load_weights(std::size_t i, std::uint64_t bytes, CommandIndex freed_by,
                    std::vector<std::string>& frees, std::vector<CommandIndex>& deps) {
    if (bytes == 0) return;
    std::vector<CommandIndex> waits = after_room;
    if (freed_by != kNone) waits.push_back(freed_by);
    Command load = dma(EngineKind::kDmaIn, bytes);
    frees.push_back(em.buffer_name());
    load.alloc.push_back({frees.back(), load.bytes});
    deps.push_back(em.emit(std::move(load), "DI", em.di_, *members[i], std::move(waits)));
  }
  CommandIndex two_back(std::size_t i, std::uint64_t j) const {
    return j >= 2 * slices ? computes[i][j - 2 * slices] : kNone;
  }

  // Member i's (the expand's or the depthwise conv's) compute of block j over the whole map. The
  // expand reads the input map; the depthwise conv reads the expand's block, which it frees.
  void emit_block(std::size_t i, std::uint64_t j) {
    const SpatialLayer& m = s[i];
    em.program_ = programs[i];
    const std::uint64_t u = block_units(j);
    std::vector<std::string> frees;
    std::vector<CommandIndex> deps;
    if (i == 0) {
      deps = input_loads;
      deps.insert(deps.end(), after_room.begin(), after_room.end());
    } else {
      frees.push_back(outputs[0][j]);
      deps.push_back(computes[0][j]);
    }
    load_weights(i, m.chunk_weight_bytes(u), two_back(i, j), frees, deps);
    Command c = compute(m.op, slice_of(j), m.tile_shape(m.oh, m.ow, u));
    outputs[i][j] = em.buffer_name();
    c.alloc.push_back({outputs[i][j], std::max<std::uint64_t>(m.output_bytes(m.oh, m.ow, u), 1)});
    c.free = std::move(frees);
    computes[i][j] = em.emit(std::move(c), "S", em.s_, *members[i], std::move(deps));
  }

  // The project's step over block j on slice q (of the chain's): split, its share of the output
  // channels; else all of them, on the block's slice. Each slice accumulates its steps in place.
  // The step that frees the depthwise block (`frees_block`) waits for every other slice's read.
  void emit_project(std::uint64_t j, std::uint64_t q, bool frees_block) {
    const SpatialLayer& p = project();
    em.program_ = programs[2];
    const std::uint64_t u = block_units(j), n = out_units[q];
    std::vector<std::string> frees;
    std::vector<CommandIndex> deps = {computes[1][j]};
    if (frees_block) {
      frees.push_back(outputs[1][j]);
      std::copy_if(steps[j].begin(), steps[j].end(), std::back_inserter(deps),
                   [](CommandIndex c) { return c != kNone; });
    }
    const std::uint64_t back = split ? 2 : 2 * slices;
    load_weights(2, p.part_weight_bytes(n, u), j >= back ? steps[j - back][q] : kNone, frees, deps);
    // The last step applies the residual, as a K-split tile's does, when no PartialSum will.
    const bool last = j + 1 == blocks && (split || slices == 1);
    if (last) {
      for (const Piece& r :
           with_residual(em.g_, *members[2], em.layouts_, p, {}, 0, 0, p.oh, 0, p.ow, n)) {
        if (r.bytes > 0) em.load_piece(*members[2], r, after_room, frees, deps);
      }
    }
    if (last_step[q] != kNone) deps.push_back(last_step[q]);  // accumulates onto it
    ConvShape shape = p.tile_shape(p.oh, p.ow, n);
    shape.in_c = u;
    Command c = compute(p.op, slice_of(q), shape);  // (q is j's slice unless split)
    if (last_step[q] == kNone) {
      accumulators[q] = em.buffer_name();
      c.alloc.push_back({accumulators[q], p.partial_bytes(p.oh, p.ow, n)});
    }
    // Split or on one slice, the last step writes the output apart from the accumulator, which
    // it frees (so that an output kept resident holds its own bytes, not the accumulator's).
    if (last) {
      outs[q] = em.buffer_name();
      c.alloc.push_back({outs[q], std::max<std::uint64_t>(p.output_bytes(p.oh, p.ow, n), 1)});
      frees.push_back(accumulators[q]);
    }
    c.free = std::move(frees);
    last_step[q] = steps[j][q] = em.emit(std::move(c), "S", em.s_, *members[2], std::move(deps));
  }

  // The output: each slice's (split, or one slice), or the PartialSums' pieces.
  // Returns the stores (or, kept on chip, the computes that wrote it); `reductions` gets the
  // PartialSums.
  std::vector<CommandIndex> emit_output(std::vector<CommandIndex>& reductions) {
    const SpatialLayer& p = project();
    em.program_ = programs[2];
    const LayerGroup& tail = *members[2];
    const std::uint64_t y_row_bytes = p.ow * p.k * p.out_elem_bytes;
    std::vector<CommandIndex> ends;
    if (split || slices == 1) {
      // (Split, each slice's channels of every row: the store's range is the rows it writes.)
      for (std::uint64_t q = 0; q < slices; ++q) {
        ends.push_back(em.store_tile(tail, {last_step[q]}, outs[q],
                                     p.output_bytes(p.oh, p.ow, out_units[q]), 0,
                                     p.oh * y_row_bytes, nullptr));
      }
      return ends;
    }
    const std::uint64_t pieces = std::min<std::uint64_t>(slices, p.oh);
    const std::uint64_t piece_rows = ceil_div(p.oh, pieces);
    const std::uint64_t passes = slices - 1 + (p.residual_elem_bytes > 0 ? 1 : 0);
    for (std::uint64_t r0 = 0, i = 0; r0 < p.oh; r0 += piece_rows, ++i) {
      const std::uint64_t r1 = std::min(p.oh, r0 + piece_rows);
      std::vector<CommandIndex> deps = last_step;
      std::vector<std::string> frees;
      for (const Piece& r :
           with_residual(em.g_, tail, em.layouts_, p, {}, 0, r0, r1, 0, p.ow, p.k)) {
        if (r.bytes > 0) em.load_piece(tail, r, after_room, frees, deps);
      }
      Command add =
          compute("PartialSum", slice_of(i), ElementsShape{passes * (r1 - r0) * p.ow * p.k});
      const std::string out = em.buffer_name();
      add.alloc.push_back(
          {out, std::max<std::uint64_t>(p.output_bytes(r1 - r0, p.ow, p.units), 1)});
      add.free = std::move(frees);
      reductions.push_back(em.emit(std::move(add), "S", em.s_, tail, std::move(deps)));
      ends.push_back(em.store_tile(tail, {reductions.back()}, out,
                                   p.output_bytes(r1 - r0, p.ow, p.units), r0 * y_row_bytes,
                                   r1 * y_row_bytes, nullptr));
    }
    frees_at_end.insert(frees_at_end.end(), accumulators.begin(), accumulators.end());
    return ends;
  }

  // Every compute of the chain.
  std::vector<CommandIndex> all_computes() const {
    std::vector<CommandIndex> all = computes[0];
    all.insert(all.end(), computes[1].begin(), computes[1].end());
    for (const std::vector<CommandIndex>& block_steps : steps) {
      std::copy_if(block_steps.begin(), block_steps.end(), std::back_inserter(all),
                   [](CommandIndex c) { return c != kNone; });
    }
    return all;
  }
};

void Emitter::emit_channel_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                                 const std::vector<Residency>& residency) {
  if (members.size() != 3) throw std::logic_error("emit_channel_chain: not three members");
  group_ = members.front();
  const bool output_resident = begin_chain_output(members, residency);
  ChannelChainRun run(*this, members);
  for (const LayerGroup* member : members) {
    run.s.push_back(describe_spatial(g_, *member, budgets_));
    sched_.programs.push_back({member->name, member->loc});
    run.programs.push_back(static_cast<std::uint32_t>(sched_.programs.size() - 1));
  }
  const SpatialLayer& e = run.expand();
  const SpatialLayer& p = run.project();
  run.block = chain.channel_block;
  run.blocks = ceil_div(e.k, run.block);
  begin_slices(chain.mappings.front());
  run.slices = std::min<std::uint64_t>(group_slices_, run.blocks);
  run.split = chain.split_outputs && run.slices > 1;
  run.out_units.assign(run.slices, p.units);
  for (std::uint64_t q = 0; run.split && q < run.slices; ++q) {
    run.out_units[q] = p.units / run.slices + (q < p.units % run.slices ? 1 : 0);
  }
  run.computes.assign(2, std::vector<CommandIndex>(run.blocks, kNone));
  run.outputs.assign(2, std::vector<std::string>(run.blocks));
  run.steps.assign(run.blocks, std::vector<CommandIndex>(run.slices, kNone));
  run.accumulators.resize(run.slices);
  run.outs.resize(run.slices);
  run.last_step.assign(run.slices, kNone);
  // 1. The room, and the input map.
  const CommandIndex room = ring_wait(chain.reserved_bytes);
  resident_bytes_ += chain.reserved_bytes;
  if (room != kNone) run.after_room.push_back(room);
  program_ = run.programs[0];
  load_piece(*members[0], spatial_input(e, 0, e.window(0, e.oh, e.ow), e.c), run.after_room,
             run.frees_at_end, run.input_loads);
  // 2. The blocks.
  const std::uint64_t lead = chain.ahead * run.slices;
  std::uint64_t expanded = 0;
  for (std::uint64_t j = 0; j < run.blocks; ++j) {
    for (; expanded < run.blocks && expanded <= j + lead; ++expanded) run.emit_block(0, expanded);
    run.emit_block(1, j);
    if (!run.split) {
      run.emit_project(j, j % run.slices, true);
      continue;
    }
    // The other slices' steps first; the block's own slice frees it.
    for (std::uint64_t n = 1; n <= run.slices; ++n) {
      const std::uint64_t q = (j + n) % run.slices;
      run.emit_project(j, q, q == j % run.slices);
    }
  }
  // 3. The output.
  std::vector<CommandIndex> reductions;
  const std::vector<CommandIndex> ends = run.emit_output(reductions);
  // 4. The last of them frees what is left and waits for every compute.
  const CommandIndex last = *std::max_element(ends.begin(), ends.end());
  std::vector<CommandIndex> after = last_per_queue(run.all_computes());
  after.insert(after.end(), reductions.begin(), reductions.end());
  after.insert(after.end(), ends.begin(), ends.end());
  after.erase(std::remove(after.begin(), after.end(), last), after.end());
  add_deps(last, after);
  std::vector<std::string>& free = sched_.commands[last].free;
  free.insert(free.end(), run.frees_at_end.begin(), run.frees_at_end.end());
  resident_bytes_ -= chain.reserved_bytes;
  push_ring(last, chain.reserved_bytes);
  // The blocks went round-robin over the chain's slices: the next group starts after the last.
  group_tiles_ = run.blocks;
  end_slices();
  if (output_resident) keep_resident();
  for (const Residency& r : residency) {
    for (const std::uint32_t t : r.release) release_resident(t, last);
  }
  track_other_outputs(*members[2]);
  program_ = run.programs.back();
}

}  // namespace npusim
