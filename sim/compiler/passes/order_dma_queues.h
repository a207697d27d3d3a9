// Pass: each DMA queue in the order its transfers could go if the queue let a ready transfer pass
// one that still waits (docs/compiler.md, "DMA queue order"). The emitter appends each group's
// transfers after the previous group's, and a DMA queue is served in order, so a load that waits
// for a store just written (attention's operands, a tensor read back from DRAM) holds every
// transfer behind it, weight chunks that wait for nothing included. This pass reorders a compiled
// schedule: it changes no command and no dependency, only where the DMA_IN and DMA_OUT commands
// sit in their queues. The driver keeps the result only when the estimate says it is faster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

// How many of a DMA queue's next commands may pass the first of them.
inline constexpr std::size_t kDmaQueueWindow = 64;

// Each command's start if every DMA queue, whenever it could dispatch, took the first of its next
// `window` commands whose dependencies have ended (so a transfer passes only ones still waiting),
// and every other queue ran in order, each command costed alone, as the estimator costs it.
// Nothing passes a command that frees local memory: the emitter's ring counts a free as also
// freeing every older entry (a tile waits for one store's free), so frees keep their order.
// `schedule` must be finalized for `config`.
std::vector<std::uint64_t> ready_first_starts(const Schedule& schedule, const HwConfig& config,
                                              std::size_t window = kDmaQueueWindow);

// How reorder_dma_queues moved a schedule's commands: enough to move them back.
struct QueueReorder {
  std::vector<std::uint32_t> order;  // new position j holds the command that was at order[j]
  std::vector<std::string> ids;      // the commands' ids before, by their old position
};

// Reorders `schedule`'s commands by ready_first_starts (ties keep the schedule's order):
// dependencies renumbered to the new positions and each engine's ids handed out again in the new
// order, so a queue's ids still count up. Commands are moved, never copied (the driver tries an
// order on the schedule itself and undoes it when the estimate is not faster), and the schedule
// is changed only once nothing can throw.
//
// Why this cannot deadlock: a deadlock is a cycle of dependencies and queue order. Along every
// such edge of the new schedule the start never decreases, and on a tie the old index increases:
// a dependency ends before its dependant starts (and comes first in the old order); the commands
// of a queue that is not a DMA queue keep their order and start one after another; a DMA queue is
// sorted by start.
QueueReorder reorder_dma_queues(Schedule& schedule, const HwConfig& config);

// Puts `schedule`'s commands, dependencies and ids back as they were before `reorder`.
void undo_reorder(Schedule& schedule, QueueReorder&& reorder);

}  // namespace npusim
