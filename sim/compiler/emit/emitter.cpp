#include "sim/compiler/emit/emitter.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "sim/util/error.h"
#include "sim/util/math.h"

namespace npusim {

namespace {

// `prefix` (a short literal: DI, S, b, ...) then `number`, made in one string: the compiler
// names millions of commands and buffers while it compares candidates.
std::string numbered(const char* prefix, std::uint64_t number) {
  char digits[20];  // 2^64 has 20 digits
  const char* end = std::to_chars(digits, digits + sizeof digits, number).ptr;
  std::string text(prefix);
  text.append(digits, static_cast<std::size_t>(end - digits));
  return text;
}

// A mapping from a search that does not fit the group is a bug, not bad input.
void check_mapping(GroupKind kind, const Mapping& m, const LayerGroup& group) {
  bool ok = false;
  switch (kind) {
    case GroupKind::kHost:
      ok = m.kind == MappingKind::kNone;
      break;
    case GroupKind::kSpatial:
      ok = m.kind == MappingKind::kSpatial && m.tile_rows > 0 && m.tile_cols > 0 &&
           m.tile_channel_units > 0 && m.k_parts > 0;
      break;
    case GroupKind::kMatMul:
      ok = (m.kind == MappingKind::kMatMul && m.tile_rows > 0 && m.tile_cols > 0) ||
           (m.kind == MappingKind::kMatMulKSplit && m.tile_rows > 0 && m.tile_cols > 0 &&
            m.k_step > 0);
      break;
    case GroupKind::kGlobalPool:
      ok = m.kind == MappingKind::kGlobalPool && m.tile_channel_units > 0;
      break;
    case GroupKind::kVector:
      ok = m.kind == MappingKind::kVector && m.tile_rows > 0 && m.row_pieces > 0;
      break;
    case GroupKind::kView:
    case GroupKind::kUnknown:
      ok = true;
      break;
  }
  if (!ok)
    throw std::logic_error("emit_group: the mapping does not fit group '" + group.name + "'");
}

}  // namespace

Emitter::Emitter(const Graph& graph, const HwConfig& config, const TensorLayouts& layouts)
    : g_(graph),
      cfg_(config),
      layouts_(layouts),
      budgets_(budgets_of(config)),
      slices_(config.slices.count),
      writers_(graph.tensors.size(), sched_.commands) {}

void Emitter::emit_group(const LayerGroup& group, const Mapping& mapping, bool keep_output,
                         bool on_chip_only, const Residency& residency) {
  const Layer& l = g_.layers[group.layers[0]];
  const GroupKind kind = group_kind(g_, group);
  if (kind == GroupKind::kView) return emit_view(l);
  if (kind == GroupKind::kUnknown) {
    throw InputError(g_.source_file, "layer '" + l.name + "' " + l.loc,
                     "op '" + l.op + "' cannot run on the NPU");
  }
  check_mapping(kind, mapping, group);
  sched_.programs.push_back({group.name, group.loc});
  program_ = static_cast<std::uint32_t>(sched_.programs.size() - 1);
  const std::size_t first_command = sched_.commands.size();
  group_first_ = first_command;
  group_ = &group;
  group_loads_ = 0;
  if (!prefetch_after_group_) emit_prefetches(group);
  begin_slices(mapping);
  if (keep_output || residency.output) {
    keeping_ = OnChip{group.output,
                      g_.tensors[group.output].bytes(),
                      on_chip_only || residency.output,
                      {},
                      {},
                      {}};
  }
  if (kind == GroupKind::kHost) {
    emit_host(group);
  } else if (mapping.kind == MappingKind::kSpatial) {
    emit_spatial(group, mapping);
  } else if (mapping.kind == MappingKind::kMatMul) {
    emit_matmul(group, mapping);
  } else if (mapping.kind == MappingKind::kMatMulKSplit) {
    emit_matmul_ksplit(group, mapping);
  } else if (mapping.kind == MappingKind::kGlobalPool) {
    emit_global_pool(group, mapping);
  } else {
    emit_vector(group, mapping);
  }
  end_slices();
  // The next group reads what was kept; what this group was given must have been read.
  if (kept_)
    throw std::logic_error("emit_group: '" + group.name + "' did not read its input on chip");
  if (residency.output && keeping_) {
    keep_resident();
  } else {
    kept_ = std::move(keeping_);
    keeping_.reset();
  }
  if (!residency.release.empty() && sched_.commands.size() > first_command) {
    free_carrier(group, static_cast<CommandIndex>(sched_.commands.size() - 1));
  }
  left_out_store_.reset();
  would_carry_.reset();
  for (std::uint32_t t : residency.release) {
    if (sched_.commands.size() == first_command)
      throw std::logic_error("emit_group: '" + group.name + "' read no resident tensor");
    release_resident(t, static_cast<CommandIndex>(sched_.commands.size() - 1));
  }
  if (prefetch_after_group_) emit_prefetches(group);
  if (sched_.commands.size() == first_command) sched_.programs.pop_back();
  track_other_outputs(group);
}

// Other outputs of the group's last layer (a quantize's scale, a pool's indices) come from the
// same stores.
void Emitter::track_other_outputs(const LayerGroup& group) {
  for (std::uint32_t out : g_.layers[group.layers.back()].outputs) {
    if (out != group.output) writers_.add_all_of(out, group.output);
  }
}

TensorInfo describe_tensor(const Tensor& tensor) {
  const std::string layout =
      tensor.layout.empty() && tensor.shape.size() == 4 ? "NCHW" : tensor.layout;
  return {tensor.name, dtype_name(tensor.dtype), layout, tensor.shape};
}

Schedule Emitter::finish() {
  if (!prefetched_.empty()) {
    throw std::logic_error("prefetch: load " + std::to_string(prefetched_.begin()->first.second) +
                           " of '" + prefetched_.begin()->first.first->name + "' never read");
  }
  sched_.file = g_.source_file;
  sched_.model.name = g_.name;
  sched_.model.batch = g_.batch;
  sched_.model.weights_bytes = g_.weights_bytes();
  auto tensors = [&](const std::vector<std::uint32_t>& ids) {
    std::vector<TensorInfo> list;
    list.reserve(ids.size());
    for (std::uint32_t t : ids) list.push_back(describe_tensor(g_.tensors[t]));
    return list;
  };
  sched_.model.inputs = tensors(g_.inputs);
  sched_.model.outputs = tensors(g_.outputs);
  sched_.target_config = cfg_.name;
  sched_.target_slices = cfg_.slices.count;
  if (sched_.programs.empty()) sched_.programs.push_back({g_.name, ""});
  // Joins appended dependencies after emission: sort them as emit() does, once per command.
  std::vector<CommandIndex> joined = writers_.joined();
  std::sort(joined.begin(), joined.end());
  joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
  for (CommandIndex c : joined) {
    IndexList& deps = sched_.commands[c].deps;
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  }
  return std::move(sched_);
}

// ---- primitives ---------------------------------------------------------------------------------

Emitter::CommandIndex Emitter::emit(Command c, const char* prefix, std::uint64_t& counter,
                                    const LayerGroup& group, std::vector<CommandIndex> deps) {
  c.id = numbered(prefix, counter++);
  if (name_ != group.name || loc_ != group.loc) {
    name_ = InternedString(group.name);
    loc_ = InternedString(group.loc);
  }
  c.layer = name_;
  c.loc = loc_;
  c.program = program_;
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  c.deps = deps;
  if (sched_.commands.size() >= kMaxCommands) {
    throw InputError(g_.source_file, "layer '" + group.name + "' " + group.loc,
                     "compiling for this config takes more than " + std::to_string(kMaxCommands) +
                         " commands, the most a schedule may have; raise lram_kib");
  }
  sched_.commands.push_back(std::move(c));
  return static_cast<CommandIndex>(sched_.commands.size() - 1);
}

Command Emitter::dma(EngineKind engine, std::uint64_t bytes) {
  Command c;
  c.engine = engine;
  c.bytes = std::max<std::uint64_t>(bytes, 1);
  return c;
}

Command Emitter::compute(std::string_view op, std::uint32_t slice, Shape shape) {
  Command c;
  c.op = find_op(op);
  c.engine = op_table().at(c.op).unit;
  c.slice = slice;
  c.shape = shape;
  return c;
}

std::string Emitter::buffer_name() { return numbered("b", buffers_++); }

// A few commands whose ends imply that every writer of [lo, hi) of a tensor ended: what a load of
// that range must wait for (writer_index.h).
void Emitter::reader_deps(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                          std::vector<CommandIndex>& deps) {
  writers_.wait_for(tensor, lo, hi, deps);
}

void Emitter::load_piece(const LayerGroup& group, const Piece& piece,
                         std::vector<CommandIndex> deps, std::vector<std::string>& buffers,
                         std::vector<CommandIndex>& to) {
  if (on_chip(piece.tensor)) {
    on_chip_writers(piece.tensor, piece.lo, piece.hi, to);
    return;
  }
  reader_deps(piece.tensor, piece.lo, piece.hi, deps);
  Command c = dma(EngineKind::kDmaIn, piece.bytes);
  buffers.push_back(buffer_name());
  c.alloc.push_back({buffers.back(), c.bytes});
  to.push_back(emit(std::move(c), "DI", di_, group, std::move(deps)));
}

Piece Emitter::spatial_input(const SpatialLayer& s, std::uint64_t img, const TileWindow& v,
                             std::uint64_t in_c) const {
  const std::uint64_t row_bytes = s.w * s.c * s.in_elem_bytes;
  const bool image = layouts_.is_image(s.input);
  // Rows (and columns) between windows are not read (SpatialLayer::rows_read); the range stays
  // the window's, for the writers the load waits for.
  return Piece{s.input, image ? (img * s.h + v.lo) * row_bytes : 0,
               image ? (img * s.h + v.hi) * row_bytes : g_.tensors[s.input].bytes(),
               s.rows_read(v.r0, v.r1) * s.cols_read(v.c0, v.c1, in_c) * in_c * s.in_elem_bytes};
}

// The computes that wrote [lo, hi) of resident `tensor`, the last of each queue: a reader waits
// for those, as a load waits for the stores of its bytes.
void Emitter::on_chip_writers(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                              std::vector<CommandIndex>& to) const {
  // A view's bytes are laid out as the view says, not as its inputs': any of it may come from
  // any writer of any of them.
  if (const auto alias = aliases_.find(tensor); alias != aliases_.end()) {
    std::vector<CommandIndex> all;
    for (std::uint32_t t : alias->second) {
      const std::vector<CommandIndex>& w = resident_.at(t).writers;
      all.insert(all.end(), w.begin(), w.end());
    }
    const std::vector<CommandIndex> last = last_per_queue(all);
    to.insert(to.end(), last.begin(), last.end());
    return;
  }
  const OnChip& r = resident_.at(tensor);
  std::vector<CommandIndex> overlapping;
  for (const OnChip::Range& range : r.ranges) {
    if (range.lo < hi && lo < range.hi) {
      overlapping.insert(overlapping.end(), range.by.begin(), range.by.end());
    }
  }
  // Every byte was written by some tile; an empty range (a zero-size read) waits for them all.
  if (overlapping.empty()) overlapping = r.writers;
  const std::vector<CommandIndex> last = last_per_queue(overlapping);
  to.insert(to.end(), last.begin(), last.end());
}

Emitter::CommandIndex Emitter::load_shared_input(const LayerGroup& group, std::uint32_t tensor,
                                                 std::uint64_t lo, std::uint64_t hi,
                                                 std::uint64_t bytes) {
  if (!on_chip(tensor)) {
    std::vector<CommandIndex> after;
    reader_deps(tensor, lo, hi, after);
    return load_weights(bytes, group, std::move(after));
  }
  weights_pieces_.clear();
  weights_buffers_.clear();  // nothing loaded: release_resident frees the tensor's buffers
  on_chip_writers(tensor, lo, hi, weights_pieces_);
  // Assumed resident with no writer (assume_resident): nothing to wait for.
  return weights_pieces_.empty() ? kNone : weights_pieces_.front();
}

// Of the computes that read a weight chunk, the last one on each slice unit. A unit runs its
// in-order queue one command at a time, so its last reader's end implies the others' ends: the
// store that frees the chunk waits for at most 2 × slices computes, not for every tile.
std::vector<Emitter::CommandIndex> Emitter::last_per_queue(
    const std::vector<CommandIndex>& computes) const {
  std::vector<CommandIndex> last(2 * std::size_t{slices_}, kNone);
  for (CommandIndex c : computes) {
    const Command& cmd = sched_.commands[c];
    const std::size_t queue =
        2 * std::size_t{cmd.slice} + (cmd.engine == EngineKind::kArray ? 0 : 1);
    if (last[queue] == kNone || last[queue] < c) last[queue] = c;
  }
  last.erase(std::remove(last.begin(), last.end(), kNone), last.end());
  return last;
}

// A chunk of constants shared by every slice; at most two are live, so a new chunk waits for
// the DMA_OUT that freed the one two back. `after` lists the stores it must also wait for (an
// activation loaded as an operand).
Emitter::CommandIndex Emitter::load_weights(std::uint64_t bytes, const LayerGroup& group,
                                            std::vector<CommandIndex> after) {
  if (weight_frees_.size() >= shared_live_) {
    after.push_back(weight_frees_[weight_frees_.size() - shared_live_]);
  }
  if (shared_fence_left_ > 0) {
    --shared_fence_left_;
    after.insert(after.end(), shared_fence_.begin(), shared_fence_.end());
  }
  // After tiles that took the whole memory, a chunk waits until the live tiles fit the tiles'
  // half again. (Every later chunk does: a chunk waits for the free of the one two back, which
  // need not come after this wait, so nothing but its own wait orders it after theirs.)
  if (chunks_wait_for_ring_) {
    const CommandIndex wait = ring_within_budget();
    if (wait != kNone) after.push_back(wait);
  }
  // Prefetched weights share the chunks' half: counted in bytes, a chunk may wait for more.
  for (const CommandIndex w : half_waits(bytes, group)) after.push_back(w);
  weights_bytes_ = bytes;
  // One piece per DMA_IN channel at most, so that all channels bring the chunk in at once.
  const std::uint64_t piece_bytes = shared_pieces(bytes, cfg_).piece_bytes;
  weights_buffers_.clear();
  weights_pieces_.clear();
  for (std::uint64_t lo = 0; lo < std::max<std::uint64_t>(bytes, 1); lo += piece_bytes) {
    Command c = dma(EngineKind::kDmaIn, std::min(bytes, lo + piece_bytes) - lo);
    weights_buffers_.push_back(buffer_name());
    c.alloc.push_back({weights_buffers_.back(), c.bytes});
    weights_pieces_.push_back(emit(std::move(c), "DI", di_, group, after));
  }
  return weights_pieces_.front();
}

void Emitter::release_output(CommandIndex store, const LayerGroup& group, const std::string& buffer,
                             const std::vector<CommandIndex>& writers) {
  if (keeping_ && keeping_->tensor == group.output) {
    keeping_->buffers.push_back(buffer);
    keeping_->writers.insert(keeping_->writers.end(), writers.begin(), writers.end());
    return;
  }
  sched_.commands[store].free.push_back(buffer);
}

void Emitter::keep_resident() {
  resident_bytes_ += keeping_->bytes;
  const std::uint32_t tensor = keeping_->tensor;
  resident_.emplace(tensor, std::move(*keeping_));
  keeping_.reset();
}

void Emitter::release_kept(const LayerGroup& group, CommandIndex store) {
  // A compute standing for a store it left out would hold its slice's queue until the readers on
  // the other slices end: the store comes back to carry the free.
  store = free_carrier(group, store);
  add_deps(store, kept_->writers);
  // Every tile of this group before it may read the kept buffers, on any slice.
  add_deps(store, last_per_queue_between(group_first_, store));
  std::vector<std::string>& free = sched_.commands[store].free;
  free.insert(free.end(), kept_->buffers.begin(), kept_->buffers.end());
  push_ring(store, kept_->bytes);
  kept_.reset();
}

Emitter::CommandIndex Emitter::free_carrier(const LayerGroup& group, CommandIndex candidate) {
  if (would_carry_ == candidate) {
    ++frees_stores_would_carry_;
    would_carry_.reset();
  }
  if (!left_out_store_ || left_out_store_->compute != candidate) return candidate;
  const CommandIndex store =
      emit(dma(EngineKind::kDmaOut, left_out_store_->bytes), "DO", do_, group, {candidate});
  left_out_store_.reset();
  return store;
}

std::vector<Emitter::CommandIndex> Emitter::last_per_queue_since(std::size_t from) const {
  return last_per_queue_between(from, sched_.commands.size());
}

std::vector<Emitter::CommandIndex> Emitter::last_per_queue_between(std::size_t from,
                                                                   std::size_t to) const {
  std::vector<CommandIndex> computes;
  for (std::size_t c = from; c < to; ++c) {
    const EngineKind e = sched_.commands[c].engine;
    if (e == EngineKind::kArray || e == EngineKind::kVector)
      computes.push_back(static_cast<CommandIndex>(c));
  }
  return last_per_queue(computes);
}

void Emitter::emit_prefetches(const LayerGroup& at) {
  const auto it = prefetch_at_.find(&at);
  if (it == prefetch_at_.end()) return;
  for (const PrefetchOrder& o : it->second) {
    // Its room is in the chunks' half, after what is live there; after tiles that took the
    // whole memory, once they fit the tiles' half again, as a chunk's (load_weights).
    std::vector<CommandIndex> deps = half_waits(o.bytes, at);
    if (chunks_wait_for_ring_) {
      if (const CommandIndex wait = ring_within_budget(); wait != kNone) deps.push_back(wait);
    }
    prefetched_bytes_ += o.bytes;
    any_prefetched_ = true;
    Command load = dma(EngineKind::kDmaIn, o.bytes);
    Prefetched p;
    p.buffer = buffer_name();
    p.bytes = o.bytes;
    load.alloc.push_back({p.buffer, load.bytes});
    // Named after the layer whose weights it loads, in the program that issues it.
    p.load = emit(std::move(load), "DI", di_, *o.target, std::move(deps));
    if (!prefetched_.emplace(std::make_pair(o.target, o.load), std::move(p)).second) {
      throw std::logic_error("prefetch: load " + std::to_string(o.load) + " of '" + o.target->name +
                             "' prefetched twice");
    }
  }
}

std::optional<Emitter::Prefetched> Emitter::take_prefetched(const LayerGroup& group,
                                                            std::uint64_t bytes) {
  const std::size_t load = group_loads_++;
  const auto it = prefetched_.find({&group, load});
  if (it == prefetched_.end()) return std::nullopt;
  if (it->second.bytes != bytes) {
    throw std::logic_error("prefetch: load " + std::to_string(load) + " of '" + group.name +
                           "' takes " + std::to_string(bytes) + " bytes, " +
                           std::to_string(it->second.bytes) + " were prefetched");
  }
  Prefetched p = std::move(it->second);
  prefetched_.erase(it);
  return p;
}

std::vector<Emitter::CommandIndex> Emitter::half_waits(std::uint64_t bytes,
                                                       const LayerGroup& group) const {
  if (!prefetching()) return {};
  const std::uint64_t half = cfg_.lram_bytes / 2;
  std::uint64_t live = bytes + prefetched_bytes_;
  if (live > half) {
    throw PrefetchDoesNotFit(group, true,
                             "a load of " + std::to_string(bytes) + " bytes with " +
                                 std::to_string(prefetched_bytes_) + " prefetched bytes held");
  }
  for (std::size_t i = half_.size(); i > 0; --i) {
    live += half_[i - 1].bytes;
    if (live > half) return half_frees_through(i - 1);
  }
  return {};
}

std::vector<Emitter::CommandIndex> Emitter::half_frees_through(std::size_t i) const {
  constexpr std::size_t kOutOfOrder = 8;
  std::vector<CommandIndex> frees;
  for (std::size_t j = i + 1; j > 0 && i + 1 - j < kOutOfOrder; --j)
    frees.push_back(half_[j - 1].free);
  return frees;
}

void Emitter::settle_prefetch(CommandIndex entry, std::uint64_t bytes) {
  prefetched_bytes_ -= bytes;
  // In the order of the commands that free them: a split tile's parts are settled after its
  // block's entry, which its last store frees.
  const auto at = std::upper_bound(half_.begin(), half_.end(), entry,
                                   [](CommandIndex e, const HalfEntry& h) { return e < h.free; });
  half_.insert(at, {entry, bytes});
}

// The carrier waits for every writer (a free must depend on its allocator) and for the last
// command of each slice unit since the tensor was written, which every reader precedes on its
// in-order queue; from the carrier on the ring counts the bytes as its.
void Emitter::release_resident(std::uint32_t tensor, CommandIndex carrier) {
  const auto it = resident_.find(tensor);
  if (it == resident_.end())
    throw std::logic_error("release_resident: tensor " + std::to_string(tensor) + " not resident");
  OnChip& r = it->second;
  // Every tiled group writes at least one tile; none written leaves nothing to wait for.
  const CommandIndex written =
      r.writers.empty() ? carrier : *std::max_element(r.writers.begin(), r.writers.end());
  std::vector<CommandIndex> deps = r.writers;
  for (CommandIndex c : last_per_queue_since(written)) {
    if (c != carrier) deps.push_back(c);
  }
  add_deps(carrier, deps);
  std::vector<std::string>& free = sched_.commands[carrier].free;
  free.insert(free.end(), r.buffers.begin(), r.buffers.end());
  push_ring(carrier, r.bytes);
  resident_bytes_ -= r.bytes;
  resident_.erase(it);
  for (auto a = aliases_.begin(); a != aliases_.end();) {
    const bool of_it = std::find(a->second.begin(), a->second.end(), tensor) != a->second.end();
    a = of_it ? aliases_.erase(a) : std::next(a);
  }
}

void Emitter::add_deps(CommandIndex command, const std::vector<CommandIndex>& deps) {
  IndexList& to = sched_.commands[command].deps;
  to.insert(to.end(), deps.begin(), deps.end());
  std::sort(to.begin(), to.end());
  to.erase(std::unique(to.begin(), to.end()), to.end());
}

std::uint64_t Emitter::ring_budget() const {
  const std::uint64_t kept =
      (keeping_ ? keeping_->bytes : 0) + (kept_ ? kept_->bytes : 0) + resident_bytes_;
  const std::uint64_t room = ring_whole_memory_ ? cfg_.lram_bytes : cfg_.lram_bytes / 2;
  return room > kept ? room - kept : 0;
}

// The store after which the live tiles hold at most the ring's budget, scanning every tile (no
// depth limit); kNone if they already do.
Emitter::CommandIndex Emitter::ring_within_budget() const {
  const std::uint64_t budget = ring_budget();
  std::uint64_t live = 0;
  for (std::size_t i = ring_.size(); i > 0; --i) {
    live += ring_[i - 1].bytes;
    if (live > budget) return ring_[i - 1].store;
  }
  return kNone;
}

void Emitter::begin_whole_memory(std::uint64_t batch_bytes) {
  whole_fence_.clear();
  if (batch_bytes <= ring_budget()) return;
  if (prefetched_bytes_ > 0) {
    throw PrefetchDoesNotFit(*group_, true,
                             "tiles that take the whole memory with prefetched bytes held");
  }
  const std::size_t keep = std::min<std::size_t>(weight_frees_.size(), live_shared_live_);
  whole_fence_.assign(weight_frees_.end() - static_cast<std::ptrdiff_t>(keep), weight_frees_.end());
  // The newest entries of the chunks' half: the prefetched loads read before them are freed too.
  if (!half_.empty()) {
    for (const CommandIndex f : half_frees_through(half_.size() - 1)) whole_fence_.push_back(f);
  }
  ring_whole_memory_ = true;
}

void Emitter::end_whole_memory() {
  whole_fence_.clear();
  if (!ring_whole_memory_) return;
  ring_whole_memory_ = false;
  chunks_wait_for_ring_ = true;
}

bool Emitter::join_ksplit_batch(KSplitTile& tile, std::uint64_t& batch_bytes, bool first) {
  // A batch holds what the ring may: with less room (resident tensors), fewer tiles.
  if (!first && batch_bytes + tile.bytes > ring_budget()) return false;
  tile.slice = next_slice();
  batch_bytes += tile.bytes;
  tile.ring_wait = ring_wait(batch_bytes);
  tile.out_buffer = buffer_name();
  return true;
}

std::vector<Emitter::CommandIndex> Emitter::ksplit_step_waits(const KSplitTile& tile) const {
  const std::vector<CommandIndex>& steps = tile.steps;
  if (steps.size() >= 2) return {steps[steps.size() - 2]};
  std::vector<CommandIndex> waits = whole_fence_;
  if (tile.ring_wait != kNone) waits.push_back(tile.ring_wait);
  return waits;
}

// What a new tile of `bytes` must wait for: the store of the newest tile that must be gone so
// that the live tiles of all slices, this one included, hold at most half the local memory
// (docs/compiler.md, "Memory budgets"); kNone if none must. At most 8 tiles per slice are live.
Emitter::CommandIndex Emitter::ring_wait(std::uint64_t bytes) {
  const std::uint64_t budget = ring_budget();
  // A claim past the tiles' half spills into the chunks' half, which prefetched weights may fill:
  // once any prefetch was loaded, the driver plans again instead (split input-outer waves and
  // chains can pass ring_need). Before the first, the chunks' half holds what it would without
  // prefetch, and the claim spills as it would there; every later chunk and prefetch then waits
  // until the live tiles fit the tiles' half again, as after tiles that took the whole memory
  // (end_whole_memory).
  if (prefetching() && bytes > budget) {
    if (any_prefetched_) {
      throw PrefetchDoesNotFit(*group_, prefetched_bytes_ > 0,
                               "tiles of " + std::to_string(bytes) + " bytes pass the " +
                                   std::to_string(budget) + " left of the tiles' half");
    }
    chunks_wait_for_ring_ = true;
  }
  const std::size_t depth = 8 * std::size_t{slices_};
  std::uint64_t live = bytes;
  for (std::size_t i = ring_.size(), seen = 1; i > 0; --i, ++seen) {
    live += ring_[i - 1].bytes;
    if (live > budget || seen == depth) return ring_[i - 1].store;
  }
  return kNone;
}

void Emitter::push_ring(CommandIndex store, std::uint64_t bytes) {
  ring_.push_back({store, bytes});
}

// One tile on `slice`: load `pieces`, run `op` with `shape`, store `out_bytes` as [out_lo,
// out_hi) of the group's output. `weights` is the loaded chunk it reads, if any. On the chunk's
// last tile, `other_readers` lists every other compute that read it: this tile's store then
// waits for them all and frees the chunk. Returns the compute.
Emitter::CommandIndex Emitter::tile(std::uint32_t slice, const LayerGroup& group,
                                    const std::vector<Piece>& pieces, const std::string& op,
                                    Shape shape, CommandIndex weights, std::uint64_t out_bytes,
                                    std::uint64_t out_lo, std::uint64_t out_hi,
                                    const std::vector<CommandIndex>* other_readers,
                                    const std::vector<std::string>& then_ops, const Held* held,
                                    const Prefetched* prefetched) {
  std::uint64_t tile_bytes = std::max<std::uint64_t>(out_bytes, 1);
  for (const Piece& p : pieces) tile_bytes += p.bytes;
  if (held != nullptr) tile_bytes += held->bytes;
  const CommandIndex ring_wait = this->ring_wait(tile_bytes);
  std::vector<CommandIndex> compute_deps;
  std::vector<std::string> in_buffers;
  for (const Piece& p : pieces) {
    if (p.bytes == 0) continue;
    std::vector<CommandIndex> deps;
    if (ring_wait != kNone) deps.push_back(ring_wait);
    load_piece(group, p, std::move(deps), in_buffers, compute_deps);
  }
  if (weights != kNone) {
    compute_deps.insert(compute_deps.end(), weights_pieces_.begin(), weights_pieces_.end());
  }
  if (ring_wait != kNone) compute_deps.push_back(ring_wait);
  if (held != nullptr)
    compute_deps.insert(compute_deps.end(), held->loads.begin(), held->loads.end());
  if (prefetched != nullptr) {
    compute_deps.push_back(prefetched->load);
    in_buffers.push_back(prefetched->buffer);
  }
  Command s = compute(op, slice, shape);
  const std::string out_buffer = buffer_name();
  s.alloc.push_back({out_buffer, std::max<std::uint64_t>(out_bytes, 1)});
  // The last op to read the tile's pieces frees them (a fused op may read a streamed constant).
  if (then_ops.empty()) s.free = in_buffers;
  CommandIndex compute = emit(std::move(s), "S", s_, group, std::move(compute_deps));
  for (std::size_t i = 0; i < then_ops.size(); ++i) {
    Command then = this->compute(then_ops[i], slice, shape);
    if (i + 1 == then_ops.size()) then.free = in_buffers;
    compute = emit(std::move(then), "S", s_, group, {compute});
  }
  const CommandIndex store = store_tile(group, {compute}, out_buffer, out_bytes, out_lo, out_hi,
                                        weights != kNone ? other_readers : nullptr);
  push_ring(store, tile_bytes);
  if (prefetched != nullptr) settle_prefetch(store, prefetched->bytes);
  return compute;
}

// The DMA_OUT of a tile's output after `after` (its compute), as [out_lo, out_hi) of the group's
// output, freeing `out_buffer`. With `other_readers` (the computes that read the shared chunk),
// it also waits for them and frees the chunk.
Emitter::CommandIndex Emitter::store_tile(const LayerGroup& group, std::vector<CommandIndex> after,
                                          const std::string& out_buffer, std::uint64_t out_bytes,
                                          std::uint64_t out_lo, std::uint64_t out_hi,
                                          const std::vector<CommandIndex>* other_readers) {
  // An output kept on chip that no other layer reads is not written to DRAM: the tile's last
  // compute stands for its store (the ring's entry). A tile whose store frees a shared chunk still
  // stores, unless that compute already waits for the chunk's other readers (below): the store,
  // not the compute, waits for them.
  if (keeping_ && keeping_->tensor == group.output) {
    keeping_->ranges.push_back({out_lo, out_hi, after});
  }
  // When the tile's own computes are the chunk's only readers (an input block or weight chunk of
  // one tile), there is nothing else to wait for: its last compute frees the chunk instead. So
  // when the other readers are what that compute waits for: the parts of a tile split over
  // slices, whose every PartialSum waits for every part (emit_split_tile).
  const CommandIndex last_after =
      after.empty() ? kNone : *std::max_element(after.begin(), after.end());
  const bool only_reader =
      other_readers == nullptr ||
      std::all_of(other_readers->begin(), other_readers->end(), [&](CommandIndex r) {
        if (std::find(after.begin(), after.end(), r) != after.end()) return true;
        if (last_after == kNone) return false;
        const auto& deps = sched_.commands[last_after].deps;
        return std::find(deps.begin(), deps.end(), r) != deps.end();
      });
  if (keeping_ && keeping_->tensor == group.output && keeping_->on_chip_only &&
      (other_readers == nullptr || (drop_unread_stores_ && only_reader))) {
    keeping_->buffers.push_back(out_buffer);
    keeping_->writers.insert(keeping_->writers.end(), after.begin(), after.end());
    const CommandIndex last = *std::max_element(after.begin(), after.end());
    if (other_readers != nullptr) {
      std::vector<std::string>& free = sched_.commands[last].free;
      free.insert(free.end(), weights_buffers_.begin(), weights_buffers_.end());
      weight_frees_.push_back(last);
      if (prefetching() && !weights_buffers_.empty()) half_.push_back({last, weights_bytes_});
    }
    if (stores_carry_frees_) {
      left_out_store_ = LeftOutStore{last, out_bytes};
      would_carry_.reset();
    } else {
      would_carry_ = last;
    }
    return last;
  }
  std::vector<CommandIndex> writers = after;
  std::vector<CommandIndex> store_deps = std::move(after);
  Command o = dma(EngineKind::kDmaOut, out_bytes);
  if (other_readers != nullptr) {
    const std::vector<CommandIndex> last = last_per_queue(*other_readers);
    store_deps.insert(store_deps.end(), last.begin(), last.end());
    o.free.insert(o.free.end(), weights_buffers_.begin(), weights_buffers_.end());
  }
  const CommandIndex store = emit(std::move(o), "DO", do_, group, std::move(store_deps));
  release_output(store, group, out_buffer, writers);
  if (other_readers != nullptr) {
    weight_frees_.push_back(store);
    if (prefetching() && !weights_buffers_.empty()) half_.push_back({store, weights_bytes_});
  }
  writers_.add(group.output, out_lo, out_hi, store);
  return store;
}

std::uint32_t Emitter::next_slice() {
  const auto s = static_cast<std::uint32_t>((group_base_ + group_tiles_ % group_slices_) % slices_);
  ++group_tiles_;
  return s;
}

// Tiles go round-robin over the mapping's slices, starting where the last group stopped. (Tiles
// of a group on fewer slices are larger, budgets_of; ring_wait counts bytes, so they need no
// fence.) A group that changes the shared chunks live waits, with its first chunks, for the
// frees still outstanding.
void Emitter::begin_slices(const Mapping& mapping) {
  group_slices_ = mapping.slices == 0 ? slices_ : std::min(mapping.slices, slices_);
  group_base_ = rr_;
  group_tiles_ = 0;
  shared_live_ = std::max<std::uint32_t>(mapping.shared_live, 2);
  shared_fence_.clear();
  shared_fence_left_ = 0;
  if (shared_live_ != live_shared_live_) {
    const std::size_t keep = std::min<std::size_t>(weight_frees_.size(), live_shared_live_);
    shared_fence_.assign(weight_frees_.end() - static_cast<std::ptrdiff_t>(keep),
                         weight_frees_.end());
    shared_fence_left_ = shared_live_;
  }
}

void Emitter::end_slices() {
  if (group_tiles_ == 0) return;
  // All slices in use: the round-robin just continues; fewer: the next group starts after them.
  const std::uint64_t advance = group_slices_ == slices_
                                    ? group_tiles_
                                    : std::min<std::uint64_t>(group_tiles_, group_slices_);
  rr_ = static_cast<std::uint32_t>((group_base_ + advance) % slices_);
  live_shared_live_ = shared_live_;
}

// ---- host fallback ------------------------------------------------------------------------------
// One command on the host, which reads its inputs from DRAM once their writers are done and
// writes its outputs there; it costs the config's host call plus a cost per output element.
void Emitter::emit_host(const LayerGroup& group) {
  const Layer& l = g_.layers[group.layers[0]];
  std::vector<CommandIndex> deps;
  for (std::uint32_t t : l.inputs) {
    if (!g_.tensors[t].constant) reader_deps(t, 0, ~std::uint64_t{0}, deps);
  }
  Command c;
  c.engine = EngineKind::kHost;
  for (std::uint32_t t : l.outputs) c.elements += g_.tensors[t].elements();
  const CommandIndex host = emit(std::move(c), "H", h_, group, std::move(deps));
  for (std::uint32_t t : l.outputs) writers_.add(t, 0, ~std::uint64_t{0}, host);
}

// ---- views --------------------------------------------------------------------------------------
// No data moves: the outputs hold whatever the inputs' writers wrote, so readers of any part wait
// for all of them. (Their layouts are assign_layouts'.)
void Emitter::emit_view(const Layer& l) {
  // A view of resident tensors is on chip too (plan_residency keeps all of a view's inputs or
  // none): its outputs alias them.
  std::vector<std::uint32_t> members;
  bool dram = false;
  for (std::uint32_t in : l.inputs) {
    if (g_.tensors[in].constant) continue;
    if (const auto a = aliases_.find(in); a != aliases_.end()) {
      members.insert(members.end(), a->second.begin(), a->second.end());
    } else if (resident_.count(in) > 0) {
      members.push_back(in);
    } else {
      dram = true;
    }
  }
  if (!members.empty()) {
    if (dram) {
      throw std::logic_error("emit_view: '" + l.name + "' reads tensors both on chip and in DRAM");
    }
    for (std::uint32_t out : l.outputs) aliases_[out] = members;
    return;
  }
  for (std::uint32_t out : l.outputs) {
    for (std::uint32_t in : l.inputs) {
      if (!g_.tensors[in].constant) writers_.add_all_of(out, in);
    }
  }
}

}  // namespace npusim
