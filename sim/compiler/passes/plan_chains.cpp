#include "sim/compiler/passes/plan_chains.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/util/math.h"
#include "sim/util/parallel.h"

namespace npusim {

bool read_only_by(const Graph& graph, const LayerGroup& group, const LayerGroup& next) {
  const std::uint32_t t = group.output;
  if (std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end()) return false;
  if (graph.layers[group.layers.back()].outputs.size() != 1) return false;
  for (std::uint32_t l = 0; l < graph.layers.size(); ++l) {
    const std::vector<std::uint32_t>& in = graph.layers[l].inputs;
    const auto reads = std::count(in.begin(), in.end(), t);
    if (reads == 0) continue;
    if (l != next.layers.front() || reads != 1 || in.front() != t) return false;
  }
  return true;
}

namespace {

// How many tiles a member may run ahead of its reader: more holds more rows live for no gain on
// the models measured (MobileNetV2 on `default`: 0, 1, 2, 3 tiles ahead estimate 1.82M, 1.52M,
// 1.50M, 1.63M cycles when the chains keep one count for all).
constexpr std::uint64_t kMostTilesAhead = 2;
// Of a run's tilings with no member ahead, how many of the cheapest are tried ahead.
constexpr std::size_t kAheadTried = 3;
// A channel chain's members: expand, depthwise, project.
constexpr std::size_t kChannelChainMembers = 3;

// The emission order of members `s` at `rows` per tile, and each member's most tiles live.
// Member i's tile t needs its input rows [lo, hi) (all of them for its last tile, so that every
// row of the member before is computed): the member before first produces tiles up to the row hi
// of tile t + `ahead`. Running ahead lets a member's next tile start while its reader works on
// this one; with none, each step waits for the one just before, and units idle in turn.
// The member before's tiles that end at or before tile t + 1's first input row are read by no
// later tile; tile t + `delay` frees them (its last tile frees the rest), so that the tiles that
// read them, on other slices, have most likely ended by then: the free waits for them.
std::vector<ChainStep> chain_order(const std::vector<SpatialLayer>& s,
                                   const std::vector<std::uint64_t>& rows, std::uint64_t delay,
                                   std::uint64_t ahead, std::vector<std::uint64_t>& live_tiles) {
  const std::size_t k = s.size();
  std::vector<std::uint64_t> produced(k, 0), produced_rows(k, 0), freed(k, 0);
  // Per member: after each of its tiles, how many of the member before's tiles no later one reads.
  std::vector<std::vector<std::uint64_t>> unneeded(k);
  live_tiles.assign(k, 0);
  std::vector<ChainStep> order;
  auto tiles = [&](std::size_t i) { return ceil_div(s[i].oh, rows[i]); };
  auto end_row = [&](std::size_t i, std::uint64_t t) {
    return std::min(s[i].oh, (t + 1) * rows[i]);
  };
  std::function<void(std::size_t)> produce_next = [&](std::size_t i) {
    const std::uint64_t t = produced[i];
    const bool last = t + 1 == tiles(i);
    if (i > 0) {
      const std::uint64_t target = std::min(t + ahead, tiles(i) - 1);
      const std::uint64_t hi =
          target + 1 == tiles(i) ? s[i - 1].oh : s[i].window(target, rows[i], s[i].ow).hi;
      while (produced_rows[i - 1] < hi) produce_next(i - 1);
    }
    ChainStep step;
    step.member = static_cast<std::uint32_t>(i);
    step.tile = t;
    ++produced[i];
    produced_rows[i] = end_row(i, t);
    if (i > 0) {
      const std::uint64_t next_lo = last ? std::numeric_limits<std::uint64_t>::max()
                                         : s[i].window(t + 1, rows[i], s[i].ow).lo;
      std::uint64_t n = unneeded[i].empty() ? 0 : unneeded[i].back();
      while (n < produced[i - 1] && end_row(i - 1, n) <= next_lo) ++n;
      unneeded[i].push_back(n);
      if (last) {
        freed[i - 1] = produced[i - 1];
      } else if (t >= delay) {
        freed[i - 1] = std::max(freed[i - 1], unneeded[i][t - delay]);
      }
      step.freed_before = freed[i - 1];
    }
    order.push_back(step);
    if (i + 1 < k) live_tiles[i] = std::max(live_tiles[i], produced[i] - freed[i]);
  };
  while (produced[k - 1] < tiles(k - 1)) produce_next(k - 1);
  return order;
}

// Whether group `g` may be a chain member, and what the tiling needs to know of it: a conv or
// pool, or a pointwise vector group (its rows quantised or normalised, say, as the next member
// needs them), which is never the last (plan_chains).
bool chain_member(const Graph& graph, const LayerGroup& g, const Budgets& budgets,
                  SpatialLayer& s) {
  if (group_kind(graph, g) != GroupKind::kSpatial && !pointwise_group(graph, g)) return false;
  s = describe_spatial(graph, g, budgets);
  return s.n == 1 && !s.within_group;
}

// Chain of members `s` from group `first` at `rows` per tile (the same for every member up to its
// height) on `slices` slices, each member `ahead` tiles ahead of its reader, its tiles freed
// `free_delay` tiles late (chain_order); nullopt when the reserved bytes do not fit `cap`.
std::optional<Chain> make_chain(const HwConfig& config, const std::vector<SpatialLayer>& s,
                                std::size_t first, std::uint64_t r, std::uint32_t slices,
                                std::uint64_t ahead, std::uint64_t free_delay, std::uint64_t cap) {
  std::vector<std::uint64_t> rows;
  rows.reserve(s.size());
  for (const SpatialLayer& m : s) rows.push_back(std::min(r, m.oh));
  Chain c;
  c.first = first;
  c.slices = slices == config.slices.count ? 0 : slices;
  c.order = chain_order(s, rows, free_delay, ahead, c.live_tiles);
  c.ahead = ahead;
  c.free_delay = free_delay;
  for (std::size_t i = 0; i < s.size(); ++i) {
    c.reserved_bytes += s[i].chunk_weight_bytes(s[i].units);
    if (i + 1 < s.size()) {
      c.reserved_bytes += c.live_tiles[i] * s[i].output_bytes(rows[i], s[i].ow, s[i].units);
    }
  }
  if (c.reserved_bytes > cap) return std::nullopt;
  // On the ring besides: a first-member tile's input or a last-member tile's output and residual
  // share, per slice.
  c.ring_bytes =
      slices * std::max(s.front().input_bytes(rows.front(), s.front().ow,
                                              s.front().chunk_in_c(s.front().units)),
                        s.back().output_bytes(rows.back(), s.back().ow, s.back().units) +
                            s.back().residual_bytes(rows.back(), s.back().ow, s.back().units));
  for (std::size_t i = 0; i < s.size(); ++i) {
    Mapping m;
    m.kind = MappingKind::kSpatial;
    m.tile_rows = rows[i];
    m.tile_cols = s[i].ow;
    m.tile_channel_units = s[i].units;
    m.slices = c.slices;
    c.mappings.push_back(m);
  }
  return c;
}

// The most local memory a chain may reserve: 3/8 of it (the tiles' half, less an eighth for the
// first member's loads and the last one's stores).
std::uint64_t chain_cap(const HwConfig& config) { return config.lram_bytes * 3 / 8; }

// The chains of members `s` from group `first`, none ahead, at every row count (the halvings of
// the tallest member) and slice count k at which the ring tiles fit the tile budget T of k
// slices and the reservation fits chain_cap; most rows and slices first. Each frees its tiles k
// tiles late, or, when that holds more than fits, the most of k's halvings that fits: on 2 slices
// the frees then wait on the other slice's reader more often, but both slices work. (Chains that
// fitted only on one slice left the other idle: ultraface's first chain on `default`, 385,000
// cycles, 29 % of the run.)
std::vector<Chain> fitting_chains(const HwConfig& config, const std::vector<SpatialLayer>& s,
                                  std::size_t first) {
  std::uint64_t tallest = 0;
  for (const SpatialLayer& m : s) tallest = std::max(tallest, m.oh);
  std::vector<Chain> out;
  for (const std::uint64_t r : size_options(tallest, 1)) {
    for (const std::uint32_t slices : slice_options(config.slices.count)) {
      const Budgets budgets = budgets_of(config, slices);
      // On the ring, a first member's input rows and a last member's output rows and residual
      // share; the rest of every tile lives in the reservation.
      const SpatialLayer& head = s.front();
      const SpatialLayer& tail = s.back();
      const std::uint64_t head_rows = std::min(r, head.oh), tail_rows = std::min(r, tail.oh);
      if (head.input_bytes(head_rows, head.ow, head.chunk_in_c(head.units)) > budgets.tile_bytes ||
          tail.output_bytes(tail_rows, tail.ow, tail.units) +
                  tail.residual_bytes(tail_rows, tail.ow, tail.units) >
              budgets.tile_bytes) {
        continue;
      }
      for (std::uint64_t delay = slices; delay >= 1; delay /= 2) {
        if (std::optional<Chain> c =
                make_chain(config, s, first, r, slices, 0, delay, chain_cap(config))) {
          out.push_back(std::move(*c));
          break;
        }
      }
    }
  }
  return out;
}

// Whether `s` (three members) is an inverted residual block a channel chain can run: an ungrouped
// 1 x 1 conv of stride 1 (no residual), a depthwise conv of multiplier 1 over all its output
// channels, and an ungrouped 1 x 1 conv of stride 1 over all of those (its K-split steps).
bool channel_chain_members(const std::vector<SpatialLayer>& s) {
  if (s.size() != kChannelChainMembers) return false;
  const SpatialLayer& e = s[0];
  const SpatialLayer& d = s[1];
  const SpatialLayer& p = s[2];
  auto pointwise = [](const SpatialLayer& m) {
    return m.conv && !m.depthwise && m.k_split_allowed() && m.kernel_h == 1 && m.kernel_w == 1 &&
           m.stride_h == 1 && m.stride_w == 1 && m.pad_top == 0 && m.pad_left == 0 &&
           m.out_per_unit == 1 && m.units == m.k && m.oh == m.h && m.ow == m.w;
  };
  return pointwise(e) && pointwise(p) && e.residual_elem_bytes == 0 && d.depthwise &&
         d.out_per_unit == 1 && d.in_per_unit == 1 && d.units == d.c && d.c == e.k && d.h == e.oh &&
         d.w == e.ow && p.c == d.k && p.h == d.oh && p.w == d.ow;
}

// The channel chain of members `s` (channel_chain_members) from group `first`: `block` channels
// per step, on `slices` slices, each slice's expand `ahead` blocks ahead of its project; nullopt
// when what it holds passes `cap`. Per slice it holds its project's accumulator (the whole map
// at kPartialElemBytes), ahead + 1 blocks of the expand's outputs and as many of the depthwise
// conv's, and two steps' weights of each member; once, the input map, and at the end the
// residual and the output (the PartialSums', or each slice's share when split). The blocks are
// bounded by the order, whatever the timing: a slice's expand of block n + ahead + 1 follows the
// project's step over its block n on the in-order array queue, and that step frees the block's
// depthwise output, whose conv freed its expand output; the depthwise conv of block
// n + ahead + 1 waits for that expand. (ChannelChains.EveryOptionChecksHoldsItsReservation...
// checks the peak against the reservation.)
std::optional<Chain> make_channel_chain(const HwConfig& config, const std::vector<SpatialLayer>& s,
                                        std::size_t first, std::uint64_t block,
                                        std::uint32_t slices, std::uint64_t ahead,
                                        bool split_outputs, std::uint64_t cap) {
  const SpatialLayer& e = s[0];
  const SpatialLayer& d = s[1];
  const SpatialLayer& p = s[2];
  const std::uint64_t blocks = ceil_div(e.k, block);
  // Fewer blocks (or output channels, split) than slices: the slices without any are the
  // fewer-slices option's.
  if (blocks < slices || (split_outputs && (slices < 2 || p.units < slices))) return std::nullopt;
  // Split, a slice's project holds its share of the output channels: its accumulator, its output
  // and its weights' share. Split or on one slice, the last step writes the output apart from the
  // accumulator, so that it may stay resident at its own size.
  const std::uint64_t out_units = split_outputs ? ceil_div(p.units, slices) : p.units;
  const bool own_output = split_outputs || slices == 1;
  const std::uint64_t per_slice =
      p.partial_bytes(p.oh, p.ow, out_units) +
      (own_output ? p.output_bytes(p.oh, p.ow, out_units) : 0) +
      (ahead + 1) * (e.output_bytes(e.oh, e.ow, block) + d.output_bytes(d.oh, d.ow, block)) +
      2 * (e.chunk_weight_bytes(block) + d.chunk_weight_bytes(block) +
           p.part_weight_bytes(out_units, block));
  Chain c;
  c.first = first;
  c.slices = slices == config.slices.count ? 0 : slices;
  c.channel_block = block;
  c.split_outputs = split_outputs;
  c.ahead = ahead;
  c.reserved_bytes = e.input_bytes(e.oh, e.ow, e.c) + slices * per_slice +
                     p.residual_bytes(p.oh, p.ow, p.units) +
                     (own_output ? 0 : p.output_bytes(p.oh, p.ow, p.units));
  if (c.reserved_bytes > cap) return std::nullopt;
  for (std::size_t i = 0; i < s.size(); ++i) {
    Mapping m;
    m.kind = MappingKind::kSpatial;
    m.tile_rows = s[i].oh;
    m.tile_cols = s[i].ow;
    m.tile_channel_units = i + 1 < s.size() ? block : s[i].units;
    // (The project's output is written as a tile's, by PartialSums or its last steps: a K-split
    // mapping, whose accumulator would be its output, could not stay resident.)
    m.slices = c.slices;
    c.mappings.push_back(m);
  }
  return c;
}

// The channel chains of `s` that fit, their expands one block ahead: blocks of one and two array
// widths (so that every step fills the array's folds), every slice count, on several slices with
// partial sums or split outputs. Nothing else of the chain is on the ring, so it may reserve the
// tiles' half.
std::vector<Chain> channel_chains(const HwConfig& config, const std::vector<SpatialLayer>& s,
                                  std::size_t first) {
  std::vector<Chain> out;
  if (!channel_chain_members(s)) return out;
  const std::uint64_t width = std::max(config.slices.rows, config.slices.cols);
  for (const std::uint64_t block : {width, 2 * width}) {
    if (block >= s.front().k) continue;  // one block is no chain
    for (const std::uint32_t slices : slice_options(config.slices.count)) {
      for (const bool split : {false, true}) {
        if (std::optional<Chain> c = make_channel_chain(config, s, first, block, slices, 1, split,
                                                        config.lram_bytes / 2)) {
          out.push_back(std::move(*c));
        }
      }
    }
  }
  return out;
}

// Of the channel chains of `run`, the cheapest under `chain_cost` (nullopt: none checks): every
// option one block ahead, then the kAheadTried cheapest two blocks ahead (as the chains of rows).
std::optional<std::pair<Chain, std::uint64_t>> cheapest_channel_chain(
    const HwConfig& config, const std::vector<SpatialLayer>& run, std::size_t first,
    const ChainCost& chain_cost) {
  const std::vector<Chain> options = channel_chains(config, run, first);
  std::vector<std::pair<std::uint64_t, std::size_t>> costed;  // cycles, option
  for (std::size_t o = 0; o < options.size(); ++o) {
    if (const std::optional<std::uint64_t> cycles = chain_cost(options[o])) {
      costed.emplace_back(*cycles, o);
    }
  }
  if (costed.empty()) return std::nullopt;
  std::stable_sort(costed.begin(), costed.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::pair<Chain, std::uint64_t> best = {options[costed.front().second], costed.front().first};
  for (std::size_t n = 0; n < std::min(costed.size(), kAheadTried); ++n) {
    const Chain& base = options[costed[n].second];
    const std::optional<Chain> two_ahead =
        make_channel_chain(config, run, first, base.channel_block,
                           base.slices == 0 ? config.slices.count : base.slices, 2,
                           base.split_outputs, config.lram_bytes / 2);
    if (!two_ahead) continue;
    const std::optional<std::uint64_t> cycles = chain_cost(*two_ahead);
    if (cycles && *cycles < best.second) best = {*two_ahead, *cycles};
  }
  return best;
}

// A chain planned from a group, and what it saves against its members one after another.
struct Planned {
  Chain chain;
  std::uint64_t saving = 0;
};

// The walk over `count` groups: from each group not in a chain taken, the chain `best_from` plans
// from it, unless a chain through a pointwise group saves more from the group after.
std::vector<Chain> take_chains(
    const Graph& graph, const std::vector<LayerGroup>& groups, std::size_t count,
    const std::function<const std::optional<Planned>&(std::size_t)>& best_from) {
  std::vector<Chain> chains;
  std::size_t i = 0;
  while (i + 1 < count) {
    const std::optional<Planned>& here = best_from(i);
    if (!here) {
      ++i;
      continue;
    }
    // A chain through a pointwise group takes the place of any chain from it (from the group
    // after it, when it heads this one), which may save more: a conv's chain through a lone
    // Sigmoid would otherwise displace the Sigmoid's own, better chain, and a channel chain never
    // has a pointwise head. The one that saves more is kept.
    bool displaced = false;
    for (std::size_t j = i; j < i + here->chain.mappings.size() && !displaced; ++j) {
      if (!pointwise_group(graph, groups[j])) continue;
      const std::optional<Planned>& other = best_from(j == i ? i + 1 : j);
      displaced = other && other->saving > here->saving;
    }
    if (displaced) {
      ++i;
      continue;
    }
    chains.push_back(here->chain);
    i += here->chain.mappings.size();
  }
  return chains;
}

}  // namespace

std::vector<std::uint64_t> chain_fields(const Chain& chain) {
  std::vector<std::uint64_t> f = {chain.mappings.size(), chain.order.size(),
                                  chain.live_tiles.size()};
  for (const Mapping& m : chain.mappings) {
    const std::vector<std::uint64_t> mf = mapping_fields(m);
    f.insert(f.end(), mf.begin(), mf.end());
  }
  for (const ChainStep& step : chain.order) {
    f.insert(f.end(), {step.member, step.tile, step.freed_before});
  }
  f.insert(f.end(), chain.live_tiles.begin(), chain.live_tiles.end());
  f.insert(f.end(), {chain.ahead, chain.reuse_halo ? 1u : 0u, chain.reserved_bytes, chain.slices,
                     chain.ring_bytes, chain.free_delay, chain.channel_block,
                     chain.split_outputs ? 1u : 0u});
  return f;
}

std::vector<Chain> plan_chains(const Graph& graph, const HwConfig& config,
                               const std::vector<LayerGroup>& groups,
                               const std::vector<Mapping>& mappings, const ChainCost& chain_cost,
                               const PlainCost& plain_cost) {
  const Budgets budgets = budgets_of(config);
  // The chain from group i that saves the most against its members one after another, if any
  // (plan_from; best_from remembers it: the displacement check below asks for some twice).
  auto plan_from = [&](std::size_t i) -> std::optional<Planned> {
    std::vector<SpatialLayer> members(1);
    // A fused residual is loaded by the last member's tiles only: a member with one ends a chain.
    // The first member's input may be any layout (a view, as ShuffleNet's channel halves): its
    // tiles load it as a plain tile of the group would, waiting for its writers.
    if (!chain_member(graph, groups[i], budgets, members[0]) || groups[i].residual) {
      return std::nullopt;
    }
    // The longest run of members, each reading the one before alone.
    for (std::size_t j = i + 1; j < mappings.size(); ++j) {
      SpatialLayer next;
      if (!chain_member(graph, groups[j], budgets, next) || next.input != groups[j - 1].output ||
          !read_only_by(graph, groups[j - 1], groups[j])) {
        break;
      }
      members.push_back(next);
      if (groups[j].residual) break;
    }
    // Of every length from 2 members up, the cheapest rows and slices; the length that saves
    // the most against the members one after another.
    std::optional<Chain> best, best_rows;
    std::uint64_t best_saving = 0, best_rows_saving = 0;
    for (std::size_t count = 2; count <= members.size(); ++count) {
      const std::vector<SpatialLayer> run(members.begin(),
                                          members.begin() + static_cast<std::ptrdiff_t>(count));
      // The last member's tiles are stored as rows of an image, which a pointwise group's output
      // need not be laid out as.
      if (run.back().pointwise) continue;
      std::vector<Chain> options = fitting_chains(config, run, i);
      const bool by_channels = channel_chain_members(run);
      // (The plain cost is the dear part: emitted only if needed.)
      if (options.empty() && !by_channels) continue;
      const std::optional<std::uint64_t> plain = plain_cost(i, count);
      if (!plain) continue;
      // Every tiling with no member ahead, then the kAheadTried cheapest of them with members
      // ahead (trying every tiling ahead costs twice the compile time for a few per cent).
      std::optional<Chain> cheapest;
      std::uint64_t cheapest_cycles = 0;
      std::vector<std::pair<std::uint64_t, std::size_t>> costed;  // cycles, option
      for (std::size_t o = 0; o < options.size(); ++o) {
        const std::optional<std::uint64_t> cycles = chain_cost(options[o]);
        if (cycles) costed.emplace_back(*cycles, o);
      }
      std::stable_sort(costed.begin(), costed.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      if (!costed.empty()) {
        cheapest_cycles = costed.front().first;
        cheapest = options[costed.front().second];
      }
      for (std::size_t n = 0; n < std::min(costed.size(), kAheadTried); ++n) {
        const Chain& base = options[costed[n].second];
        // Its row count: each member's rows are min(rows, its height).
        std::uint64_t rows = 0;
        for (const Mapping& member : base.mappings) rows = std::max(rows, member.tile_rows);
        for (std::uint64_t ahead = 1; ahead <= kMostTilesAhead; ++ahead) {
          std::optional<Chain> option =
              make_chain(config, run, i, rows, base.slices == 0 ? config.slices.count : base.slices,
                         ahead, base.free_delay, chain_cap(config));
          if (!option) break;  // more ahead holds more
          const std::optional<std::uint64_t> cycles = chain_cost(*option);
          if (cycles && *cycles < cheapest_cycles) {
            cheapest_cycles = *cycles;
            cheapest = std::move(option);
          }
        }
      }
      // The cheapest with the first member reusing its halo, when its windows overlap: it loads
      // each input row once but holds rows longer, which costs some chains more than it saves.
      // (The emitter reuses it only where the rows' writers are known: emit_chain's chain_input,
      // which decides from the graph, alone as in the model. Where it does not, the option costs
      // the same and is not kept.)
      const SpatialLayer& head = run.front();
      if (cheapest && head.span_h > head.stride_h &&
          cheapest->mappings.front().tile_rows < head.oh) {
        Chain option = *cheapest;
        option.reuse_halo = true;
        const std::optional<std::uint64_t> cycles = chain_cost(option);
        if (cycles && *cycles < cheapest_cycles) {
          cheapest_cycles = *cycles;
          cheapest = std::move(option);
        }
      }
      // (Of the channel chains' length at most: Chain::instead takes the place of one, so it must
      // not reach into the chain planned after it.)
      const std::uint64_t rows_saving =
          cheapest && cheapest_cycles < *plain ? *plain - cheapest_cycles : 0;
      if (count <= kChannelChainMembers && rows_saving > best_rows_saving) {
        best_rows_saving = rows_saving;
        best_rows = cheapest;
      }
      // The channel chains' best, against the rows' (the rows on a tie).
      if (by_channels) {
        if (auto c = cheapest_channel_chain(config, run, i, chain_cost)) {
          if (!cheapest || c->second < cheapest_cycles) {
            cheapest_cycles = c->second;
            cheapest = std::move(c->first);
          }
        }
      }
      if (!cheapest) continue;
      if (cheapest_cycles < *plain && (*plain - cheapest_cycles) > best_saving) {
        best_saving = *plain - cheapest_cycles;
        best = std::move(cheapest);
      }
    }
    if (!best) return std::nullopt;
    if (best->channel_block > 0 && best_rows) best->instead.push_back(std::move(*best_rows));
    return Planned{std::move(*best), best_saving};
  };
  std::vector<std::optional<std::optional<Planned>>> planned(mappings.size());
  auto best_from = [&](std::size_t i) -> const std::optional<Planned>& {
    if (!planned[i]) planned[i] = plan_from(i);
    return *planned[i];
  };
  // Each group's best chain depends on no other's: when a core is free, every group's is planned
  // at once, before the walk takes them (the ones it skips, inside a chain it took, are few:
  // ResNet-50 has one chain of 2 groups); else (one core, or the other busy: two models planned
  // side by side), only those the walk asks for. One that throws is left to the walk, which
  // throws it only if it asks for that group, as before.
  if (helper_thread_free() && mappings.size() > 1) {
    std::vector<std::optional<std::optional<Planned>>> all =
        parallel_map(mappings.size() - 1, [&](std::size_t i) {
          try {
            return std::optional<std::optional<Planned>>(plan_from(i));
          } catch (...) {
            return std::optional<std::optional<Planned>>();
          }
        });
    for (std::size_t i = 0; i < all.size(); ++i) planned[i] = std::move(all[i]);
  }
  return take_chains(graph, groups, mappings.size(), best_from);
}

}  // namespace npusim
