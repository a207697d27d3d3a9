#include "sim/platform/command_unit.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

CommandUnit::CommandUnit(const sc_core::sc_module_name& name, const Schedule& schedule,
                         Scoreboard& scoreboard, cost::QueueDispatcher& dispatcher,
                         std::uint32_t channel, sc_core::sc_event& freed)
    : sc_core::sc_module(name),
      schedule_(schedule),
      scoreboard_(scoreboard),
      dispatcher_(dispatcher),
      channel_(channel),
      freed_(freed) {
  SC_THREAD(run);
}

void CommandUnit::start(std::uint32_t command) {
  command_ = command;
  has_job_ = true;
  job_.notify();
}

void CommandUnit::run() {
  while (true) {
    while (!has_job_) wait(job_);
    has_job_ = false;
    execute(schedule_.commands[command_]);
    dispatcher_.release(channel_, now_cycles());
    scoreboard_.finish(command_);
    freed_.notify();
  }
}

void ComputeUnit::execute(const Command& command) { wait(cycles(command.compute_cycles)); }

}  // namespace npusim::platform
