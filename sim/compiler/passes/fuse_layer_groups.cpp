#include "sim/compiler/passes/fuse_layer_groups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

namespace npusim {
namespace {

const std::vector<std::string_view> kFusableActivations = {
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu"};

class Grouper {
 public:
  explicit Grouper(const Graph& graph) : g_(graph) {
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      for (std::uint32_t t : g_.layers[l].inputs) consumers_[t].push_back(l);
    }
  }

  std::vector<LayerGroup> run() const {
    std::vector<LayerGroup> groups;
    std::vector<bool> done(g_.layers.size(), false);
    for (std::uint32_t l = 0; l < g_.layers.size(); ++l) {
      if (done[l]) continue;
      groups.push_back(make_group(l));
      for (std::uint32_t m : groups.back().layers) done[m] = true;
    }
    return groups;
  }

 private:
  // The one layer that reads `tensor`, unless it has several readers or is a graph output.
  std::optional<std::uint32_t> sole_consumer(std::uint32_t tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    if (std::find(g_.outputs.begin(), g_.outputs.end(), tensor) != g_.outputs.end()) {
      return std::nullopt;
    }
    return it->second.front();
  }

  LayerGroup make_group(std::uint32_t first) const {
    LayerGroup group;
    group.layers = {first};
    const Layer& head = g_.layers[first];
    group.output = head.outputs.at(0);
    if (classify_op(head.op) == OpClass::kArray) {
      auto next = sole_consumer(group.output);
      if (next && head.op == "Conv" && g_.layers[*next].op == "BatchNormalization") {
        group.layers.push_back(*next);
        group.output = g_.layers[*next].outputs.at(0);
        next = sole_consumer(group.output);
      } else if (next && head.op == "MatMul" && g_.layers[*next].op == "Add" &&
                 g_.layers[*next].inputs.size() == 2) {
        // A bias: the Add's other operand is a constant.
        const Layer& add = g_.layers[*next];
        const std::uint32_t other = add.inputs[0] == group.output ? add.inputs[1] : add.inputs[0];
        if (g_.tensors[other].constant) {
          group.layers.push_back(*next);
          group.extra_constants.push_back(other);
          group.output = add.outputs.at(0);
          next = sole_consumer(group.output);
        }
      }
      if (next && std::find(kFusableActivations.begin(), kFusableActivations.end(),
                            g_.layers[*next].op) != kFusableActivations.end()) {
        group.layers.push_back(*next);
        group.output = g_.layers[*next].outputs.at(0);
      }
    }
    name_group(group);
    return group;
  }

  void name_group(LayerGroup& group) const {
    if (group.layers.size() == 1) {
      group.name = g_.layers[group.layers[0]].name;
      group.loc = g_.layers[group.layers[0]].loc;
      return;
    }
    group.name = "fused(";
    std::string inner;
    for (std::size_t i = 0; i < group.layers.size(); ++i) {
      const Layer& l = g_.layers[group.layers[i]];
      group.name += (i ? "+" : "") + l.name;
      std::string loc = l.loc;
      if (loc.rfind("loc(", 0) == 0 && loc.back() == ')') loc = loc.substr(4, loc.size() - 5);
      inner += (i ? ", " : "") + loc;
    }
    group.name += ")";
    group.loc = "loc(fused[" + inner + "])";
  }

  const Graph& g_;
  std::map<std::uint32_t, std::vector<std::uint32_t>> consumers_;
};

}  // namespace

std::vector<LayerGroup> fuse_layer_groups(const Graph& graph) { return Grouper(graph).run(); }

GroupKind group_kind(const Graph& graph, const LayerGroup& group) {
  const std::string& op = graph.layers[group.layers[0]].op;
  const OpClass cls = classify_op(op);
  if (cls == OpClass::kView || op == "Concat" || op == "Split" || op == "Slice") {
    return GroupKind::kView;
  }
  if (cls == OpClass::kUnknown) return GroupKind::kUnknown;
  if (cls == OpClass::kHost) return GroupKind::kHost;
  if (cls == OpClass::kArray) return op == "Conv" ? GroupKind::kSpatial : GroupKind::kMatMul;
  if (op == "GlobalAveragePool") return GroupKind::kGlobalPool;
  if (op == "MaxPool" || op == "AveragePool") return GroupKind::kSpatial;
  return GroupKind::kVector;
}

}  // namespace npusim
