#include "sim/compiler/emit/writer_index.h"

#include <algorithm>

namespace npusim {

WriterIndex::WriterIndex(std::size_t tensors, std::vector<Command>& commands)
    : tensors_(tensors), commands_(commands) {}

void WriterIndex::add(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                      CommandIndex store) {
  Tensor& t = tensors_[tensor];
  // A tensor is written before it is read, so this only happens in unusual graphs; the joins
  // already made stay valid (they only add waits), and the index is rebuilt on the next read.
  t.indexed = false;
  t.raw.push_back({lo, hi, store});
}

void WriterIndex::add_all_of(std::uint32_t tensor, std::uint32_t source) {
  tensors_[tensor].indexed = false;
  tensors_[tensor].raw.push_back({0, ~std::uint64_t{0}, 0, source});
}

// The later of two commands, given a dependency on the earlier one.
WriterIndex::CommandIndex WriterIndex::join(CommandIndex x, CommandIndex y) {
  if (x == y) return x;
  const CommandIndex later = std::max(x, y);
  commands_[later].deps.push_back(std::min(x, y));
  joined_.push_back(later);
  return later;
}

// Joins go from the latest writer to each other one, so that only the latest waits longer.
WriterIndex::CommandIndex WriterIndex::latest(const std::vector<Writer>& writers) {
  CommandIndex rep = 0;
  for (const Writer& w : writers) rep = std::max(rep, w.store);
  return rep;
}

void WriterIndex::build(std::uint32_t tensor) {
  // Resolve "every writer of another tensor" first: it is complete, as that tensor was written
  // before this one.
  std::vector<Writer> writers;
  for (const Writer& w : tensors_[tensor].raw) {
    if (w.all_of == ~std::uint32_t{0}) {
      writers.push_back(w);
      continue;
    }
    std::vector<CommandIndex> all;
    wait_for(w.all_of, 0, ~std::uint64_t{0}, all);
    for (CommandIndex c : all) writers.push_back({0, ~std::uint64_t{0}, c});
  }
  Tensor& t = tensors_[tensor];  // (wait_for above does not resize tensors_)
  build_segments(t, std::move(writers));
  const std::size_t n = t.segments.size();
  std::size_t levels = 1;
  while ((std::size_t{1} << (levels - 1)) < n) ++levels;
  t.levels.assign(levels, {});
  for (std::size_t j = 1; j < levels; ++j) {
    t.levels[j].assign((n + (std::size_t{1} << j) - 1) >> j, kNone);
  }
  // The segments now stand for the writers: keep only them.
  t.raw.clear();
  for (const Segment& s : t.segments) t.raw.push_back({s.lo, s.hi, s.rep});
  t.indexed = true;
}

// Sweeps the writers' ends into disjoint segments. Each segment's representative is the latest
// writer covering it, joined to the others. Writers of one layer overlap only as repeated passes
// (channel chunks, column chunks) or as whole-tensor writes, so the work is about linear; past a
// budget, the tensor falls back to one segment whose representative is joined to every writer.
void WriterIndex::build_segments(Tensor& t, std::vector<Writer> writers) {
  t.segments.clear();
  if (writers.empty()) return;
  std::sort(writers.begin(), writers.end(),
            [](const Writer& a, const Writer& b) { return a.lo < b.lo; });
  std::vector<std::uint64_t> ends;
  for (const Writer& w : writers) {
    ends.push_back(w.lo);
    ends.push_back(w.hi);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::uint64_t budget = 8 * std::uint64_t{writers.size()} + 64;
  std::vector<Writer> active;
  std::size_t next = 0;
  for (std::size_t k = 0; k + 1 < ends.size(); ++k) {
    const std::uint64_t lo = ends[k], hi = ends[k + 1];
    const std::size_t before = active.size();
    active.erase(
        std::remove_if(active.begin(), active.end(), [lo](const Writer& w) { return w.hi <= lo; }),
        active.end());
    bool changed = active.size() != before;
    for (; next < writers.size() && writers[next].lo == lo; ++next) {
      if (writers[next].hi > lo) active.push_back(writers[next]);
      changed = true;
    }
    if (active.empty()) continue;
    if (budget < active.size()) {
      // Pathological overlap: one segment over everything, after every writer.
      const CommandIndex rep = latest(writers);
      for (const Writer& w : writers) join(rep, w.store);
      t.segments = {{writers[0].lo, ends.back(), rep}};
      return;
    }
    budget -= active.size();
    if (!changed && !t.segments.empty() && t.segments.back().hi == lo) {
      t.segments.back().hi = hi;  // the same writers: the same representative
      continue;
    }
    const CommandIndex rep = latest(active);
    for (const Writer& w : active) join(rep, w.store);
    if (!t.segments.empty() && t.segments.back().hi == lo && t.segments.back().rep == rep) {
      t.segments.back().hi = hi;
    } else {
      t.segments.push_back({lo, hi, rep});
    }
  }
}

// The representative of tree node (level, i). The root joins every segment directly, so that only
// the tensor's last writer waits for the others; inner nodes join their two children.
WriterIndex::CommandIndex WriterIndex::node(Tensor& t, std::size_t level, std::size_t i) {
  if (level == 0) return t.segments[i].rep;
  CommandIndex& made = t.levels[level][i];
  if (made != kNone) return made;
  CommandIndex rep = t.segments[0].rep;
  if (level + 1 == t.levels.size()) {
    for (const Segment& s : t.segments) rep = std::max(rep, s.rep);
    for (const Segment& s : t.segments) join(rep, s.rep);
  } else {
    rep = node(t, level - 1, 2 * i);
    if (((2 * i + 1) << (level - 1)) < t.segments.size()) {
      rep = join(rep, node(t, level - 1, 2 * i + 1));
    }
  }
  made = rep;
  return rep;
}

// Appends the fewest nodes under (level, i) that cover segments [a, b).
void WriterIndex::cover(Tensor& t, std::size_t level, std::size_t i, std::size_t a, std::size_t b,
                        std::vector<CommandIndex>& deps) {
  const std::size_t s = i << level;
  const std::size_t e = std::min(t.segments.size(), (i + 1) << level);
  if (e <= a || s >= b) return;
  if (a <= s && e <= b) {
    deps.push_back(node(t, level, i));
    return;
  }
  cover(t, level - 1, 2 * i, a, b, deps);
  cover(t, level - 1, 2 * i + 1, a, b, deps);
}

void WriterIndex::wait_for(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                           std::vector<CommandIndex>& deps) {
  if (!tensors_[tensor].indexed) build(tensor);
  Tensor& t = tensors_[tensor];
  const std::vector<Segment>& segs = t.segments;
  const auto first =
      std::partition_point(segs.begin(), segs.end(), [lo](const Segment& s) { return s.hi <= lo; });
  const auto last =
      std::partition_point(first, segs.end(), [hi](const Segment& s) { return s.lo < hi; });
  const std::size_t a = static_cast<std::size_t>(first - segs.begin());
  const std::size_t b = static_cast<std::size_t>(last - segs.begin());
  if (b - a <= kDirect) {
    for (std::size_t k = a; k < b; ++k) deps.push_back(segs[k].rep);
    return;
  }
  cover(t, t.levels.size() - 1, 0, a, b, deps);
}

}  // namespace npusim
