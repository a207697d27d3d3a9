// What runs one command at a time for an engine: a slice's array or vector unit, or a DMA
// channel. The engine's dispatcher (cost::QueueDispatcher) grants it a command; at the command's
// end it reports to the scoreboard, releases its channel of the dispatcher and wakes the engine.
#pragma once

#include <cstdint>

#include <systemc>

#include "sim/cost/dispatch.h"
#include "sim/ir/schedule.h"
#include "sim/platform/scoreboard.h"

namespace npusim::platform {

class CommandUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CommandUnit);
  // `channel` is its index among the engine's channels in `dispatcher`.
  CommandUnit(const sc_core::sc_module_name& name, const Schedule& schedule, Scoreboard& scoreboard,
              cost::QueueDispatcher& dispatcher, std::uint32_t channel, sc_core::sc_event& freed);
  CommandUnit(const CommandUnit&) = delete;
  CommandUnit& operator=(const CommandUnit&) = delete;

  void start(std::uint32_t command);

 protected:
  // Runs the command to its end; called in the unit's thread, may wait.
  virtual void execute(const Command& command) = 0;

 private:
  void run();
  const Schedule& schedule_;
  Scoreboard& scoreboard_;
  cost::QueueDispatcher& dispatcher_;
  std::uint32_t channel_;
  sc_core::sc_event& freed_;
  sc_core::sc_event job_;
  bool has_job_ = false;
  std::uint32_t command_ = 0;
};

// A slice's systolic array or vector unit: busy for the cost model's cycles.
class ComputeUnit final : public CommandUnit {
 public:
  using CommandUnit::CommandUnit;

 protected:
  void execute(const Command& command) override;
};

}  // namespace npusim::platform
