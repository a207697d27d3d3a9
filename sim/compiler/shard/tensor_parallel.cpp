#include "sim/compiler/shard/tensor_parallel.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "sim/cost/link.h"

namespace npusim::shard {
namespace {

enum class Kind : std::uint8_t {
  kFree,  // a weight or graph input: any placement is had by loading that part
  kReplicated,
  kSplit,
  kPartial,
};

struct Placement {
  Kind kind = Kind::kReplicated;
  std::uint32_t dim = 0;  // kSplit only
  bool split(std::uint32_t d) const { return kind == Kind::kSplit && dim == d; }
  bool operator==(const Placement& o) const { return kind == o.kind && dim == o.dim; }
};

constexpr Placement kR{Kind::kReplicated, 0};
constexpr Placement kP{Kind::kPartial, 0};
constexpr Placement split_at(std::uint32_t dim) { return {Kind::kSplit, dim}; }

// What a layer does on each device: the placement each input must have, its output's, and its
// attributes there (a grouped conv runs 1/devices of its groups).
struct Decision {
  std::vector<Placement> inputs;
  Placement output = kR;
  Attributes attrs;
};

bool is_view(const std::string& op) { return classify_op(op) == OpClass::kView; }

// The dimension of `to` that holds the blocks of dimension `dim` of `from` after a reshape
// (same elements, row-major): a block of `dim` is a contiguous run of prod(from[dim..]) / devices
// elements in every outer index, as a block of dimension k of `to` is when prod(to[k..]) is
// the same number and to[k] divides.
std::optional<std::uint32_t> reshaped_dim(const std::vector<std::uint64_t>& from, std::uint32_t dim,
                                          const std::vector<std::uint64_t>& to,
                                          std::uint32_t devices) {
  std::uint64_t inner = 1;
  for (std::size_t i = dim; i < from.size(); ++i) inner *= from[i];
  std::uint64_t to_inner = 1;
  for (std::size_t k = to.size(); k-- > 0;) {
    to_inner *= to[k];
    if (to_inner == inner) {
      if (to[k] % devices == 0 && to[k] >= devices) return static_cast<std::uint32_t>(k);
      return std::nullopt;
    }
    if (to_inner > inner) return std::nullopt;
  }
  return std::nullopt;
}

std::uint32_t normalized_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(axis < 0 ? axis + r : axis, 0, r));
}

class Sharder {
 public:
  Sharder(const Graph& graph, const HwConfig& config)
      : g_(graph),
        config_(config),
        devices_(config.devices.count),
        placement_(graph.tensors.size(), kR),
        produced_(graph.tensors.size(), 0) {
    out_.devices = devices_;
    out_.device.name = graph.name;
    out_.device.source_file = graph.source_file;
    out_.device.batch = graph.batch;
    for (std::uint32_t t = 0; t < graph.tensors.size(); ++t) {
      if (graph.tensors[t].constant) placement_[t].kind = Kind::kFree;
    }
    for (std::uint32_t t : graph.inputs) placement_[t].kind = Kind::kFree;
  }

  ShardedGraph run() {
    for (const Layer& layer : g_.layers) apply(layer, decide(layer));
    for (std::uint32_t t : g_.outputs) {
      Placement p = current(t);
      if (p.kind == Kind::kPartial) p = kR;
      const std::uint32_t v = version(t, p);
      out_.outputs.push_back({v, g_.tensors[t].name, p.kind == Kind::kSplit});
      out_.device.outputs.push_back(v);
    }
    if (!step_.layers.empty() || !step_.collectives.empty()) out_.steps.push_back(step_);
    return std::move(out_);
  }

 private:
  const Tensor& tensor(std::uint32_t t) const { return g_.tensors[t]; }
  std::uint32_t rank(std::uint32_t t) const {
    return static_cast<std::uint32_t>(tensor(t).shape.size());
  }
  bool divides(std::uint32_t t, std::uint32_t dim) const {
    const auto& s = tensor(t).shape;
    return dim < s.size() && s[dim] % devices_ == 0 && s[dim] >= devices_;
  }
  // The placement a tensor has now; a free one counts as replicated until asked otherwise.
  Placement current(std::uint32_t t) const {
    return placement_[t].kind == Kind::kFree ? kR : placement_[t];
  }
  // Partial sums must be reduced before any op but a linear one.
  Placement reduced(std::uint32_t t) const {
    const Placement p = current(t);
    return p.kind == Kind::kPartial ? kR : p;
  }

  std::uint32_t new_tensor(std::uint32_t t, Placement p, const std::string& name) {
    Tensor copy = tensor(t);
    copy.name = name;
    if (p.kind == Kind::kSplit) copy.shape[p.dim] /= devices_;
    out_.device.tensors.push_back(std::move(copy));
    return static_cast<std::uint32_t>(out_.device.tensors.size() - 1);
  }

  void add_collective(CollectiveKind kind, std::uint32_t source, std::uint32_t result) {
    if (!step_.layers.empty()) {
      out_.steps.push_back(std::move(step_));
      step_ = {};
    }
    step_.collectives.push_back({kind, source, result});
  }

  std::uint32_t add_layer(Layer layer) {
    out_.device.layers.push_back(std::move(layer));
    const auto id = static_cast<std::uint32_t>(out_.device.layers.size() - 1);
    step_.layers.push_back(id);
    return id;
  }

  // The device tensor holding `t` with placement `want`, made by loading a free tensor's part,
  // a collective, or a local Slice of a replicated version.
  std::uint32_t version(std::uint32_t t, Placement want) {
    const auto key = std::make_tuple(t, want.kind, want.dim);
    if (const auto it = versions_.find(key); it != versions_.end()) return it->second;
    std::uint32_t v = 0;
    const Placement has = placement_[t];
    if (has.kind == Kind::kFree) {
      const bool split = want.kind == Kind::kSplit;
      v = new_tensor(t, want, split ? tensor(t).name + ".part" : tensor(t).name);
      if (!tensor(t).constant) {
        out_.device.inputs.push_back(v);
        out_.inputs.push_back({v, tensor(t).name, split});
      }
    } else if (has == want) {
      v = produced_[t];
    } else if (want.kind == Kind::kReplicated) {
      const bool partial = has.kind == Kind::kPartial;
      v = new_tensor(t, kR, tensor(t).name + (partial ? ".reduced" : ".gathered"));
      const Placement from = has.kind == Kind::kSplit || partial ? has : kR;
      add_collective(partial ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather,
                     version(t, from), v);
    } else {
      // A split from a replicated version: each device copies its block.
      const std::uint32_t whole = version(t, kR);
      v = new_tensor(t, want, tensor(t).name + ".slice");
      Layer slice;
      slice.name = tensor(t).name + ".slice";
      slice.op = "Slice";
      slice.inputs = {whole};
      slice.outputs = {v};
      slice.attrs.ints["axes"] = {want.dim};
      slice.attrs.ints["starts"] = {0};
      slice.attrs.ints["ends"] = {static_cast<std::int64_t>(tensor(t).shape[want.dim] / devices_)};
      slice.loc = "sharding";
      add_layer(std::move(slice));
    }
    versions_.emplace(key, v);
    return v;
  }

  void apply(const Layer& layer, Decision d) {
    Layer copy = layer;
    copy.attrs = std::move(d.attrs);
    for (std::size_t i = 0; i < layer.inputs.size(); ++i) {
      copy.inputs[i] = version(layer.inputs[i], d.inputs[i]);
    }
    for (std::size_t i = 0; i < layer.outputs.size(); ++i) {
      const std::uint32_t t = layer.outputs[i];
      copy.outputs[i] = new_tensor(t, d.output, tensor(t).name);
      placement_[t] = d.output;
      produced_[t] = copy.outputs[i];
      versions_.emplace(std::make_tuple(t, d.output.kind, d.output.dim), copy.outputs[i]);
    }
    if (d.output.kind == Kind::kReplicated && layer_macs(g_, layer) > 0) {
      out_.replicated_layers.push_back(layer.name);
    }
    add_layer(std::move(copy));
  }

  Decision decide(const Layer& l) const {
    if (l.outputs.size() != 1) return replicate(l);
    if (l.op == "MatMul") return matmul(l);
    if (l.op == "Conv") return conv(l);
    if (l.op == "BatchNormalization") return batch_norm(l);
    if (l.op == "MaxPool" || l.op == "AveragePool" || l.op == "GlobalAveragePool") return pool(l);
    if (l.op == "Softmax" || l.op == "LogSoftmax" || l.op == "LayerNorm") return normalize(l);
    if (l.op == "Transpose") return transpose(l);
    if (l.op == "Concat") return concat(l);
    if (l.op == "Slice") return slice(l);
    if (is_view(l.op)) return view(l);
    const OpClass cls = classify_op(l.op);
    if ((cls == OpClass::kVector && l.op != "ReduceMean" && l.op != "LRN") || l.op == "Cast") {
      return elementwise(l);
    }
    return replicate(l);
  }

  Decision replicate(const Layer& l) const {
    Decision d;
    d.inputs.assign(l.inputs.size(), kR);
    d.attrs = l.attrs;
    return d;
  }
  Decision keep(const Layer& l, Placement in0, Placement out) const {
    Decision d = replicate(l);
    d.inputs[0] = in0;
    d.output = out;
    return d;
  }

  Decision matmul(const Layer& l) const {
    const std::uint32_t a = l.inputs[0], b = l.inputs[1], y = l.outputs[0];
    const std::uint32_t ra = rank(a), rb = rank(b), ry = rank(y);
    Decision d = replicate(l);
    const Placement pa = reduced(a), pb = reduced(b);
    if (tensor(b).constant && rb == 2 && ra >= 2) {  // a linear layer
      if (pa.split(ra - 1) && divides(b, 0)) {       // row-parallel
        d.inputs[0] = pa;
        d.inputs[1] = split_at(0);
        d.output = kP;
      } else if (pa.kind == Kind::kSplit && pa.dim < ra - 1) {  // rows or batch
        d.inputs[0] = pa;
        d.output = split_at(pa.dim + ry - ra);
      } else if (divides(b, 1)) {  // column-parallel
        d.inputs[1] = split_at(1);
        if (l.inputs.size() > 2 && divides(l.inputs[2], rank(l.inputs[2]) - 1)) {
          d.inputs[2] = split_at(rank(l.inputs[2]) - 1);
        }
        d.output = split_at(ry - 1);
      }
      return d;
    }
    // Two activations (attention): a split batch dimension (heads) runs on its own.
    const auto batch_split = [&](std::uint32_t self, Placement p, std::uint32_t other,
                                 std::size_t self_index) -> std::optional<Decision> {
      if (p.kind != Kind::kSplit || p.dim + 2 >= rank(self)) return std::nullopt;
      const std::uint32_t j = p.dim + ry - rank(self);
      Decision s = replicate(l);
      s.inputs[self_index] = p;
      const std::int64_t jo = static_cast<std::int64_t>(j) - (ry - rank(other));
      if (jo >= 0 && tensor(other).shape[jo] == tensor(y).shape[j]) {
        s.inputs[1 - self_index] = split_at(static_cast<std::uint32_t>(jo));
      }
      s.output = split_at(j);
      return s;
    };
    if (auto s = batch_split(a, pa, b, 0)) return *s;
    if (auto s = batch_split(b, pb, a, 1)) return *s;
    if (pa.split(ra - 2) && pb.kind != Kind::kSplit) return keep(l, pa, split_at(ry - 2));
    if (pb.split(rb - 1) && pa.kind != Kind::kSplit) {
      d.inputs[1] = pb;
      d.output = split_at(ry - 1);
      return d;
    }
    if (pa.split(ra - 1) && pb.split(rb - 2)) {
      d.inputs[0] = pa;
      d.inputs[1] = pb;
      d.output = kP;
    }
    return d;
  }

  Decision conv(const Layer& l) const {
    const std::uint32_t x = l.inputs[0], w = l.inputs[1];
    const std::int64_t groups = l.attrs.get_int("group", 1);
    // A batch of graph inputs that divides runs data-parallel: each device its images.
    const bool batch_input = placement_[x].kind == Kind::kFree && divides(x, 0);
    const Placement px = batch_input ? split_at(0) : reduced(x);
    Decision d = replicate(l);
    if (px.split(0)) {  // images of a batch
      d.inputs[0] = px;
      d.output = split_at(0);
      return d;
    }
    const bool bias = l.inputs.size() > 2;
    if (groups == 1) {
      // Output channels that do not divide, or a gather that costs more than the split saves:
      // every device runs it whole.
      if (!divides(w, 0) || !split_pays(l)) return d;
    } else if (groups % devices_ != 0 || !divides(w, 0) || !divides(x, 1) ||
               (!px.split(1) && !split_pays(l))) {
      return d;  // on a replicated input, the split must pay for the gather it leads to
    } else {
      d.inputs[0] = split_at(1);  // a device runs its groups on their input channels
      d.attrs.ints["group"] = {groups / static_cast<std::int64_t>(devices_)};
    }
    d.inputs[1] = split_at(0);
    if (bias) d.inputs[2] = split_at(0);
    d.output = split_at(1);
    return d;
  }

  // Whether splitting a conv's output channels saves more array time than gathering its output
  // costs: (1 - 1/devices) of its MACs at the devices' peak rate against the gather's transfers
  // alone on their links (the shared link cost model): devices - 1 ring steps of a part, or a
  // part to the root and the rest back.
  bool split_pays(const Layer& l) const {
    const std::uint64_t peak =
        std::uint64_t{config_.slices.count} * config_.slices.rows * config_.slices.cols;
    const std::uint64_t saved = layer_macs(g_, l) / peak * (devices_ - 1) / devices_;
    const std::uint64_t whole = tensor(l.outputs[0]).bytes(), part = whole / devices_;
    const cost::LinkTiming link = cost::LinkTiming::device(config_);
    const std::uint64_t gather = config_.devices.topology == Topology::kRing
                                     ? (devices_ - 1) * cost::link_transfer_cycles(part, link)
                                     : cost::link_transfer_cycles(part, link) +
                                           cost::link_transfer_cycles(whole - part, link);
    return gather < saved;
  }

  Decision batch_norm(const Layer& l) const {
    const Placement px = reduced(l.inputs[0]);
    Decision d = keep(l, px, px);
    if (px.split(1)) {
      for (std::size_t i = 1; i < l.inputs.size(); ++i) d.inputs[i] = split_at(0);
    }
    return d;
  }

  Decision pool(const Layer& l) const {
    const Placement px = reduced(l.inputs[0]);
    return px.split(0) || px.split(1) ? keep(l, px, px) : replicate(l);
  }

  // Softmax normalises along `axis`, LayerNorm along `axis` and every later dimension: a split
  // before those keeps each row whole on one device.
  Decision normalize(const Layer& l) const {
    const Placement px = reduced(l.inputs[0]);
    const std::uint32_t axis = normalized_axis(l.attrs.get_int("axis", -1), rank(l.inputs[0]));
    if (px.kind == Kind::kSplit && px.dim < axis) return keep(l, px, px);
    return replicate(l);
  }

  Decision transpose(const Layer& l) const {
    const Placement px = current(l.inputs[0]);
    if (px.kind != Kind::kSplit) return keep(l, px, px);  // partial sums transpose too
    const std::uint32_t r = rank(l.inputs[0]);
    std::vector<std::int64_t> perm = l.attrs.get_ints("perm", {});
    if (perm.empty()) {
      for (std::uint32_t i = r; i-- > 0;) perm.push_back(i);
    }
    for (std::uint32_t i = 0; i < perm.size(); ++i) {
      if (perm[i] == px.dim) return keep(l, px, split_at(i));
    }
    return replicate(l);
  }

  Decision concat(const Layer& l) const {
    const std::uint32_t axis = normalized_axis(l.attrs.get_int("axis", 0), rank(l.outputs[0]));
    std::optional<std::uint32_t> dim;
    for (std::uint32_t t : l.inputs) {
      const Placement p = reduced(t);
      if (p.kind != Kind::kSplit) continue;
      if (p.dim == axis || (dim && *dim != p.dim) || rank(t) != rank(l.outputs[0])) {
        return replicate(l);
      }
      dim = p.dim;
    }
    if (!dim) return replicate(l);
    Decision d = replicate(l);
    d.inputs.assign(l.inputs.size(), split_at(*dim));
    d.output = split_at(*dim);
    return d;
  }

  Decision slice(const Layer& l) const {
    const Placement px = reduced(l.inputs[0]);
    if (px.kind != Kind::kSplit) return replicate(l);
    const std::uint32_t r = rank(l.inputs[0]);
    for (std::int64_t axis : l.attrs.get_ints("axes", {})) {
      if (normalized_axis(axis, r) == px.dim) return replicate(l);
    }
    if (!l.attrs.ints.count("axes")) return replicate(l);  // every axis is sliced
    return keep(l, px, px);
  }

  Decision view(const Layer& l) const {
    const std::uint32_t x = l.inputs[0], y = l.outputs[0];
    const Placement px = current(x);
    if (px.kind != Kind::kSplit) return keep(l, px, px);
    if (rank(x) == rank(y) && tensor(x).shape == tensor(y).shape) return keep(l, px, px);
    if (const auto k = reshaped_dim(tensor(x).shape, px.dim, tensor(y).shape, devices_)) {
      return keep(l, px, split_at(*k));
    }
    return replicate(l);
  }

  // Element-wise with numpy broadcasting: inputs split along one output dimension keep it; the
  // others are split along it too, unless they broadcast there.
  Decision elementwise(const Layer& l) const {
    const std::uint32_t y = l.outputs[0], ry = rank(y);
    std::optional<std::uint32_t> dim;
    for (std::uint32_t t : l.inputs) {
      const Placement p = reduced(t);
      if (p.kind != Kind::kSplit) continue;
      const std::uint32_t j = p.dim + ry - rank(t);
      if (rank(t) > ry || (dim && *dim != j)) return replicate(l);
      dim = j;
    }
    if (!dim) return replicate(l);
    Decision d = replicate(l);
    for (std::size_t i = 0; i < l.inputs.size(); ++i) {
      const std::uint32_t t = l.inputs[i];
      const std::int64_t j = static_cast<std::int64_t>(*dim) - (ry - rank(t));
      if (j >= 0 && tensor(t).shape[j] == tensor(y).shape[*dim]) {
        d.inputs[i] = split_at(static_cast<std::uint32_t>(j));
      }
    }
    d.output = split_at(*dim);
    return d;
  }

  const Graph& g_;
  const HwConfig& config_;
  std::uint32_t devices_;
  std::vector<Placement> placement_;     // per graph tensor, as produced (kFree: as loaded)
  std::vector<std::uint32_t> produced_;  // per graph tensor, the device tensor produced
  std::map<std::tuple<std::uint32_t, Kind, std::uint32_t>, std::uint32_t> versions_;
  ShardedGraph out_;
  Step step_;
};

}  // namespace

const char* collective_name(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce ? "all_reduce" : "all_gather";
}

ShardedGraph shard_tensor_parallel(const Graph& graph, const HwConfig& config) {
  check_graph(graph);
  if (config.devices.count > 1) return Sharder(graph, config).run();
  // One device: the graph as it is, in one step.
  ShardedGraph one;
  one.device = graph;
  one.steps.emplace_back();
  for (std::uint32_t l = 0; l < graph.layers.size(); ++l) one.steps[0].layers.push_back(l);
  for (std::uint32_t t : graph.inputs) one.inputs.push_back({t, graph.tensors[t].name, false});
  for (std::uint32_t t : graph.outputs) one.outputs.push_back({t, graph.tensors[t].name, false});
  return one;
}

Graph step_graph(const ShardedGraph& sharded, std::size_t step) {
  const Graph& d = sharded.device;
  std::set<std::uint32_t> needed_later(d.outputs.begin(), d.outputs.end());
  for (std::size_t s = step + 1; s < sharded.steps.size(); ++s) {
    for (const Collective& c : sharded.steps[s].collectives) needed_later.insert(c.source);
    for (std::uint32_t l : sharded.steps[s].layers) {
      needed_later.insert(d.layers[l].inputs.begin(), d.layers[l].inputs.end());
    }
  }
  Graph g;
  g.name = d.name;
  g.source_file = d.source_file;
  g.batch = d.batch;
  std::map<std::uint32_t, std::uint32_t> index;  // device tensor -> this graph's
  std::set<std::uint32_t> produced;
  const auto map = [&](std::uint32_t t) {
    const auto [it, added] = index.emplace(t, static_cast<std::uint32_t>(g.tensors.size()));
    if (added) g.tensors.push_back(d.tensors[t]);
    return it->second;
  };
  for (std::uint32_t l : sharded.steps[step].layers) {
    Layer layer = d.layers[l];
    for (std::uint32_t& t : layer.inputs) {
      const bool outside = !produced.count(t) && !d.tensors[t].constant;
      const bool first = !index.count(t);
      const std::uint32_t local = map(t);
      if (outside && first) g.inputs.push_back(local);
      t = local;
    }
    for (std::uint32_t& t : layer.outputs) {
      produced.insert(t);
      const std::uint32_t local = map(t);
      if (needed_later.count(t)) g.outputs.push_back(local);
      t = local;
    }
    g.layers.push_back(std::move(layer));
  }
  return g;
}

}  // namespace npusim::shard
