// The engines a config has, in report order: per slice its array and vector unit, then DMA_IN,
// DMA_OUT and the HOST (ops the NPU cannot run). One in-order command queue per engine.
//
// With several devices (devices.count > 1), or a schedule that uses the multi-device engines,
// each device also has EXT_HDMA, DEV_HDMA and SYNC queues, after its DMA_OUT. Devices come one
// after the other, their engines named "DEV<d>." + name when there are several; HOST stays last
// and single. A one-device run without those commands has exactly the engines above.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

class EngineLayout {
 public:
  EngineLayout(const HwConfig& config, const Schedule& schedule);
  std::uint32_t count() const { return static_cast<std::uint32_t>(engines_.size()); }
  std::uint32_t of(const Command& command) const;
  const profiler::EngineInfo& info(std::uint32_t engine) const { return engines_[engine]; }
  const std::vector<profiler::EngineInfo>& all() const { return engines_; }
  // Command indices per engine, in schedule order: the command processor's queues.
  std::vector<std::vector<std::uint32_t>> queues(const Schedule& schedule) const;

 private:
  std::uint32_t slices_;
  std::uint32_t per_device_;  // engines of one device
  std::uint32_t devices_;
  std::vector<profiler::EngineInfo> engines_;
};

// A layer's untiled GEMM in SCALE-Sim's terms on `config`'s array.
profiler::LayerInfo layer_info(const LayerView& layer, const HwConfig& config);

// Whether `schedule` on `config` has the multi-device engines (see EngineLayout).
bool uses_multi_device_engines(const HwConfig& config, const Schedule& schedule);

// The profiler's view of a schedule on a config. The schedule must have been checked against
// this config (finalize_schedule), whose costs it reads.
profiler::Workload make_workload(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim
