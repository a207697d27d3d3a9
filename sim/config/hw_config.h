// The hardware config: a checked runtime object built once from JSON (docs/config.md documents
// every field, its unit and default). Units are converted here, once, into exact integers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/ir/ops.h"

namespace npusim {

enum class Dataflow : std::uint8_t { kOutputStationary, kWeightStationary, kInputStationary };
const char* dataflow_name(Dataflow dataflow);  // "os", "ws", "is"

struct SliceConfig {
  std::uint32_t count = 2;
  std::uint32_t rows = 16;  // PEs per column of the systolic array
  std::uint32_t cols = 16;  // PEs per row
  Dataflow dataflow = Dataflow::kWeightStationary;
  std::uint32_t vector_lanes = 16;
  std::vector<std::uint32_t> vector_op_cycles;  // indexed by OpId; from op_table() unless set
};

struct DmaConfig {
  std::uint32_t in_channels = 1;
  std::uint32_t out_channels = 1;
  std::uint64_t burst_bytes = 256;
  std::uint32_t bytes_per_cycle = 8;  // per channel
  std::uint32_t setup_cycles = 32;    // per transfer, before its first burst
  std::uint32_t max_outstanding = 8;  // bursts in flight per channel
};

struct DramConfig {
  std::uint64_t bandwidth_mbps = 12800;  // total over all channels, 10^6 bytes/s
  std::uint64_t latency_ps = 100000;
  std::uint32_t channels = 1;
};

// The host CPU that runs ops the NPU cannot (--host-fallback): each call costs a fixed
// round trip plus a per-element cost, in NPU cycles.
struct HostConfig {
  std::uint64_t call_cycles = 5000;
  std::uint32_t cycles_per_element = 4;
};

struct HwConfig {
  std::string name = "default";  // from the config's "name", else its file's stem
  std::string source;  // file the config came from, or "built-in:NAME"
  std::uint64_t clock_khz = 800000;
  SliceConfig slices;
  std::uint64_t lram_bytes = 512 * 1024;
  DmaConfig dma;
  DramConfig dram;
  HostConfig host;
  std::uint32_t dispatch_cycles = 4;
  bool ideal_memory = false;

  // DRAM latency rounded up to whole NPU cycles.
  std::uint64_t dram_latency_cycles() const;
};

// Loads a config from a file path or a built-in name (see builtin_config_names()), applies
// `overrides` ("key.path=value", value as JSON or else as a string) and checks everything.
// Throws InputError listing every problem with its JSON pointer.
HwConfig load_hw_config(const std::string& path_or_name,
                        const std::vector<std::string>& overrides = {});
// Builds a config from JSON text (as load_hw_config does after reading the file).
HwConfig parse_hw_config(const std::string& json_text, const std::string& origin,
                         const std::vector<std::string>& overrides = {});

std::vector<std::string> builtin_config_names();

}  // namespace npusim
