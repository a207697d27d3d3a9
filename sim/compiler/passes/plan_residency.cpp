#include "sim/compiler/passes/plan_residency.h"

#include <algorithm>
#include <optional>

namespace npusim {

namespace {

// Whether a group mapped as `m` writes its output through its tiles' stores.
bool tiles_output(const Mapping& m) {
  return m.kind == MappingKind::kSpatial || m.kind == MappingKind::kVector ||
         m.kind == MappingKind::kGlobalPool || m.kind == MappingKind::kMatMul;
}

// Whether layer `l` of group `g`, mapped as `m`, reads `tensor` through its tiles' loads, which
// can take it from local memory: a spatial or global-pool head's input, a fused residual, any
// operand of a vector layer, a MatMul's left operand, or its right one when input outer (weights
// outer loads an activation as the right operand like a weight chunk).
bool reads_through_tiles(const Graph& graph, const LayerGroup& g, const Mapping& m,
                         std::uint32_t l, std::uint32_t tensor) {
  if (!tiles_output(m)) return false;
  if (l != g.layers.front()) return g.residual == tensor;
  const std::vector<std::uint32_t>& in = graph.layers[l].inputs;
  switch (m.kind) {
    case MappingKind::kVector:
      return true;
    case MappingKind::kMatMul:
      return in[0] == tensor || (in.size() > 1 && in[1] == tensor && in[0] != tensor &&
                                 m.order == LoopOrder::kInputOuter);
    default:
      return std::count(in.begin(), in.end(), tensor) == 1 && in[0] == tensor;
  }
}

// The last group that reads `tensor`, if every reader is a later group reading it through its
// tiles; nullopt otherwise.
std::optional<std::size_t> last_reader(const Graph& graph, const std::vector<LayerGroup>& groups,
                                       const std::vector<Mapping>& mappings,
                                       const std::vector<std::size_t>& group_of, std::size_t p,
                                       std::uint32_t tensor) {
  std::optional<std::size_t> last;
  for (std::uint32_t l = 0; l < graph.layers.size(); ++l) {
    const std::vector<std::uint32_t>& in = graph.layers[l].inputs;
    if (std::find(in.begin(), in.end(), tensor) == in.end()) continue;
    const std::size_t g = group_of[l];
    if (g <= p || g >= mappings.size()) return std::nullopt;
    if (!reads_through_tiles(graph, groups[g], mappings[g], l, tensor)) return std::nullopt;
    last = std::max(last.value_or(g), g);
  }
  return last;
}

}  // namespace

std::uint64_t ring_need(const GroupWork& work) {
  std::uint64_t tile = 0, tiles = 0;
  for (const TileClass& c : work.tiles) {
    tile = std::max(tile, c.load_bytes + c.store_bytes);
    tiles += c.count;
  }
  return std::min<std::uint64_t>(work.slices, tiles) * tile;
}

std::vector<Residency> plan_residency(const Graph& graph, const HwConfig& config,
                                      const std::vector<LayerGroup>& groups,
                                      const std::vector<Mapping>& mappings,
                                      const std::vector<bool>& kept,
                                      const std::vector<std::uint64_t>& ring_needs) {
  const std::size_t n = mappings.size();
  std::vector<Residency> plan(n);
  std::vector<std::size_t> group_of(graph.layers.size(), groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::uint32_t l : groups[g].layers) group_of[l] = g;
  }
  // The bytes each group's tiles need, and on top the bytes on chip while it runs: kept outputs
  // live in their producer and the next.
  std::vector<std::uint64_t> live(ring_needs.begin(), ring_needs.begin() + static_cast<std::ptrdiff_t>(n));
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (!kept[i]) continue;
    const std::uint64_t bytes = graph.tensors[groups[i].output].bytes();
    live[i] += bytes;
    live[i + 1] += bytes;
  }
  const std::uint64_t budget = config.lram_bytes / 2;  // the tiles' half
  for (std::size_t i = 0; i < n; ++i) {
    const LayerGroup& group = groups[i];
    const std::uint32_t t = group.output;
    if (kept[i] || !tiles_output(mappings[i]) || graph.tensors[t].constant) continue;
    if (std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end()) continue;
    if (graph.layers[group.layers.back()].outputs.size() != 1) continue;
    const std::optional<std::size_t> last =
        last_reader(graph, groups, mappings, group_of, i, t);
    if (!last) continue;
    const std::uint64_t bytes = graph.tensors[t].bytes();
    const auto from = live.begin() + static_cast<std::ptrdiff_t>(i);
    const auto to = live.begin() + static_cast<std::ptrdiff_t>(*last) + 1;
    if (*std::max_element(from, to) + bytes > budget) continue;
    for (auto it = from; it != to; ++it) *it += bytes;
    plan[i].output = true;
    plan[*last].release.push_back(t);
  }
  return plan;
}

}  // namespace npusim
