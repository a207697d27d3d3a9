// What tests of schedules share: small schedules written by hand, and walking dependencies.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"

namespace npusim::test {

// A version 1 schedule of `commands` for model "t".
inline Json schedule_with(Json commands) {
  return Json{{"format", "npusim-schedule"},
              {"version", 1},
              {"model", {{"name", "t"}}},
              {"commands", std::move(commands)}};
}

// A 16x16x16 GEMM: 61 cycles on the default 16x16 ws array (1 fold of 32 + 16 + 16 - 2 = 62,
// minus 1 as SCALE-Sim counts; see cost_model_test).
inline Json gemm(const std::string& id, std::uint32_t slice, Json deps = Json::array()) {
  return {{"id", id},
          {"engine", "SLICE"},
          {"slice", slice},
          {"op", "Gemm"},
          {"shape", {{"m", 16}, {"n", 16}, {"k", 16}}},
          {"deps", std::move(deps)}};
}

// 1024 bytes: 256 cycles on the default config with DRAM to itself (see cost_model_test).
inline Json load(const std::string& id, Json deps = Json::array()) {
  return {{"id", id}, {"engine", "DMA_IN"}, {"bytes", 1024}, {"deps", std::move(deps)}};
}

// The work is the model's: a schedule's array and vector MACs, and the graph's count.
inline std::uint64_t schedule_macs(const Schedule& s) {
  std::uint64_t macs = 0;
  for (const Command& c : s.commands) macs += c.macs + c.vector_macs;
  return macs;
}
inline std::uint64_t graph_macs(const Graph& g) {
  std::uint64_t macs = 0;
  for (const Layer& l : g.layers) macs += layer_macs(g, l);
  return macs;
}

// The bytes a schedule moves between DRAM and local memory: DMA_IN's and DMA_OUT's.
struct DramBytes {
  std::uint64_t in = 0, out = 0;
};
inline DramBytes dram_bytes(const Schedule& s) {
  DramBytes b;
  for (const Command& c : s.commands) {
    if (c.engine == EngineKind::kDmaIn) b.in += c.bytes;
    if (c.engine == EngineKind::kDmaOut) b.out += c.bytes;
  }
  return b;
}

// Whether command `from` reaches command `to` through dependencies.
inline bool reaches(const std::vector<Command>& cmds, std::uint32_t from, std::uint32_t to) {
  std::vector<std::uint32_t> stack = {from};
  std::vector<bool> seen(cmds.size());
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (c == to) return true;
    if (seen[c]) continue;
    seen[c] = true;
    for (std::uint32_t d : cmds[c].deps) stack.push_back(d);
  }
  return false;
}

}  // namespace npusim::test
