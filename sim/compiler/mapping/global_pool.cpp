#include "sim/compiler/mapping/global_pool.h"

#include "sim/util/math.h"

namespace npusim {

std::uint64_t GlobalPoolLayer::tile_bytes(std::uint64_t channels) const {
  return h * w * channels * in_elem_bytes + channels * out_elem_bytes;
}

GlobalPoolLayer describe_global_pool(const Graph& graph, const LayerGroup& group) {
  const Layer& l = graph.layers[group.layers[0]];
  const Tensor& x = graph.tensors[l.inputs[0]];
  const Tensor& y = graph.tensors[group.output];
  GlobalPoolLayer p;
  p.input = l.inputs[0];
  p.n = x.shape[0], p.c = x.shape[1], p.h = x.shape[2], p.w = x.shape[3];
  p.in_elem_bytes = dtype_bytes(x.dtype);
  p.out_elem_bytes = dtype_bytes(y.dtype);
  p.input_bytes = x.bytes();
  return p;
}

MapSpace global_pool_map_space(const GroupContext& ctx) {
  const GlobalPoolLayer p = describe_global_pool(ctx.graph, ctx.group);
  MapSpace space;
  space.kind = MappingKind::kGlobalPool;
  space.dims = {{"channels", p.c, {}}};
  space.fit_rules = {{{0},
                      [p](const TileSizes& t) { return p.tile_bytes(t[0]); },
                      ctx.budgets.tile_bytes,
                      "one channel",
                      1}};
  space.tiles = [p](const TileSizes& t) { return p.n * ceil_div(p.c, t[0]); };
  space.spread_dim = 0;
  space.to_mapping = [](const TileSizes& t) {
    Mapping m;
    m.kind = MappingKind::kGlobalPool;
    m.tile_channel_units = t[0];
    return m;
  };
  return space;
}

}  // namespace npusim
