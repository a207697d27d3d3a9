// Whole-model schedules on fewer slices than the config has (docs/compiler.md, "The cost
// search", "Fewer slices"). A schedule for k slices runs unchanged on more, so the compiler for S
// slices also compiles for a few counts below S and keeps the fastest: a slice sweep then never
// gets slower where the counts tried are the ones that win.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// How many counts below a config's slices the compiler tries: S - 1 and S - 2.
constexpr std::uint32_t kFewerSliceCounts = 2;

// Past this many commands on all slices the counts below are not tried: each compile holds its
// schedule, and three at once (about 400 bytes a command) would triple the compile's memory.
constexpr std::size_t kFewerSlicesMaxCommands = std::size_t{1} << 20;

// The counts below `slices` tried, largest first: S - 1, S - 2 (those of at least 1).
std::vector<std::uint32_t> fewer_slice_counts(std::uint32_t slices);

// A lower bound on any schedule of `schedule`'s layers on `slices` slices of `config`'s array:
// each layer's untiled single-array cycles (SCALE-Sim's closed form, layer_info's ideal_cycles),
// summed, over the slices, rounded up. A layer of a batch of GEMMs counts the smaller of its
// GEMMs apart and of one GEMM of all their rows (a MatMul emits a shared right operand's batch
// that way). Tiling only adds folds and fills, so no schedule of the same layers on as many
// slices takes fewer array cycles.
std::uint64_t array_bound_cycles(const Schedule& schedule, const HwConfig& config,
                                 std::uint32_t slices);

}  // namespace npusim
