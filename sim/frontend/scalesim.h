// SCALE-Sim topology CSVs (docs/graph.md): convolution rows
//   Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
//   Stride H[, Stride W],
// or GEMM rows (`Layer, M, N, K,`), told apart by the header line. Each row becomes one
// independent layer reading its own input from DRAM, as SCALE-Sim simulates them.
#pragma once

#include <string>

#include "sim/ir/graph.h"

namespace npusim {

// Throws InputError naming the file and row of every problem.
Graph load_scalesim_topology(const std::string& path);
Graph parse_scalesim_topology(const std::string& text, const std::string& origin);

}  // namespace npusim
