// The raw layer of a hardware config: every field exactly as its source gave it (a JSON config
// after --set overrides, or a SCALE-Sim .cfg), type-checked only, with nothing defaulted,
// range-checked or converted. check_hw_config() (hw_config.h) turns it into the HwConfig that
// components receive. The fields mirror the JSON tree of docs/config.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npusim {

struct RawHwConfig {
  std::optional<std::string> name;
  std::optional<double> clock_mhz;
  std::optional<std::uint64_t> lram_kib;
  std::optional<std::uint64_t> dispatch_cycles;
  std::optional<bool> ideal_memory;

  struct Slices {
    std::optional<std::uint64_t> count;
    std::optional<std::uint64_t> rows;
    std::optional<std::uint64_t> cols;
    std::optional<std::string> dataflow;
    std::optional<std::uint64_t> vector_lanes;
    std::map<std::string, std::uint64_t> vector_op_cycles;  // only the ops given, by op name
  } slices;

  struct Dma {
    std::optional<std::uint64_t> in_channels;
    std::optional<std::uint64_t> out_channels;
    std::optional<std::uint64_t> burst_bytes;
    std::optional<std::uint64_t> bytes_per_cycle;
    std::optional<std::uint64_t> setup_cycles;
    std::optional<std::uint64_t> max_outstanding;
  } dma;

  struct Dram {
    std::optional<double> bandwidth_gbps;
    std::optional<double> latency_ns;
    std::optional<std::uint64_t> channels;
  } dram;

  struct Host {
    std::optional<std::uint64_t> call_cycles;
    std::optional<std::uint64_t> cycles_per_element;
    std::optional<double> link_gbps;
    std::optional<double> link_latency_ns;
    std::optional<std::uint64_t> link_channels;
    std::optional<bool> upload_weights;
  } host;

  struct Devices {
    std::optional<std::uint64_t> count;
    std::optional<std::string> topology;
    std::optional<double> link_gbps;
    std::optional<double> link_latency_ns;
    std::optional<std::uint64_t> dma_channels;
  } devices;
  struct Energy {
    std::optional<double> mac_int8_pj;
    std::optional<double> mac_fp16_pj;
    std::optional<double> mac_fp32_pj;
    std::optional<double> vector_op_pj;
    std::optional<double> lram_read_pj_per_byte;
    std::optional<double> lram_write_pj_per_byte;
    std::optional<double> dram_pj_per_byte;
    std::optional<double> slice_static_mw;
    std::optional<double> dram_static_mw;
  } energy;

  // Where problems with a field are reported, by key path, for values that did not come from
  // JSON ("slices.rows" -> "[architecture_presets] ArrayHeight"). The others are reported at their
  // JSON pointer ("/slices/rows").
  std::map<std::string, std::string> locations;
  // Handed on to HwConfig::warnings (what a SCALE-Sim .cfg had that npusim does not model).
  std::vector<std::string> warnings;
};

}  // namespace npusim
