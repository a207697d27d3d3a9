// Pass: each layer group's untiled array GEMM, as SCALE-Sim maps a layer (Schedule::layers).
// Reports compare the tiles the compiler emits with this whole-layer view (`report --layers`).
#pragma once

#include <vector>

#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim {

// One view per group that emits commands, named as its commands' `layer`. A Conv (not depthwise)
// is `group` GEMMs of (N * out_h * out_w) x (kh * kw * C / group) x (K / group); a MatMul is
// batch GEMMs of M x K x N, its batch the product of the output's leading dimensions. Other
// groups have no array view.
std::vector<LayerView> layer_views(const Graph& graph, const std::vector<LayerGroup>& groups);

}  // namespace npusim
