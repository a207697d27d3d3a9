// GlobalAveragePool: what the tiling needs to know about one, and its map space: tiles of whole
// planes of a chunk of channels, per image (docs/compiler.md, "Global average pool").
#pragma once

#include <cstdint>

#include "sim/compiler/mapping/map_space.h"

namespace npusim {

struct GlobalPoolLayer {
  std::uint32_t input = 0;
  std::uint64_t n = 0, c = 0, h = 0, w = 0;  // input [N, C, H, W]
  std::uint64_t in_elem_bytes = 1, out_elem_bytes = 1;
  std::uint64_t input_bytes = 0;

  // Local memory of a tile of `channels` channels: their planes and one output each.
  std::uint64_t tile_bytes(std::uint64_t channels) const;
};

GlobalPoolLayer describe_global_pool(const Graph& graph, const LayerGroup& group);

// Dims: channels.
MapSpace global_pool_map_space(const GroupContext& ctx);

}  // namespace npusim
