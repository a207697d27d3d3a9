// What a fused epilogue adds to a tile's loads (docs/compiler.md, "Groups and fusion"): a conv
// group with a residual Add also loads, per tile, the residual operand's elements at the tile's
// output pixels and channels, waiting only for the stores that wrote those rows.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/compiler/mapping/spatial.h"
#include "sim/compiler/mapping/vector.h"
#include "sim/compiler/passes/assign_layouts.h"
#include "sim/compiler/passes/fuse_layer_groups.h"
#include "sim/ir/graph.h"

namespace npusim {

// The pieces a spatial tile of output rows [r0, r1), columns [c0, c1) and `out_c` channels of
// image `img` loads: `pieces` (its input, or its weights when the input block is shared), then,
// when the group has a residual, the residual's share. An
// NHWC-image residual claims the tile's whole rows, as the output's store does; one in another
// layout claims all of it.
std::vector<Piece> with_residual(const Graph& graph, const LayerGroup& group,
                                 const TensorLayouts& layouts, const SpatialLayer& s,
                                 std::vector<Piece> pieces, std::uint64_t img, std::uint64_t r0,
                                 std::uint64_t r1, std::uint64_t c0, std::uint64_t c1,
                                 std::uint64_t out_c);

}  // namespace npusim
