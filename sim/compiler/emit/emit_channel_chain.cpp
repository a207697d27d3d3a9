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
// 3. One slice, or split outputs: the last steps load the residual, and each slice's output is
//    stored (split, the last step writes it apart from the accumulator, which it frees). Else
//    PartialSums add the slices' accumulators (and the residual), a piece of rows each on its
//    slice (emit_split_tile's reduction), and each piece is stored.
// 4. The last store frees the input and the accumulators, waits for every compute, and gives the
//    reservation back to the ring.
void Emitter::emit_channel_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                                 const std::vector<Residency>& residency) {
  if (members.size() != 3) throw std::logic_error("emit_channel_chain: not three members");
  group_ = members.front();
  const bool output_resident = begin_chain_output(members, residency);
  std::vector<SpatialLayer> s;
  std::vector<std::uint32_t> programs;
  for (const LayerGroup* member : members) {
    s.push_back(describe_spatial(g_, *member, budgets_));
    sched_.programs.push_back({member->name, member->loc});
    programs.push_back(static_cast<std::uint32_t>(sched_.programs.size() - 1));
  }
  const SpatialLayer& e = s[0];
  const SpatialLayer& d = s[1];
  const SpatialLayer& p = s[2];
  const std::uint64_t block = chain.channel_block;
  const std::uint64_t blocks = ceil_div(e.k, block);
  begin_slices(chain.mappings.front());
  const std::uint64_t slices = std::min<std::uint64_t>(group_slices_, blocks);
  auto slice_of = [&](std::uint64_t j) {
    return static_cast<std::uint32_t>((group_base_ + j % slices) % slices_);
  };
  auto block_units = [&](std::uint64_t j) { return std::min(e.k, (j + 1) * block) - j * block; };
  // 1. The room, and the input map.
  const CommandIndex room = ring_wait(chain.reserved_bytes);
  resident_bytes_ += chain.reserved_bytes;
  std::vector<CommandIndex> after_room;
  if (room != kNone) after_room.push_back(room);
  std::vector<std::string> frees_at_end;
  std::vector<CommandIndex> input_loads;
  program_ = programs[0];
  load_piece(*members[0], spatial_input(e, 0, e.window(0, e.oh, e.ow), e.c), after_room,
             frees_at_end, input_loads);
  // 2. The blocks. Per member and block: its compute (kNone until emitted) and its output buffer.
  std::vector<std::vector<CommandIndex>> computes(2, std::vector<CommandIndex>(blocks, kNone));
  std::vector<std::vector<std::string>> outputs(2, std::vector<std::string>(blocks));
  std::vector<std::string> accumulators(slices);
  std::vector<CommandIndex> last_step(slices, kNone);
  // Member i's weights for block j: loaded after the room and after the member's compute two of
  // the slice's blocks back, which freed that block's weights.
  auto load_weights_of = [&](std::size_t i, std::uint64_t j, std::uint64_t bytes,
                             std::vector<std::string>& frees, std::vector<CommandIndex>& deps) {
    if (bytes == 0) return;
    std::vector<CommandIndex> waits = after_room;
    if (j >= 2 * slices) waits.push_back(computes[i][j - 2 * slices]);
    Command load = dma(EngineKind::kDmaIn, bytes);
    frees.push_back(buffer_name());
    load.alloc.push_back({frees.back(), load.bytes});
    deps.push_back(emit(std::move(load), "DI", di_, *members[i], std::move(waits)));
  };
  auto emit_expand = [&](std::uint64_t j) {
    program_ = programs[0];
    const std::uint64_t u = block_units(j);
    std::vector<std::string> frees;
    std::vector<CommandIndex> deps = input_loads;
    deps.insert(deps.end(), after_room.begin(), after_room.end());
    load_weights_of(0, j, e.chunk_weight_bytes(u), frees, deps);
    Command c = compute(e.op, slice_of(j), e.tile_shape(e.oh, e.ow, u));
    outputs[0][j] = buffer_name();
    c.alloc.push_back({outputs[0][j], std::max<std::uint64_t>(e.output_bytes(e.oh, e.ow, u), 1)});
    c.free = std::move(frees);
    computes[0][j] = emit(std::move(c), "S", s_, *members[0], std::move(deps));
  };
  auto emit_depthwise = [&](std::uint64_t j) {
    program_ = programs[1];
    const std::uint64_t u = block_units(j);
    std::vector<std::string> frees = {outputs[0][j]};
    std::vector<CommandIndex> deps = {computes[0][j]};
    load_weights_of(1, j, d.chunk_weight_bytes(u), frees, deps);
    Command c = compute(d.op, slice_of(j), d.tile_shape(d.oh, d.ow, u));
    outputs[1][j] = buffer_name();
    c.alloc.push_back({outputs[1][j], std::max<std::uint64_t>(d.output_bytes(d.oh, d.ow, u), 1)});
    c.free = std::move(frees);
    computes[1][j] = emit(std::move(c), "S", s_, *members[1], std::move(deps));
  };
  // The project's step over block j on slice q (of the chain's): split, its share of the output
  // channels; else all of them, on the block's slice. Each slice accumulates its steps in place.
  const bool split = chain.split_outputs && slices > 1;
  std::vector<std::uint64_t> out_units(slices, p.units);  // per slice
  if (split) {
    for (std::uint64_t q = 0; q < slices; ++q) {
      out_units[q] = p.units / slices + (q < p.units % slices ? 1 : 0);
    }
  }
  std::vector<std::vector<CommandIndex>> steps(blocks, std::vector<CommandIndex>(slices, kNone));
  std::vector<std::string> outs(slices);  // split: each slice's output, written by its last step
  auto emit_project = [&](std::uint64_t j, std::uint64_t q, bool frees_block) {
    program_ = programs[2];
    const std::uint64_t u = block_units(j), n = out_units[q];
    std::vector<std::string> frees;
    std::vector<CommandIndex> deps = {computes[1][j]};
    // The step that frees the depthwise block waits for every other slice's read of it.
    if (frees_block) {
      frees.push_back(outputs[1][j]);
      for (const CommandIndex other : steps[j]) {
        if (other != kNone) deps.push_back(other);
      }
    }
    // Its weights, after the slice's step two back (which freed that step's).
    if (const std::uint64_t bytes = p.part_weight_bytes(n, u); bytes > 0) {
      std::vector<CommandIndex> waits = after_room;
      const std::uint64_t back = split ? 2 : 2 * slices;
      if (j >= back) waits.push_back(steps[j - back][split ? q : j % slices]);
      Command load = dma(EngineKind::kDmaIn, bytes);
      frees.push_back(buffer_name());
      load.alloc.push_back({frees.back(), load.bytes});
      deps.push_back(emit(std::move(load), "DI", di_, *members[2], std::move(waits)));
    }
    // The last step applies the residual, as a K-split tile's does, when no PartialSum will.
    const bool last = split ? j + 1 == blocks : slices == 1 && j + 1 == blocks;
    if (last) {
      for (const Piece& r :
           with_residual(g_, *members[2], layouts_, p, {}, 0, 0, p.oh, 0, p.ow, n)) {
        if (r.bytes > 0) load_piece(*members[2], r, after_room, frees, deps);
      }
    }
    if (last_step[q] != kNone) deps.push_back(last_step[q]);  // accumulates onto it
    ConvShape shape = p.tile_shape(p.oh, p.ow, n);
    shape.in_c = u;
    Command c = compute(p.op, split ? static_cast<std::uint32_t>((group_base_ + q) % slices_)
                                    : slice_of(j),
                        shape);
    if (last_step[q] == kNone) {
      accumulators[q] = buffer_name();
      c.alloc.push_back({accumulators[q], p.partial_bytes(p.oh, p.ow, n)});
    }
    // Split, the last step writes the output apart from the accumulator, which it frees.
    if (split && last) {
      outs[q] = buffer_name();
      c.alloc.push_back({outs[q], std::max<std::uint64_t>(p.output_bytes(p.oh, p.ow, n), 1)});
      frees.push_back(accumulators[q]);
    }
    c.free = std::move(frees);
    last_step[q] = steps[j][q] = emit(std::move(c), "S", s_, *members[2], std::move(deps));
  };
  const std::uint64_t lead = chain.ahead * slices;
  std::uint64_t expanded = 0;
  for (std::uint64_t j = 0; j < blocks; ++j) {
    for (; expanded < blocks && expanded <= j + lead; ++expanded) emit_expand(expanded);
    emit_depthwise(j);
    if (!split) {
      emit_project(j, j % slices, true);
      continue;
    }
    // The other slices' steps first; the block's own slice frees it.
    for (std::uint64_t n = 1; n <= slices; ++n) {
      const std::uint64_t q = (j + n) % slices;
      emit_project(j, q, q == j % slices);
    }
  }
  // 3. The output.
  program_ = programs[2];
  const LayerGroup& tail = *members[2];
  const std::uint64_t y_row_bytes = p.ow * p.k * p.out_elem_bytes;
  std::vector<CommandIndex> ends;  // the stores (or, kept on chip, the last computes)
  std::vector<CommandIndex> reductions;
  if (split) {
    // Each slice's channels of every row: the store's range is the rows it writes into.
    for (std::uint64_t q = 0; q < slices; ++q) {
      ends.push_back(store_tile(tail, {last_step[q]}, outs[q],
                                p.output_bytes(p.oh, p.ow, out_units[q]), 0, p.oh * y_row_bytes,
                                nullptr));
    }
  } else if (slices == 1) {
    ends.push_back(store_tile(tail, {last_step[0]}, accumulators[0],
                              p.output_bytes(p.oh, p.ow, p.units), 0, p.oh * y_row_bytes,
                              nullptr));
  } else {
    const std::uint64_t pieces = std::min<std::uint64_t>(slices, p.oh);
    const std::uint64_t piece_rows = ceil_div(p.oh, pieces);
    const std::uint64_t passes = slices - 1 + (p.residual_elem_bytes > 0 ? 1 : 0);
    for (std::uint64_t r0 = 0, i = 0; r0 < p.oh; r0 += piece_rows, ++i) {
      const std::uint64_t r1 = std::min(p.oh, r0 + piece_rows);
      std::vector<CommandIndex> deps = last_step;
      std::vector<std::string> frees;
      for (const Piece& r : with_residual(g_, tail, layouts_, p, {}, 0, r0, r1, 0, p.ow, p.k)) {
        if (r.bytes > 0) load_piece(tail, r, after_room, frees, deps);
      }
      Command add =
          compute("PartialSum", slice_of(i), ElementsShape{passes * (r1 - r0) * p.ow * p.k});
      const std::string out = buffer_name();
      add.alloc.push_back(
          {out, std::max<std::uint64_t>(p.output_bytes(r1 - r0, p.ow, p.units), 1)});
      add.free = std::move(frees);
      reductions.push_back(emit(std::move(add), "S", s_, tail, std::move(deps)));
      ends.push_back(store_tile(tail, {reductions.back()}, out,
                                p.output_bytes(r1 - r0, p.ow, p.units), r0 * y_row_bytes,
                                r1 * y_row_bytes, nullptr));
    }
    frees_at_end.insert(frees_at_end.end(), accumulators.begin(), accumulators.end());
  }
  // 4. The last of them frees what is left and waits for every compute.
  const CommandIndex last = *std::max_element(ends.begin(), ends.end());
  std::vector<CommandIndex> all;
  for (std::size_t i = 0; i < 2; ++i) all.insert(all.end(), computes[i].begin(), computes[i].end());
  for (const std::vector<CommandIndex>& block_steps : steps) {
    std::copy_if(block_steps.begin(), block_steps.end(), std::back_inserter(all),
                 [](CommandIndex c) { return c != kNone; });
  }
  std::vector<CommandIndex> after = last_per_queue(all);
  after.insert(after.end(), reductions.begin(), reductions.end());
  after.insert(after.end(), ends.begin(), ends.end());
  after.erase(std::remove(after.begin(), after.end(), last), after.end());
  add_deps(last, after);
  std::vector<std::string>& free = sched_.commands[last].free;
  free.insert(free.end(), frees_at_end.begin(), frees_at_end.end());
  resident_bytes_ -= chain.reserved_bytes;
  push_ring(last, chain.reserved_bytes);
  end_slices();
  if (output_resident) keep_resident();
  for (const Residency& r : residency) {
    for (const std::uint32_t t : r.release) release_resident(t, last);
  }
  track_other_outputs(tail);
  program_ = programs.back();
}

}  // namespace npusim
