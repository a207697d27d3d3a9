// Which commands have finished, and who waits for which. Plain C++ with SystemC events: the
// command processor's dispatchers wait on it, units report to it.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "profiler/timeline.h"

namespace npusim::platform {

class Scoreboard {
 public:
  Scoreboard(std::size_t commands, profiler::EventSink& sink);
  bool finished(std::uint32_t command) const { return finished_[command]; }
  const std::vector<bool>& all_finished() const { return finished_; }
  std::size_t finished_count() const { return finished_count_; }
  // Notifies `wake` (immediately) when `command` finishes.
  void notify_when_finished(std::uint32_t command, sc_core::sc_event& wake);
  void started(std::uint32_t command, std::uint32_t unit);
  profiler::EventSink& sink() { return sink_; }
  void finish(std::uint32_t command);

 private:
  std::vector<bool> finished_;
  std::vector<std::vector<sc_core::sc_event*>> waiters_;
  std::size_t finished_count_ = 0;
  profiler::EventSink& sink_;
};

}  // namespace npusim::platform
