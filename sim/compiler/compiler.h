// The compiler: a Graph and a HwConfig in, an op schedule out (docs/compiler.md).
//
// Per layer group (an array op with the batch-norm and activation that follow it fused in, or one
// vector op) it picks a tiling whose working set fits local memory with double buffering, spreads
// the tiles round-robin over the slices, and emits per tile DMA_IN of its inputs, one slice op and
// DMA_OUT of its result; weights are loaded in chunks shared by all slices. Memory stays within
// the capacity by construction: weight chunks take at most a quarter of it each with two live,
// and each slice holds at most two tiles (inputs and output) of at most capacity / (4 * slices):
// a tile's loads wait for the store of the tile two back on its slice.
// Every command depends only on commands emitted before it, so the in-order queues never
// deadlock.
//
// compiler.cpp is the driver; the passes are in passes/, the map spaces and the Mapping type in
// mapping/, the search strategies in search/, the emission in emit/ (docs/compiler.md, "Where
// the code is").
#pragma once

#include <string>
#include <vector>

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
Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          std::vector<std::string>* explain = nullptr,
                          const std::string& search = "cost");

}  // namespace npusim
