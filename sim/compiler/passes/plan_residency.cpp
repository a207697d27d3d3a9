#include "sim/compiler/passes/plan_residency.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>

namespace npusim {

// (A K-split conv's tiles hold 4-byte accumulators, not its output: it does not.)
bool tiles_output(const Mapping& m) {
  return (m.kind == MappingKind::kSpatial && m.k_step == 0) || m.kind == MappingKind::kVector ||
         m.kind == MappingKind::kGlobalPool || m.kind == MappingKind::kMatMul ||
         m.kind == MappingKind::kMatMulKSplit;
}

bool reads_through_tiles(const Graph& graph, const LayerGroup& g, const Mapping& m, std::uint32_t l,
                         std::uint32_t tensor) {
  if (!tiles_output(m)) return false;
  if (l != g.layers.front()) return g.residual == tensor;
  const std::vector<std::uint32_t>& in = graph.layers[l].inputs;
  switch (m.kind) {
    case MappingKind::kVector:
    case MappingKind::kMatMulKSplit:  // each step's parts of A and B, whichever it is
      return true;
    case MappingKind::kMatMul:
      return in[0] == tensor || (in.size() > 1 && in[1] == tensor && in[0] != tensor &&
                                 m.order == LoopOrder::kInputOuter);
    default:
      return std::count(in.begin(), in.end(), tensor) == 1 && in[0] == tensor;
  }
}

namespace {

// Who writes and who reads each tensor, and each layer's group.
struct GraphIndex {
  std::vector<std::size_t> group_of;                 // per layer
  std::vector<std::optional<std::uint32_t>> writer;  // per tensor: the layer writing it
  std::vector<std::vector<std::uint32_t>> readers;   // per tensor: the layers reading it
};

GraphIndex index_graph(const Graph& graph, const std::vector<LayerGroup>& groups) {
  GraphIndex ix;
  ix.group_of.assign(graph.layers.size(), groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::uint32_t l : groups[g].layers) ix.group_of[l] = g;
  }
  ix.writer.resize(graph.tensors.size());
  ix.readers.resize(graph.tensors.size());
  for (std::uint32_t l = 0; l < graph.layers.size(); ++l) {
    for (std::uint32_t t : graph.layers[l].outputs) ix.writer[t] = l;
    for (std::uint32_t t : graph.layers[l].inputs) {
      if (ix.readers[t].empty() || ix.readers[t].back() != l) ix.readers[t].push_back(l);
    }
  }
  return ix;
}

// Tensors that can only be resident together: group outputs (`members`) and the view outputs
// that alias them, closed under "a view reads it" (the view's output aliases all its inputs, so
// they all stay or all go). `last` is the last group that reads any of them.
struct Closure {
  std::vector<std::uint32_t> members;
  std::vector<std::size_t> member_groups;
  std::size_t last = 0;
};

class Planner {
 public:
  Planner(const Graph& graph, const std::vector<LayerGroup>& groups,
          const std::vector<Mapping>& mappings, const std::vector<bool>& kept,
          const std::vector<bool>* internal)
      : g_(graph),
        groups_(groups),
        mappings_(mappings),
        kept_(kept),
        internal_(internal),
        ix_(index_graph(graph, groups)),
        tried_(mappings.size(), false) {}

  // The closure of group `i`'s output, or nullopt when any of it must reach DRAM. Marks its
  // members tried either way: each would give the same answer.
  std::optional<Closure> closure(std::size_t i) {
    Closure c;
    std::vector<std::uint32_t> todo;
    seen_.clear();
    ok_ = add_member(groups_[i].output, c, todo);
    while (ok_ && !todo.empty()) {
      const std::uint32_t x = todo.back();
      todo.pop_back();
      if (std::find(g_.outputs.begin(), g_.outputs.end(), x) != g_.outputs.end()) ok_ = false;
      for (std::size_t k = 0; ok_ && k < ix_.readers[x].size(); ++k) {
        const std::uint32_t l = ix_.readers[x][k];
        const std::size_t g = ix_.group_of[l];
        if (g >= mappings_.size()) {
          ok_ = false;
        } else if (group_kind(g_, groups_[g]) == GroupKind::kView) {
          for (std::uint32_t out : g_.layers[l].outputs) add_alias(out, todo);
          for (std::uint32_t in : g_.layers[l].inputs) add_upstream(in, c, todo);
        } else {
          ok_ = reads_through_tiles(g_, groups_[g], mappings_[g], l, x);
          c.last = std::max(c.last, g);
        }
      }
    }
    for (std::size_t g : c.member_groups) tried_[g] = true;
    tried_[i] = true;
    if (!ok_) return std::nullopt;
    return c;
  }

  bool tried(std::size_t i) const { return tried_[i]; }

 private:
  // A group output joins when its group tiles it and could leave it on chip.
  bool add_member(std::uint32_t t, Closure& c, std::vector<std::uint32_t>& todo) {
    if (!seen_.insert(t).second) return true;
    if (!ix_.writer[t]) return false;  // a graph input
    const std::size_t g = ix_.group_of[*ix_.writer[t]];
    if (g >= mappings_.size() || tried_[g] || kept_[g] ||
        (internal_ != nullptr && g < internal_->size() && (*internal_)[g]) ||
        groups_[g].output != t || !tiles_output(mappings_[g]) ||
        g_.layers[groups_[g].layers.back()].outputs.size() != 1) {
      return false;
    }
    c.members.push_back(t);
    c.member_groups.push_back(g);
    todo.push_back(t);
    return true;
  }
  void add_alias(std::uint32_t t, std::vector<std::uint32_t>& todo) {
    if (seen_.insert(t).second) todo.push_back(t);
  }
  // An input of a view: a constant stays in DRAM and is no part of it; another view's output is
  // an alias, whose inputs join too; a group's output is a member.
  void add_upstream(std::uint32_t t, Closure& c, std::vector<std::uint32_t>& todo) {
    if (!ok_ || g_.tensors[t].constant || seen_.count(t) > 0) return;
    if (ix_.writer[t] &&
        group_kind(g_, groups_[ix_.group_of[*ix_.writer[t]]]) == GroupKind::kView) {
      add_alias(t, todo);
      for (std::uint32_t in : g_.layers[*ix_.writer[t]].inputs) add_upstream(in, c, todo);
      return;
    }
    ok_ = add_member(t, c, todo);
  }

  const Graph& g_;
  const std::vector<LayerGroup>& groups_;
  const std::vector<Mapping>& mappings_;
  const std::vector<bool>& kept_;
  const std::vector<bool>* internal_;
  GraphIndex ix_;
  std::vector<bool> tried_;
  std::set<std::uint32_t> seen_;
  bool ok_ = true;
};

}  // namespace

std::uint64_t ring_need(const GroupWork& work, std::uint64_t lram_bytes) {
  std::uint64_t tile = 0, tiles = 0;
  for (const TileClass& c : work.tiles) {
    tile = std::max(tile, c.load_bytes + c.store_bytes + c.ring_extra_bytes + work.hold_bytes);
    tiles += c.count;
  }
  const std::uint64_t need = std::min<std::uint64_t>(work.slices, tiles) * tile;
  // Tiles that may take the whole memory take the chunks' half first.
  if (work.whole_memory) return need > lram_bytes / 2 ? need - lram_bytes / 2 : 0;
  return need;
}

std::vector<Residency> plan_residency(const Graph& graph, const HwConfig& config,
                                      const std::vector<LayerGroup>& groups,
                                      const std::vector<Mapping>& mappings,
                                      const std::vector<bool>& kept,
                                      const std::vector<std::uint64_t>& ring_needs,
                                      std::uint64_t on_chip_cap,
                                      const std::vector<bool>* internal) {
  const std::size_t n = mappings.size();
  std::vector<Residency> plan(n);
  // The bytes each group's tiles need, and on top the bytes on chip while it runs: kept outputs
  // live in their producer and the next.
  std::vector<std::uint64_t> live(ring_needs.begin(),
                                  ring_needs.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::uint64_t> on_chip(n, 0);  // only the kept and resident tensors
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (!kept[i]) continue;
    const std::uint64_t bytes = graph.tensors[groups[i].output].bytes();
    live[i] += bytes;
    live[i + 1] += bytes;
    on_chip[i] += bytes;
    on_chip[i + 1] += bytes;
  }
  const std::uint64_t budget = config.lram_bytes / 2;  // the tiles' half
  Planner planner(graph, groups, mappings, kept, internal);
  for (std::size_t i = 0; i < n; ++i) {
    if (planner.tried(i) || kept[i] || !tiles_output(mappings[i])) continue;
    const std::optional<Closure> c = planner.closure(i);
    if (!c) continue;
    // All of it lives from its first producer to its last reader.
    std::uint64_t bytes = 0;
    for (std::uint32_t t : c->members) bytes += graph.tensors[t].bytes();
    const std::size_t first = *std::min_element(c->member_groups.begin(), c->member_groups.end());
    const auto from = live.begin() + static_cast<std::ptrdiff_t>(first);
    const auto to = live.begin() + static_cast<std::ptrdiff_t>(c->last) + 1;
    if (c->last < first || *std::max_element(from, to) + bytes > budget) continue;
    const auto from_c = on_chip.begin() + static_cast<std::ptrdiff_t>(first);
    const auto to_c = on_chip.begin() + static_cast<std::ptrdiff_t>(c->last) + 1;
    if (*std::max_element(from_c, to_c) + bytes > on_chip_cap) continue;
    for (auto it = from_c; it != to_c; ++it) *it += bytes;
    for (auto it = from; it != to; ++it) *it += bytes;
    for (std::size_t g : c->member_groups) plan[g].output = true;
    plan[c->last].release.insert(plan[c->last].release.end(), c->members.begin(), c->members.end());
  }
  return plan;
}

std::vector<OnChipContext> on_chip_contexts(const Graph& graph,
                                            const std::vector<LayerGroup>& groups,
                                            const std::vector<Residency>& plan) {
  std::vector<OnChipContext> out(plan.size());
  std::map<std::uint32_t, std::uint64_t> live;                  // resident tensors and their bytes
  std::map<std::uint32_t, std::vector<std::uint32_t>> aliases;  // view outputs: what they alias
  for (std::size_t g = 0; g < plan.size(); ++g) {
    const LayerGroup& group = groups[g];
    if (group_kind(graph, group) == GroupKind::kView) {
      // As the emitter does: a view of resident tensors aliases them.
      const Layer& l = graph.layers[group.layers.front()];
      std::vector<std::uint32_t> members;
      for (std::uint32_t in : l.inputs) {
        if (const auto a = aliases.find(in); a != aliases.end()) {
          members.insert(members.end(), a->second.begin(), a->second.end());
        } else if (live.count(in) > 0) {
          members.push_back(in);
        }
      }
      if (!members.empty()) {
        for (std::uint32_t o : l.outputs) aliases[o] = members;
      }
      continue;
    }
    OnChipContext& c = out[g];
    for (std::uint32_t l : group.layers) {
      for (std::uint32_t in : graph.layers[l].inputs) {
        if (live.count(in) == 0 && aliases.count(in) == 0) continue;
        if (std::find(c.resident_inputs.begin(), c.resident_inputs.end(), in) ==
            c.resident_inputs.end()) {
          c.resident_inputs.push_back(in);
        }
      }
    }
    // The scratch emission holds each resident input's own bytes (a view's, not its members');
    // the rest of what is live is the others'.
    std::uint64_t inputs_bytes = 0;
    for (std::uint32_t t : c.resident_inputs) inputs_bytes += graph.tensors[t].bytes();
    std::uint64_t all = 0;
    for (const auto& [t, bytes] : live) all += bytes;
    c.other_bytes = all > inputs_bytes ? all - inputs_bytes : 0;
    c.output_resident = plan[g].output;
    if (plan[g].output) live[group.output] = graph.tensors[group.output].bytes();
    for (std::uint32_t t : plan[g].release) {
      live.erase(t);
      for (auto a = aliases.begin(); a != aliases.end();) {
        const bool of_it = std::find(a->second.begin(), a->second.end(), t) != a->second.end();
        a = of_it ? aliases.erase(a) : std::next(a);
      }
    }
  }
  return out;
}

}  // namespace npusim
