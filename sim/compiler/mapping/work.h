// What a mapping makes a layer group do, in classes of identical tiles: the loads, computes and
// stores the emitter would emit, without emitting them. The cost search prices this with the
// cost model (search/cost_search.cpp), so a candidate is costed in microseconds, not by emission.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/ops.h"
#include "sim/ir/schedule.h"

namespace npusim {

// `count` tiles alike: each loads `loads` transfers of `load_bytes` in all, runs `op` with
// `shape` on one slice and stores `store_bytes`.
struct TileClass {
  std::uint64_t count = 0;
  OpId op = 0;
  Shape shape;
  std::uint32_t loads = 1;
  std::uint64_t load_bytes = 0;
  std::uint64_t store_bytes = 0;
  // What it holds on the ring besides its loads and stores, as the emitter claims it (a part of
  // a tile split over slices: the tile's output, residual share and partial sums).
  std::uint64_t ring_extra_bytes = 0;
};

// `count` loads of `bytes` shared by the slices: weight chunks, or input blocks.
struct SharedLoad {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

// A shared chunk of `bytes` loads as pieces of whole bursts, up to one per DMA_IN channel (one
// transfer runs on one channel), all of `piece_bytes` but the last; one piece with ideal memory.
struct SharedPieces {
  std::uint64_t count = 1;
  std::uint64_t piece_bytes = 0;
};
SharedPieces shared_pieces(std::uint64_t bytes, const HwConfig& config);

struct GroupWork {
  std::vector<TileClass> tiles;
  std::vector<SharedLoad> shared;
  // Stores not counted with a tile: a K-split output tile is stored once after its last step.
  std::vector<SharedLoad> stores;
  // What a tile holds besides its class's loads and stores (a K-split conv's accumulator and its
  // next step's operands): local memory only, no traffic.
  std::uint64_t hold_bytes = 0;
  // No shared chunk is live while the group runs (a K-split conv loads its weights with each
  // step), so its tiles may take the whole local memory, not only the tiles' half
  // (docs/compiler.md, "Memory budgets").
  bool whole_memory = false;
  std::uint32_t slices = 1;       // the slices the tiles go round-robin over
  std::uint32_t shared_live = 2;  // shared chunks live at once: bounds the slices busy at once
};

}  // namespace npusim
