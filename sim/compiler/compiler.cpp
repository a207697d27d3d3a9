// The compiler driver: runs the passes, then maps and emits the layer groups in order.
//
//   passes/fuse_layer_groups   layers -> layer groups (Conv + BatchNorm + activation, ...)
//   passes/assign_layouts      which tensors are NHWC images in DRAM
//   mapping/                   per group, its map space: tiled dims and local-memory budgets
//   search/                    per group, the mapping chosen in it (greedy)
//   emit/                      per group, commands, dependencies and buffers
//   passes/layer_views         per group, its untiled GEMM, for the per-layer report
//
// Each group is mapped and then emitted before the next is mapped, so that errors come in layer
// order.
//
// The LayerNorm / GELU fusion (passes/fuse_layer_norm_gelu.h) is not run here: its patterns need
// the values of scalar constants (eps, 0.5, sqrt 2), which the Graph IR does not carry, so it runs
// where they are known, in the ONNX importer. On a graph JSON or topology it could never match.
#include "sim/compiler/compiler.h"

#include <memory>
#include <vector>

#include "sim/compiler/emit/emitter.h"
#include "sim/compiler/mapping/map_space.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/compiler/passes/layer_views.h"
#include "sim/compiler/search/cost_search.h"
#include "sim/compiler/search/search.h"
#include "sim/util/error.h"

namespace npusim {

Schedule compile_schedule(const Graph& graph, const HwConfig& config,
                          std::vector<std::string>* explain, const std::string& search_name) {
  check_graph(graph);
  const std::vector<LayerGroup> groups = fuse_layer_groups(graph);
  const TensorLayouts layouts = assign_layouts(graph, groups);
  const CostSearch cost_search;
  const std::unique_ptr<Search> search = make_search(search_name);
  Emitter emitter(graph, config, layouts);
  for (const LayerGroup& group : groups) {
    const MapSpace space = make_map_space(graph, group, layouts, config);
    SearchChoice choice;
    const GroupKind kind = group_kind(graph, group);
    if (search_name == "cost" && (kind == GroupKind::kVector || kind == GroupKind::kGlobalPool)) {
      choice = choose_slices_by_emission(graph, group, layouts, config);
    } else if (search_name == "cost") {
      choice = cost_search.choose_explained(space, config);
    } else {
      choice.mapping = search->choose(space, config);
    }
    if (explain != nullptr && space.kind != MappingKind::kNone) {
      explain->push_back(group.name + "\t" + describe_choice(choice));
    }
    emitter.emit_group(group, choice.mapping);
  }
  Schedule schedule = emitter.finish();
  schedule.layers = layer_views(graph, groups);
  // The same checks and costing as a schedule read from a file.
  Diagnostics diag(graph.source_file + " (compiled for " + config.name + ")");
  finalize_schedule(schedule, config, diag);
  diag.throw_if_any();
  return schedule;
}

}  // namespace npusim
