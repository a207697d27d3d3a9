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
      dispatch_cycles_(dispatch_cycles) {
  SC_THREAD(dispatch);
  for (std::uint32_t u = 0; u < units; ++u) {
    units_.push_back(make_unit(("unit" + std::to_string(u)).c_str(), wake_));
  }
}

std::optional<std::uint32_t> Engine::free_unit() const {
  for (std::uint32_t u = 0; u < units_.size(); ++u) {
    if (!units_[u]->busy()) return u;
  }
  return std::nullopt;
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
    std::optional<std::uint32_t> unit;
    while (!(unit = free_unit())) wait(wake_);
    units_[*unit]->reserve();
    if (dispatch_cycles_ > 0) wait(cycles(dispatch_cycles_));
    scoreboard_.started(command, *unit);
    units_[*unit]->start(command);
  }
}

}  // namespace npusim::platform
