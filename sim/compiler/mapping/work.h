// What a mapping makes a layer group do, in classes of identical tiles: the loads, computes and
// stores the emitter would emit, without emitting them. The cost search prices this with the
// cost model (search/cost_search.cpp), so a candidate is costed in microseconds, not by emission.
#pragma once

#include <cstdint>
#include <vector>

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
};

// `count` loads of `bytes` shared by the slices: weight chunks, or input blocks.
struct SharedLoad {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

struct GroupWork {
  std::vector<TileClass> tiles;
  std::vector<SharedLoad> shared;
  std::uint32_t slices = 1;       // the slices the tiles go round-robin over
  std::uint32_t shared_live = 2;  // shared chunks live at once: bounds the slices busy at once
};

}  // namespace npusim
