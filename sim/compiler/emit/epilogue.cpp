#include "sim/compiler/emit/epilogue.h"

namespace npusim {

std::vector<Piece> with_residual(const Graph& graph, const LayerGroup& group,
                                 const TensorLayouts& layouts, const SpatialLayer& s,
                                 std::vector<Piece> pieces, std::uint64_t img, std::uint64_t r0,
                                 std::uint64_t r1, std::uint64_t c0, std::uint64_t c1,
                                 std::uint64_t out_c) {
  if (!group.residual) return pieces;
  const Tensor& r = graph.tensors[*group.residual];
  const std::uint64_t row_bytes = s.ow * s.k * s.residual_elem_bytes;
  Piece piece{*group.residual, 0, r.bytes(), (r1 - r0) * (c1 - c0) * out_c * s.residual_elem_bytes};
  if (layouts.is_image(*group.residual)) {
    piece.lo = (img * s.oh + r0) * row_bytes;
    piece.hi = (img * s.oh + r1) * row_bytes;
  }
  pieces.push_back(piece);
  return pieces;
}

}  // namespace npusim
