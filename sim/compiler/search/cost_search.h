// The cost-model-driven search, the compiler's default: it costs every candidate mapping of a
// group (map_space.h `candidates`) with the shared cost model (sim/cost/) and keeps the cheapest;
// kinds without candidates (vector layers, global pools, K-split MatMuls) are mapped greedily.
// A candidate's cost is that of the group alone (docs/compiler.md, "The cost search"):
//   max(busiest slice, DMA_IN, DMA_OUT, DRAM) + the first loads and the last store,
// where the busiest slice runs ceil(tiles / slices) average tiles, and a DMA engine's time is its
// transfers' isolated cycles over its channels. Ties keep the earlier candidate, so the choice is
// deterministic and prefers all slices, weights outer, the largest chunks and tiles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/work.h"
#include "sim/compiler/search/search.h"
#include "sim/cost/memory.h"

namespace npusim {

// The isolated cycles of a DMA transfer of N bytes, as the cost model gives them
// (cost::isolated_transfer_cycles), memoised; beyond 64 bursts extrapolated linearly from the
// steady state of bursts 32 to 64, so costing a candidate never replays a long transfer.
class TransferCycles {
 public:
  explicit TransferCycles(const HwConfig& config);
  cost::Cycles operator()(std::uint64_t bytes);

 private:
  cost::DmaTiming dma_;
  cost::DramTiming dram_;
  std::map<std::uint64_t, cost::Cycles> memo_;
};

// The cycles the cost search gives a group's work on `config`.
cost::Cycles estimate_work_cycles(const GroupWork& work, const HwConfig& config,
                                  TransferCycles& transfer);

// Which candidates the cost search emits alone and estimates (docs/compiler.md, "The cost
// search"), as positions in `ranked` (cycles and candidate index, in the closed form's order):
// walking down the ranking, the best two, the best of each family (kind, loop order and halo
// reuse, whose closed forms err differently) and any within a quarter of the best, until there
// are 10 (a mapping several resource options give takes one place); then the best of each family
// the walk did not reach, which ten close candidates of one family (often one tiling with other
// slice or live counts) would otherwise keep out. (The caller drops those past its tile limit.)
struct Shortlist {
  std::vector<std::size_t> walked;
  std::vector<std::size_t> family_bests;
};
Shortlist shortlist(const std::vector<Mapping>& candidates,
                    const std::vector<std::pair<std::uint64_t, std::size_t>>& ranked);

// The mappings with fewer DMA transfers are named (SearchChoice::fewer_transfers) within 1/100,
// 1/40 and 1/20 of the cheapest's cycles: which groups gain from larger loads, and how much they
// may cost alone, is the model's question (the QDQ MobileNetV2's last conv on `default`: 32
// output channels a chunk, one load each, cost 2.1 % more alone than 16 in two parts, and the
// model 1.0 % less; ShuffleNet on `server` gained most at 1/20, the EdgeTPU block at 1/100).
inline constexpr std::size_t kFewerTransferLevels = 3;
inline constexpr std::array<std::uint64_t, kFewerTransferLevels> kFewerTransfersFractions = {
    100, 40, 20};

// A search's choice with its cost and the runner-up, for `npusim compile --explain`.
struct SearchChoice {
  Mapping mapping;
  std::uint64_t cycles = 0;  // 0 when the kind is mapped greedily (not costed)
  std::size_t candidates = 0;
  // Of them, those not accumulating in steps (Mapping::k_step): without those, a plain winner
  // is chosen alike, of this many.
  std::size_t plain_candidates = 0;
  std::optional<Mapping> runner_up;
  std::uint64_t runner_up_cycles = 0;
  // The K-split mapping that was faster but not by enough for the bytes more it moves (the
  // margin in CostSearch::choose_explained), when the plain one won so: its cycles and the plain
  // one's, in the measure they were compared by (the estimator's, or both the closed form's).
  std::optional<Mapping> slower_bytes;
  std::uint64_t slower_bytes_cycles = 0;
  std::uint64_t slower_bytes_against = 0;
  // Why it lost, when not for its bytes (a MatMul split over slices); empty: for its bytes.
  std::string slower_why;
  // Of the mappings emitted alone, for each fraction f of kFewerTransfersFractions, the one with
  // the fewest DMA transfers within 1/f of the cheapest, when it has fewer than the cheapest:
  // larger loads leave DMA time to the groups around it, which costing a group alone cannot see
  // (the driver tries them in the model: DeviceCompiler::remap_to_fewer_transfers).
  std::array<std::optional<Mapping>, kFewerTransferLevels> fewer_transfers;
  std::array<std::uint64_t, kFewerTransferLevels> fewer_transfers_cycles{};
};

// The DMA transfers `work` issues: its tiles' loads and its shared loads.
std::uint64_t dma_load_count(const GroupWork& work);

// "rows 7 cols 7 units 64 weights-outer slices 8 live 8: 15515 cycles (of 42 candidates);
// runner-up ...": one line for `npusim compile --explain`.
std::string describe_choice(const SearchChoice& choice);
std::string describe_mapping(const Mapping& m);

// Groups without candidates (vector layers, global pools): the greedy mapping for each slice
// count of slice_options, each emitted alone into a scratch schedule and estimated; the fastest
// wins, ties to more slices. So a layer never gets slower with more slices. Under a residency
// plan (`resident`) each is emitted as the plan will emit it.
SearchChoice choose_slices_by_emission(const Graph& graph, const LayerGroup& group,
                                       const TensorLayouts& layouts, const HwConfig& config,
                                       const OnChipContext& resident = {});

// The estimator's cycles of candidates emitted alone, remembered per group (by address: the
// driver's groups outlive the search), config, mapping and what is on chip, so that mapping a
// model again (without K-split convs, or remapped under residency) emits each candidate once.
// Safe to use from the shortlist's threads.
class EmittedCyclesMemo {
 public:
  struct Key {
    const void* group = nullptr;
    std::vector<std::uint64_t> fields;  // config, mapping and on-chip facts, in a fixed order
    bool operator<(const Key& o) const {
      return group != o.group ? std::less<const void*>()(group, o.group) : fields < o.fields;
    }
  };
  static Key key(const LayerGroup& group, const HwConfig& config, const Mapping& m,
                 std::optional<std::uint32_t> on_chip_input, const OnChipContext& resident);
  // The cycles remembered for `k` (themselves nullopt when that schedule did not check), or
  // nullopt when none are.
  std::optional<std::optional<std::uint64_t>> find(const Key& k) const;
  void add(Key k, std::optional<std::uint64_t> cycles);

 private:
  mutable std::mutex mutex_;
  std::map<Key, std::optional<std::uint64_t>> cycles_;
};

class CostSearch final : public Search {
 public:
  Mapping choose(const MapSpace& space, const HwConfig& config) const override;
  SearchChoice choose_explained(const MapSpace& space, const HwConfig& config) const;

 private:
  mutable EmittedCyclesMemo memo_;
};

}  // namespace npusim
