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
#include <string>
#include <vector>

#include "sim/compiler/emit/writer_index.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/mapping/mapping.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim {

class Emitter {
 public:
  // The graph, config and layouts must outlive the emitter.
  Emitter(const Graph& graph, const HwConfig& config, const TensorLayouts& layouts);

  // Appends the group's commands, tiled as `mapping` says (which must be of the group's kind);
  // a group that emits any command is one program. Throws InputError for an op the NPU cannot
  // run, or when the schedule would pass kMaxCommands.
  void emit_group(const LayerGroup& group, const Mapping& mapping);

  // Room for `commands` commands (the driver's estimate), so the schedule does not reallocate.
  void reserve(std::uint64_t commands) { sched_.commands.reserve(commands); }

  // The schedule emitted so far, with its model and target filled in. Call once.
  Schedule finish();

 private:
  using CommandIndex = std::uint32_t;
  static constexpr CommandIndex kNone = ~CommandIndex{0};

  // ---- primitives (emitter.cpp) ----
  CommandIndex emit(Command c, const char* prefix, std::uint64_t& counter, const LayerGroup& group,
                    std::vector<CommandIndex> deps);
  static Command dma(EngineKind engine, std::uint64_t bytes);
  std::string buffer_name();
  void reader_deps(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi,
                   std::vector<CommandIndex>& deps);
  void record_write(std::uint32_t tensor, std::uint64_t lo, std::uint64_t hi, CommandIndex store);
  std::vector<CommandIndex> last_per_queue(const std::vector<CommandIndex>& computes) const;
  CommandIndex load_weights(std::uint64_t bytes, const LayerGroup& group,
                            std::vector<CommandIndex> after = {});
  CommandIndex tile(std::uint32_t slice, const LayerGroup& group, const std::vector<Piece>& pieces,
                    const std::string& op, Shape shape, CommandIndex weights,
                    std::uint64_t out_bytes, std::uint64_t out_lo, std::uint64_t out_hi,
                    const std::vector<CommandIndex>* other_readers);
  CommandIndex two_back(std::uint32_t slice) const;
  std::uint32_t next_slice();
  void begin_slices(const Mapping& mapping);
  void end_slices();
  bool take_fence(std::uint32_t slice, std::vector<CommandIndex>& deps);

  // ---- per kind ----
  void emit_spatial(const LayerGroup& group, const Mapping& mapping);        // emit_spatial.cpp
  void emit_matmul(const LayerGroup& group, const Mapping& mapping);         // emit_matmul.cpp
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
  std::vector<std::vector<CommandIndex>> stores_;  // per slice: its tiles' stores, in order
  std::vector<CommandIndex> weight_frees_;         // stores whose ends free weight chunks
  // The pieces of the shared chunk most recently loaded, and their buffers: every tile of the
  // chunk waits for all of them, and the chunk's last store frees them all.
  std::vector<CommandIndex> weights_pieces_;
  std::vector<std::string> weights_buffers_;
  Schedule sched_;
  WriterIndex writers_;  // which stores wrote which bytes of each tensor (joins edit sched_)
  std::uint64_t di_ = 0, do_ = 0, s_ = 0, h_ = 0, buffers_ = 0;
  std::uint32_t rr_ = 0;
  // The current group's slices: tiles go round-robin over group_slices_ of them from group_base_.
  std::uint32_t group_slices_ = 0, group_base_ = 0;
  std::uint64_t group_tiles_ = 0;
  std::uint32_t live_slices_ = 0;  // slices of the last group that emitted tiles; 0: none yet
  // When a group's tile budget differs from the last one's, its first two tiles on each slice
  // also wait for fence_: the last two stores of every slice, so no older tile is still live.
  std::vector<CommandIndex> fence_;
  std::vector<std::uint8_t> fence_left_;  // per slice: tiles that must still take the fence
  // Shared chunks live at once (Mapping::shared_live). When a group changes it, its first
  // chunks wait for every free still outstanding (shared_fence_).
  std::uint32_t shared_live_ = 2, live_shared_live_ = 2;
  std::vector<CommandIndex> shared_fence_;
  std::uint32_t shared_fence_left_ = 0;
};

}  // namespace npusim
