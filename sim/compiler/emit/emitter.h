// The emitter: turns a layer group and its Mapping into commands (loads, computes, stores) with
// their dependencies and local-memory buffers (docs/compiler.md, "Memory budgets" and
// "Dependencies").
//
// It keeps what spans groups: which stores wrote which bytes of each tensor (a load waits only
// for those), each slice's ring of stores (a slice holds two tiles at most), the live weight
// chunks (two at most), the round-robin slice, and the id and buffer counters. A fresh Emitter
// emits a group in isolation into a scratch schedule, as if it were the first: its loads then
// wait for nothing, which is how a candidate mapping can be costed alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/compiler/emit/writer_index.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/plan_chains.h"
#include "sim/compiler/passes/plan_residency.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim {

// A graph input or output as the schedule's model section lists it.
TensorInfo describe_tensor(const Tensor& tensor);

class Emitter {
 public:
  // The graph, config and layouts must outlive the emitter.
  Emitter(const Graph& graph, const HwConfig& config, const TensorLayouts& layouts);

  // Appends the group's commands, tiled as `mapping` says (which must be of the group's kind);
  // a group that emits any command is one program. Throws InputError for an op the NPU cannot
  // run, or when the schedule would pass kMaxCommands. With `keep_output`, the group's output
  // stays in local memory for the next group, which must read it whole (output_stays_on_chip);
  // with `on_chip_only` too, no other layer reads it and it is not written to DRAM at all.
  void emit_group(const LayerGroup& group, const Mapping& mapping, bool keep_output = false,
                  bool on_chip_only = false, const Residency& residency = {});

  // Appends a chain's members (consecutive groups, members[i] mapped as chain.mappings[i]) depth
  // first, as the chain's order says (emit_chain.cpp; docs/compiler.md, "Chains of
  // convolutions"). Each member is a program; the intermediate outputs never reach DRAM.
  // `residency` (one per member, or empty) as emit_group's: the first member may read a resident
  // input and the last a resident residual, and the last may leave its output resident; what a
  // member releases is released after the chain.
  void emit_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                  const std::vector<Residency>& residency = {});

  // For costing a group alone: its input `tensor` is taken to be the last group's output kept on
  // chip (with no writer), so the group must read it whole, as one block.
  void assume_on_chip(std::uint32_t tensor) {
    kept_ = OnChip{tensor, g_.tensors[tensor].bytes(), false, {}, {}, {}};
  }

  // For costing a group as a residency plan will emit it (OnChipContext): `tensor` is resident
  // on chip with no writer (its readers load nothing and wait for nothing), and `bytes` more are
  // held by other resident tensors, out of the tiles' half.
  void assume_resident(std::uint32_t tensor) {
    if (resident_.count(tensor) > 0) return;
    resident_.emplace(tensor, OnChip{tensor, g_.tensors[tensor].bytes(), true, {}, {}, {}});
    resident_bytes_ += g_.tensors[tensor].bytes();
  }
  void assume_on_chip_bytes(std::uint64_t bytes) { resident_bytes_ += bytes; }
  // Whether `tensor` is resident now (assumed, or left by a group emitted before).
  bool is_resident(std::uint32_t tensor) const { return resident_.count(tensor) > 0; }

  // Room for `commands` commands (the driver's estimate), so the schedule does not reallocate.
  void reserve(std::uint64_t commands) { sched_.commands.reserve(commands); }
  // A tile whose output stays on chip, unread in DRAM, and whose compute is the only reader of
  // the input block or weight chunk its store would free, has no store: its compute frees the
  // chunk (docs/compiler.md, "Outputs kept on chip"). Off, such a tile still stores its output
  // to DRAM; the cost search costs candidates alone that way.
  void drop_unread_stores(bool on) { drop_unread_stores_ = on; }
  // A group's last tile that stores nothing (its output stays on chip) and must free a kept or
  // resident input gets its store back to carry the free, so that the wait for every reader is
  // on the DMA_OUT queue rather than on its slice's; off, its compute carries the free (and
  // waits), except where drop_unread_stores left the store out. The store moves the tile's
  // output for nothing, so the driver emits the model both ways and the estimate decides.
  void stores_carry_frees(bool on) { stores_carry_frees_ = on; }
  // Off: the frees the stores would have carried on, that the computes carry instead. None, and
  // the model emitted with stores_carry_frees on would be the same schedule.
  std::size_t frees_stores_would_carry() const { return frees_stores_would_carry_; }

  // Weight prefetch (docs/compiler.md, "Weight prefetch"; passes/plan_prefetch.h): with group
  // `at`, load `bytes` for load number `load` of group `target` (an input-outer conv's weight
  // loads, in its order), held in the chunks' half of local memory until that load's tile frees
  // it. Register before emitting `at`; `target` must load exactly `bytes` there. With any
  // prefetch registered, the chunks' half is counted in bytes too (half_waits).
  void prefetch(const LayerGroup& at, const LayerGroup& target, std::size_t load,
                std::uint64_t bytes) {
    prefetch_at_[&at].push_back({&target, load, bytes});
  }
  // Where in `at` the prefetches go: first (false, the default), or after its own commands, so
  // that they do not hold its loads on the in-order DMA_IN queue. Neither wins everywhere.
  void prefetch_after_group(bool on) { prefetch_after_group_ = on; }
  // Thrown while emitting when a load can never fit the chunks' half beside the prefetched bytes
  // held, or a chain or a K-split group that takes the whole memory meets them (the plan
  // misjudged): the driver plans again without holding across that group.
  struct PrefetchDoesNotFit : std::runtime_error {
    PrefetchDoesNotFit(const LayerGroup& g, bool held_bytes, const std::string& what)
        : std::runtime_error("'" + g.name + "': " + what),
          group(&g),
          group_name(g.name),
          held(held_bytes) {}
    const LayerGroup* group;  // the group that did not fit (valid while the groups are)
    std::string group_name;
    // Prefetched bytes were held there: a plan that holds none across it may fit. Else no plan
    // can (its tiles pass the tiles' half whatever is held).
    bool held;
  };

  // The schedule emitted so far, with its model and target filled in. Call once.
  Schedule finish();

 private:
  using CommandIndex = std::uint32_t;
  static constexpr CommandIndex kNone = ~CommandIndex{0};

  // Input rows a tile loads for the tiles below it too (halo reuse): they stay until the last
  // of them has read them.
  struct LentRows {
    std::uint64_t last = 0;  // the last row tile that reads them
    std::uint64_t bytes = 0;
    CommandIndex load = 0;
    std::string buffer;
    std::vector<CommandIndex> readers;
  };
  // A halo-reusing tile's input rows (emit_spatial_halo.cpp): row tile `tile` of image `img`
  // (window `v`, `in_c` channels) loads `pieces` (SpatialLayer::halo_pieces); those no later tile
  // reads are its own, the others it lends, each with the last tile reading it.
  struct HaloRows {
    std::vector<Piece> own;
    std::vector<std::pair<Piece, std::uint64_t>> lend;
    std::uint64_t lent_bytes = 0;
  };
  HaloRows halo_rows(const SpatialLayer& s, std::uint64_t img, const TileWindow& v,
                     std::uint64_t in_c, const std::vector<SpatialLayer::HaloPiece>& pieces,
                     std::uint64_t tile) const;
  // Loads the rows `rows` lends after `wait` (kNone: nothing), each into `live` and its load
  // into `loads`.
  void lend_rows(const LayerGroup& group, const HaloRows& rows, CommandIndex wait,
                 std::vector<LentRows>& live, std::vector<CommandIndex>& loads);
  // A chain's first member reading its input from DRAM with the halo reused (emit_chain.cpp):
  // each tile loads only the rows the tiles before it did not, and rows a later tile reads too
  // stay until that tile's compute, which frees them after every tile that read them.
  struct ChainInput {
    bool reuse_halo = false;
    std::vector<std::vector<SpatialLayer::HaloPiece>> halo;  // per row tile
    std::vector<LentRows> live;
  };
  ChainInput chain_input(const Chain& chain, const SpatialLayer& first) const;
  // Loads what row tile `tile` (window `v`) of the first member needs and adds the loads to
  // `deps` and its own pieces' buffers to `in_buffers`; returns its bytes on the ring.
  std::uint64_t load_chain_input(const LayerGroup& group, const SpatialLayer& m,
                                 const TileWindow& v, std::uint64_t tile, ChainInput& in,
                                 std::vector<std::string>& in_buffers,
                                 std::vector<CommandIndex>& deps);
  // After the first member's tile `tile` was emitted as `compute`: it frees the lent rows it is
  // the last to read, once every tile that read them has ended.
  void free_chain_input(ChainInput& in, std::uint64_t tile, CommandIndex compute);
  // A chain step's compute `c` after `deps`, then a pointwise member's fused ops (`then_ops`), each
  // on its slice after the one before, the last freeing what `c` would; returns the last.
  CommandIndex emit_step(Command c, const std::vector<std::string>& then_ops,
                         const LayerGroup& group, std::vector<CommandIndex> deps);
  // A channel chain (Chain::channel_block), as emit_chain's (emit_channel_chain.cpp), and one
  // being emitted; a chain of row bands (emit_chain.cpp).
  struct ChannelChainRun;
  void emit_channel_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                          const std::vector<Residency>& residency);
  void emit_row_chain(const std::vector<const LayerGroup*>& members, const Chain& chain,
                      const std::vector<Residency>& residency);
  // A chain's checks and its output's residency, and its weights (emit_chain.cpp).
  bool begin_chain_output(const std::vector<const LayerGroup*>& members,
                          const std::vector<Residency>& residency);
  std::vector<CommandIndex> load_chain_weights(const std::vector<const LayerGroup*>& members,
                                               const std::vector<SpatialLayer>& s,
                                               const std::vector<std::uint32_t>& programs,
                                               CommandIndex room,
                                               std::vector<std::string>& buffers);

  // ---- primitives (emitter.cpp) ----
  CommandIndex emit(Command c, const char* prefix, std::uint64_t& counter, const LayerGroup& group,
                    std::vector<CommandIndex> deps);
  static Command dma(EngineKind engine, std::uint64_t bytes);
  // A compute: `op` with `shape` on `slice`, on the op's unit.
  static Command compute(std::string_view op, std::uint32_t slice, Shape shape);
  std::string buffer_name();
  void reader_deps(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                   std::vector<CommandIndex>& deps);
  // The DMA_IN of `piece` into a new buffer (appended to `buffers`), after `deps` and the writers
  // of its bytes.
  // A resident piece (resident_) is not loaded: `to` gets the commands that wrote its bytes on
  // chip instead, and `buffers` nothing.
  void load_piece(const LayerGroup& group, const Piece& piece, std::vector<CommandIndex> deps,
                  std::vector<std::string>& buffers, std::vector<CommandIndex>& to);
  // The input of a spatial tile of image `img` over window `v`, `in_c` channels of it: its
  // rows of an NHWC image (a column tile's bytes lie within them), or all of an input laid out
  // otherwise, which is read whole.
  Piece spatial_input(const SpatialLayer& s, std::uint64_t img, const TileWindow& v,
                      std::uint64_t in_c) const;
  // An operand block shared by a group's tiles, [lo, hi) of `tensor` in `bytes`: loaded like a
  // weight chunk after its writers, or, resident, its on-chip writers stand for the chunk.
  void on_chip_writers(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                       std::vector<CommandIndex>& to) const;
  CommandIndex load_shared_input(const LayerGroup& group, std::uint32_t tensor, std::uint64_t lo,
                                 std::uint64_t hi, std::uint64_t bytes);
  std::vector<CommandIndex> last_per_queue(const std::vector<CommandIndex>& computes) const;
  CommandIndex load_weights(std::uint64_t bytes, const LayerGroup& group,
                            std::vector<CommandIndex> after = {});
  // One tile: its pieces loaded, `op` on `slice`, then each of `then_ops` (fused element-wise
  // layers) on the same slice and shape in place, then the store. Returns the last compute.
  // `held`: input rows loaded outside `pieces` that the tile reads too (halo reuse): their bytes
  // count in its ring entry and its compute waits for their loads. `prefetched`: a weight load
  // issued earlier (take_prefetched) that the tile reads beside its pieces: its compute waits for
  // it and frees it, and its bytes stay in the chunks' half until the tile's ring entry ends.
  struct Held {
    std::uint64_t bytes = 0;
    std::vector<CommandIndex> loads;
  };
  struct Prefetched;  // below, with the prefetch state
  CommandIndex tile(std::uint32_t slice, const LayerGroup& group, const std::vector<Piece>& pieces,
                    const std::string& op, Shape shape, CommandIndex weights,
                    std::uint64_t out_bytes, std::uint64_t out_lo, std::uint64_t out_hi,
                    const std::vector<CommandIndex>* other_readers,
                    const std::vector<std::string>& then_ops = {}, const Held* held = nullptr,
                    const Prefetched* prefetched = nullptr);
  CommandIndex store_tile(const LayerGroup& group, std::vector<CommandIndex> after,
                          const std::string& out_buffer, std::uint64_t out_bytes,
                          std::uint64_t out_lo, std::uint64_t out_hi,
                          const std::vector<CommandIndex>* other_readers);
  CommandIndex ring_wait(std::uint64_t bytes);
  void push_ring(CommandIndex store, std::uint64_t bytes);
  // `store`, the last of the group that read the kept output, frees it: it waits for every
  // writer of it and for the group's readers of it (the last on each slice unit's queue before
  // it), and from there the ring counts its bytes.
  void release_kept(const LayerGroup& group, CommandIndex store);
  // The other outputs of the group's last layer are written by the group's stores.
  void track_other_outputs(const LayerGroup& group);
  // Adds `deps` (earlier commands) to an emitted command's dependencies.
  void add_deps(CommandIndex command, const std::vector<CommandIndex>& deps);
  std::uint32_t next_slice();
  void begin_slices(const Mapping& mapping);
  void end_slices();

  // ---- per kind ----
  void emit_spatial(const LayerGroup& group, const Mapping& mapping);  // emit_spatial.cpp
  // Weights outer, each tile loading only the input rows the tile above it did not
  // (emit_spatial_halo.cpp; docs/compiler.md, "Halo reuse").
  void emit_spatial_halo(const LayerGroup& group, const SpatialLayer& s, const Mapping& mapping);
  // One tile, or one part of a split tile, of an input block: its slice, and what its commands
  // wait for there.
  struct BlockPart {
    std::uint32_t slice = 0;
    std::uint64_t in_c = 0;  // input channels it reduces over (split tiles)
    std::uint64_t chunk = 0;
    std::uint64_t bytes = 0;          // what it holds on its slice until its store
    std::vector<CommandIndex> waits;  // the store that makes room for it, if any
    CommandIndex load = 0;            // its weights' DMA_IN
    std::string weights_buffer;
    std::uint64_t prefetched = 0;  // its weights' bytes when prefetched (not in `bytes`)
  };
  // emit_spatial_input_outer.cpp
  void emit_spatial_input_outer(const LayerGroup& group, const SpatialLayer& s,
                                const Mapping& mapping);
  // A tile or part of a wave (chunk `chunk`, `in_c` of the reduction) on the next slice, holding
  // `bytes` on the ring: the wave's parts claim it together, none of them on it yet, so each
  // waits for what makes room for `wave_bytes` (its bytes added) to be live.
  BlockPart wave_part(std::uint64_t chunk, std::uint64_t in_c, std::uint64_t bytes,
                      std::uint64_t& wave_bytes);
  // Its weights (a conv's, or a MatMul's rows of B) loaded into a buffer of its own after `deps`.
  void load_part(const LayerGroup& group, BlockPart& p, std::uint64_t bytes,
                 std::vector<CommandIndex> deps);
  // A tile whose reduction is split over parts on several slices (Mapping::k_parts), as its
  // emission needs it, whatever the op: a conv's (emit_spatial_input_outer) or a MatMul's
  // (emit_matmul). Every size is linear in the tile's output rows, given per row.
  struct SplitTile {
    std::string_view op;                                // each part's compute
    std::function<Shape(const BlockPart&)> part_shape;  // of each part's compute
    std::uint64_t rows = 0;                             // the tile's output rows
    std::uint64_t piece_rows = 0;  // output rows per reduction piece (one PartialSum each)
    std::uint64_t out_row_bytes = 0, partial_row_bytes = 0, residual_row_bytes = 0;
    std::uint64_t reduce_row_elements = 0;  // a PartialSum's elements per row
    // The tile's first output row, as a row of the stored tensor, of y_row_bytes each.
    std::uint64_t y_first_row = 0, y_row_bytes = 0;
    // A fused residual's pieces for rows [r0, r1) of the tile (none for a MatMul).
    std::function<std::vector<Piece>(std::uint64_t r0, std::uint64_t r1)> residual;
  };
  // One split tile (its parts' weights loaded): their computes, the reduction pieces, the stores
  // and the ring entries (emit_spatial_input_outer.cpp).
  void emit_split_tile(const LayerGroup& group, const SplitTile& t,
                       const std::vector<const BlockPart*>& parts,
                       std::vector<CommandIndex>& computes, bool frees_block);
  // A MatMul's row tile, input outer, with its reduction split over slices (emit_matmul.cpp).
  void emit_matmul_split(const LayerGroup& group, const Mapping& mapping, std::uint64_t pass,
                         std::uint64_t r0, std::uint64_t r1);
  void emit_spatial_ksplit(const LayerGroup& group, const SpatialLayer& s,
                           const Mapping& mapping);                   // emit_spatial_ksplit.cpp
  void emit_matmul(const LayerGroup& group, const Mapping& mapping);  // emit_matmul.cpp
  void emit_matmul_ksplit(const LayerGroup& group, const Mapping& mapping);  // emit_matmul.cpp
  void emit_vector(const LayerGroup& group, const Mapping& mapping);         // emit_vector.cpp
  void emit_global_pool(const LayerGroup& group, const Mapping& mapping);    // emit_vector.cpp
  void emit_host(const LayerGroup& group);                                   // emitter.cpp
  void emit_view(const Layer& layer);                                        // emitter.cpp

  const Graph& g_;
  const HwConfig& cfg_;
  const TensorLayouts& layouts_;
  Budgets budgets_;
  std::uint32_t slices_;
  // A group's output kept in local memory for the next group (docs/compiler.md, "Outputs kept on
  // chip"): its tiles' output buffers, the commands that wrote them, and its bytes.
  struct OnChip {
    std::uint32_t tensor = 0;
    std::uint64_t bytes = 0;
    bool on_chip_only = false;  // not written to DRAM: no other layer reads it
    std::vector<std::string> buffers;
    std::vector<CommandIndex> writers;
    // Which computes wrote which bytes [lo, hi) (a resident tensor's readers wait for those).
    struct Range {
      std::uint64_t lo = 0, hi = 0;
      std::vector<CommandIndex> by;
    };
    std::vector<Range> ranges;
  };
  std::optional<OnChip> keeping_;  // the current group's output, being written
  std::optional<OnChip> kept_;     // the last group's output, read by the current group
  // Tensors resident on chip until their last reader group (Residency), by tensor.
  std::map<std::uint32_t, OnChip> resident_;
  std::uint64_t resident_bytes_ = 0;
  // View outputs of resident tensors (a Concat, a Reshape): the resident tensors they alias.
  std::map<std::uint32_t, std::vector<std::uint32_t>> aliases_;
  bool on_chip(std::uint32_t tensor) const {
    return resident_.count(tensor) > 0 || aliases_.count(tensor) > 0;
  }
  // The last command of each slice unit's queue among those emitted since `from`, for `to`'s
  // dependencies: their ends imply the ends of every earlier command on those queues.
  std::vector<CommandIndex> last_per_queue_since(std::size_t from) const;
  // The same among commands [from, to).
  std::vector<CommandIndex> last_per_queue_between(std::size_t from, std::size_t to) const;
  // The output being written (keeping_) stays resident until its last reader group.
  void keep_resident();
  // Frees resident `tensor` with `carrier`, the last command of its last reader group.
  void release_resident(std::uint32_t tensor, CommandIndex carrier);
  // The bytes the live tiles may hold: half the local memory (all of it while
  // ring_whole_memory_), less what is kept on chip.
  std::uint64_t ring_budget() const;
  CommandIndex ring_within_budget() const;
  // A group whose tiles may take the whole memory (GroupWork::whole_memory: it loads no shared
  // chunk, as K-split convs and MatMuls) and whose full batch of `batch_bytes` (one tile per
  // slice) passes the tiles' half does: the frees of the chunks still live become its fence,
  // which the first two steps of every one of its tiles wait for (ksplit_step_waits; the DMA
  // queue order may let a later tile's loads pass an earlier one's). After it
  // (end_whole_memory), each new chunk waits for the store after which the live tiles fit the
  // tiles' half.
  void begin_whole_memory(std::uint64_t batch_bytes);
  void end_whole_memory();
  // What an output tile of a K-split conv or MatMul keeps while its steps are emitted.
  struct KSplitTile {
    std::uint32_t slice = 0;
    std::uint64_t bytes = 0;  // what it holds on its slice until its store
    CommandIndex ring_wait = kNone;
    std::string out_buffer;
    std::vector<CommandIndex> steps;  // its computes so far
  };
  // Adds `tile` (its bytes set) to a batch already holding `batch_bytes`, when the ring has room
  // for the batch with it (a batch's first tile always joins): gives it its slice, its ring wait
  // (the batch's tiles claim the ring together) and its output buffer. False when full.
  bool join_ksplit_batch(KSplitTile& tile, std::uint64_t& batch_bytes, bool first);
  // What a K-split tile's next step loads wait for: the step two back, whose compute freed its
  // operands; for its first two steps, the ring's wait for the tile and the fence.
  std::vector<CommandIndex> ksplit_step_waits(const KSplitTile& tile) const;
  bool ring_whole_memory_ = false;
  bool chunks_wait_for_ring_ = false;
  std::vector<CommandIndex> whole_fence_;
  // The store frees `buffer`, a tile's output, unless the output stays on chip.
  void release_output(CommandIndex store, const LayerGroup& group, const std::string& buffer,
                      const std::vector<CommandIndex>& writers);
  // Every slice's tiles, in order: the store whose end frees each, and the bytes it holds.
  struct RingEntry {
    CommandIndex store;
    std::uint64_t bytes;
  };
  std::vector<RingEntry> ring_;
  std::vector<CommandIndex> weight_frees_;  // stores whose ends free weight chunks
  // With stores_carry_frees on: the last tile whose store store_tile left out. If its compute
  // ends its group and must carry a kept or resident tensor's release, the store is emitted after
  // all, so that the release waits on the DMA_OUT queue and not on a slice's (which would hold
  // that slice's next tiles behind every other slice). Off, the compute carries it: the driver
  // estimates both (DeviceCompiler::carry_frees_on_stores).
  struct LeftOutStore {
    CommandIndex compute = 0;
    std::uint64_t bytes = 0;
  };
  std::optional<LeftOutStore> left_out_store_;
  // With stores_carry_frees off: the compute whose store would have been left_out_store_ with it
  // on, and how many frees free_carrier then left on such a compute.
  std::optional<CommandIndex> would_carry_;
  std::size_t frees_stores_would_carry_ = 0;
  // The command to carry a free that `candidate` would carry: the left-out store, emitted now
  // after it, when `candidate` is the compute that stood for it; else `candidate`.
  CommandIndex free_carrier(const LayerGroup& group, CommandIndex candidate);
  bool drop_unread_stores_ = false;
  bool stores_carry_frees_ = false;
  std::size_t group_first_ = 0;  // the current group's first command
  // The pieces of the shared chunk most recently loaded, and their buffers: every tile of the
  // chunk waits for all of them, and the chunk's last store frees them all.
  std::vector<CommandIndex> weights_pieces_;
  std::vector<std::string> weights_buffers_;
  Schedule sched_;
  WriterIndex writers_;  // which stores wrote which bytes of each tensor (joins edit sched_)
  std::uint64_t di_ = 0, do_ = 0, s_ = 0, h_ = 0, buffers_ = 0;
  std::uint32_t rr_ = 0;
  std::uint32_t program_ = 0;  // the program new commands belong to
  // The last group's name and location, interned once for all its commands (emit).
  InternedString name_, loc_;
  // The current group's slices: tiles go round-robin over group_slices_ of them from group_base_.
  std::uint32_t group_slices_ = 0, group_base_ = 0;
  std::uint64_t group_tiles_ = 0;
  // Shared chunks live at once (Mapping::shared_live). When a group changes it, its first
  // chunks wait for every free still outstanding (shared_fence_).
  std::uint32_t shared_live_ = 2, live_shared_live_ = 2;
  std::vector<CommandIndex> shared_fence_;
  std::uint32_t shared_fence_left_ = 0;
  // Weight prefetch: what to load with a group, and what is loaded for a later group's load
  // number, until that load is reached.
  struct PrefetchOrder {
    const LayerGroup* target = nullptr;
    std::size_t load = 0;
    std::uint64_t bytes = 0;
  };
  struct Prefetched {
    CommandIndex load = 0;
    std::string buffer;
    std::uint64_t bytes = 0;
  };
  std::map<const LayerGroup*, std::vector<PrefetchOrder>> prefetch_at_;
  std::map<std::pair<const LayerGroup*, std::size_t>, Prefetched> prefetched_;
  std::uint64_t prefetched_bytes_ = 0;  // loaded and not yet read (settle_prefetch)
  bool any_prefetched_ = false;         // some prefetch was loaded (ring_wait)
  std::size_t group_loads_ = 0;         // the current group's prefetchable loads so far
  bool prefetch_after_group_ = false;
  bool prefetching() const { return !prefetch_at_.empty(); }
  // Loads group `at`'s registered prefetches (emit_group, at its start or end).
  void emit_prefetches(const LayerGroup& at);
  // The current group's next prefetchable load, of `bytes`: the prefetch made for it, if any.
  // It stays in prefetched_bytes_ until the reading tile's ring entry is known (settle_prefetch).
  std::optional<Prefetched> take_prefetched(const LayerGroup& group, std::uint64_t bytes);
  // The chunks' half in bytes while prefetching: every chunk, and every prefetched load once
  // read, with the command whose end frees it, in order of those commands (which end in order,
  // as the ring's stores do).
  struct HalfEntry {
    CommandIndex free = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<HalfEntry> half_;
  std::uint64_t weights_bytes_ = 0;  // the chunk most recently loaded (load_weights)
  // What a load of `bytes` into the chunks' half waits for, so that it fits there with the
  // entries after it and the prefetched bytes not yet read; none when not prefetching.
  std::vector<CommandIndex> half_waits(std::uint64_t bytes, const LayerGroup& group) const;
  // The frees of half_[i] and of the few entries before it: frees on several DMA_OUT channels
  // or slices need not end in the order they were emitted in.
  std::vector<CommandIndex> half_frees_through(std::size_t i) const;
  const LayerGroup* group_ = nullptr;  // the group (or chain's first member) being emitted
  // A prefetched load of `bytes` read by a tile whose ring entry is `entry`, which frees it.
  void settle_prefetch(CommandIndex entry, std::uint64_t bytes);
};

}  // namespace npusim
