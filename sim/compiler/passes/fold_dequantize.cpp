#include "sim/compiler/passes/fold_dequantize.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace npusim {
namespace {

bool is_graph_output(const Graph& g, std::uint32_t t) {
  return std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end();
}

// Drops tensors that no layer, input or output refers to any more, keeping the others' order.
void drop_unused_tensors(Graph& g, const std::set<std::uint32_t>& candidates) {
  std::vector<bool> used(g.tensors.size(), false);
  for (std::uint32_t t : g.inputs) used[t] = true;
  for (std::uint32_t t : g.outputs) used[t] = true;
  for (const Layer& l : g.layers) {
    for (std::uint32_t t : l.inputs) used[t] = true;
    for (std::uint32_t t : l.outputs) used[t] = true;
  }
  std::vector<std::uint32_t> renumber(g.tensors.size(), 0);
  std::vector<Tensor> tensors;
  for (std::uint32_t t = 0; t < g.tensors.size(); ++t) {
    if (!used[t] && candidates.count(t) != 0) continue;
    renumber[t] = static_cast<std::uint32_t>(tensors.size());
    tensors.push_back(std::move(g.tensors[t]));
  }
  g.tensors = std::move(tensors);
  for (std::uint32_t& t : g.inputs) t = renumber[t];
  for (std::uint32_t& t : g.outputs) t = renumber[t];
  for (Layer& l : g.layers) {
    for (std::uint32_t& t : l.inputs) t = renumber[t];
    for (std::uint32_t& t : l.outputs) t = renumber[t];
  }
}

}  // namespace

std::size_t fold_dequantize(Graph& g) {
  std::map<std::uint32_t, std::uint32_t> replace;  // dequantised tensor -> the integer one
  std::set<std::uint32_t> removed_outputs;
  std::set<std::uint32_t> integers;  // the tensors readers now read instead, and views of them
  // Layers stay in place until the end: moves_no_data walks back through the writers of a
  // view's input, which must all still be there (the folded Dequantizes too: no reader reads
  // their outputs any more, so no walk passes them).
  std::vector<bool> keep(g.layers.size(), true);
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    for (std::uint32_t& t : l.inputs) {
      const auto it = replace.find(t);
      if (it != replace.end()) t = it->second;
    }
    if (l.op == "Dequantize" && !l.inputs.empty() && l.outputs.size() == 1 &&
        !g.tensors[l.inputs[0]].constant) {
      replace[l.outputs[0]] = l.inputs[0];
      integers.insert(l.inputs[0]);
      // One that writes a graph output stays, for that output alone.
      if (!is_graph_output(g, l.outputs[0])) {
        removed_outputs.insert(l.outputs[0]);
        keep[i] = false;
        continue;
      }
    }
    if (moves_no_data(g, l)) {
      // A view or in-place copy of integer tensors only: its outputs hold those integers.
      std::set<DType> dtypes;
      bool any_replaced = false;
      for (std::uint32_t t : l.inputs) {
        if (g.tensors[t].constant) continue;
        dtypes.insert(g.tensors[t].dtype);
        any_replaced = any_replaced || integers.count(t) != 0;
      }
      if (any_replaced && dtypes.size() == 1 && dtype_bytes(*dtypes.begin()) == 1) {
        for (std::uint32_t t : l.outputs) {
          g.tensors[t].dtype = *dtypes.begin();
          integers.insert(t);
        }
      }
    }
  }
  std::vector<Layer> layers;
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    if (keep[i]) layers.push_back(std::move(g.layers[i]));
  }
  const std::size_t folded = g.layers.size() - layers.size();
  g.layers = std::move(layers);
  if (folded > 0) drop_unused_tensors(g, removed_outputs);
  return folded;
}

}  // namespace npusim
