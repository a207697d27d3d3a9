#include "sim/ir/engines.h"

#include "sim/cost/compute.h"
#include "sim/cost/evaluator.h"
#include "sim/cost/link.h"
#include "sim/util/math.h"

#include <algorithm>
#include <filesystem>

namespace npusim {

bool uses_multi_device_engines(const HwConfig& config, const Schedule& schedule) {
  if (config.devices.count > 1) return true;
  return std::any_of(schedule.commands.begin(), schedule.commands.end(),
                     [](const Command& c) { return is_multi_device(c.engine); });
}

EngineLayout::EngineLayout(const HwConfig& config, const Schedule& schedule)
    : slices_(config.slices.count), devices_(config.devices.count) {
  using profiler::EngineKind;
  const bool multi = uses_multi_device_engines(config, schedule);
  per_device_ = 2 * slices_ + 2 + (multi ? 3 : 0);
  // Track groups as the RBLN profiler names them (its neural engine clusters are our slices).
  const std::string nec = "Neural Engine Clusters";
  for (std::uint32_t d = 0; d < devices_; ++d) {
    const std::string dev = devices_ > 1 ? profiler::device_prefix(d) : "";
    for (std::uint32_t s = 0; s < slices_; ++s) {
      const std::string slice = dev + "SLICE" + std::to_string(s);
      engines_.push_back({slice + ".ARRAY", EngineKind::kArray, 1, s, d, nec});
      engines_.push_back({slice + ".VECTOR", EngineKind::kVector, 1, s, d, nec});
    }
    engines_.push_back(
        {dev + "DMA_IN", EngineKind::kDmaIn, config.dma.in_channels, 0, d, "Task DMA"});
    engines_.push_back(
        {dev + "DMA_OUT", EngineKind::kDmaOut, config.dma.out_channels, 0, d, "Task DMA"});
    if (multi) {
      engines_.push_back({dev + "EXT_HDMA", EngineKind::kExtHdma, config.host.link_channels, 0, d,
                          "External HDMA"});
      engines_.push_back({dev + "DEV_HDMA", EngineKind::kDevHdma, config.devices.dma_channels, 0, d,
                          "Device HDMA"});
      engines_.push_back({dev + "SYNC", EngineKind::kSync, 1, 0, d, "Device Sync"});
    }
  }
  engines_.push_back({"HOST", EngineKind::kHost, 1, 0, 0, "Host"});
}

std::uint32_t EngineLayout::of(const Command& command) const {
  const std::uint32_t base = command.device * per_device_;
  switch (command.engine) {
    case EngineKind::kArray:
      return base + 2 * command.slice;
    case EngineKind::kVector:
      return base + 2 * command.slice + 1;
    case EngineKind::kDmaIn:
      return base + 2 * slices_;
    case EngineKind::kDmaOut:
      return base + 2 * slices_ + 1;
    case EngineKind::kExtHdma:
      return base + 2 * slices_ + 2;
    case EngineKind::kDevHdma:
      return base + 2 * slices_ + 3;
    case EngineKind::kSync:
      return base + 2 * slices_ + 4;
    case EngineKind::kHost:
      break;
  }
  return devices_ * per_device_;
}

std::vector<std::vector<std::uint32_t>> EngineLayout::queues(const Schedule& schedule) const {
  std::vector<std::vector<std::uint32_t>> queues(engines_.size());
  for (std::uint32_t i = 0; i < schedule.commands.size(); ++i) {
    queues[of(schedule.commands[i])].push_back(i);
  }
  return queues;
}

profiler::LayerInfo layer_info(const LayerView& layer, const HwConfig& config) {
  profiler::LayerInfo info;
  info.name = layer.name;
  info.on_array = layer.on_array;
  if (!layer.on_array) return info;
  const SliceConfig& s = config.slices;
  const GemmShape& g = layer.gemm;
  cost::GemmMapping map;
  try {
    map = cost::map_gemm(s.rows, s.cols, s.dataflow, g.m, g.n, g.k);
    info.ideal_cycles =
        checked_mul(g.batch, cost::systolic_gemm_cycles(s.rows, s.cols, s.dataflow, g.m, g.n, g.k));
    info.macs = checked_mul(checked_mul(checked_mul(g.batch, g.m), g.n), g.k);
  } catch (const std::overflow_error&) {
    info.on_array = false;  // a whole layer past 64 bits: no closed form to compare with
    return info;
  }
  info.gemms = g.batch;
  info.sr = map.sr, info.sc = map.sc, info.t = map.t;
  info.folds = map.folds;
  // SCALE-Sim averages per-fold figures; over a product of folds the means factor exactly.
  const double pes = static_cast<double>(s.rows) * s.cols;
  info.mapping_efficiency_pct = 100.0 * static_cast<double>(map.sr) * static_cast<double>(map.sc) /
                                (static_cast<double>(map.folds) * pes);
  info.compute_utilisation_pct = info.mapping_efficiency_pct * static_cast<double>(map.t) /
                                 static_cast<double>(map.util_fold_cycles);
  return info;
}

profiler::Workload make_workload(const Schedule& schedule, const HwConfig& config) {
  const EngineLayout layout(config, schedule);
  profiler::Workload w;
  w.model_name = schedule.model.name;
  w.model_file = std::filesystem::path(schedule.file).filename().string();
  w.device.config_name = config.name;
  w.device.clock_khz = config.clock_khz;
  w.device.slices = config.slices.count;
  w.device.array_rows = config.slices.rows;
  w.device.array_cols = config.slices.cols;
  w.device.dataflow = dataflow_name(config.slices.dataflow);
  w.device.lram_bytes = config.lram_bytes;
  w.device.dram_bandwidth_mbps = config.dram.bandwidth_mbps;
  w.device.dma_in_channels = config.dma.in_channels;
  w.device.dma_out_channels = config.dma.out_channels;
  w.device.dma_bytes_per_cycle = config.dma.bytes_per_cycle;
  w.device.ideal_memory = config.ideal_memory;
  if (!config.ideal_memory) {
    w.device.dma_burst_bytes = config.dma.burst_bytes;
    w.device.dma_max_outstanding = config.dma.max_outstanding;
    w.device.dram_channels = config.dram.channels;
    w.device.dram_latency_cycles = config.dram_latency_cycles();
  }
  w.device.slice_static_uw = config.energy.slice_static_uw;
  w.device.dram_static_uw = config.energy.dram_static_uw;
  // With ideal memory links take no cycles: rates of 0 give link bounds of 0.
  const cost::LinkTiming host = cost::LinkTiming::host(config);
  const cost::LinkTiming link = cost::LinkTiming::device(config);
  w.device.host_link_mbps = config.ideal_memory ? 0 : host.mbps;
  w.device.host_link_channels = config.host.link_channels;
  w.device.host_link_latency_cycles = host.ideal ? 0 : host.latency_cycles;
  w.device.device_link_mbps = config.ideal_memory ? 0 : link.mbps;
  w.device.device_link_latency_cycles = link.ideal ? 0 : link.latency_cycles;
  w.engines = layout.all();
  for (const Program& p : schedule.programs) w.programs.push_back({p.name, p.loc});
  w.commands.reserve(schedule.commands.size());
  // The schedule's checks costed every command on this config, so energy() cannot overflow.
  const cost::Evaluator evaluator(config, schedule.model);
  for (const Command& c : schedule.commands) {
    profiler::CommandInfo info;
    info.id = c.id;
    info.engine = layout.of(c);
    info.op_type = on_slice(c.engine)              ? std::string(op_table()[c.op].name)
                   : c.engine == EngineKind::kHost ? std::string("Host")
                                                   : std::string(schedule_engine_name(c.engine));
    info.layer = c.layer;
    info.location = c.loc;
    info.program = c.program;
    info.dram_read_bytes = c.engine == EngineKind::kDmaIn ? c.bytes : 0;
    info.dram_write_bytes = c.engine == EngineKind::kDmaOut ? c.bytes : 0;
    if (is_link(c.engine)) {
      info.link_bytes = c.bytes;
      info.peer = c.peer;
      info.to_device = c.to_device;
    }
    info.macs = c.macs;
    info.vector_macs = c.vector_macs;
    info.lram_alloc_bytes = c.lram_alloc_bytes;
    info.lram_free_bytes = c.lram_free_bytes;
    info.isolated_cycles = c.isolated_cycles;
    info.energy = evaluator.energy(c);
    info.deps = c.deps;
    w.commands.push_back(std::move(info));
  }
  for (const LayerView& l : schedule.layers) w.layers.push_back(layer_info(l, config));
  return w;
}

}  // namespace npusim
