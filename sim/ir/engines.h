// The engines a config has, in report order: per slice its array and vector unit, then DMA_IN,
// DMA_OUT and the HOST (ops the NPU cannot run). One in-order command queue per engine.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/timeline.h"
#include "sim/config/hw_config.h"
#include "sim/ir/schedule.h"

namespace npusim {

class EngineLayout {
 public:
  explicit EngineLayout(const HwConfig& config);
  std::uint32_t count() const { return static_cast<std::uint32_t>(engines_.size()); }
  std::uint32_t of(const Command& command) const;
  const profiler::EngineInfo& info(std::uint32_t engine) const { return engines_[engine]; }
  const std::vector<profiler::EngineInfo>& all() const { return engines_; }
  // Command indices per engine, in schedule order: the command processor's queues.
  std::vector<std::vector<std::uint32_t>> queues(const Schedule& schedule) const;

 private:
  std::uint32_t slices_;
  std::vector<profiler::EngineInfo> engines_;
};

// A layer's untiled GEMM in SCALE-Sim's terms on `config`'s array.
profiler::LayerInfo layer_info(const LayerView& layer, const HwConfig& config);

// The profiler's view of a schedule on a config.
profiler::Workload make_workload(const Schedule& schedule, const HwConfig& config);

}  // namespace npusim
