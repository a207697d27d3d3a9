// Synthetic schedules of any size, for benchmarks and scaling tests: tiles as the compiler emits
// them (a load, a GEMM on the next slice round-robin, a store), with the compiler's two-tile ring
// per slice and its local-memory buffers, so they run like real schedules. Deterministic.
#pragma once

#include <cstdint>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// About `commands` commands (rounded down to whole tiles of 3, at least one tile), checked and
// costed for `config` like any schedule.
Schedule synthetic_schedule(std::uint64_t commands, const HwConfig& config);

}  // namespace npusim
