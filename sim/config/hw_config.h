// The hardware config that components receive: the checked layer, built once from a JSON config
// or a SCALE-Sim .cfg (docs/config.md). Every field's key, unit, default and range is declared
// once, in config_fields() (config_fields.cpp); the loader goes through the raw layer
// (raw_config.h), then checks each field, applies its default and converts its unit, once, into
// exact integers. So the members below have no default values of their own: HwConfig() applies
// the declared ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/ir/ops.h"

namespace npusim {

struct RawHwConfig;

enum class Dataflow : std::uint8_t { kOutputStationary, kWeightStationary, kInputStationary };
const char* dataflow_name(Dataflow dataflow);  // "os", "ws", "is"
std::optional<Dataflow> dataflow_from_name(std::string_view name);

struct SliceConfig {
  std::uint32_t count{};
  std::uint32_t rows{};  // PEs per column of the systolic array
  std::uint32_t cols{};  // PEs per row
  Dataflow dataflow{};
  std::uint32_t vector_lanes{};
  std::vector<std::uint32_t> vector_op_cycles;  // indexed by OpId; from op_table() unless set
};

struct DmaConfig {
  std::uint32_t in_channels{};
  std::uint32_t out_channels{};
  std::uint64_t burst_bytes{};
  std::uint32_t bytes_per_cycle{};  // per channel
  std::uint32_t setup_cycles{};     // per transfer, before its first burst
  std::uint32_t max_outstanding{};  // bursts in flight per channel
};

struct DramConfig {
  std::uint64_t bandwidth_mbps{};  // total over all channels, 10^6 bytes/s
  std::uint64_t latency_ps{};
  std::uint32_t channels{};
};

// The host CPU that runs ops the NPU cannot (--host-fallback): each call costs a fixed
// round trip plus a per-element cost, in NPU cycles.
struct HostConfig {
  std::uint64_t call_cycles{};
  std::uint32_t cycles_per_element{};
  // The PCIe-class link between host DRAM and the devices' DRAM (EXT_HDMA), shared by all devices.
  std::uint64_t link_mbps{};  // per channel, 10^6 bytes/s
  std::uint64_t link_latency_ps{};
  std::uint32_t link_channels{};
  // Compiled schedules load every device's weights over the host link before the first
  // neural-engine command (a cold start) instead of finding them in DRAM.
  bool upload_weights{};
};

// How several NPUs are joined: which pairs have a direct device-to-device link.
enum class Topology : std::uint8_t {
  kRing,            // d <-> (d + 1) mod count
  kFullyConnected,  // every pair
  kTree,            // device 0 (the root) <-> every other device (a star, as RBLN's root/leaf)
};
const char* topology_name(Topology topology);  // "ring", "full", "tree"

// Several identical devices (each one the NPU described by the rest of the config, with its own
// DRAM) joined by device-to-device links (DEV_HDMA). count == 1 is the single NPU of every other
// run.
struct DevicesConfig {
  std::uint32_t count{};
  Topology topology{};
  std::uint64_t link_mbps{};  // per direction of one link, 10^6 bytes/s
  std::uint64_t link_latency_ps{};
  std::uint32_t dma_channels{};  // DEV_HDMA transfers a device runs at once
  // Whether devices `a` and `b` (a != b, both < count) have a direct link.
  bool linked(std::uint32_t a, std::uint32_t b) const;
};

// The energy model (docs/config.md#energy): dynamic energy per unit of work, in femtojoules
// (the config's pJ with three decimals, exact), and static power in microwatts (its mW with three
// decimals). sim/cost/energy.h turns a command's counts into energy with them.
struct EnergyConfig {
  std::uint64_t mac_int8_fj{};   // one array MAC on 8-bit operands
  std::uint64_t mac_fp16_fj{};   // 16-bit (float16, bfloat16, int16)
  std::uint64_t mac_fp32_fj{};   // 32-bit and wider
  std::uint64_t vector_op_fj{};  // one element of a vector op, per cycle of its vector_op_cycles
  std::uint64_t lram_read_fj_per_byte{};
  std::uint64_t lram_write_fj_per_byte{};
  std::uint64_t dram_fj_per_byte{};  // DMA traffic, either direction
  std::uint64_t slice_static_uw{};   // leakage of one slice, for the whole run
  std::uint64_t dram_static_uw{};    // DRAM background power, for the whole run
};

struct HwConfig {
  // Every field at its declared default: the values of the config `{}` (name and source empty).
  HwConfig();

  std::string name;    // from the config's "name", else its file's stem
  std::string source;  // file the config came from, or "built-in:NAME"
  std::uint64_t clock_khz{};
  SliceConfig slices;
  std::uint64_t lram_bytes{};
  DmaConfig dma;
  DramConfig dram;
  HostConfig host;
  DevicesConfig devices;
  EnergyConfig energy;
  std::uint32_t dispatch_cycles{};
  // Memory and dispatch cost nothing, local memory is unbounded: compute alone is measured.
  bool ideal_memory{};
  // Said once when the config is loaded, e.g. the SCALE-Sim keys npusim does not model. The
  // loader does not print them; the CLI does.
  std::vector<std::string> warnings;

  // DRAM latency rounded up to whole NPU cycles.
  std::uint64_t dram_latency_cycles() const;
  // A latency in picoseconds rounded up to whole NPU cycles.
  std::uint64_t ps_to_cycles(std::uint64_t ps) const;
};

// Loads a config from a file path or a built-in name (see builtin_config_names()), applies
// `overrides` ("key.path=value", value as JSON or else as a string) and checks everything. A file
// whose name ends in .cfg is read as a SCALE-Sim v2 config (scalesim_cfg.h), any other as JSON.
// Throws InputError listing every problem with its JSON pointer (or `[section] Key` in a .cfg).
HwConfig load_hw_config(const std::string& path_or_name,
                        const std::vector<std::string>& overrides = {});
// Builds a config from JSON text (as load_hw_config does after reading the file).
HwConfig parse_hw_config(const std::string& json_text, const std::string& origin,
                         const std::vector<std::string>& overrides = {});
// Builds a config from a raw one that did not come from JSON (a SCALE-Sim .cfg): applies the
// overrides as on a JSON config, then checks it. Throws InputError as parse_hw_config does.
HwConfig resolve_hw_config(const RawHwConfig& raw, const std::string& origin,
                           const std::vector<std::string>& overrides = {});

std::vector<std::string> builtin_config_names();

}  // namespace npusim
