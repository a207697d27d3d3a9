#include "sim/platform/scoreboard.h"

#include "sim/platform/sc_time.h"

namespace npusim::platform {

Scoreboard::Scoreboard(std::size_t commands, profiler::EventSink& sink)
    : finished_(commands, false), waiters_(commands), sink_(sink) {}

void Scoreboard::notify_when_finished(std::uint32_t command, sc_core::sc_event& wake) {
  waiters_[command].push_back(&wake);
}

void Scoreboard::started(std::uint32_t command, std::uint32_t unit) {
  sink_.command_started(command, now_cycles(), unit);
}

void Scoreboard::finish(std::uint32_t command) {
  finished_[command] = true;
  ++finished_count_;
  sink_.command_finished(command, now_cycles());
  for (sc_core::sc_event* wake : waiters_[command]) wake->notify();
  waiters_[command].clear();
  waiters_[command].shrink_to_fit();
}

}  // namespace npusim::platform
