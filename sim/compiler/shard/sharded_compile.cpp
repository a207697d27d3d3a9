#include "sim/compiler/shard/sharded_compile.h"

#include <map>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/shard/collectives.h"
#include "sim/compiler/shard/tensor_parallel.h"
#include "sim/ir/schedule_append.h"
#include "sim/util/error.h"

namespace npusim::shard {
namespace {

bool crosses(const std::optional<std::set<std::string>>& names, const std::string& name) {
  return !names || names->count(name) > 0;
}

// The graph of one element-wise Add of two vectors, for the reductions of all-reduce.
Graph reduction_graph(std::uint64_t elements, DType dtype) {
  Graph g;
  g.name = "reduction";
  for (const char* name : {"partial", "received", "sum"}) {
    Tensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = {elements};
    g.tensors.push_back(t);
  }
  Layer add;
  add.name = "reduce";
  add.op = "Add";
  add.inputs = {0, 1};
  add.outputs = {2};
  g.layers.push_back(add);
  g.inputs = {0, 1};
  g.outputs = {2};
  return g;
}

class Assembler {
 public:
  Assembler(const ShardedGraph& sharded, const HwConfig& config, const CompileStep& compile_step)
      : sg_(sharded),
        config_(config),
        compile_step_(compile_step),
        appender_(out_),
        frontier_(sharded.devices) {}

  Schedule run(const Graph& graph, const HostIo& io) {
    program_ = appender_.add_program({"host and collectives", "sharding"});
    for (const HostTensor& in : sg_.inputs) {
      if (!crosses(io.inputs, in.name)) continue;
      for (std::uint32_t d = 0; d < sg_.devices; ++d) {
        frontier_[d].push_back(host_transfer(d, true, "host.input." + in.name, bytes_of(in), {}));
      }
    }
    if (io.weights) {  // each device's: its parts of split weights, all of the others
      for (std::uint32_t d = 0; d < sg_.devices; ++d) {
        frontier_[d].push_back(
            host_transfer(d, true, "host.weights", sg_.device.weights_bytes(), {}));
      }
    }
    barrier("barrier.start");
    std::uint64_t weights_bytes = 0;
    for (std::size_t s = 0; s < sg_.steps.size(); ++s) {
      for (const Collective& c : sg_.steps[s].collectives) collective(c);
      if (sg_.steps[s].layers.empty()) continue;
      const Schedule part = compile_step_(step_graph(sg_, s));
      check_size(graph, part, s);
      weights_bytes += part.model.weights_bytes;
      std::optional<std::uint32_t> programs;
      for (std::uint32_t d = 0; d < sg_.devices; ++d) {
        AppendOptions options;
        options.device = d;
        options.root_deps = frontier_[d];
        options.program_base = programs;
        options.add_layer_views = d == 0;
        const AppendedPart placed = appender_.append(part, options);
        programs = placed.program_base;
        if (!placed.sinks.empty()) frontier_[d] = placed.sinks;
      }
    }
    for (const HostTensor& o : sg_.outputs) {
      if (!crosses(io.outputs, o.name)) continue;
      for (std::uint32_t d = 0; d < (o.split ? sg_.devices : 1); ++d) {
        frontier_[d] = {
            host_transfer(d, false, "host.output." + o.name, bytes_of(o), frontier_[d])};
      }
    }
    barrier("barrier.end");
    out_.model.name = graph.name;
    out_.model.batch = graph.batch;
    out_.model.weights_bytes = weights_bytes * sg_.devices;
    out_.model.inputs.clear();
    out_.model.outputs.clear();
    for (std::uint32_t t : graph.inputs)
      out_.model.inputs.push_back(describe_tensor(graph.tensors[t]));
    for (std::uint32_t t : graph.outputs) {
      out_.model.outputs.push_back(describe_tensor(graph.tensors[t]));
    }
    // As the one-device compiler's emitter fills them.
    out_.file = graph.source_file;
    out_.target_config = config_.name;
    out_.target_slices = config_.slices.count;
    return std::move(out_);
  }

 private:
  // The copies of every step stay within the schedule's command limit, checked before they are
  // made: the step's commands on every device.
  void check_size(const Graph& graph, const Schedule& part, std::size_t step) const {
    const std::uint64_t total =
        out_.commands.size() + std::uint64_t{part.commands.size()} * sg_.devices;
    if (total <= kMaxCommands) return;
    const std::uint32_t first = sg_.steps[step].layers.front();
    throw InputError(
        graph.source_file,
        "layer '" + sg_.device.layers[first].name + "' " + sg_.device.layers[first].loc,
        "compiling for " + std::to_string(sg_.devices) + " devices takes more than " +
            std::to_string(kMaxCommands) +
            " commands up to this layer (each device runs its own copy); fewer "
            "devices or a larger lram_kib would fit");
  }

  std::uint64_t bytes_of(const HostTensor& t) const { return sg_.device.tensors[t.tensor].bytes(); }

  std::uint32_t host_transfer(std::uint32_t device, bool to_device, const std::string& layer,
                              std::uint64_t bytes, const std::vector<std::uint32_t>& deps) {
    Command c;
    c.id = "EH";
    c.engine = EngineKind::kExtHdma;
    c.device = device;
    c.to_device = to_device;
    c.bytes = bytes;
    c.deps = deps;
    c.layer = layer;
    c.program = program_;
    return appender_.add(std::move(c));
  }

  // A SYNC on device 0 joining every device: it waits for every device's frontier, and every
  // device's next command waits for it.
  void barrier(const std::string& layer) {
    if (sg_.devices == 1) return;  // one device has its commands in order by their dependencies
    Command c;
    c.id = "DS";
    c.engine = EngineKind::kSync;
    for (std::uint32_t d = 1; d < sg_.devices; ++d) c.peers.push_back(d);
    for (const auto& deps : frontier_) c.deps.insert(c.deps.end(), deps.begin(), deps.end());
    c.layer = layer;
    c.program = program_;
    const std::uint32_t sync = appender_.add(std::move(c));
    for (auto& deps : frontier_) deps = {sync};
  }

  void collective(const Collective& c) {
    const Tensor& result = sg_.device.tensors[c.result];
    CollectiveCommands cmds;
    cmds.kind = c.kind;
    cmds.layer = std::string("collective.") + collective_name(c.kind) + "." + result.name;
    cmds.elements = result.elements();
    cmds.element_bytes = dtype_bytes(result.dtype);
    cmds.program = program_;
    const ReductionPart reduction = [&](std::uint64_t elements) -> const Schedule& {
      auto it = reductions_.find({elements, result.dtype});
      if (it == reductions_.end()) {
        it = reductions_
                 .emplace(std::make_pair(elements, result.dtype),
                          compile_step_(reduction_graph(elements, result.dtype)))
                 .first;
      }
      return it->second;
    };
    emit_collective(cmds, config_.devices, reduction, appender_, frontier_);
  }

  const ShardedGraph& sg_;
  const HwConfig& config_;
  const CompileStep& compile_step_;
  Schedule out_;
  ScheduleAppender appender_;
  Frontier frontier_;
  std::uint32_t program_ = 0;
  std::map<std::pair<std::uint64_t, DType>, Schedule> reductions_;
};

}  // namespace

Schedule compile_sharded(const Graph& graph, const HwConfig& config, const HostIo& io,
                         const CompileStep& compile_step) {
  const ShardedGraph sharded = shard_tensor_parallel(graph, config);
  return Assembler(sharded, config, compile_step).run(graph, io);
}

}  // namespace npusim::shard
