// The sharded compiler's driver (docs/multi-device.md, "The sharding compiler"): shards the
// graph (shard/tensor_parallel.h), compiles each step of the device graph once with the
// one-device compiler, and assembles the system's schedule:
//
//   EXT_HDMA of the inputs from the host to every device that reads them (and of each device's
//   weights with host.upload_weights)
//   SYNC: a barrier before the first neural-engine command (several devices only)
//   per step: its collectives (shard/collectives.h), then the step's commands once per device
//   EXT_HDMA of the outputs back to the host (each device its part of a split output)
//   SYNC: the end, which the next part of an LLM phase waits for (several devices only)
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim::shard {

// Which graph inputs arrive from the host and which outputs go back to it; nullopt: all of
// them. The others are already in (or stay in) the devices' DRAM: an LLM's hidden state
// between decoder layers, its KV cache.
struct HostIo {
  std::optional<std::set<std::string>> inputs;
  std::optional<std::set<std::string>> outputs;
  // Each device's weights cross too, before the start barrier (config host.upload_weights).
  bool weights = false;
};

// The one-device compiler, for each step.
using CompileStep = std::function<Schedule(const Graph& graph)>;

// Throws InputError naming the layer if a step cannot be compiled. The result is not finalized.
Schedule compile_sharded(const Graph& graph, const HwConfig& config, const HostIo& io,
                         const CompileStep& compile_step);

}  // namespace npusim::shard
