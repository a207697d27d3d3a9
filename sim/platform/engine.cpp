#include "sim/platform/engine.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

Engine::Engine(const sc_core::sc_module_name& name, const Schedule& schedule,
               std::vector<std::uint32_t> queue, Scoreboard& scoreboard,
               std::uint64_t dispatch_cycles, std::uint32_t units, const UnitFactory& make_unit)
    : sc_core::sc_module(name),
      schedule_(schedule),
      queue_(std::move(queue)),
      scoreboard_(scoreboard),
      dispatcher_(dispatch_cycles, units) {
  SC_THREAD(dispatch);
  for (std::uint32_t u = 0; u < units; ++u) {
    units_.push_back(make_unit(("unit" + std::to_string(u)).c_str(), dispatcher_, u, wake_));
  }
}

void Engine::dispatch() {
  for (; head_ < queue_.size(); ++head_) {
    const std::uint32_t command = queue_[head_];
    for (std::uint32_t dep : schedule_.commands[command].deps) {
      while (!scoreboard_.finished(dep)) {
        scoreboard_.notify_when_finished(dep, wake_);
        wait(wake_);
      }
    }
    while (dispatcher_.earliest_dispatch(now_cycles()) != now_cycles()) wait(wake_);
    const cost::QueueDispatcher::Grant grant = dispatcher_.dispatch(now_cycles());
    if (grant.start > now_cycles()) {
      wait(cycles(grant.start - now_cycles()));
      // Every unit that ends in this cycle releases its channel before the next dispatch picks
      // one: SystemC runs the processes woken at one time in an unspecified order.
      wait(sc_core::SC_ZERO_TIME);
    }
    scoreboard_.started(command, grant.channel);
    units_[grant.channel]->start(command);
  }
}

}  // namespace npusim::platform
