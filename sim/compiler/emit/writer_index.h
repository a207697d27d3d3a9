// Which commands wrote which bytes of each tensor in DRAM, and the few commands a reader must wait
// for (docs/compiler.md, "Layouts and dependencies" and "Joins").
//
// A reader must wait for every writer of the bytes it reads. Listing them all makes the edges
// grow with readers × writers (a Resize reads its whole input with every tile). Instead the index
// hands out a few "representatives" whose ends imply the ends of all those writers. It makes them
// from existing commands, with no new command: a representative is the latest writer of its
// region, and it is given extra dependencies on the other writers (a "join"). Every join edge goes
// from a later command to an earlier one, so the schedule stays acyclic and its in-order queues
// cannot deadlock.
//
// Per tensor, after its last writer (the index is built on the first read):
//   - segments: disjoint sorted byte ranges, each with one representative (the latest writer of
//     the range, joined to the others that overlap it: channel chunks of the same rows);
//   - a tree over the segments, built lazily: node (j, i) covers segments [i·2^j, (i+1)·2^j) and
//     its representative is the later of its children's, joined to the other child's.
// A read of k segments waits for them directly when k <= kDirect, else for the O(log n) tree
// nodes that cover them. Edges in all: O(writers) joins + at most max(kDirect, 2·levels) per read.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/ir/schedule.h"

namespace npusim {

class WriterIndex {
 public:
  using CommandIndex = std::uint32_t;
  static constexpr CommandIndex kNone = ~CommandIndex{0};
  // A read of at most this many segments waits for each; a wider one uses the tree. A join delays
  // its representative store until the others end (a whole-tensor join, the layer's last store),
  // so reads this narrow keep the exact waits: the zoo models' widest reads are whole tensors of
  // up to 32 stores (ResNet-50 on default), and their simulated cycles then do not move.
  static constexpr std::size_t kDirect = 32;

  // `commands` is the schedule being emitted: joins add dependencies to its commands.
  WriterIndex(std::size_t tensors, std::vector<Command>& commands);

  // `store` wrote bytes [lo, hi) of `tensor`.
  void add(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi, CommandIndex store);
  // `tensor` holds what every writer of `source` wrote (a view, a second output): a reader of any
  // part of it waits for all of them.
  void add_all_of(std::uint32_t tensor, std::uint32_t source);
  // Appends to `deps` commands whose ends imply that every writer of [lo, hi) of `tensor` ended.
  void wait_for(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                std::vector<CommandIndex>& deps);
  // Commands given join dependencies; their deps need sorting and deduplicating (finish()).
  const std::vector<CommandIndex>& joined() const { return joined_; }

 private:
  struct Writer {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    CommandIndex store = 0;
    std::uint32_t all_of = ~std::uint32_t{0};  // not ~0: every writer of that tensor
  };
  struct Segment {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    CommandIndex rep = 0;
  };
  struct Tensor {
    std::vector<Writer> raw;
    bool indexed = false;
    std::vector<Segment> segments;
    std::vector<std::vector<CommandIndex>> levels;  // levels[j][i]: node (j, i), kNone until made
  };

  void build(std::uint32_t tensor);
  void build_segments(Tensor& t, std::vector<Writer> writers);
  CommandIndex node(Tensor& t, std::size_t level, std::size_t i);
  void cover(Tensor& t, std::size_t level, std::size_t i, std::size_t a, std::size_t b,
             std::vector<CommandIndex>& deps);
  CommandIndex join(CommandIndex x, CommandIndex y);
  static CommandIndex latest(const std::vector<Writer>& writers);

  std::vector<Tensor> tensors_;
  std::vector<Command>& commands_;
  std::vector<CommandIndex> joined_;
};

}  // namespace npusim
