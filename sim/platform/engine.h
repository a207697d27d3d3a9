// One engine of the command processor: an in-order queue and what runs its commands (one unit for
// a slice's array or vector unit, one per channel for a DMA engine). Its thread dispatches by
// cost::QueueDispatcher's rule, the estimator's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/cost/dispatch.h"
#include "sim/ir/schedule.h"
#include "sim/platform/command_unit.h"
#include "sim/platform/scoreboard.h"

namespace npusim::platform {

class Engine final : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Engine);
  // Builds the runner of channel `channel`, named `name`, as a child of the engine; it releases
  // the channel of `dispatcher` and notifies `freed` when its command ends.
  using UnitFactory = std::function<std::unique_ptr<CommandUnit>(
      const char* name, cost::QueueDispatcher& dispatcher, std::uint32_t channel,
      sc_core::sc_event& freed)>;

  Engine(const sc_core::sc_module_name& name, const Schedule& schedule,
         std::vector<std::uint32_t> queue, Scoreboard& scoreboard, std::uint64_t dispatch_cycles,
         std::uint32_t units, const UnitFactory& make_unit);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Position in the queue of the first command not yet started.
  std::size_t head() const { return head_; }

 private:
  void dispatch();

  const Schedule& schedule_;
  std::vector<std::uint32_t> queue_;
  Scoreboard& scoreboard_;
  cost::QueueDispatcher dispatcher_;
  std::vector<std::unique_ptr<CommandUnit>> units_;
  sc_core::sc_event wake_;  // a dependency finished or a unit freed
  std::size_t head_ = 0;
};

}  // namespace npusim::platform
