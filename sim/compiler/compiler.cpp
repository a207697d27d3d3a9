// The compiler driver: runs the passes, then maps and emits the layer groups in order.
//
//   passes/fuse_layer_groups   layers -> layer groups (Conv + BatchNorm + activation, ...)
//   passes/assign_layouts      which tensors are NHWC images in DRAM
//   mapping/                   per group, its map space: tiled dims and local-memory budgets
//   search/                    per group, the mapping chosen in it (cost search)
//   passes/plan_residency      which outputs stay in local memory until their last reader
//   emit/                      per group, commands, dependencies and buffers
//   passes/layer_views         per group, its untiled GEMM, for the per-layer report
//
// Each group is mapped and then emitted before the next is mapped, so that errors come in layer
// order. Before any group is emitted, every group's commands and their memory are estimated from
// its mapping (emit/size_estimate.h): past kMaxCommands or kMaxScheduleBytes the compile stops
// with an input error that names the layer and the smallest lram_kib that fits, before
// allocating anything for the schedule.
//
// The LayerNorm / GELU fusion (passes/fuse_layer_norm_gelu.h) is not run here: its patterns need
// the values of scalar constants (eps, 0.5, sqrt 2), which the Graph IR does not carry, so it runs
// where they are known, in the ONNX importer. On a graph JSON or topology it could never match.
#include "sim/compiler/compiler.h"

#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/stats.h"
#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/emit/size_estimate.h"
#include "sim/compiler/mapping/global_pool.h"
#include "sim/compiler/mapping/group_signature.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/matmul.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/layer_views.h"
#include "sim/compiler/passes/order_dma_queues.h"
#include "sim/compiler/passes/plan_chains.h"
#include "sim/compiler/passes/plan_prefetch.h"
#include "sim/compiler/passes/plan_residency.h"
#include "sim/compiler/search/cost_search.h"
#include "sim/compiler/search/fewer_slices.h"
#include "sim/compiler/search/search.h"
#include "sim/estimator/estimator.h"
#include "sim/ir/engines.h"
#include "sim/util/error.h"
#include "sim/util/parallel.h"

namespace npusim {
namespace {

constexpr std::uint64_t kMaxLramKib = std::uint64_t{1} << 30;  // the config's range
// Rounds of residency-aware remapping (DeviceCompiler::remap): measured on the zoo, a second
// round still gains (ResNet-50 on server -0.6 %), a third found nothing more.
constexpr int kRemapRounds = 2;
// A remapping with more than kRemapGrowthPct % more commands is kept only when it is at least
// kRemapGainPct % faster (DeviceCompiler::remap).
constexpr std::uint64_t kRemapGrowthPct = 10;
constexpr std::uint64_t kRemapGainPct = 2;
// Rounds of DMA queue ordering (DeviceCompiler::order_queues), each from the schedule the last one
// kept, while each is faster: on the zoo and shared ONNX models a second round won 7 times of 46,
// a third never.
constexpr int kQueueOrderRounds = 2;
// Weight prefetch plans tried: each that does not fit is planned again without its group.
constexpr int kPrefetchAttempts = 4;
// A prefetch plan is tried only if moving all its bytes could save 1/200 of the model's cycles.
constexpr long double kPrefetchMinGain = 200;

// Whether a schedule of `commands` grows past `before_commands` by more than kRemapGrowthPct.
bool grows_past_rule(std::uint64_t commands, std::uint64_t before_commands) {
  return commands * 100 > before_commands * (100 + kRemapGrowthPct);
}

// Whether a model of `cycles` and `commands` is kept over one of `before_cycles` and
// `before_commands` (no cycles: does not check): faster, and, with more than kRemapGrowthPct %
// more commands, at least kRemapGainPct % faster. The rule of remappings (finer tiles gained
// Llama-2-7B's prefill 0.4 % for 2.8 times the commands, its outputs past 100 MB), of reduction
// splits (a part's load and Gemm where there was one of each: the 7B layer on `server` took 2.9
// times the commands for 1.6 % fewer cycles estimated; the whole Llama-2-7B twice the commands in
// its decode steps for 1 %) and of fewer transfers.
bool wins_by_growth_rule(const std::optional<std::uint64_t>& cycles, std::uint64_t commands,
                         const std::optional<std::uint64_t>& before_cycles,
                         std::uint64_t before_commands) {
  if (!cycles) return false;
  if (!before_cycles) return true;
  return *cycles < *before_cycles &&
         (!grows_past_rule(commands, before_commands) ||
          (*before_cycles - *cycles) * 100 >= *before_cycles * kRemapGainPct);
}

bool within_limits(const GroupSize& size) {
  return size.commands <= kMaxCommands && size.bytes <= kMaxScheduleBytes;
}

// Whether the whole graph compiles within the limits at `lram_kib`, by mapping every group (no
// emission). A group that cannot be tiled at that size does not fit either.
bool fits(const Graph& graph, const std::vector<LayerGroup>& groups, const TensorLayouts& layouts,
          HwConfig config, std::uint64_t lram_kib, const Search& search) {
  config.lram_bytes = lram_kib * 1024;
  GroupSize total;
  try {
    for (const LayerGroup& group : groups) {
      const GroupKind kind = group_kind(graph, group);
      if (kind == GroupKind::kView || kind == GroupKind::kUnknown) continue;
      const Mapping m = search.choose(make_map_space(graph, group, layouts, config), config);
      total = total + estimate_group(graph, group, m, layouts, budgets_of(config));
      if (!within_limits(total)) return false;
    }
  } catch (const InputError&) {
    return false;
  }
  return true;
}

// The smallest lram_kib above the config's at which the graph fits, by doubling and then
// bisection (the command count falls as lram_kib grows, though not strictly), or 0 if even the
// largest lram_kib does not.
std::uint64_t smallest_lram_kib(const Graph& graph, const std::vector<LayerGroup>& groups,
                                const TensorLayouts& layouts, const HwConfig& config,
                                const Search& search) {
  std::uint64_t bad = config.lram_bytes / 1024, good = bad;
  do {
    good = std::min(kMaxLramKib, 2 * good + 1);
    if (fits(graph, groups, layouts, config, good, search)) break;
    bad = good;
  } while (good < kMaxLramKib);
  if (bad == good) return 0;
  while (good - bad > 1) {
    const std::uint64_t mid = bad + (good - bad) / 2;
    (fits(graph, groups, layouts, config, mid, search) ? good : bad) = mid;
  }
  return good;
}

[[noreturn]] void throw_too_large(const Graph& graph, const std::vector<LayerGroup>& groups,
                                  const TensorLayouts& layouts, const HwConfig& config,
                                  const Search& search, const LayerGroup& group,
                                  const GroupSize& total) {
  const std::string what = total.commands > kMaxCommands
                               ? "about " + std::to_string(total.commands) +
                                     " commands up to this layer, more than the " +
                                     std::to_string(kMaxCommands) + " a schedule may have"
                               : "about " + std::to_string(total.bytes >> 20) +
                                     " MiB for the schedule up to this " +
                                     "layer, more than the compiler's limit of " +
                                     std::to_string(kMaxScheduleBytes >> 20) + " MiB";
  const std::uint64_t kib = smallest_lram_kib(graph, groups, layouts, config, search);
  const std::string fix = kib > 0 ? "; lram_kib=" + std::to_string(kib) + " or more would fit"
                                  : "; no lram_kib fits, the model is too large to compile";
  throw InputError(graph.source_file, "layer '" + group.name + "' " + group.loc,
                   "compiling for this config takes " + what + fix);
}

// Whether `group`, mapped with `m`, could keep its output on chip: its tiles store their outputs
// one by one (not a K-split MatMul, a host layer or a view), and the output takes at most an
// eighth of the local memory.
bool can_keep_output(const Graph& graph, const HwConfig& config, const LayerGroup& group,
                     const Mapping& m) {
  // A K-split conv's tiles hold their outputs as 4-byte accumulators: not kept.
  const bool tiled = (m.kind == MappingKind::kSpatial && m.k_step == 0) ||
                     m.kind == MappingKind::kVector || m.kind == MappingKind::kGlobalPool ||
                     m.kind == MappingKind::kMatMul;
  return tiled && graph.tensors[group.output].bytes() <= config.lram_bytes / 8;
}

// Whether `group`'s output stays in local memory for `next`, the group emitted after it
// (docs/compiler.md, "Outputs kept on chip"): `next` is a conv or pool each of whose tiles reads
// all its pixels (SpatialLayer::reads_input_whole), or a global pool, of one image. Its stores
// still write it to DRAM for any other reader; `next` reads it from the buffers its tiles wrote.
bool output_stays_on_chip(const Graph& graph, const HwConfig& config, const LayerGroup& group,
                          const Mapping& m, const LayerGroup& next, const Mapping& next_m) {
  if (!can_keep_output(graph, config, group, m)) return false;
  if (group_kind(graph, next) == GroupKind::kGlobalPool) {
    const GlobalPoolLayer p = describe_global_pool(graph, next);
    return p.input == group.output && p.n == 1;
  }
  if (group_kind(graph, next) != GroupKind::kSpatial) return false;
  const SpatialLayer s = describe_spatial(graph, next, budgets_of(config));
  return s.input == group.output && s.reads_input_whole(next_m);
}

// The estimator's total for `schedule`, finalized in place (finalize_schedule only recomputes
// the commands' costs and buffer sizes, so finalizing again later changes nothing; a copy per
// candidate cost more than the estimate); nullopt when it does not check or cannot be estimated
// (the caller then keeps the schedule without residency, whose own problems finalize_schedule
// and the run report as they always did).
std::optional<std::uint64_t> estimated_cycles(Schedule& schedule, const HwConfig& config) {
  Diagnostics diag(schedule.file);
  finalize_schedule(schedule, config, diag);
  if (!diag.empty()) return std::nullopt;
  try {
    return estimate(schedule, config).total_cycles();
  } catch (const std::exception&) {  // past kMaxCycles, or a deadlock
    return std::nullopt;
  }
}

// An estimate's figure in the explain lines.
std::string figure_of(const std::optional<std::uint64_t>& cycles) {
  return cycles ? std::to_string(*cycles) + " cycles estimated" : std::string("does not check");
}

// A conv tiled to accumulate its reduction in steps (Mapping::k_step), or a MatMul with its
// reduction split over slices (Mapping::k_parts): each is costed alone and gives up what spans
// groups, so the model is compiled with and without them (compile_on_all_slices).
bool splits_reduction(const Mapping& m) {
  return (m.kind == MappingKind::kSpatial && m.k_step > 0) ||
         (m.kind == MappingKind::kMatMul && m.k_parts > 1);
}

bool same_mapping(const Mapping& a, const Mapping& b) {
  return mapping_fields(a) == mapping_fields(b);
}

// Every group's mapping, and what emission needs besides: which outputs stay on chip for the next
// group, what each group's tiles need of local memory (ring_need, for plan_residency), the size
// estimate, and the search's reasons for `explain`.
struct Mapped {
  std::vector<Mapping> mappings;
  std::vector<bool> keep;
  std::vector<std::uint64_t> ring_needs;
  GroupSize total;
  std::vector<std::string> reasons;  // per group; empty for a group with nothing to choose
  // Per group: the last group's output it was costed as reading on chip (map_all).
  std::vector<std::optional<std::uint32_t>> on_chip_inputs;
  bool splits_allowed = true;     // mapped with candidates that split the reduction
  bool reduction_splits = false;  // some group does (splits_reduction)
  std::size_t remapped = 0;       // groups costed again under a residency plan (remap)
};

// Which residency plan: its cap, L / share, and whether chains take part (their inputs and
// outputs may be resident) or stay apart (their members read and write through DRAM).
struct PlanChoice {
  std::uint64_t share = 0;
  bool chains_apart = false;
  bool stores_carry_frees = false;  // Emitter::stores_carry_frees
};

// A schedule emitted from a Mapped: `cycles` is its estimate when known, `report` the residency
// line of `explain` when any plan was tried.
struct Emitted {
  Schedule schedule;
  std::optional<std::uint64_t> cycles;
  std::string report;
  std::vector<Residency> residency;  // the plan kept; empty without residency
  PlanChoice plan;                   // the plan kept (share 0: none)
  // The plan kept was estimated with its frees on the computes and on the stores (or both are
  // the same schedule): carry_frees_on_stores has nothing left to compare.
  bool frees_compared = false;
};

// A model as it will be emitted: its mappings, its chains (if any) and its schedule.
struct Final {
  Mapped m;
  Emitted e;
  std::vector<Chain> chains;
};

// No output is kept on chip into or out of a chain (its members' loads and stores are the
// chain's own).
void unkeep_around(Mapped& m, const std::vector<Chain>& chains) {
  for (const Chain& c : chains) {
    for (std::size_t j = 0; j < c.mappings.size(); ++j) m.keep[c.first + j] = false;
    if (c.first > 0) m.keep[c.first - 1] = false;
  }
}

// The steps of compiling one device's graph: map the groups, emit them, plan residency.
// The groups (fuse_layer_groups), element-wise chains within the weight-chunk budget; the layouts
// of the groups made without that budget tell which of their constants stream by rows.
std::vector<LayerGroup> make_groups(const Graph& graph, const HwConfig& config) {
  const TensorLayouts layouts = assign_layouts(graph, fuse_layer_groups(graph));
  return fuse_layer_groups(graph, budgets_of(config).weight_chunk_bytes, &layouts.image);
}

std::vector<GroupSignature> signatures_of(const Graph& graph, const std::vector<LayerGroup>& groups,
                                          const TensorLayouts& layouts) {
  std::vector<GroupSignature> out;
  out.reserve(groups.size());
  for (const LayerGroup& g : groups) out.emplace_back(graph, g, layouts);
  return out;
}

class DeviceCompiler {
 public:
  DeviceCompiler(const Graph& graph, const HwConfig& config, const CompileOptions& options)
      : graph_(graph),
        config_(config),
        options_(options),
        groups_(make_groups(graph, config)),
        layouts_(assign_layouts(graph, groups_)),
        search_(make_search(options.search)),
        cost_search_(dynamic_cast<const CostSearch*>(search_.get())),
        budgets_(budgets_of(config)),
        signatures_(signatures_of(graph, groups_, layouts_)) {}

  // First map every group and total the estimates, so that a schedule past the limits, or a
  // group that cannot be tiled, stops before anything is emitted. Emission can only fail on an op
  // the NPU cannot run: the estimate stops there, so that error still comes in layer order, from
  // emit_group below, and the groups after it would be checked there. Without `reduction_splits`,
  // the candidates that split the reduction (K-split convs, MatMuls split over slices) are left
  // out.
  // With `contexts` (on_chip_contexts of a residency plan for `before`'s mappings), a group that
  // reads a resident tensor or leaves its output on chip is costed as that plan would emit it;
  // any other group costed as in `before` keeps its mapping (remap).
  // `fixed` groups keep `before`'s mapping whatever their context (a chain's members), and keep
  // nothing on chip for the group after them; `kept` groups keep `before`'s mapping too, as any
  // group (remap_part: the groups mapped anew outside the part tried).
  Mapped map_all(bool reduction_splits, const Mapped* before = nullptr,
                 const std::vector<OnChipContext>* contexts = nullptr,
                 const std::vector<bool>* fixed = nullptr, const std::vector<bool>* kept = nullptr,
                 std::optional<std::size_t> fewer_transfers = std::nullopt) const {
    Mapped m;
    m.splits_allowed = reduction_splits;
    for (std::size_t i = 0; i < groups_.size(); ++i) {
      const LayerGroup& group = groups_[i];
      if (group_kind(graph_, group) == GroupKind::kUnknown) break;
      // The last group's output may stay on chip for this one if this one reads it whole.
      // (Not out of a chain: its members keep nothing on chip for the group after it.)
      std::optional<std::uint32_t> on_chip_input;
      const bool after_fixed =
          i > 0 && fixed != nullptr && i - 1 < fixed->size() && (*fixed)[i - 1];
      if (i > 0 && !after_fixed &&
          can_keep_output(graph_, config_, groups_[i - 1], m.mappings.back())) {
        on_chip_input = groups_[i - 1].output;
      }
      const OnChipContext context =
          contexts != nullptr && i < contexts->size() ? (*contexts)[i] : OnChipContext{};
      Mapping mapping;
      const bool is_fixed = fixed != nullptr && i < fixed->size() && (*fixed)[i];
      const bool is_kept = kept != nullptr && i < kept->size() && (*kept)[i];
      if (before != nullptr && i < before->mappings.size() &&
          (is_fixed || is_kept ||
           (!fewer_transfers && !context.any() && before->on_chip_inputs[i] == on_chip_input))) {
        mapping = before->mappings[i];
        m.reasons.push_back(before->reasons[i]);
        m.ring_needs.push_back(before->ring_needs[i]);
        m.reduction_splits = m.reduction_splits || splits_reduction(mapping);
      } else {
        const bool splits_before = m.reduction_splits;
        bool taken = false;
        mapping =
            choose(m, group, on_chip_input, reduction_splits, context, fewer_transfers, &taken);
        // A group the search named no mapping with fewer transfers for keeps its mapping (remap
        // decided it already): only the groups taken change.
        if (fewer_transfers && !taken && before != nullptr && i < before->mappings.size()) {
          mapping = before->mappings[i];
          m.reasons.back() = before->reasons[i];
          m.ring_needs.back() = before->ring_needs[i];
          m.reduction_splits = splits_before || splits_reduction(mapping);
        }
        if (before != nullptr && i < before->mappings.size() &&
            !same_mapping(mapping, before->mappings[i])) {
          ++m.remapped;
        }
      }
      m.on_chip_inputs.push_back(on_chip_input);
      add_size(m, group, mapping);
      m.mappings.push_back(mapping);
    }
    m.keep.assign(m.mappings.size(), false);
    for (std::size_t i = 0; i + 1 < m.mappings.size(); ++i) {
      m.keep[i] = output_stays_on_chip(graph_, config_, groups_[i], m.mappings[i], groups_[i + 1],
                                       m.mappings[i + 1]);
    }
    return m;
  }

  // The schedule of `m` without residency, or with the plan that the estimate says is fastest
  // (keeping tensors takes local memory from the tiles' lookahead, which a DMA-bound layer may
  // need more than the trips it saves): plans that keep on-chip tensors in up to L / 2 and in up
  // to L / 4 are emitted too, and without wins a tie.
  // With `chains`, each cap is planned twice: with chains taking part, a chain's input and
  // output may be resident (its first member reads the one and its last writes the other through
  // their tiles), never its intermediates, which stay on chip anyway; and with chains apart, as
  // before chains could take part (they read and write through DRAM; a resident tensor can cost
  // a chain's steps more room than it saves, mnist_cnn on `server`). Either way the plan sees
  // the members between unmapped, and each member needing its chain's reservation of the ring.
  // With `only`, only that plan is made, emitted and estimated (remap compares it with the model
  // it remaps); no schedule and no cycles when it keeps none.
  Emitted emit_best(Mapped& m, const std::vector<Chain>* chains = nullptr,
                    std::optional<PlanChoice> only = std::nullopt) const {
    Emitted best;
    if (!only) best.schedule = emit_all(m, std::vector<Residency>(m.mappings.size()), chains);
    if (!options_.residency) return best;
    struct Plan {
      std::vector<Residency> residency;
      std::vector<bool> outputs;
      std::string what;
      PlanChoice choice;
    };
    std::vector<Plan> plans;
    // An output kept for the next group that another layer reads too is also stored for that
    // reader; the plan may make it resident instead (no store at all; emit_group lets residency
    // win). While it is kept its bytes count in the two groups' needs, as the plan counts a
    // kept output's.
    std::vector<bool> kept_alone(m.keep.size(), false);
    std::vector<std::uint64_t> kept_needs(m.mappings.size(), 0);
    for (std::size_t i = 0; i < m.keep.size(); ++i) {
      if (!m.keep[i]) continue;
      if (i + 1 < groups_.size() && read_only_by(graph_, groups_[i], groups_[i + 1])) {
        kept_alone[i] = true;
        continue;
      }
      const std::uint64_t bytes = graph_.tensors[groups_[i].output].bytes();
      kept_needs[i] += bytes;
      if (i + 1 < kept_needs.size()) kept_needs[i + 1] += bytes;
    }
    const bool has_chains = chains != nullptr && !chains->empty();
    for (const bool apart : {false, true}) {
      if ((apart && !has_chains) || (only && only->chains_apart != apart)) continue;
      std::vector<Mapping> plan_mappings = m.mappings;
      std::vector<std::uint64_t> plan_needs = m.ring_needs;
      for (std::size_t i = 0; i < plan_needs.size(); ++i) plan_needs[i] += kept_needs[i];
      std::vector<bool> in_chain(m.mappings.size(), false);
      for (const Chain& c : has_chains ? *chains : std::vector<Chain>{}) {
        const std::size_t last = c.first + c.mappings.size() - 1;
        for (std::size_t j = c.first; j <= last; ++j) {
          const bool end = !apart && (j == c.first || j == last);
          plan_mappings[j] = end ? c.mappings[j - c.first] : Mapping{};
          plan_needs[j] = c.reserved_bytes + c.ring_bytes;
          in_chain[j] = j != last;
        }
      }
      for (const std::uint64_t share : {2, 4}) {
        if (only && share != only->share) continue;
        Plan p{plan_residency(graph_, config_, groups_, plan_mappings, kept_alone, plan_needs,
                              config_.lram_bytes / share, &in_chain),
               {},
               "",
               {share, apart}};
        p.outputs.resize(p.residency.size());
        for (std::size_t g = 0; g < p.residency.size(); ++g) p.outputs[g] = p.residency[g].output;
        const auto count = std::count(p.outputs.begin(), p.outputs.end(), true);
        const bool repeated = std::any_of(plans.begin(), plans.end(),
                                          [&](const Plan& q) { return q.outputs == p.outputs; });
        if (count == 0 || repeated) continue;
        p.what = std::to_string(count) + " tensor(s) in up to L/" + std::to_string(share) +
                 (apart ? " apart from the chains" : "");
        plans.push_back(std::move(p));
      }
    }
    if (plans.empty()) return best;
    if (only) {
      best.schedule = emit_all(m, plans.front().residency, chains, only->stores_carry_frees);
      best.cycles = estimated_cycles(best.schedule, config_);
      best.residency = plans.front().residency;
      best.plan = *only;
      best.report = "residency\t" + plans.front().what +
                    (only->stores_carry_frees ? ", frees carried by stores" : "") + ": " +
                    (best.cycles ? std::to_string(*best.cycles) : "does not check");
      return best;
    }
    // The schedule without residency emitted (so every group is mapped: emit_all leaves `m` as
    // it is), estimating it and emitting and estimating each plan are independent: on several
    // cores at once, compared in order below as one after another would. A plan whose emission
    // throws (a compiler bug) is thrown, whatever the other estimates.
    std::vector<std::size_t> would_carry(plans.size() + 1, 0);
    std::vector<Emitted> tried = parallel_map(plans.size() + 1, [&](std::size_t i) -> Emitted {
      if (i == 0) return {Schedule{}, estimated_cycles(best.schedule, config_), "", {}, {}};
      Schedule with = emit_all(m, plans[i - 1].residency, chains, false, &would_carry[i]);
      const std::optional<std::uint64_t> cycles = estimated_cycles(with, config_);
      return {std::move(with), cycles, "", {}, {}};
    });
    best.cycles = tried[0].cycles;
    if (!best.cycles) return best;
    best.report = "without: " + std::to_string(*best.cycles) + " cycles estimated";
    std::string chosen = "none";
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const std::optional<std::uint64_t>& cycles = tried[i + 1].cycles;
      // A plan whose schedule does not check would be a compiler bug: never kept, and said.
      best.report +=
          "; " + plans[i].what + ": " + (cycles ? std::to_string(*cycles) : "does not check");
      if (cycles && *cycles < *best.cycles) {
        best.schedule = std::move(tried[i + 1].schedule);
        best.cycles = cycles;
        best.residency = plans[i].residency;
        best.plan = plans[i].choice;
        chosen = plans[i].what;
      }
    }
    // (The plan kept, if any, is the fastest: the first strictly below all before it.)
    const bool plan_kept = !best.residency.empty();
    // The fastest plan again with the stores carrying its frees (carry_frees_on_stores), so that
    // chains and remapping start from the better of the two (bert_toy on `server`: 22,407 cycles
    // estimated with the frees on the computes, 14,217 on the stores); a plan that loses to no
    // residency one way may also win the other.
    std::optional<std::size_t> fastest;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const std::optional<std::uint64_t>& c = tried[i + 1].cycles;
      if (c && (!fastest || *c < *tried[*fastest + 1].cycles)) fastest = i;
    }
    // (Only when some store would carry a free: else it is the same schedule.)
    best.frees_compared = plan_kept;
    if (fastest && would_carry[*fastest + 1] > 0) {
      Schedule carried = emit_all(m, plans[*fastest].residency, chains, true);
      const std::optional<std::uint64_t> cycles = estimated_cycles(carried, config_);
      best.report += "; " + plans[*fastest].what + ", frees carried by stores: " +
                     (cycles ? std::to_string(*cycles) : "does not check");
      if (cycles && *cycles < *best.cycles) {
        best.schedule = std::move(carried);
        best.cycles = cycles;
        best.residency = plans[*fastest].residency;
        best.plan = plans[*fastest].choice;
        best.plan.stores_carry_frees = true;
        best.frees_compared = true;
        chosen = plans[*fastest].what + ", frees carried by stores";
      }
    }
    if (!best.report.empty()) best.report = "residency\t" + best.report + "; kept: " + chosen;
    return best;
  }

  // `m` with its chains (plan_chains) emitted depth first, if it has any, residency planned
  // around them. The members take the chains' mappings; no output is kept on chip into or out of
  // a chain. With `plain_plan` (the residency plan `m` is emitted with alone), a run of groups is
  // costed, chained or not, as that plan would find it: the resident tensors it reads (and the
  // others' bytes) on chip, its outputs left there as the plan leaves them. A chain that saves
  // its members' DRAM round trips saves nothing where residency already saves them.
  std::optional<Final> emit_chained(const Mapped& m,
                                    const std::vector<Residency>* plain_plan = nullptr) const {
    const RunCosts costs(*this, m, plain_plan);
    const ChainCost chain_cost = [&](const Chain& c) { return costs.chain(c); };
    const PlainCost plain_cost = [&](std::size_t first, std::size_t count) {
      return costs.plain(first, count);
    };
    const std::vector<Chain> chains =
        plan_chains(graph_, config_, groups_, m.mappings, chain_cost, plain_cost);
    if (chains.empty()) return std::nullopt;
    return emit_with_chains(m, chains);
  }

  // `m` with `chains` (not empty): the members take the chains' mappings, and the model is
  // emitted with the residency plan the estimate says is fastest, or with `only` (emit_best's: no
  // cycles if that plan keeps nothing).
  Final emit_with_chains(const Mapped& m, const std::vector<Chain>& chains,
                         std::optional<PlanChoice> only = std::nullopt) const {
    Mapped chained = m;
    std::size_t members = 0;
    for (const Chain& c : chains) {
      for (std::size_t j = 0; j < c.mappings.size(); ++j) {
        chained.mappings[c.first + j] = c.mappings[j];
      }
      members += c.mappings.size();
    }
    unkeep_around(chained, chains);
    Emitted e = emit_best(chained, &chains, only);
    if (!e.cycles && !only) e.cycles = estimated_cycles(e.schedule, config_);
    // Each chain: its first group, members, rows per tile and slices (the members' own explain
    // lines show the mappings they have without chains).
    std::string which;
    for (const Chain& c : chains) {
      which +=
          (which.empty() ? "" : "; ") + groups_[c.first].name + " x" +
          std::to_string(c.mappings.size()) +
          (c.channel_block > 0
               ? " channels " + std::to_string(c.channel_block) + (c.split_outputs ? " split" : "")
               : " rows " + std::to_string(c.mappings.front().tile_rows)) +
          (c.ahead == 0 ? "" : " ahead " + std::to_string(c.ahead)) +
          (c.reuse_halo ? " halo" : "") +
          (c.slices == 0 ? "" : " slices " + std::to_string(c.slices)) +
          (c.channel_block > 0 || c.free_delay == (c.slices == 0 ? config_.slices.count : c.slices)
               ? ""
               : " frees " + std::to_string(c.free_delay) + " back");
    }
    e.report = "chains\t" + std::to_string(chains.size()) + " chain(s) of " +
               std::to_string(members) + " groups: " + figure_of(e.cycles) +
               (e.report.empty() ? "" : " (" + e.report.substr(e.report.find('\t') + 1) + ")") +
               " [" + which + "]";
    return Final{std::move(chained), std::move(e), chains};
  }

  // When all of `chained`'s chains together lose to `plain` (the model without them), some may
  // still win in the model (each was costed alone, as the plan would find it, but together they
  // hold room and serialise what the plain model overlaps): they are added one at a time, in
  // order, each kept if the model estimates faster with it (a channel chain that is not, its run's
  // chain of rows if that is). Returns the best so found, if any beats the plain one.
  // Each trial is emitted under `plain`'s residency plan alone, with the chains in it and apart
  // from them, on two cores at once, the faster kept: not emit_best's five or six emissions
  // (DenseNet-121 on `server` tries 29 chains, and this took a third of its compile). A trial
  // that plan keeps nothing of, or when `plain` kept no plan, is emitted with every plan. The
  // chains kept are then emitted once with every plan, the faster kept.
  std::optional<Final> chains_one_by_one(const Mapped& m, const std::vector<Chain>& chains,
                                         const Emitted& plain) const {
    if (!plain.cycles) return std::nullopt;
    const std::optional<PlanChoice> screen =
        plain.plan.share != 0 ? std::optional<PlanChoice>(plain.plan) : std::nullopt;
    auto emit_trial = [&](const std::vector<Chain>& trial) {
      if (!screen) return emit_with_chains(m, trial);
      std::vector<Final> two = parallel_map(2, [&](std::size_t i) {
        PlanChoice choice = *screen;
        choice.chains_apart = i == 1;
        return emit_with_chains(m, trial, choice);
      });
      if (!two[0].e.cycles && !two[1].e.cycles) return emit_with_chains(m, trial);
      const bool apart =
          two[1].e.cycles && (!two[0].e.cycles || *two[1].e.cycles < *two[0].e.cycles);
      return std::move(two[apart ? 1 : 0]);
    };
    std::optional<Final> best;
    std::uint64_t best_cycles = *plain.cycles;
    std::vector<Chain> kept;
    for (const Chain& planned : chains) {
      // A channel chain that loses here gives way to its run's chain of rows (Chain::instead).
      std::vector<const Chain*> options = {&planned};
      for (const Chain& c : planned.instead) options.push_back(&c);
      for (const Chain* c : options) {
        std::vector<Chain> trial = kept;
        trial.push_back(*c);
        Final f = emit_trial(trial);
        if (f.e.cycles && *f.e.cycles < best_cycles) {
          best_cycles = *f.e.cycles;
          kept = std::move(trial);
          best = std::move(f);
          break;
        }
      }
    }
    if (best && screen) {
      Final every_plan = emit_with_chains(m, kept);
      if (every_plan.e.cycles && *every_plan.e.cycles < best_cycles) best = std::move(every_plan);
    }
    return best;
  }

  // The plain model, once remapped, may gain from chains (the light ResNet-50 on `server`:
  // 377,263 cycles estimated, 347,346 with one of its 7 chains): each planned chain is added to
  // it one at a time, kept if the model estimates faster (chains_one_by_one). The chains keep the
  // tilings they were planned with; the other groups their remapped ones.
  void add_chains_after_remap(Final& f, const std::vector<Chain>& planned,
                              std::string& line) const {
    if (!f.chains.empty() || planned.empty() || !f.e.cycles) return;
    std::optional<Final> some = chains_one_by_one(f.m, planned, f.e);
    if (!some) return;
    line += "; after remapping, one by one: " + std::to_string(some->chains.size()) + " of " +
            std::to_string(planned.size()) + " chain(s), " + std::to_string(*some->e.cycles) +
            " cycles estimated";
    f = std::move(*some);
  }

  // Residency-aware remapping (docs/compiler.md, "Remapping under residency"). Each group was
  // costed alone, loading its inputs and storing its output; under the residency plan of `f`'s
  // schedule some of those never move, so its cheapest mapping may differ (fewer, larger tiles
  // once the DMA no longer binds). Each group that reads a resident tensor or leaves its output
  // on chip is costed again as that plan emits it (among the candidates that plan can keep);
  // the others, and the chains' members, keep their mappings; and the model is emitted again,
  // residency planned anew for the new mappings. The faster under the estimate is kept, the
  // first on a tie. `line` gets the round's figures; returns whether the remapping was kept.
  bool remap(Final& f, std::string& line) const {
    Mapped& m = f.m;
    Emitted& e = f.e;
    if (cost_search_ == nullptr || e.residency.empty() || !e.cycles) return false;
    const std::vector<OnChipContext> contexts = on_chip_contexts(graph_, groups_, e.residency);
    std::vector<bool> fixed(m.mappings.size(), false);
    for (const Chain& c : f.chains) {
      std::fill_n(fixed.begin() + static_cast<std::ptrdiff_t>(c.first), c.mappings.size(), true);
    }
    std::optional<Mapped> r;
    try {
      r = map_all(m.splits_allowed, &m, &contexts, &fixed);
    } catch (const InputError&) {  // past the size limits with the new mappings: keep `m`
      return false;
    }
    if (r->remapped == 0) return false;
    unkeep_around(*r, f.chains);
    const std::vector<Chain>* chains = f.chains.empty() ? nullptr : &f.chains;
    // Planned with the cap of the plan it was mapped under (the other cap and no residency at
    // all lost to it before).
    Emitted g;
    try {
      g = emit_best(*r, chains, e.plan);
    } catch (const InputError&) {  // past the command limit as emitted: keep `m`
      return false;
    }
    if (!g.cycles) {  // the plan keeps nothing now, or does not check
      line += (line.empty() ? "remap\t" : "; then ") + std::to_string(r->remapped) +
              " group(s) mapped anew: no plan for them, kept: before";
      return false;
    }
    const std::uint64_t before_commands = e.schedule.commands.size();
    const std::uint64_t after_commands = g.schedule.commands.size();
    const bool grows = grows_past_rule(after_commands, before_commands);
    const bool keep = wins_by_growth_rule(g.cycles, after_commands, e.cycles, before_commands);
    line += (line.empty() ? "remap\t" : "; then ") + std::to_string(r->remapped) +
            " group(s) mapped anew: " + std::to_string(*g.cycles) + " cycles estimated" +
            " (before: " + std::to_string(*e.cycles) + ")" +
            (grows ? ", " + std::to_string(after_commands) +
                         " commands (before: " + std::to_string(before_commands) + ")"
                   : "") +
            ", kept: " + (keep ? "remapped" : "before");
    // Slower all together, or grown past the rule, a part of them may still win.
    if (!keep) return remap_part(f, *r, contexts, fixed, line);
    // The plan the remapped model keeps (the residency line tells the one before).
    if (!g.report.empty()) line += " (" + g.report.substr(g.report.find('\t') + 1) + ")";
    m = std::move(*r);
    e = std::move(g);
    return true;
  }

  // The model chosen with every group that is no chain member mapped as the search's mapping with
  // fewer DMA transfers where it named one (SearchChoice::fewer_transfers), at each level of
  // kFewerTransfersFractions: emitted under the model's residency plan (the levels on the
  // machine's cores at once), and the fastest kept when it estimates faster. Costed alone, a
  // group cannot see that its larger loads leave DMA time to the groups around it (prefetch, the
  // stores before it). Returns the explain line ("" when no group has one).
  std::string remap_to_fewer_transfers(Final& f) const {
    if (!options_.fewer_transfers || cost_search_ == nullptr || !f.e.cycles) return "";
    std::vector<OnChipContext> contexts;
    if (!f.e.residency.empty()) contexts = on_chip_contexts(graph_, groups_, f.e.residency);
    std::vector<bool> fixed(f.m.mappings.size(), false);
    for (const Chain& c : f.chains) {
      std::fill_n(fixed.begin() + static_cast<std::ptrdiff_t>(c.first), c.mappings.size(), true);
    }
    // Each level's mappings, skipping a level that maps as one before it.
    std::vector<std::pair<std::size_t, Mapped>> levels;
    for (std::size_t level = 0; level < kFewerTransferLevels; ++level) {
      Mapped r;
      try {
        r = map_all(f.m.splits_allowed, &f.m, contexts.empty() ? nullptr : &contexts, &fixed,
                    nullptr, level);
      } catch (const InputError&) {  // past the size limits at this level
        continue;
      }
      if (r.remapped == 0) continue;
      const bool seen = std::any_of(levels.begin(), levels.end(), [&](const auto& l) {
        return std::equal(r.mappings.begin(), r.mappings.end(), l.second.mappings.begin(),
                          l.second.mappings.end(), same_mapping);
      });
      if (seen) continue;
      unkeep_around(r, f.chains);
      levels.emplace_back(level, std::move(r));
    }
    if (levels.empty()) return "";
    const std::vector<Chain>* chains = f.chains.empty() ? nullptr : &f.chains;
    std::vector<std::optional<Emitted>> emitted =
        parallel_map(levels.size(), [&](std::size_t i) -> std::optional<Emitted> {
          Mapped& r = levels[i].second;
          Emitted g;
          try {
            if (f.e.residency.empty()) {
              g.schedule = emit_all(r, std::vector<Residency>(r.mappings.size()), chains,
                                    f.e.plan.stores_carry_frees);
              g.cycles = estimated_cycles(g.schedule, config_);
              g.plan = f.e.plan;
            } else {
              g = emit_best(r, chains, f.e.plan);
            }
          } catch (const InputError&) {  // past the command limit as emitted
            return std::nullopt;
          }
          return g;
        });
    std::string line = "transfers\t";
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const std::optional<std::uint64_t> cycles =
          emitted[i] ? emitted[i]->cycles : std::optional<std::uint64_t>{};
      line += (i > 0 ? "; " : "") + std::string("within 1/") +
              std::to_string(kFewerTransfersFractions[levels[i].first]) + ", " +
              std::to_string(levels[i].second.remapped) + " group(s): " + figure_of(cycles);
      if (!cycles) continue;
      const std::uint64_t commands = emitted[i]->schedule.commands.size();
      const std::uint64_t before_commands = f.e.schedule.commands.size();
      if (grows_past_rule(commands, before_commands)) {
        line += " (" + std::to_string(commands) + " commands)";
      }
      if (wins_by_growth_rule(cycles, commands, f.e.cycles, before_commands) &&
          (!best || *cycles < *emitted[*best]->cycles)) {
        best = i;
      }
    }
    line += "; before: " + std::to_string(*f.e.cycles) + "; kept: " +
            (best ? "within 1/" + std::to_string(kFewerTransfersFractions[levels[*best].first])
                  : std::string("before"));
    if (best) {
      f.m = std::move(levels[*best].second);
      f.e = std::move(*emitted[*best]);
    }
    return line;
  }

  // The model chosen, emitted again with the frees of kept and resident inputs carried the other
  // way (Emitter::stores_carry_frees) and kept when it estimates faster: on `server` a store costs
  // little and frees the slice a compute carrier holds until every reader ends; on `default`'s
  // narrow DMA_OUT port the stores' bytes can cost more. Skipped when emit_best compared both for
  // this plan; a remapped model keeps its plan's way and is compared here. Returns the explain
  // line.
  std::string carry_frees_on_stores(Final& f) const {
    const bool keeps = std::find(f.m.keep.begin(), f.m.keep.end(), true) != f.m.keep.end();
    if (!f.e.cycles || (f.e.residency.empty() && !keeps) || f.e.frees_compared) return "";
    const std::vector<Residency> residency =
        f.e.residency.empty() ? std::vector<Residency>(f.m.mappings.size()) : f.e.residency;
    const bool to_stores = !f.e.plan.stores_carry_frees;
    Emitted other;
    try {
      other.schedule = emit_all(f.m, residency, f.chains.empty() ? nullptr : &f.chains, to_stores);
    } catch (const InputError&) {  // past the command limit: keep `f`
      return "";
    }
    other.cycles = estimated_cycles(other.schedule, config_);
    if (!other.cycles) return "";
    const bool keep = *other.cycles < *f.e.cycles;
    const std::uint64_t stores = to_stores ? *other.cycles : *f.e.cycles;
    const std::uint64_t computes = to_stores ? *f.e.cycles : *other.cycles;
    std::string line = "frees\tcarried by stores: " + std::to_string(stores) +
                       " cycles estimated; by the last computes: " + std::to_string(computes) +
                       "; kept: " + (keep == to_stores ? "stores" : "computes");
    if (keep) {
      f.e.schedule = std::move(other.schedule);
      f.e.cycles = other.cycles;
      f.e.plan.stores_carry_frees = to_stores;
    }
    return line;
  }

  // What plan_prefetch needs of each group of `f`, from `t`, its schedule's estimate.
  // `in_rate` gets the DMA_IN channels' average bytes per busy cycle, each (0: no DMA_IN).
  std::vector<PrefetchSlot> prefetch_slots(const Final& f, const profiler::Timeline& t,
                                           long double& in_rate) const {
    using profiler::Cycles;
    const Schedule& sched = f.e.schedule;
    std::vector<PrefetchSlot> slots(groups_.size());
    for (const Chain& c : f.chains) {
      for (std::size_t j = 0; j < c.mappings.size(); ++j) slots[c.first + j].in_chain = true;
    }
    for (std::size_t i = 0; i < f.m.mappings.size(); ++i) {
      const Mapping& m = f.m.mappings[i];
      // Tiles that may take the whole memory take the chunks' half too: nothing is held across.
      if (m.k_step > 0 || m.kind == MappingKind::kMatMulKSplit) slots[i].in_chain = true;
      const GroupKind kind = group_kind(graph_, groups_[i]);
      if (slots[i].in_chain || kind == GroupKind::kView || kind == GroupKind::kHost) continue;
      slots[i].position = m.kind != MappingKind::kNone;
      if (m.kind == MappingKind::kSpatial) {
        slots[i].load_bytes =
            first_block_weight_loads(describe_spatial(graph_, groups_[i], budgets_), m);
      } else if (m.kind == MappingKind::kMatMul) {
        slots[i].load_bytes =
            first_row_tile_weight_loads(graph_, describe_matmul(graph_, groups_[i]), m);
      }
    }
    // Each group's program (groups that emit nothing have none), and its DMA_IN window: from its
    // first DMA_IN's start to the next program's (the queue runs in emission order).
    std::vector<std::optional<std::size_t>> program_of(groups_.size());
    for (std::size_t g = 0, p = 0; g < groups_.size() && p < sched.programs.size(); ++g) {
      if (sched.programs[p].name == groups_[g].name) program_of[g] = p++;
    }
    const std::size_t programs = sched.programs.size();
    std::vector<Cycles> first_in(programs, ~Cycles{0});
    std::vector<Cycles> busy(programs, 0);
    std::uint64_t in_bytes = 0;
    Cycles in_cycles = 0;
    for (std::size_t c = 0; c < sched.commands.size(); ++c) {
      const Command& cmd = sched.commands[c];
      if (cmd.engine != EngineKind::kDmaIn) continue;
      const Cycles d = t.commands[c].end - t.commands[c].start;
      first_in[cmd.program] = std::min(first_in[cmd.program], t.commands[c].start);
      busy[cmd.program] += d;
      in_bytes += cmd.bytes;
      in_cycles += d;
    }
    in_rate = in_cycles == 0
                  ? 0.0L
                  : static_cast<long double>(in_bytes) / static_cast<long double>(in_cycles);
    if (in_cycles == 0) return slots;
    // Local memory in use while each program's commands allocate and free, as estimated: what a
    // load held across it would be added to.
    std::vector<std::uint64_t> peak(programs, 0);
    std::uint64_t in_use = 0;
    for (const profiler::LramChange& c : profiler::lram_changes(make_workload(sched, config_), t)) {
      const Command& cmd = sched.commands[c.command];
      if (c.is_alloc) {
        in_use += cmd.lram_alloc_bytes;
      } else {
        in_use -= std::min(in_use, cmd.lram_free_bytes);
      }
      peak[cmd.program] = std::max(peak[cmd.program], in_use);
    }
    const std::uint64_t channels = std::max<std::uint64_t>(config_.dma.in_channels, 1);
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (!program_of[g] || first_in[*program_of[g]] == ~Cycles{0}) continue;
      const std::size_t p = *program_of[g];
      slots[g].need_bytes = peak[p];
      Cycles next = t.total_cycles();
      for (std::size_t q = p + 1; q < programs; ++q) {
        if (first_in[q] != ~Cycles{0}) {
          next = std::max(first_in[q], first_in[p]);
          break;
        }
      }
      const Cycles capacity = (next - first_in[p]) * channels;
      const Cycles idle = capacity > busy[p] ? capacity - busy[p] : 0;
      // Nine tenths busy: what it loads sets its pace.
      slots[g].dma_bound = busy[p] * 10 >= capacity * 9;
      slots[g].idle_bytes = static_cast<std::uint64_t>(static_cast<long double>(idle) * in_rate);
    }
    return slots;
  }

  // The prefetch plan on `slots`: held beside the estimate's peak within the local memory, and at
  // most the chunks' half.
  // `first_load[g]`: how many of group g's loads `slots` leaves out (continue_after).
  std::vector<Prefetch> plan_on(const std::vector<PrefetchSlot>& slots,
                                const std::vector<std::size_t>& first_load = {}) const {
    return plan_prefetch(slots, config_.lram_bytes, config_.lram_bytes / 2, first_load);
  }

  // One placement of a weight prefetch plan for `f` (Emitter::prefetch_after_group): planned on
  // `slots`, and again with nothing held across a group that does not fit; emitted and
  // estimated. `cycles` only when the schedule checks and its local memory fits.
  // In a later round, `earlier` is the plan kept so far and `first_load` what continue_after left
  // out of `slots`: the schedule emitted prefetches both.
  struct PrefetchTry {
    std::optional<Schedule> schedule;
    std::optional<std::uint64_t> cycles;
    std::string line;            // what was planned and its estimate, for explain
    std::vector<Prefetch> plan;  // all of it, `earlier` too
  };
  PrefetchTry try_prefetch(Final& f, std::vector<PrefetchSlot> slots, bool after_group,
                           const std::vector<Prefetch>& earlier = {},
                           const std::vector<std::size_t>& first_load = {}) const {
    PrefetchTry r;
    const std::vector<Residency> residency =
        f.e.residency.empty() ? std::vector<Residency>(f.m.mappings.size()) : f.e.residency;
    std::size_t unfit = 0;
    for (int attempt = 0; attempt < kPrefetchAttempts && !r.schedule; ++attempt) {
      const std::vector<Prefetch> more = plan_on(slots, first_load);
      if (more.empty()) break;
      r.line = describe_plan(more);
      r.plan = merge_plans(earlier, more);
      try {
        r.schedule = emit_all(f.m, residency, f.chains.empty() ? nullptr : &f.chains,
                              f.e.plan.stores_carry_frees, nullptr, &r.plan, after_group);
      } catch (const Emitter::PrefetchDoesNotFit& e) {
        // (Compared before subtracting: a pointer outside groups_ must not be subtracted.)
        const std::less<const LayerGroup*> before;
        if (before(e.group, groups_.data()) || !before(e.group, groups_.data() + groups_.size())) {
          throw std::logic_error(std::string("prefetch: ") + e.what());
        }
        const auto g = static_cast<std::size_t>(e.group - groups_.data());
        ++unfit;
        if (!e.held) {  // its tiles pass the tiles' half whatever is held: no plan fits
          r.line = "none fits (" + std::string(e.what()) + ")";
          return r;
        }
        slots[g].need_bytes = config_.lram_bytes;
      } catch (const InputError&) {  // past the command limit
        return {};
      }
    }
    if (!r.schedule) {
      r.line = "none fits (" + std::to_string(unfit) + " plan(s) tried)";
      return r;
    }
    if (unfit > 0) r.line += " (after " + std::to_string(unfit) + " plan(s) that did not fit)";
    Diagnostics diag(r.schedule->file);
    finalize_schedule(*r.schedule, config_, diag);
    std::optional<profiler::Timeline> t;
    if (diag.empty()) {
      try {
        t = estimate(*r.schedule, config_);
      } catch (const std::exception&) {
      }
    }
    if (!t) {
      r.line += ": does not check";
    } else if (profiler::lram_occupancy(make_workload(*r.schedule, config_), *t).overflow) {
      r.line += ": over the local memory";
    } else {
      r.cycles = t->total_cycles();
      r.line += ": " + std::to_string(*r.cycles) + " cycles estimated";
    }
    return r;
  }

  // The most cycles `plan` could save: every byte it moves leaving the DMA-bound groups' time,
  // at the DMA_IN channels' average rate `in_rate` each.
  std::uint64_t most_saved(const std::vector<Prefetch>& plan, long double in_rate) const {
    const long double channels = std::max<std::uint32_t>(config_.dma.in_channels, 1);
    return static_cast<std::uint64_t>(static_cast<long double>(prefetched_bytes(plan)) /
                                      (in_rate * channels));
  }
  // Whether `plan` is not worth its emissions: it could not save 1/kPrefetchMinGain of `cycles`.
  bool saves_too_little(const std::vector<Prefetch>& plan, long double in_rate,
                        std::uint64_t cycles) const {
    return static_cast<long double>(most_saved(plan, in_rate)) * kPrefetchMinGain <
           static_cast<long double>(cycles);
  }

  // The chosen schedule with the weight loads of its DMA-bound groups prefetched into earlier
  // idle DMA_IN time (passes/plan_prefetch.h), the loads placed first in their groups and after
  // them (on two cores at once); the fastest is kept when faster than without. Returns the
  // explain line.
  std::string prefetch_weights(Final& f) const {
    if (!options_.prefetch || !f.e.cycles || config_.ideal_memory) return "";
    std::optional<profiler::Timeline> base;
    try {
      base = estimate(f.e.schedule, config_);
    } catch (const std::exception&) {
      return "";
    }
    long double in_rate = 0.0L;
    const std::vector<PrefetchSlot> slots = prefetch_slots(f, *base, in_rate);
    const std::vector<Prefetch> plan = plan_on(slots);
    if (plan.empty()) return "";
    if (saves_too_little(plan, in_rate, *f.e.cycles)) {
      return "prefetch\t" + describe_plan(plan) + ": would save at most " +
             std::to_string(most_saved(plan, in_rate)) + " of " + std::to_string(*f.e.cycles) +
             " cycles estimated; not tried";
    }
    std::vector<PrefetchTry> tries = parallel_map(
        2, [&](std::size_t i) { return try_prefetch(f, slots, /*after_group=*/i == 1); });
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < tries.size(); ++i) {
      const std::optional<std::uint64_t>& c = tries[i].cycles;
      if (c && *c < (best ? *tries[*best].cycles : *f.e.cycles)) best = i;
    }
    std::string line = "prefetch\tfirst in their groups: " + tries[0].line +
                       "; after them: " + tries[1].line +
                       "; without: " + std::to_string(*f.e.cycles) + "; kept: " +
                       (!best        ? "none"
                        : *best == 0 ? "first"
                                     : "after");
    if (!best) return line;
    f.e.schedule = std::move(*tries[*best].schedule);
    f.e.cycles = tries[*best].cycles;
    // More rounds, in the placement kept, each planned on the last one's estimate: the groups
    // whose loads moved away may idle their channels now, room for later groups' loads (Inception
    // v2 on `server`: its middle blocks' weights came early, and their DMA_IN then idled 15,000
    // cycles while its last blocks stayed DMA-bound).
    const bool after_group = *best == 1;
    std::vector<Prefetch> kept = std::move(tries[*best].plan);
    for (int round = 2; round <= options_.prefetch_rounds; ++round) {
      try {
        base = estimate(f.e.schedule, config_);
      } catch (const std::exception&) {
        break;
      }
      std::vector<PrefetchSlot> more_slots = prefetch_slots(f, *base, in_rate);
      const std::vector<std::size_t> first_load = continue_after(more_slots, kept);
      const std::vector<Prefetch> more = plan_on(more_slots, first_load);
      if (more.empty()) break;
      const std::string round_name = "; round " + std::to_string(round) + ": ";
      if (saves_too_little(more, in_rate, *f.e.cycles)) {
        line += round_name + describe_plan(more) + ", not tried";
        break;
      }
      PrefetchTry next = try_prefetch(f, std::move(more_slots), after_group, kept, first_load);
      line += round_name + next.line;
      // A later round must gain 1/kPrefetchMinGain of the cycles: the queue order that follows
      // took back Inception v2's 0.27 % on `server`, and more on the simulation.
      if (!next.cycles || (*f.e.cycles - std::min(*f.e.cycles, *next.cycles)) *
                                  static_cast<std::uint64_t>(kPrefetchMinGain) <
                              *f.e.cycles) {
        line += ", not kept";
        break;
      }
      f.e.schedule = std::move(*next.schedule);
      f.e.cycles = next.cycles;
      kept = std::move(next.plan);
    }
    return line;
  }

  // The chosen schedule with its DMA queues in the order their transfers become ready
  // (passes/order_dma_queues), again from each new estimate while that is faster; kept when it
  // estimates faster and its local memory stays within the config's, as the emitter's was.
  // Returns the explain line.
  std::string order_queues(Final& f) const {
    if (!f.e.cycles || config_.ideal_memory) return "";
    const std::uint64_t emitted_cycles = *f.e.cycles;
    std::string line = "queues\tin emission order: " + std::to_string(emitted_cycles) +
                       " cycles estimated; ready first:";
    // Each round reorders the schedule itself and is undone unless faster: a copy of the
    // schedule per round cost more than the pass and the estimate together.
    std::vector<QueueReorder> kept_rounds;
    std::optional<profiler::Timeline> kept;
    for (int round = 1; round <= kQueueOrderRounds; ++round) {
      // The commands keep their costs and buffers: no need to finalize again.
      QueueReorder reorder = reorder_dma_queues(f.e.schedule, config_);
      std::optional<profiler::Timeline> t;
      try {
        t = estimate(f.e.schedule, config_);
      } catch (const std::exception&) {  // past kMaxCycles (it cannot deadlock)
        line += " does not estimate";
      }
      if (t) line += (round > 1 ? ", then " : " ") + std::to_string(t->total_cycles());
      if (!t || t->total_cycles() >= *f.e.cycles) {
        undo_reorder(f.e.schedule, std::move(reorder));
        break;
      }
      f.e.cycles = t->total_cycles();
      kept = std::move(t);
      kept_rounds.push_back(std::move(reorder));
    }
    // Checked once, on the order kept: it never passes the emitter's plan (see the pass).
    if (kept && profiler::lram_occupancy(make_workload(f.e.schedule, config_), *kept).overflow) {
      for (auto r = kept_rounds.rbegin(); r != kept_rounds.rend(); ++r) {
        undo_reorder(f.e.schedule, std::move(*r));
      }
      f.e.cycles = emitted_cycles;
      return line + "; kept: emission order (ready first is over the local memory)";
    }
    return line + "; kept: " + (kept ? "ready first" : "emission order");
  }

  // The groups `all` maps anew lost together against `f` (costed alone, each was faster; in the
  // model, some slowed what is around them): their halves in layer order, then their quarters,
  // are each mapped anew alone (the other groups keep `f`'s mappings) and emitted, and the
  // fastest part that beats `f` at a level is kept. At most six more emissions, only where the
  // remapping lost. `line` gets the part kept, or that none was faster.
  bool remap_part(Final& f, const Mapped& all, const std::vector<OnChipContext>& contexts,
                  const std::vector<bool>& fixed, std::string& line) const {
    std::vector<std::size_t> anew;
    for (std::size_t i = 0; i < all.mappings.size() && i < f.m.mappings.size(); ++i) {
      if (!same_mapping(all.mappings[i], f.m.mappings[i])) anew.push_back(i);
    }
    if (anew.size() < 2) return false;
    const std::vector<Chain>* chains = f.chains.empty() ? nullptr : &f.chains;
    const std::uint64_t before = *f.e.cycles;
    const std::uint64_t before_commands = f.e.schedule.commands.size();
    for (const std::size_t parts : {std::size_t{2}, std::size_t{4}}) {
      if (parts > anew.size()) break;
      std::optional<Final> best;
      std::size_t best_part = 0;
      for (std::size_t p = 0; p < parts; ++p) {
        const std::size_t lo = p * anew.size() / parts, hi = (p + 1) * anew.size() / parts;
        std::vector<bool> outside(all.mappings.size(), false);
        for (std::size_t k = 0; k < anew.size(); ++k) {
          if (k < lo || k >= hi) outside[anew[k]] = true;
        }
        Final part;
        try {
          part.m = map_all(f.m.splits_allowed, &f.m, &contexts, &fixed, &outside);
          if (part.m.remapped == 0) continue;
          unkeep_around(part.m, f.chains);
          part.e = emit_best(part.m, chains, f.e.plan);
        } catch (const InputError&) {  // past the size limits with these mappings
          continue;
        }
        if (!wins_by_growth_rule(part.e.cycles, part.e.schedule.commands.size(), before,
                                 before_commands)) {
          continue;
        }
        if (best && *best->e.cycles <= *part.e.cycles) continue;
        best = std::move(part);
        best_part = p;
      }
      if (!best) continue;
      line += "; in " + std::to_string(parts) + " parts: part " + std::to_string(best_part + 1) +
              " (" + std::to_string(best->m.remapped) + " group(s)) " +
              std::to_string(*best->e.cycles) + " cycles estimated, kept: remapped";
      if (!best->e.report.empty()) {
        line += " (" + best->e.report.substr(best->e.report.find('\t') + 1) + ")";
      }
      f.m = std::move(best->m);
      f.e = std::move(best->e);
      return true;
    }
    line += "; in parts: none faster";
    return false;
  }

  // `m` with chains, then `m` as `best` maps it, when chains estimate faster (best wins a tie);
  // else `m` alone. Both go on to be remapped, which may turn the order (chains' members keep
  // their mappings, so groups the plain model remaps may gain more). `line` gets the chains'
  // explain line.
  std::vector<Final> with_chains(Mapped m, Emitted best, std::string& line,
                                 std::vector<Chain>& planned) const {
    std::vector<Final> out;
    std::optional<Final> chained;
    if (options_.chains) {
      chained = emit_chained(m, best.residency.empty() ? nullptr : &best.residency);
    }
    if (chained) planned = chained->chains;
    // (Estimated only to compare: a model without chains, or without a residency plan to remap
    // under, needs no figure; a 7B decoder layer's estimate is a third of its compile.)
    if (chained && !best.cycles) best.cycles = estimated_cycles(best.schedule, config_);
    if (chained && chained->chains.size() > 1 && chained->e.cycles && best.cycles &&
        *chained->e.cycles >= *best.cycles) {
      if (std::optional<Final> some = chains_one_by_one(m, chained->chains, best)) {
        some->e.report += "; one by one of " + std::to_string(chained->chains.size()) +
                          " (all: " + std::to_string(*chained->e.cycles) + ")";
        chained = std::move(some);
      }
    }
    const bool keep =
        chained && chained->e.cycles && (!best.cycles || *chained->e.cycles < *best.cycles);
    if (chained) line = chained->e.report + "; kept: " + (keep ? "chains" : "without");
    if (keep) out.push_back(std::move(*chained));
    out.push_back(Final{std::move(m), std::move(best), {}});
    return out;
  }

  // `m`'s reasons and `residency_line`, for `explain`.
  void give_reasons(const Mapped& m, const std::string& residency_line,
                    std::vector<std::string>& explain) const {
    for (const std::string& reason : m.reasons) {
      if (!reason.empty()) explain.push_back(reason);
    }
    if (!residency_line.empty()) explain.push_back(residency_line);
  }

 private:
  // What plan_chains asks of emit_chained: a run of groups [first, first + count) costed alone,
  // chained or one after another, as `plain_plan` (if given) would find it. Runs alike in the
  // same context cost alike, so each cost is remembered by the run's key.
  class RunCosts {
   public:
    RunCosts(const DeviceCompiler& compiler, const Mapped& m,
             const std::vector<Residency>* plain_plan)
        : c_(compiler),
          m_(m),
          plan_(plain_plan),
          contexts_(plain_plan != nullptr
                        ? on_chip_contexts(compiler.graph_, compiler.groups_, *plain_plan)
                        : std::vector<OnChipContext>{}) {}

    std::optional<std::uint64_t> chain(const Chain& chain) const {
      const std::size_t k = chain.mappings.size();
      const RunContext context = context_of(chain.first, k);
      return remembered(key('C', chain.first, k, context, chain_fields(chain)), [&] {
        std::unique_ptr<Emitter> alone = emitter_in(context);
        std::vector<Residency> residency;
        for (std::size_t j = chain.first; j < chain.first + k; ++j) {
          residency.push_back(releases(*alone, j));
        }
        residency.back().output = leaves_resident(chain.first + k - 1);
        try {
          alone->emit_chain(members_of(chain.first, k), chain,
                            plan_ != nullptr ? residency : std::vector<Residency>{});
        } catch (const InputError&) {  // past the command limit: not this chain
          return std::optional<std::uint64_t>();
        }
        Schedule schedule = alone->finish();
        return estimated_cycles(schedule, c_.config_);
      });
    }

    std::optional<std::uint64_t> plain(std::size_t first, std::size_t count) const {
      const RunContext context = context_of(first, count);
      std::vector<std::uint64_t> fields;
      for (std::size_t j = first; j < first + count; ++j) {
        const std::vector<std::uint64_t> f = mapping_fields(m_.mappings[j]);
        fields.insert(fields.end(), f.begin(), f.end());
      }
      return remembered(key('P', first, count, context, fields), [&] {
        std::unique_ptr<Emitter> alone = emitter_in(context);
        for (std::size_t j = first; j < first + count; ++j) {
          Residency r = releases(*alone, j);
          r.output = leaves_resident(j);
          alone->emit_group(c_.groups_[j], m_.mappings[j], false, false, r);
        }
        Schedule schedule = alone->finish();
        return estimated_cycles(schedule, c_.config_);
      });
    }

   private:
    // What a run finds on chip under the plan: the resident tensors it reads that none of its
    // groups writes, and the other resident bytes when the first runs.
    struct RunContext {
      std::vector<std::uint32_t> resident;
      std::uint64_t other_bytes = 0;
    };

    std::vector<const LayerGroup*> members_of(std::size_t first, std::size_t count) const {
      std::vector<const LayerGroup*> members;
      for (std::size_t j = 0; j < count; ++j) members.push_back(&c_.groups_[first + j]);
      return members;
    }

    RunContext context_of(std::size_t first, std::size_t count) const {
      RunContext r;
      if (contexts_.empty() || first >= contexts_.size()) return r;
      // The first group's other bytes hold the tensors later members read (live before the run):
      // those are assumed resident themselves, so they leave the other bytes.
      std::uint64_t later = 0;
      for (std::size_t j = first; j < first + count && j < contexts_.size(); ++j) {
        for (const std::uint32_t t : contexts_[j].resident_inputs) {
          const bool written_here =
              std::any_of(c_.groups_.begin() + static_cast<std::ptrdiff_t>(first),
                          c_.groups_.begin() + static_cast<std::ptrdiff_t>(j),
                          [&](const LayerGroup& g) { return g.output == t; });
          if (written_here ||
              std::find(r.resident.begin(), r.resident.end(), t) != r.resident.end()) {
            continue;
          }
          r.resident.push_back(t);
          if (j > first) later += c_.graph_.tensors[t].bytes();
        }
      }
      const std::uint64_t other = contexts_[first].other_bytes;
      r.other_bytes = other > later ? other - later : 0;
      return r;
    }

    std::unique_ptr<Emitter> emitter_in(const RunContext& r) const {
      auto e = std::make_unique<Emitter>(c_.graph_, c_.config_, c_.layouts_);
      e->drop_unread_stores(true);  // as emit_all emits the run in the model
      for (const std::uint32_t t : r.resident) e->assume_resident(t);
      e->assume_on_chip_bytes(r.other_bytes);
      return e;
    }

    // What group j releases of the tensors resident in `e` now.
    Residency releases(const Emitter& e, std::size_t j) const {
      Residency r;
      if (plan_ == nullptr || j >= plan_->size()) return r;
      for (const std::uint32_t t : (*plan_)[j].release) {
        if (e.is_resident(t)) r.release.push_back(t);
      }
      return r;
    }

    bool leaves_resident(std::size_t j) const {
      return plan_ != nullptr && j < plan_->size() && (*plan_)[j].output;
    }

    // The run's signature (GroupSignature over its members), `what` it costs, what it finds on
    // chip, what each member releases and leaves resident, and `fields` (its tiling).
    std::string key(char what, std::size_t first, std::size_t count, const RunContext& r,
                    const std::vector<std::uint64_t>& fields) const {
      GroupSignature key(c_.graph_, members_of(first, count), c_.layouts_);
      key.add(static_cast<std::uint64_t>(what));
      key.add(plan_ != nullptr ? 1 : 0);
      key.add(r.resident.size());
      for (const std::uint32_t t : r.resident) key.add_tensor_place(t);
      key.add(r.other_bytes);
      const std::vector<std::uint32_t> none;
      for (std::size_t j = first; j < first + count; ++j) {
        const std::vector<std::uint32_t>& release =
            plan_ != nullptr && j < plan_->size() ? (*plan_)[j].release : none;
        key.add(release.size());
        for (const std::uint32_t t : release) key.add_tensor_place(t);
        key.add(leaves_resident(j) ? 1 : 0);
      }
      for (const std::uint64_t f : fields) key.add(f);
      return key.text();
    }

    template <typename Cost>
    std::optional<std::uint64_t> remembered(const std::string& key, const Cost& cost) const {
      {
        const std::lock_guard<std::mutex> lock(c_.choices_mutex_);
        if (const auto it = c_.run_costs_.find(key); it != c_.run_costs_.end()) return it->second;
      }
      const std::optional<std::uint64_t> cycles = cost();
      const std::lock_guard<std::mutex> lock(c_.choices_mutex_);
      c_.run_costs_.emplace(key, cycles);
      return cycles;
    }

    const DeviceCompiler& c_;
    const Mapped& m_;
    const std::vector<Residency>* plan_;
    const std::vector<OnChipContext> contexts_;
  };

  // A group's choice as `choose` records it.
  struct Choice {
    Mapping mapping;
    std::optional<SearchChoice> search;  // the cost search's, with something to choose
    bool under_residency = false;
    std::uint64_t ring_need = 0;
    // Of search->fewer_transfers, where named.
    std::array<std::uint64_t, kFewerTransferLevels> fewer_transfers_ring_needs{};
  };

  // The mapping of a group, its reasons and tile needs recorded in `m`. Groups with the same
  // signature (GroupSignature) choose alike, so the cost search runs once for all of them; and
  // without K-split candidates, a group whose choice with them was plain chooses it again.
  // With `fewer_transfers` (a level of kFewerTransfersFractions), the search's mapping with fewer
  // DMA transfers at that level is taken where it named one (SearchChoice::fewer_transfers).
  Mapping choose(Mapped& m, const LayerGroup& group, std::optional<std::uint32_t> on_chip_input,
                 bool reduction_splits, const OnChipContext& context = {},
                 std::optional<std::size_t> fewer_transfers = std::nullopt,
                 bool* taken = nullptr) const {
    Choice c;
    if (cost_search_ == nullptr) {
      c = choose_fresh(group, on_chip_input, reduction_splits, context);
    } else {
      const GroupSignature& signature =
          signatures_[static_cast<std::size_t>(&group - groups_.data())];
      const std::string key = signature.with(on_chip_input, context, reduction_splits ? 1 : 0);
      std::unique_lock<std::mutex> lock(choices_mutex_);
      auto known = choices_.find(key);
      if (known == choices_.end() && !reduction_splits) {
        const auto with = choices_.find(signature.with(on_chip_input, context, 1));
        if (with != choices_.end() && !splits_reduction(with->second.mapping)) {
          Choice plain = with->second;
          if (plain.search) {
            plain.search->candidates = plain.search->plain_candidates;
            plain.search->slower_bytes.reset();  // there is no K-split candidate without them
          }
          known = choices_.emplace(key, plain).first;
        }
      }
      if (known != choices_.end()) {
        c = known->second;
      } else {
        lock.unlock();
        c = choose_fresh(group, on_chip_input, reduction_splits, context);
        lock.lock();
        choices_.emplace(key, c);
      }
    }
    std::string reason = c.search ? group.name + "\t" + describe_choice(*c.search) +
                                        (c.under_residency ? " (under residency)" : "")
                                  : std::string();
    if (fewer_transfers && c.search && c.search->fewer_transfers[*fewer_transfers]) {
      const std::size_t level = *fewer_transfers;
      reason += "; taken for fewer DMA transfers: " +
                describe_mapping(*c.search->fewer_transfers[level]) + ": " +
                std::to_string(c.search->fewer_transfers_cycles[level]) + " cycles";
      c.mapping = *c.search->fewer_transfers[level];
      c.ring_need = c.fewer_transfers_ring_needs[level];
      if (taken != nullptr) *taken = true;
    }
    m.reasons.push_back(std::move(reason));
    m.ring_needs.push_back(c.ring_need);
    m.reduction_splits = m.reduction_splits || splits_reduction(c.mapping);
    return c.mapping;
  }

  // Under a residency plan (`context`), only candidates the plan can keep are costed, each as the
  // plan would emit it; when none is left the group is mapped as without the plan.
  Choice choose_fresh(const LayerGroup& group, std::optional<std::uint32_t> on_chip_input,
                      bool reduction_splits, const OnChipContext& context) const {
    MapSpace space = make_map_space(graph_, group, layouts_, config_);
    space.on_chip_input = on_chip_input;
    // Whether the plan could still keep what `context` says with `c`.
    auto keeps = [&](const Mapping& c) {
      if (context.output_resident && !tiles_output(c)) return false;
      for (std::uint32_t t : context.resident_inputs) {
        for (std::uint32_t l : group.layers) {
          const std::vector<std::uint32_t>& in = graph_.layers[l].inputs;
          if (std::find(in.begin(), in.end(), t) != in.end() &&
              !reads_through_tiles(graph_, group, c, l, t)) {
            return false;
          }
        }
      }
      return true;
    };
    if (space.candidates && (!reduction_splits || context.any())) {
      std::vector<Mapping> kept = space.candidates();
      kept.erase(std::remove_if(kept.begin(), kept.end(),
                                [&](const Mapping& c) {
                                  return (!reduction_splits && splits_reduction(c)) ||
                                         (context.any() && !keeps(c));
                                }),
                 kept.end());
      if (kept.empty() && context.any()) {
        return choose_fresh(group, on_chip_input, reduction_splits, OnChipContext{});
      }
      space.candidates = [kept] { return kept; };
    }
    space.resident = context;
    Choice c;
    if (cost_search_ == nullptr) {
      c.mapping = search_->choose(space, config_);
    } else {
      const SearchChoice choice = cost_search_->choose_explained(space, config_);
      if (space.kind != MappingKind::kNone) c.search = choice;
      c.under_residency = space.resident.any();
      c.mapping = choice.mapping;
    }
    c.ring_need = space.work ? ring_need(space.work(c.mapping), config_.lram_bytes) : 0;
    for (std::size_t level = 0; level < kFewerTransferLevels && space.work && c.search; ++level) {
      if (const std::optional<Mapping>& alt = c.search->fewer_transfers[level]) {
        c.fewer_transfers_ring_needs[level] = ring_need(space.work(*alt), config_.lram_bytes);
      }
    }
    return c;
  }

  // Adds the group's size to `m`'s total; past the limits, stops with the group named.
  void add_size(Mapped& m, const LayerGroup& group, const Mapping& mapping) const {
    m.total = m.total + estimate_group(graph_, group, mapping, layouts_, budgets_);
    if (!within_limits(m.total)) {
      throw_too_large(graph_, groups_, layouts_, config_, *search_, group, m.total);
    }
  }

  // Every group emitted as `m` maps it, its outputs resident as `residency` says, and the groups
  // of `chains` (if given) depth first.
  // `would_carry`, when given, receives Emitter::frees_stores_would_carry.
  // `prefetch`, when given, is a weight prefetch plan (passes/plan_prefetch.h), its loads placed
  // after their groups' own commands with `prefetch_after_group`.
  Schedule emit_all(Mapped& m, const std::vector<Residency>& residency,
                    const std::vector<Chain>* chains = nullptr, bool stores_carry_frees = false,
                    std::size_t* would_carry = nullptr,
                    const std::vector<Prefetch>* prefetch = nullptr,
                    bool prefetch_after_group = false) const {
    Emitter emitter(graph_, config_, layouts_);
    emitter.drop_unread_stores(true);
    emitter.stores_carry_frees(stores_carry_frees);
    emitter.prefetch_after_group(prefetch_after_group);
    for (const Prefetch& p : prefetch != nullptr ? *prefetch : std::vector<Prefetch>{}) {
      emitter.prefetch(groups_[p.at], groups_[p.target], p.load, p.bytes);
    }
    emitter.reserve(m.total.commands);  // an upper bound: residency only drops loads and stores
    std::size_t next_chain = 0;
    for (std::size_t i = 0; i < groups_.size(); ++i) {
      if (chains != nullptr && next_chain < chains->size() && (*chains)[next_chain].first == i) {
        const Chain& chain = (*chains)[next_chain++];
        std::vector<const LayerGroup*> members;
        for (std::size_t j = 0; j < chain.mappings.size(); ++j) members.push_back(&groups_[i + j]);
        emitter.emit_chain(
            members, chain,
            std::vector<Residency>(residency.begin() + static_cast<std::ptrdiff_t>(i),
                                   residency.begin() + static_cast<std::ptrdiff_t>(i) +
                                       static_cast<std::ptrdiff_t>(members.size())));
        i += members.size() - 1;
        continue;
      }
      if (i < m.mappings.size()) {
        emitter.emit_group(groups_[i], m.mappings[i], m.keep[i],
                           m.keep[i] && read_only_by(graph_, groups_[i], groups_[i + 1]),
                           residency[i]);
        continue;
      }
      // An op the NPU cannot run (map_all stopped there): emit_group throws its error, in layer
      // order.
      emitter.emit_group(groups_[i], Mapping{});
    }
    if (would_carry != nullptr) *would_carry = emitter.frees_stores_would_carry();
    Schedule schedule = emitter.finish();
    schedule.layers = layer_views(graph_, groups_);
    return schedule;
  }

  const Graph& graph_;
  const HwConfig& config_;
  const CompileOptions& options_;
  const std::vector<LayerGroup> groups_;
  const TensorLayouts layouts_;
  const std::unique_ptr<Search> search_;
  const CostSearch* cost_search_;
  const Budgets budgets_;
  const std::vector<GroupSignature> signatures_;  // per group
  // Choices made (choose), by signature and what they were made under; and the costs of runs
  // of groups (emit_chained), by their key.
  mutable std::mutex choices_mutex_;
  mutable std::map<std::string, Choice> choices_;
  mutable std::map<std::string, std::optional<std::uint64_t>> run_costs_;
};

// A schedule, not yet finalized, and its estimated cycles (nullopt: it does not estimate).
struct Compiled {
  Schedule schedule;
  std::optional<std::uint64_t> cycles;
};

// A model finished (compile_on_all_slices): its schedule and explain lines, the groups' reasons
// and the residency line (`head`) apart from the lines of the steps after (`tail`).
struct Finished {
  Compiled compiled;
  std::vector<std::string> head, tail;
};

// With and without their reduction splits, models whose estimates are this close (1 / this of
// the slower) are both finished before one is kept. (At 1/32 ResNet-50 on `default`, 1.9 %
// apart, finished twice for the same choice; the choices that changed were 1.5 % apart or less.)
constexpr std::uint64_t kSplitsCloseFraction = 64;

// Both models finished at once. An error finishing the one the estimates preferred (`with` when
// `with_preferred`) is the compile's, as when only that one is finished; the other, failed, is
// marked so and never kept.
struct BothFinished {
  Finished with, without;
  bool with_failed = false, without_failed = false;
};
template <typename F, typename G>
BothFinished finish_both(F finish_with, G finish_without, bool with_preferred) {
  BothFinished out;
  std::exception_ptr with_error, without_error;
  parallel_invoke({[&] {
                     try {
                       out.with = finish_with();
                     } catch (const InputError&) {
                       with_error = std::current_exception();
                     }
                   },
                   [&] {
                     try {
                       out.without = finish_without();
                     } catch (const InputError&) {
                       without_error = std::current_exception();
                     }
                   }});
  if (with_preferred ? with_error : without_error) {
    std::rethrow_exception(with_preferred ? with_error : without_error);
  }
  out.with_failed = with_error != nullptr;
  out.without_failed = without_error != nullptr;
  return out;
}

// One device's schedule on all of `config`'s slices.
Compiled compile_on_all_slices(const Graph& graph, const HwConfig& config,
                               const CompileOptions& options) {
  check_graph(graph);
  const DeviceCompiler compiler(graph, config, options);
  // Each group's cheapest mapping is costed alone, and a conv accumulating in steps gives up what
  // spans groups (an input kept on chip, room for resident tensors), as a MatMul split over
  // slices does (its PartialSums take the vector units; alone it wins a tail the next group's
  // loads would hide). So when the search picks any, the model is also compiled without them,
  // and the faster under the estimate is kept: without, on a tie.
  // K-split tiles take more commands: a model near the size limit compiles without them.
  std::string ksplit_line;
  // `m` with chains when they estimate faster, then remapped under its residency; the explain
  // lines (the groups' final mappings first).
  auto finish = [&](Mapped& m, Emitted& e) -> Finished {
    const std::string residency_line = e.report;
    std::string chains_line, remap_line;
    std::vector<Chain> planned;
    std::vector<Final> finals =
        compiler.with_chains(std::move(m), std::move(e), chains_line, planned);
    std::vector<std::string> remap_lines(finals.size());
    // (Not vector<bool>: its bits share words, and the finals are remapped on several threads.)
    std::vector<std::uint8_t> remapped(finals.size(), 0);
    // Each final is remapped on its own (with chains, and without): on several cores at once.
    // A second round sees the plan the first one's mappings allow.
    parallel_map(finals.size(), [&](std::size_t i) {
      for (int round = 1; round <= kRemapRounds && compiler.remap(finals[i], remap_lines[i]);
           ++round) {
        remapped[i] = 1;
      }
      return true;
    });
    std::size_t kept = 0;
    for (std::size_t i = 0; i < finals.size(); ++i) {
      if (finals[i].e.cycles && *finals[i].e.cycles < *finals[kept].e.cycles) kept = i;
    }
    if (finals.size() > 1) {
      // Chains won before remapping (so finals[0] checks); say which won after.
      const std::optional<std::uint64_t>& without = finals[1].e.cycles;
      chains_line += "; remapped: with chains " + std::to_string(*finals[0].e.cycles) +
                     " cycles estimated, without " +
                     (without ? std::to_string(*without) : std::string("does not check")) +
                     ", kept: " + (kept == 0 ? "chains" : "without");
    }
    // The plain model, remapped, takes the planned chains one at a time, and may then beat the
    // chained model too (ultraface on `default`: 11 of its 15 chains, 1,349,589 against
    // 1,374,345 with all of them).
    const std::size_t plain = finals.size() - 1;
    // (Not with one planned chain when the chained model was remapped beside it: that model is
    // nearly the plain one with its chain. Measured on every zoo and shared ONNX model on both
    // configs, skipping it changed one schedule, VGG-19 on `server` +0.03 %, and saved
    // ResNet-50's compile on `default` 12 % of its instructions.)
    if (remapped[plain] && !(planned.size() == 1 && finals.size() > 1)) {
      compiler.add_chains_after_remap(finals[plain], planned, chains_line);
      if (finals[plain].e.cycles && *finals[plain].e.cycles < *finals[kept].e.cycles) kept = plain;
    }
    Final& f = finals[kept];
    remap_line = remap_lines[kept];
    std::string transfers_line = compiler.remap_to_fewer_transfers(f);
    std::string carriers_line = compiler.carry_frees_on_stores(f);
    std::string prefetch_line = compiler.prefetch_weights(f);
    std::string queues_line = compiler.order_queues(f);
    Finished out;
    compiler.give_reasons(f.m, residency_line, out.head);
    for (const std::string* line : {&chains_line, &remap_line, &transfers_line, &carriers_line,
                                    &prefetch_line, &queues_line}) {
      if (!line->empty()) out.tail.push_back(*line);
    }
    out.compiled = Compiled{std::move(f.e.schedule), f.e.cycles};
    return out;
  };
  // The explain lines of `f`, with the splits' line between its head and its tail.
  auto keep = [&](Finished f) {
    if (options.explain != nullptr) {
      std::vector<std::string>& explain = *options.explain;
      explain.insert(explain.end(), f.head.begin(), f.head.end());
      if (!ksplit_line.empty()) explain.push_back(ksplit_line);
      explain.insert(explain.end(), f.tail.begin(), f.tail.end());
    }
    return std::move(f.compiled);
  };
  std::optional<Mapped> ksplit_mapped;
  try {
    ksplit_mapped = compiler.map_all(true);
  } catch (const InputError&) {
    Mapped plain = compiler.map_all(false);  // throws the model's own error, if any
    Emitted only = compiler.emit_best(plain);
    return keep(finish(plain, only));
  }
  Mapped& with_ksplit = *ksplit_mapped;
  if (!with_ksplit.reduction_splits) {
    Emitted only = compiler.emit_best(with_ksplit);
    return keep(finish(with_ksplit, only));
  }
  // The model with its splits emitted, and the model without them mapped and emitted, on two
  // cores at once: neither reads what the other makes (map_all(false) reads only the choices
  // map_all(true) left, under their lock), and an error is the first job's, as one after the
  // other would throw it.
  Emitted best, without;
  Mapped plain;
  parallel_invoke({[&] { best = compiler.emit_best(with_ksplit); },
                   [&] {
                     plain = compiler.map_all(false);
                     without = compiler.emit_best(plain);
                   }});
  if (!best.cycles) best.cycles = estimated_cycles(best.schedule, config);
  if (!without.cycles) without.cycles = estimated_cycles(without.schedule, config);
  ksplit_line = "reduction splits\twith: " + figure_of(best.cycles) +
                "; without: " + figure_of(without.cycles);
  if (grows_past_rule(best.schedule.commands.size(), without.schedule.commands.size())) {
    ksplit_line += "; " + std::to_string(best.schedule.commands.size()) + " commands against " +
                   std::to_string(without.schedule.commands.size());
  }
  // Close estimates are both finished (chains, remapping and the rest change them): GPT-2
  // small's decode step on `server`, a part of 4 layers, estimated 157,395 cycles with its splits
  // against 159,773 without, and finished 155,367 against 150,997.
  const bool close =
      best.cycles && without.cycles &&
      std::max(*best.cycles, *without.cycles) - std::min(*best.cycles, *without.cycles) <=
          std::max(*best.cycles, *without.cycles) / kSplitsCloseFraction;
  const bool keep_ksplit = wins_by_growth_rule(best.cycles, best.schedule.commands.size(),
                                               without.cycles, without.schedule.commands.size());
  // (Splits that grow the schedule past the rule must gain more than close estimates are apart:
  // those are decided by the estimates, and only one model is finished. The whole Llama-2-7B's
  // decode steps, twice the commands for 1 % fewer cycles, finished both and took 2.5 times the
  // compile time for the same schedules.)
  if (close && options.finish_close_splits &&
      !grows_past_rule(best.schedule.commands.size(), without.schedule.commands.size())) {
    BothFinished both = finish_both([&] { return finish(with_ksplit, best); },
                                    [&] { return finish(plain, without); }, keep_ksplit);
    const Compiled& w = both.with.compiled;
    const Compiled& wo = both.without.compiled;
    // The same rule as before finishing (chains and prefetch change the commands too).
    const bool keep_with =
        !both.with_failed &&
        (both.without_failed || wins_by_growth_rule(w.cycles, w.schedule.commands.size(), wo.cycles,
                                                    wo.schedule.commands.size()));
    auto finished = [](bool failed, const Compiled& c) {
      return failed ? std::string("failed") : figure_of(c.cycles);
    };
    ksplit_line += "; finished: with " + finished(both.with_failed, w) + ", without " +
                   finished(both.without_failed, wo);
    if (!both.with_failed && !both.without_failed &&
        grows_past_rule(w.schedule.commands.size(), wo.schedule.commands.size())) {
      ksplit_line += ", " + std::to_string(w.schedule.commands.size()) + " commands against " +
                     std::to_string(wo.schedule.commands.size());
    }
    ksplit_line += std::string("; kept: ") + (keep_with ? "with" : "without");
    return keep(keep_with ? std::move(both.with) : std::move(both.without));
  }
  ksplit_line += std::string("; kept: ") + (keep_ksplit ? "with" : "without");
  return keep(keep_ksplit ? finish(with_ksplit, best) : finish(plain, without));
}

// One device's schedule, not yet finalized: on all of `config`'s slices, or on fewer when that
// estimates faster (search/fewer_slices.h). Each count below is compiled unless its array bound
// shows it cannot beat the schedule on all of them.
Schedule compile_one_device(const Graph& graph, const HwConfig& config,
                            const CompileOptions& options) {
  const std::uint32_t slices = config.slices.count;
  // Each compile's explain lines are its own; the kept one's are the model's.
  std::vector<std::vector<std::string>> explains(1 + kFewerSliceCounts);
  auto options_with = [&](std::size_t i) {
    CompileOptions o = options;
    if (options.explain != nullptr) o.explain = &explains[i];
    // A count below S is compiled to be compared, and rarely kept: its estimates decide its
    // splits (finishing the second model took 8 % of ResNet-50's compile instructions on
    // `server`, for the same schedule).
    if (i > 0) o.finish_close_splits = false;
    return o;
  };
  Compiled all = compile_on_all_slices(graph, config, options_with(0));
  const bool considered = options.fewer_slices && slices > 1;
  const bool small = all.schedule.commands.size() <= kFewerSlicesMaxCommands;
  // The driver leaves a model it had no choice to make unestimated: the counts are compared here.
  if (considered && small && !all.cycles) all.cycles = estimated_cycles(all.schedule, config);
  // A schedule on all slices that does not estimate keeps them: its error is the model's.
  const std::vector<std::uint32_t> counts =
      considered && small && all.cycles ? fewer_slice_counts(slices) : std::vector<std::uint32_t>{};
  struct Outcome {
    std::optional<std::uint64_t> bound;  // set when the bound ruled the count out
    bool compiled = false;               // false: stopped at a limit on that count
    Compiled c;
  };
  std::vector<Outcome> outcomes(counts.size());
  std::vector<std::size_t> tried;  // indices into counts
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const std::uint64_t bound = array_bound_cycles(all.schedule, config, counts[i]);
    if (bound >= *all.cycles) {
      outcomes[i].bound = bound;
    } else {
      tried.push_back(i);
    }
  }
  // The counts tried are compiled at once, on the machine's cores (each compile's own jobs then
  // find no free thread and run in turn), and each is estimated on the config's slices, as it
  // will run.
  parallel_map(tried.size(), [&](std::size_t j) {
    Outcome& o = outcomes[tried[j]];
    HwConfig on_fewer = config;
    on_fewer.slices.count = counts[tried[j]];
    try {
      o.c = compile_on_all_slices(graph, on_fewer, options_with(1 + tried[j]));
    } catch (const InputError&) {  // past a limit on fewer slices (larger tiles): not a choice
      return false;
    }
    o.compiled = true;
    o.c.schedule.target_slices = slices;
    o.c.cycles = estimated_cycles(o.c.schedule, config);
    return true;
  });
  std::optional<std::size_t> kept;  // an index into counts; none: all slices
  std::string line = "slices\t" + std::to_string(slices) + ": " + figure_of(all.cycles);
  if (!small) {
    line += "; fewer not tried: " + std::to_string(all.schedule.commands.size()) +
            " commands (at most " + std::to_string(kFewerSlicesMaxCommands) + ")";
  }
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const Outcome& o = outcomes[i];
    line += "; " + std::to_string(counts[i]) + ": ";
    if (o.bound) {
      line += "not tried, its array bound is " + std::to_string(*o.bound) + " cycles";
    } else if (!o.compiled) {
      line += "does not compile";
    } else {
      line += figure_of(o.c.cycles);
      const std::uint64_t best = kept ? *outcomes[*kept].c.cycles : *all.cycles;
      if (o.c.cycles && *o.c.cycles < best) kept = i;
    }
  }
  line += "; kept: " + std::to_string(kept ? counts[*kept] : slices);
  if (options.explain != nullptr) {
    const std::vector<std::string>& lines = explains[kept ? 1 + *kept : 0];
    options.explain->insert(options.explain->end(), lines.begin(), lines.end());
    if (considered) options.explain->push_back(line);
  }
  return kept ? std::move(outcomes[*kept].c.schedule) : std::move(all.schedule);
}

}  // namespace

Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          const CompileOptions& options) {
  Schedule schedule;
  if (config.devices.count > 1 || config.host.upload_weights) {
    shard::HostIo io = options.host_io;
    io.weights = config.host.upload_weights;
    schedule = shard::compile_sharded(graph, config, io, [&](const Graph& step) {
      return compile_one_device(step, config, options);
    });
  } else {
    schedule = compile_one_device(graph, config, options);
  }
  // The same checks and costing as a schedule read from a file.
  Diagnostics diag(graph.source_file + " (compiled for " + config.name + ")");
  finalize_schedule(schedule, config, diag);
  diag.throw_if_any();
  return schedule;
}

Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          std::vector<std::string>* explain, const std::string& search) {
  CompileOptions options;
  options.explain = explain;
  options.search = search;
  return compile_schedule(graph, config, options);
}

}  // namespace npusim
