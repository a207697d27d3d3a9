// A unit that runs one command at a time: a slice's array or vector unit, or a DMA channel. Its
// engine's dispatcher reserves it, then starts a command on it; the unit reports the end to the
// scoreboard and wakes the dispatcher.
#pragma once

#include <cstdint>

#include <systemc>

#include "sim/platform/scoreboard.h"
#include "sim/ir/schedule.h"

namespace npusim::platform {

class CommandUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CommandUnit);
  CommandUnit(const sc_core::sc_module_name& name, const Schedule& schedule,
              Scoreboard& scoreboard, sc_core::sc_event& freed);
  CommandUnit(const CommandUnit&) = delete;
  CommandUnit& operator=(const CommandUnit&) = delete;

  bool busy() const { return busy_; }
  void reserve() { busy_ = true; }
  void start(std::uint32_t command);

 protected:
  // Runs the command to its end; called in the unit's thread, may wait.
  virtual void execute(const Command& command) = 0;

 private:
  void run();
  const Schedule& schedule_;
  Scoreboard& scoreboard_;
  sc_core::sc_event& freed_;
  sc_core::sc_event job_;
  bool busy_ = false;
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
