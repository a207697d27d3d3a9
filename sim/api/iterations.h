// Back-to-back inferences (--iterations): the schedule repeated, each inference starting when the
// previous one has finished, as an NPU runtime runs one inference after another.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "sim/ir/schedule.h"
#include "sim/ir/schedule_append.h"

namespace npusim {

// `count` copies of `schedule`. Copy k's ids are renumbered after copy k-1's (DI, DO and S
// numbered on), its buffers and programs are suffixed "#k", and every command of copy k that
// depends on nothing waits for every command of copy k-1 that nothing depends on. Command i of
// copy k is command k * schedule.commands.size() + i.
Schedule repeat_schedule(const Schedule& schedule, std::uint32_t count);

}  // namespace npusim
