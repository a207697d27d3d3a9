// The figures of one timeline of a workload that several writers of a run's outputs need: its
// statistics, every command's stalls, its energy and its per-device figures. Each is computed on
// first use and then kept. On a schedule of 10^5 commands each costs tens of milliseconds, and
// summary.txt, stats.json, runtime.csv and the traces each used to compute its own (a run computed
// the statistics seven times and the stalls six).
#pragma once

#include <optional>
#include <vector>

#include "profiler/energy.h"
#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

class TimelineFigures {
 public:
  // Both must outlive the figures and stay unchanged. `stats`, when given, must be
  // compute_stats(workload, timeline) (computed earlier, say to check local memory).
  TimelineFigures(const Workload& workload, const Timeline& timeline,
                  std::optional<RunStats> stats = std::nullopt)
      : workload_(&workload), timeline_(&timeline), stats_(std::move(stats)) {}

  const Workload& workload() const { return *workload_; }
  const Timeline& timeline() const { return *timeline_; }
  // Whether these are the figures of these very objects.
  bool of(const Workload& workload, const Timeline& timeline) const {
    return workload_ == &workload && timeline_ == &timeline;
  }

  const RunStats& stats() const;                     // compute_stats
  const std::vector<CommandStalls>& stalls() const;  // command_stalls
  const EnergyStats& energy() const;                 // compute_energy over the total cycles
  const std::vector<DeviceStats>& devices() const;   // compute_device_stats

  // Frees the stalls (16 bytes a command) once their last user is done; they are computed again
  // if asked for.
  void release_stalls() { stalls_.reset(); }

 private:
  const Workload* workload_;
  const Timeline* timeline_;
  mutable std::optional<RunStats> stats_;
  mutable std::optional<std::vector<CommandStalls>> stalls_;
  mutable std::optional<EnergyStats> energy_;
  mutable std::optional<std::vector<DeviceStats>> devices_;
};

// `given` if it holds the figures of (workload, timeline); otherwise fresh ones, made in `local`.
const TimelineFigures& figures_of(const TimelineFigures* given, const Workload& workload,
                                  const Timeline& timeline, std::optional<TimelineFigures>& local);

}  // namespace npusim::profiler
