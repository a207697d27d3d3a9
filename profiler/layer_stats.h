// Per-layer compute figures, in SCALE-Sim's terms: what each layer's array commands cost against
// the untiled layer on one array (LayerInfo), how long the layer waited, and its traffic. The rows
// of stats.json's layers[] and of `npusim report --layers`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/stats.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

struct LayerStats {
  LayerInfo info;              // the compiler's view; on_array false when it gave none
  std::uint32_t commands = 0;  // of every engine
  Cycles array_cycles = 0;     // sum of its array commands' own cycles (the tiles)
  Cycles vector_cycles = 0;    // sum of its vector commands' own cycles
  // Cycles its array unit sat idle inside the layer, waiting for dependencies (DMA): every array
  // command's dependency wait but the first's on each slice (which waited for earlier layers).
  Cycles stall_cycles = 0;
  Cycles total_cycles = 0;             // array_cycles + stall_cycles: SCALE-Sim's Total Cycles
  Cycles span_start = 0;               // first start of its slice commands
  Cycles span_end = 0;                 // last end of its slice commands
  std::uint64_t dma_bytes = 0;         // DRAM bytes its DMA commands moved, both directions
  double tiling_overhead_pct = 0;      // (array_cycles - ideal_cycles) / ideal_cycles * 100
  double overall_utilisation_pct = 0;  // MACs / (total_cycles * rows * cols) * 100
};

// One row per layer name of the commands, in order of first appearance; the compiler's LayerInfo
// attached by name where the workload has one.
// `stalls`, when given, must be command_stalls(workload, timeline).
std::vector<LayerStats> compute_layer_stats(const Workload& workload, const Timeline& timeline,
                                            const std::vector<CommandStalls>* stalls = nullptr);

// `npusim report --layers`: the layers[] of one run of a stats.json (`run` is its "runtime" or
// "estimate" object), as a table or as CSV whose first columns are SCALE-Sim's
// COMPUTE_REPORT.csv, in its dialect (", " separators, a trailing comma). Throws ParseError
// naming `file` and the JSON pointer when layers[] is missing or malformed.
void write_layer_report(std::ostream& out, const nlohmann::json& run, const std::string& file,
                        const std::string& run_pointer, bool csv);

}  // namespace npusim::profiler
