#include "profiler/figures.h"

namespace npusim::profiler {

const RunStats& TimelineFigures::stats() const {
  if (!stats_) stats_ = compute_stats(*workload_, *timeline_);
  return *stats_;
}

const std::vector<CommandStalls>& TimelineFigures::stalls() const {
  if (!stalls_) stalls_ = command_stalls(*workload_, *timeline_);
  return *stalls_;
}

const EnergyStats& TimelineFigures::energy() const {
  if (!energy_) energy_ = compute_energy(*workload_, timeline_->total_cycles());
  return *energy_;
}

const std::vector<DeviceStats>& TimelineFigures::devices() const {
  if (!devices_) devices_ = compute_device_stats(*workload_, *timeline_);
  return *devices_;
}

const TimelineFigures& figures_of(const TimelineFigures* given, const Workload& workload,
                                  const Timeline& timeline, std::optional<TimelineFigures>& local) {
  if (given != nullptr && given->of(workload, timeline)) return *given;
  return local.emplace(workload, timeline);
}

}  // namespace npusim::profiler
