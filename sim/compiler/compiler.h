// The compiler: a Graph and a HwConfig in, an op schedule out (docs/compiler.md).
//
// Per layer group (an array op with the epilogue that follows it fused in, or one vector op) the
// cost search (search/cost_search.h) costs candidate mappings with the shared cost model: tile
// sizes, loop order (which operand is shared by the slices), slices used and shared chunks
// live; the emitter then emits per tile DMA_IN of its inputs, one slice op and DMA_OUT of its
// result. Memory stays within the capacity by construction: shared chunks take at most half of
// it together, and each slice holds at most two tiles of at most capacity / (4 * slices used):
// a tile's loads wait for the store of the tile two back on its slice, and a group with other
// budgets than the last waits for its tiles to be gone. Every command depends only on commands
// emitted before it, so the in-order queues never deadlock.
//
// compiler.cpp is the driver; the passes are in passes/, the map spaces and the Mapping type in
// mapping/, the search strategies in search/, the emission in emit/ (docs/compiler.md, "Where
// the code is").
#pragma once

#include <string>
#include <vector>

#include "sim/compiler/shard/sharded_compile.h"
#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim {

// Compiles and then checks and costs the schedule exactly as load_schedule does a file
// (finalize_schedule). Throws InputError naming the layer when a layer cannot be compiled for
// this config. `npusim compile` writes the result with write_schedule_json.
// `explain`, if given, receives one line per layer group: its mapping, the cost search's cycles
// for it and the runner-up's (docs/compiler.md, "The cost search").
// `search` names the mapping search (search/search.h): "cost" (the default) or "greedy".
// With config.devices.count > 1 the graph is sharded tensor-parallel over the devices
// (shard/sharded_compile.h, docs/multi-device.md); with host.upload_weights the weights and
// inputs arrive over the host link first.
Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          std::vector<std::string>* explain = nullptr,
                          const std::string& search = "cost");

struct CompileOptions {
  std::vector<std::string>* explain = nullptr;
  std::string search = "cost";
  shard::HostIo host_io;  // several devices only: what crosses the host link
  // Outputs may stay in local memory until their last reader (docs/compiler.md, "Tensors
  // resident on chip") when the estimate says it pays; false: every tensor makes its DRAM trip.
  bool residency = true;
  // Chains of convolutions may be computed depth first (docs/compiler.md, "Chains of
  // convolutions") when the estimate says it pays; false: every group runs whole, in turn.
  bool chains = true;
  // Weight loads of DMA-bound groups may be brought in early, while the DMA_IN channels idle
  // (docs/compiler.md, "Weight prefetch"), when the estimate says it pays; false: never.
  bool prefetch = true;
  // Groups remapped to the search's mapping with fewer DMA transfers, within 1/100, 1/40 or 1/20
  // of their cheapest alone, when the model estimates faster so (docs/compiler.md, "Fewer
  // transfers"); false: never.
  bool fewer_transfers = true;
  // Rounds of weight prefetch, each planned on the last one's estimate while it gains (1: the
  // first plan only).
  int prefetch_rounds = 3;
  // The whole model may be compiled for S - 1 and S - 2 of the config's S slices too, and run on
  // those when that estimates faster (docs/compiler.md, "Fewer slices"); false: on all S.
  bool fewer_slices = true;
  // With and without their reduction splits, models whose estimates are close are both finished
  // before one is kept (docs/compiler.md, "K-split convolutions"); false: the estimates decide.
  // (Fewer slices compiles its counts below S so.)
  bool finish_close_splits = true;
};
Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          const CompileOptions& options);

}  // namespace npusim
