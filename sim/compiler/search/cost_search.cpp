#include "sim/compiler/search/cost_search.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/size_estimate.h"
#include "sim/compiler/search/greedy.h"
#include "sim/cost/compute.h"
#include "sim/estimator/estimator.h"
#include "sim/util/error.h"
#include "sim/util/math.h"
#include "sim/util/parallel.h"

namespace npusim {

TransferCycles::TransferCycles(const HwConfig& config) : dma_(config), dram_(config) {}

cost::Cycles TransferCycles::operator()(std::uint64_t bytes) {
  if (bytes == 0) return 0;
  constexpr std::uint64_t kExactBursts = 64;
  const std::uint64_t burst = dma_.max_burst_bytes;
  if (dma_.burst_count(bytes) <= kExactBursts) {
    auto [it, inserted] = memo_.try_emplace(bytes, 0);
    if (inserted) it->second = cost::isolated_transfer_cycles(bytes, dma_, dram_);
    return it->second;
  }
  // Past the first bursts each burst adds the same cycles (the slower of the port and DRAM).
  const cost::Cycles at64 = (*this)(kExactBursts * burst);
  const cost::Cycles at32 = (*this)(kExactBursts / 2 * burst);
  const std::uint64_t extra = bytes - kExactBursts * burst;
  return at64 + ceil_div(extra * (at64 - at32), kExactBursts / 2 * burst);
}

namespace {

__extension__ using U128 = unsigned __int128;

// The bytes `work` moves through DRAM: its loads and stores.
U128 dram_bytes(const GroupWork& work) {
  U128 bytes = 0;
  for (const TileClass& t : work.tiles) {
    bytes += U128{t.count} * (U128{t.load_bytes} + t.store_bytes);
  }
  for (const SharedLoad& l : work.shared) bytes += U128{l.count} * l.bytes;
  for (const SharedLoad& l : work.stores) bytes += U128{l.count} * l.bytes;
  return bytes;
}

// What `m` does: read from the last group's output kept on chip, the input is not loaded.
GroupWork work_as_read(const MapSpace& space, const Mapping& m) {
  return space.input_on_chip(m) && space.work_on_chip ? space.work_on_chip(m) : space.work(m);
}

}  // namespace

cost::Cycles estimate_work_cycles(const GroupWork& work, const HwConfig& config,
                                  TransferCycles& transfer) {
  // Per slice unit (array, vector): the tiles it runs and their cycles.
  U128 unit_tiles[2] = {0, 0}, unit_compute[2] = {0, 0};
  U128 tiles = 0, dma_in = 0, dma_out = 0;
  for (const TileClass& t : work.tiles) {
    const cost::Cycles c = cost::slice_op_cost(t.op, t.shape, config).cycles;
    const std::size_t unit = op_table()[t.op].unit == EngineKind::kArray ? 0 : 1;
    tiles += t.count;
    unit_tiles[unit] += t.count;
    // At least a cycle per command even with free dispatch (ideal memory), so that cutting a
    // layer never looks cheaper for SCALE-Sim's "-1" in each command's cycles.
    unit_compute[unit] += U128{t.count} * (c + std::max<std::uint32_t>(config.dispatch_cycles, 1));
    const std::uint64_t piece = ceil_div(t.load_bytes, std::max<std::uint32_t>(t.loads, 1));
    dma_in += U128{t.count} * t.loads * transfer(piece);
    dma_out += U128{t.count} * transfer(t.store_bytes);
  }
  // A shared chunk loads in pieces over the DMA_IN channels (shared_pieces); the last may be
  // shorter, which the estimate ignores.
  for (const SharedLoad& s : work.shared) {
    const SharedPieces p = shared_pieces(s.bytes, config);
    dma_in += U128{s.count} * p.count * transfer(p.piece_bytes);
  }
  for (const SharedLoad& s : work.stores) dma_out += U128{s.count} * transfer(s.bytes);
  const U128 bytes = dram_bytes(work);
  std::uint64_t slices = std::max<std::uint32_t>(work.slices, 1);
  // Only shared_live chunks are live at once: their tiles are all the slices can work on.
  U128 shared_count = 0;
  for (const SharedLoad& s : work.shared) shared_count += s.count;
  // (A split reduction's vector tiles run beside its array tiles: count the array's.)
  const U128 spread = unit_tiles[0] > 0 ? unit_tiles[0] : tiles;
  if (shared_count > 0 && spread > 0) {
    const U128 per_shared = (spread + shared_count - 1) / shared_count;
    const U128 busy = per_shared * std::max<std::uint32_t>(work.shared_live, 2);
    if (busy < slices) slices = static_cast<std::uint64_t>(busy);
  }
  // Round-robin: the busiest slice's unit runs ceil(tiles / slices) of its tiles of the average
  // length; a slice's array and vector unit overlap.
  U128 busiest = 0;
  for (std::size_t u = 0; u < 2; ++u) {
    if (unit_tiles[u] == 0) continue;
    const U128 per_slice = (unit_tiles[u] + slices - 1) / slices;
    busiest = std::max(busiest, (unit_compute[u] * per_slice + unit_tiles[u] - 1) / unit_tiles[u]);
  }
  const U128 in = (dma_in + config.dma.in_channels - 1) / config.dma.in_channels;
  const U128 out = (dma_out + config.dma.out_channels - 1) / config.dma.out_channels;
  const cost::DramTiming dram(config);
  // DRAM moves dram_channels bytes per ticks_per_byte ticks.
  const U128 dram_cycles =
      config.ideal_memory
          ? 0
          : (bytes * dram.ticks_per_byte / dram.dram_channels + dram.ticks_per_cycle - 1) /
                dram.ticks_per_cycle;
  U128 steady = std::max(std::max(busiest, in), std::max(out, dram_cycles));
  // Nothing overlaps the first loads and the last store.
  if (!work.tiles.empty()) {
    steady += transfer(work.tiles.front().load_bytes) + transfer(work.tiles.back().store_bytes);
  }
  if (!work.shared.empty()) {
    steady += transfer(shared_pieces(work.shared.front().bytes, config).piece_bytes);
  }
  const U128 cap = ~std::uint64_t{0};
  return static_cast<cost::Cycles>(std::min(steady, cap));
}

namespace {

// The estimator's cycles for the group emitted alone with `m` on `config` (loads wait for
// nothing), or nullopt when the scratch schedule does not check. Under a residency plan
// (`resident`), its resident inputs are on chip and its output stays there.
// `why`, when given, receives the first problem of a schedule that does not check.
std::optional<std::uint64_t> emitted_cycles(const Graph& graph, const LayerGroup& group,
                                            const TensorLayouts& layouts, const HwConfig& config,
                                            const Mapping& m,
                                            std::optional<std::uint32_t> on_chip_input,
                                            const OnChipContext& resident = {},
                                            std::string* why = nullptr) {
  Emitter scratch(graph, config, layouts);
  // Room for its commands at once: growing the list moved every command again, several times.
  scratch.reserve(std::min<std::uint64_t>(
      estimate_group(graph, group, m, layouts, budgets_of(config, m.slices)).commands, 1u << 16));
  // A tensor resident under the plan is not also the last group's output kept for this one.
  const std::vector<std::uint32_t>& r = resident.resident_inputs;
  if (on_chip_input && std::find(r.begin(), r.end(), *on_chip_input) == r.end()) {
    scratch.assume_on_chip(*on_chip_input);
  }
  for (std::uint32_t t : r) scratch.assume_resident(t);
  scratch.assume_on_chip_bytes(resident.other_bytes);
  Residency residency;
  residency.output = resident.output_resident;
  scratch.emit_group(group, m, false, false, residency);
  Schedule schedule = scratch.finish();
  Diagnostics diag(graph.source_file);
  finalize_schedule(schedule, config, diag);
  if (!diag.empty()) {
    if (why != nullptr && why->empty()) {
      try {
        diag.throw_if_any();
      } catch (const InputError& e) {
        const Problem& p = e.problems().front();
        *why = p.where.empty() ? p.message : p.where + ": " + p.message;
      }
    }
    return std::nullopt;
  }
  // With free dispatch (ideal memory) a command still counts a cycle, as in the closed form, so
  // that cutting a layer never wins by SCALE-Sim's "-1" per command.
  const std::uint64_t per_command = config.dispatch_cycles == 0 ? schedule.commands.size() : 0;
  return estimate(schedule, config).total_cycles() + per_command;
}

}  // namespace

EmittedCyclesMemo::Key EmittedCyclesMemo::key(const LayerGroup& group, const HwConfig& config,
                                              const Mapping& m,
                                              std::optional<std::uint32_t> on_chip_input,
                                              const OnChipContext& resident) {
  Key k{&group,
        {config.lram_bytes, config.slices.count,
         on_chip_input ? 1 + std::uint64_t{*on_chip_input} : 0, resident.output_resident ? 1u : 0u,
         resident.other_bytes}};
  const std::vector<std::uint64_t> fields = mapping_fields(m);
  k.fields.insert(k.fields.end(), fields.begin(), fields.end());
  k.fields.insert(k.fields.end(), resident.resident_inputs.begin(), resident.resident_inputs.end());
  return k;
}

std::optional<std::optional<std::uint64_t>> EmittedCyclesMemo::find(const Key& k) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = cycles_.find(k);
  if (it == cycles_.end()) return std::nullopt;
  return it->second;
}

void EmittedCyclesMemo::add(Key k, std::optional<std::uint64_t> cycles) {
  std::lock_guard<std::mutex> lock(mutex_);
  cycles_.emplace(std::move(k), cycles);
}

std::uint64_t dma_load_count(const GroupWork& work) {
  std::uint64_t n = 0;
  for (const TileClass& t : work.tiles) n += t.count * t.loads;
  for (const SharedLoad& l : work.shared) n += l.count;
  return n;
}

namespace {

// Keeps the cheapest in `choice`, the second in its runner-up; ties keep the earlier.
void consider(SearchChoice& choice, const Mapping& m, std::uint64_t cycles, bool& first) {
  if (first || cycles < choice.cycles) {
    if (!first) {
      choice.runner_up = choice.mapping;
      choice.runner_up_cycles = choice.cycles;
    }
    choice.mapping = m;
    choice.cycles = cycles;
    first = false;
  } else if (!choice.runner_up || cycles < choice.runner_up_cycles) {
    choice.runner_up = m;
    choice.runner_up_cycles = cycles;
  }
}

}  // namespace

Shortlist shortlist(const std::vector<Mapping>& candidates,
                    const std::vector<std::pair<std::uint64_t, std::size_t>>& ranked) {
  constexpr std::size_t kEmitted = 10;
  constexpr std::uint64_t kCloseFraction = 4;
  Shortlist out;
  // (Reusing the halo is a family of its own: its closed form counts fewer bytes, so its
  // candidates would otherwise crowd the plain ones out of the shortlist.)
  std::vector<std::tuple<MappingKind, LoopOrder, bool>> families;
  std::size_t r = 0;
  for (; r < ranked.size() && out.walked.size() < kEmitted; ++r) {
    const Mapping& m = candidates[ranked[r].second];
    // The same mapping may come from several resource options: it takes one place.
    const std::vector<std::uint64_t> fields = mapping_fields(m);
    if (std::any_of(out.walked.begin(), out.walked.end(), [&](std::size_t q) {
          return mapping_fields(candidates[ranked[q].second]) == fields;
        })) {
      continue;
    }
    const auto family = std::make_tuple(m.kind, m.order, m.reuse_halo);
    const bool new_family = std::find(families.begin(), families.end(), family) == families.end();
    const bool close =
        ranked[r].first <= ranked.front().first + ranked.front().first / kCloseFraction;
    if (r < 2 || new_family || close) {
      out.walked.push_back(r);
      if (new_family) families.push_back(family);
    }
  }
  for (; r < ranked.size(); ++r) {
    const Mapping& m = candidates[ranked[r].second];
    const auto family = std::make_tuple(m.kind, m.order, m.reuse_halo);
    if (std::find(families.begin(), families.end(), family) != families.end()) continue;
    families.push_back(family);
    out.family_bests.push_back(r);
  }
  return out;
}

namespace {

// The cheapest of `candidates` (not empty) and its runner-up. `emitted` says whether their cycles
// are the estimator's of each emitted alone, or the closed form's.
struct Ranked {
  SearchChoice choice;
  bool emitted = false;
};

Ranked rank(const MapSpace& space, const HwConfig& config, const std::vector<Mapping>& candidates,
            EmittedCyclesMemo& memo, TransferCycles& transfer) {
  Ranked out;
  SearchChoice& choice = out.choice;
  // Rank every candidate by the closed form, then emit the best few alone and let the estimator
  // decide among them: it sees the queues, channels and dependencies the closed form averages.
  std::vector<std::pair<std::uint64_t, std::size_t>> ranked;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    ranked.push_back(
        {estimate_work_cycles(work_as_read(space, candidates[i]), config, transfer), i});
  }
  std::stable_sort(ranked.begin(), ranked.end());
  choice.candidates = candidates.size();
  // Under a residency plan the closed form still counts the resident tensors' loads and stores,
  // so the few best by compute alone are emitted too: with nothing to move they may win.
  std::vector<std::size_t> by_compute;  // positions in `ranked`
  if (space.resident.any()) {
    constexpr std::size_t kByCompute = 3;
    std::vector<std::pair<std::uint64_t, std::size_t>> compute;
    for (std::size_t r = 0; r < ranked.size(); ++r) {
      GroupWork work = space.work(candidates[ranked[r].second]);
      for (TileClass& t : work.tiles) t.load_bytes = t.store_bytes = 0;
      work.shared.clear();
      work.stores.clear();
      compute.push_back({estimate_work_cycles(work, config, transfer), r});
    }
    std::stable_sort(compute.begin(), compute.end());
    for (std::size_t i = 0; i < std::min(kByCompute, compute.size()); ++i) {
      by_compute.push_back(compute[i].second);
    }
  }
  constexpr std::uint64_t kEmittedTiles = 2048;
  const Shortlist list = shortlist(candidates, ranked);
  std::vector<std::size_t> picked = list.walked;  // positions in `ranked`
  auto tiles_of = [&](std::size_t r) {
    std::uint64_t tiles = 0;
    for (const TileClass& t : space.work(candidates[ranked[r].second]).tiles) tiles += t.count;
    return tiles;
  };
  bool small = space.layouts != nullptr && (picked.size() > 1 || !by_compute.empty());
  for (const std::size_t r : picked) small = small && tiles_of(r) <= kEmittedTiles;
  // Each family's best the walk did not reach joins too, when small itself.
  for (const std::size_t r : list.family_bests) {
    if (small && tiles_of(r) <= kEmittedTiles) picked.push_back(r);
  }
  // The best by compute join only an emitted shortlist, and only when small themselves.
  for (const std::size_t r : by_compute) {
    if (small && tiles_of(r) <= kEmittedTiles &&
        std::find(picked.begin(), picked.end(), r) == picked.end()) {
      picked.push_back(r);
    }
  }
  small = small && picked.size() > 1;
  out.emitted = small;
  // Each shortlisted mapping is emitted and estimated alone, independently of the others: on
  // several cores at once (most of a compile's time), then considered in order as before.
  std::vector<std::optional<std::uint64_t>> cycles;
  if (small) {
    cycles = parallel_map(picked.size(), [&](std::size_t p) -> std::optional<std::uint64_t> {
      const Mapping& m = candidates[ranked[picked[p]].second];
      const bool on_chip = space.input_on_chip(m);
      EmittedCyclesMemo::Key key = EmittedCyclesMemo::key(
          *space.group, config, m, on_chip ? space.on_chip_input : std::nullopt, space.resident);
      if (const auto known = memo.find(key)) return *known;
      const std::optional<std::uint64_t> fresh =
          emitted_cycles(*space.graph, *space.group, *space.layouts, config, m,
                         on_chip ? space.on_chip_input : std::nullopt, space.resident);
      memo.add(std::move(key), fresh);
      return fresh;
    });
  } else {
    for (const std::size_t r : picked) cycles.emplace_back(ranked[r].first);
  }
  bool first = true;
  for (std::size_t p = 0; p < picked.size(); ++p) {
    if (cycles[p]) consider(choice, candidates[ranked[picked[p]].second], *cycles[p], first);
  }
  if (small && !first) {
    // (As read: an input kept on chip is not loaded.)
    const std::uint64_t cheapest_loads = dma_load_count(work_as_read(space, choice.mapping));
    std::vector<std::uint64_t> loads(picked.size(), 0);
    for (std::size_t p = 0; p < picked.size(); ++p) {
      if (cycles[p]) {
        loads[p] = dma_load_count(work_as_read(space, candidates[ranked[picked[p]].second]));
      }
    }
    for (std::size_t level = 0; level < kFewerTransferLevels; ++level) {
      std::uint64_t fewest = cheapest_loads;
      const std::uint64_t within = choice.cycles + choice.cycles / kFewerTransfersFractions[level];
      for (std::size_t p = 0; p < picked.size(); ++p) {
        if (!cycles[p] || *cycles[p] > within || loads[p] >= fewest) continue;
        fewest = loads[p];
        choice.fewer_transfers[level] = candidates[ranked[picked[p]].second];
        choice.fewer_transfers_cycles[level] = *cycles[p];
      }
    }
  }
  // None emitted checks: the closed form's best stands, as the closed form's.
  if (first) {
    choice.mapping = candidates[ranked.front().second];
    choice.cycles = ranked.front().first;
    out.emitted = false;
  }
  return out;
}

// The closed form's cycles of `m`, for comparing choices ranked by different measures.
std::uint64_t closed_form_cycles(const MapSpace& space, const HwConfig& config, const Mapping& m,
                                 TransferCycles& transfer) {
  return estimate_work_cycles(work_as_read(space, m), config, transfer);
}

}  // namespace

// A K-split mapping that moves more bytes than the plain one must be faster by more than 1 / this.
constexpr std::uint64_t kKSplitMoreBytesMargin = 32;
// A MatMul split over slices must beat the unsplit ones by more than 1 / this.
constexpr std::uint64_t kSplitOverSlicesMargin = 32;

namespace {

// `plain` and `other` ranked apart and compared by the same measure: the estimator's when both
// bests were emitted, else the closed form. `other`'s best wins only when faster by more than
// the margin `margin_of` gives (the plain best's cycles and both bests' mappings); faster by
// less, it is named, with `why` (empty: for the bytes it moves). Ties keep the plain mapping,
// with its own figures.
SearchChoice choose_apart(
    const MapSpace& space, const HwConfig& config, const std::vector<Mapping>& plain,
    const std::vector<Mapping>& other, EmittedCyclesMemo& memo, TransferCycles& transfer,
    const std::function<std::uint64_t(std::uint64_t, const Mapping&, const Mapping&)>& margin_of,
    const std::string& why) {
  const Ranked a = rank(space, config, plain, memo, transfer);
  const Ranked b = rank(space, config, other, memo, transfer);
  const bool emitted = a.emitted && b.emitted;
  const std::uint64_t a_cycles =
      emitted ? a.choice.cycles : closed_form_cycles(space, config, a.choice.mapping, transfer);
  const std::uint64_t b_cycles =
      emitted ? b.choice.cycles : closed_form_cycles(space, config, b.choice.mapping, transfer);
  SearchChoice choice = a.choice;
  if (b_cycles < a_cycles &&
      a_cycles - b_cycles > margin_of(a_cycles, a.choice.mapping, b.choice.mapping)) {
    choice = b.choice;
    choice.cycles = b_cycles;
    choice.runner_up = a.choice.mapping;
    choice.runner_up_cycles = a_cycles;
  } else if (b_cycles < a_cycles) {
    choice.slower_bytes = b.choice.mapping;
    choice.slower_bytes_cycles = b_cycles;
    choice.slower_bytes_against = a_cycles;
    choice.slower_why = why;
  }
  choice.candidates = plain.size() + other.size();
  choice.plain_candidates = plain.size();
  return choice;
}

}  // namespace

SearchChoice CostSearch::choose_explained(const MapSpace& space, const HwConfig& config) const {
  if ((space.kind == MappingKind::kVector || space.kind == MappingKind::kGlobalPool) &&
      space.layouts != nullptr) {
    return choose_slices_by_emission(*space.graph, *space.group, *space.layouts, config,
                                     space.resident);
  }
  std::vector<Mapping> candidates;
  if (space.candidates) candidates = space.candidates();
  if (candidates.empty()) {
    // Not costed, or nothing fits: greedy maps it (and names what does not fit).
    SearchChoice choice;
    choice.mapping = GreedySearch().choose(space, config);
    return choice;
  }
  TransferCycles transfer(config);
  // A MatMul's candidates with the reduction split over slices (Mapping::k_parts) are ranked
  // apart from the rest. Costed alone, a split's PartialSums and its partial sums on chip cost
  // nothing the model sees; in the model they take the vector units and the room other groups
  // would have used: ranked with the rest, the 7B layer's attention context on `default` won
  // alone by 124 of 2,494,224 cycles and the model lost 0.74 %, bert_toy's feed-forward on
  // `default` by 0.5 % and lost 2.2 %. So a split must win by more than 1/32.
  if (space.kind == MappingKind::kMatMul) {
    std::vector<Mapping> whole, split;
    for (const Mapping& m : candidates) (m.k_parts > 1 ? split : whole).push_back(m);
    if (!whole.empty() && !split.empty()) {
      return choose_apart(
          space, config, whole, split, memo_, transfer,
          [](std::uint64_t a_cycles, const Mapping&, const Mapping&) {
            return a_cycles / kSplitOverSlicesMargin;
          },
          "faster by at most 1/32 with its reduction split over slices");
    }
  }
  // Convs accumulating in steps (Mapping::k_step) are ranked on their own and then against the
  // best of the rest, so that their many step tiles neither take the emitted places of the other
  // candidates nor make the closed form decide alone among them.
  std::vector<Mapping> plain, ksplit;
  for (const Mapping& m : candidates) {
    (m.kind == MappingKind::kSpatial && m.k_step > 0 ? ksplit : plain).push_back(m);
  }
  if (plain.empty() || ksplit.empty()) {
    SearchChoice choice = rank(space, config, candidates, memo_, transfer).choice;
    choice.plain_candidates = plain.size();
    return choice;
  }
  // A K-split tile reads its input once per chunk of output channels, so where it moves more
  // bytes through DRAM it must be faster by more than 1/32 (ResNet-50 on `default` took 24 % more
  // DRAM reads, +15 % energy, for 2 % fewer cycles, layers won by 0.6 % each).
  // (Under a residency plan the work still counts the resident inputs' loads, which move
  // nothing: there the cycles alone decide.)
  return choose_apart(
      space, config, plain, ksplit, memo_, transfer,
      [&](std::uint64_t a_cycles, const Mapping& a, const Mapping& b) -> std::uint64_t {
        const bool more_bytes =
            dram_bytes(work_as_read(space, b)) > dram_bytes(work_as_read(space, a));
        return !space.resident.any() && more_bytes ? a_cycles / kKSplitMoreBytesMargin : 0;
      },
      "");
}

SearchChoice choose_slices_by_emission(const Graph& graph, const LayerGroup& group,
                                       const TensorLayouts& layouts, const HwConfig& config,
                                       const OnChipContext& resident) {
  SearchChoice choice;
  bool first = true;
  std::string why_not;
  for (const std::uint32_t slices : slice_options(config.slices.count)) {
    HwConfig fewer = config;
    fewer.slices.count = slices;
    Mapping m;
    try {
      m = GreedySearch().choose(make_map_space(graph, group, layouts, fewer), fewer);
    } catch (const InputError&) {
      if (first) throw;  // all slices fail: the error names what does not fit
      continue;
    }
    // Costed by emission only when small: a huge layer keeps all slices (and the driver's size
    // check, not a scratch schedule, meets it first).
    constexpr std::uint64_t kEmittedCommands = 8192;
    if (estimate_group(graph, group, m, layouts, budgets_of(fewer)).commands > kEmittedCommands) {
      if (first) {
        m.slices = slices == config.slices.count ? 0 : slices;
        choice.mapping = m;
        return choice;
      }
      continue;
    }
    const std::optional<std::uint64_t> cycles =
        emitted_cycles(graph, group, layouts, fewer, m, std::nullopt, resident, &why_not);
    if (!cycles) continue;
    m.slices = slices == config.slices.count ? 0 : slices;
    ++choice.candidates;
    ++choice.plain_candidates;
    consider(choice, m, *cycles, first);
  }
  // Every slice count made a schedule that does not check (a tile larger than one DMA transfer
  // may move, on a huge lram_kib): bad input for this config, not a mapping to emit.
  if (first) {
    throw InputError(graph.source_file, "layer '" + group.name + "' " + group.loc,
                     "no mapping of it makes a valid schedule for this config: " + why_not);
  }
  return choice;
}

std::string describe_mapping(const Mapping& m) {
  std::string s;
  auto add = [&s](const char* name, std::uint64_t v) {
    if (v != 0) s += std::string(s.empty() ? "" : " ") + name + " " + std::to_string(v);
  };
  add("rows", m.tile_rows);
  add("cols", m.tile_cols);
  add("units", m.tile_channel_units);
  add("k_step", m.k_step);
  if (m.row_pieces > 1) add("row_pieces", m.row_pieces);
  if ((m.kind == MappingKind::kSpatial && m.k_step == 0) || m.kind == MappingKind::kMatMul) {
    s += m.order == LoopOrder::kInputOuter ? " input-outer" : " weights-outer";
  }
  add("slices", m.slices);
  if (m.shared_live != 2) add("live", m.shared_live);
  if (m.k_parts > 1) add("k_parts", m.k_parts);
  if (m.reuse_halo) s += " halo";
  return s;
}

std::string describe_choice(const SearchChoice& c) {
  std::string s = describe_mapping(c.mapping);
  if (c.candidates == 0) return s + " (greedy)";
  s += ": " + std::to_string(c.cycles) + " cycles (best of " + std::to_string(c.candidates) + ")";
  if (c.runner_up) {
    s += "; runner-up " + describe_mapping(*c.runner_up) + ": " +
         std::to_string(c.runner_up_cycles) + " cycles";
  }
  if (c.slower_bytes) {
    s += "; not " + describe_mapping(*c.slower_bytes) + ": " +
         std::to_string(c.slower_bytes_cycles) + " cycles against " +
         std::to_string(c.slower_bytes_against) + ", " +
         (c.slower_why.empty() ? "faster by at most 1/32 but moving more bytes" : c.slower_why);
  }
  return s;
}

Mapping CostSearch::choose(const MapSpace& space, const HwConfig& config) const {
  return choose_explained(space, config).mapping;
}

}  // namespace npusim
