// Tensor-parallel sharding (docs/multi-device.md, "The sharding compiler"): a Graph for one
// device of `devices` identical ones, cut into steps joined by collectives.
//
// Every tensor gets a placement: replicated (each device holds all of it), split along one
// dimension (each device holds 1/devices of it, a contiguous block of that dimension) or partial
// (each device holds all of it, and the true value is the sum over devices). Layers follow
// Megatron-LM's rules: a linear layer whose input is replicated is column-parallel (its weight
// split by output columns, its output split along the last dimension); one whose input is split
// along its reduction dimension is row-parallel (its output is partial). Attention, whose heads
// are split, runs head-parallel; element-wise and per-row ops keep the placement. A conv is
// output-channel parallel and gathers its input first. Where a layer needs a placement its input
// does not have, the pass inserts a collective (all-reduce for partial, all-gather for split) or,
// from a replicated tensor, a local Slice. Weights and graph inputs are split for free: each
// device's DRAM holds its part.
//
// The devices run the same graph on their own parts, so the result is one graph; the assembly
// (shard/assemble.h) copies its compiled steps once per device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/hw_config.h"
#include "sim/ir/graph.h"

namespace npusim::shard {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,  // partial -> replicated
  kAllGather,  // split along a dimension -> replicated
};
const char* collective_name(CollectiveKind kind);  // "all_reduce", "all_gather"

// A collective between steps: `source` (a tensor of the device graph, as each device holds it)
// becomes `result` (its replicated version, another tensor of the device graph).
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::uint32_t source = 0;
  std::uint32_t result = 0;
};

// Runs `collectives` (one after another, after every earlier step), then `layers` (indices into
// ShardedGraph::device.layers, a contiguous run in its order).
struct Step {
  std::vector<Collective> collectives;
  std::vector<std::uint32_t> layers;
};

// A graph input or output as the host link sees it: the device tensor, and whether every device
// holds its own part (split) or each holds all of it (replicated: the host sends it to every
// device, and device 0 sends it back).
struct HostTensor {
  std::uint32_t tensor = 0;  // in ShardedGraph::device
  std::string name;          // the original graph's name
  bool split = false;
};

struct ShardedGraph {
  std::uint32_t devices = 1;
  Graph device;  // one device's graph: shapes are the device's parts
  std::vector<Step> steps;
  std::vector<HostTensor> inputs;   // every device version of a graph input
  std::vector<HostTensor> outputs;  // the graph outputs, never partial
  // Layers every device runs whole (their shapes did not divide, or the op has no parallel
  // form): their MACs are counted once per device.
  std::vector<std::string> replicated_layers;
};

// For config.devices.count devices. A conv is split only when the array time it saves exceeds
// the gather of its output on the config's links. Throws InputError naming the layer if the
// graph breaks a graph check.
ShardedGraph shard_tensor_parallel(const Graph& graph, const HwConfig& config);

// The graph of the step's layers alone: its inputs are the tensors they read that earlier steps
// or the host produced, its outputs those that later steps, collectives or the host read.
Graph step_graph(const ShardedGraph& sharded, std::size_t step);

}  // namespace npusim::shard
