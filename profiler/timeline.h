// The profiler's data model: what ran (Workload, static facts from the schedule) and when it ran
// (Timeline, cycles from the estimator or the simulation). Writers take both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/energy.h"
#include "profiler/engine_kind.h"
#include "profiler/interned_string.h"

namespace npusim::profiler {

using Cycles = std::uint64_t;

// One row of the engine table: one in-order command queue of the command processor and what runs
// its commands.
struct EngineInfo {
  std::string name;  // "SLICE0.ARRAY", "DMA_IN", ...: reports and traces show it as it is
  EngineKind kind = EngineKind::kArray;
  std::uint32_t channels = 1;  // commands it runs at once: a DMA engine's channels, else 1
  std::uint32_t slice = 0;     // the slice of an array or vector unit; 0 for the others
  std::uint32_t device = 0;    // the NPU it belongs to (0 for HOST, which belongs to none)
  // The group of its tracks in traces, in the RBLN profiler's vocabulary: "Neural Engine
  // Clusters" (array and vector units), "Task DMA", "Host", "External HDMA", "Device HDMA",
  // "Device Sync"; empty for no group (convert).
  std::string trace_category;
};

// What prefixes the engine names of device `device` when a run has several: "DEV1.".
std::string device_prefix(std::uint32_t device);

// Static facts about one command, known before it runs.
struct CommandInfo {
  std::string id;        // "DI0", "S3", "DO1"
  std::uint32_t engine;  // index into Workload::engines
  // Interned, as in the schedule: millions of commands share a few thousand of each.
  InternedString op_type;  // "DMA_IN", "DMA_OUT" or the slice op ("Conv", "Gemm", ...)
  InternedString layer;
  InternedString location;
  std::uint32_t program = 0;  // index into Workload::programs
  std::uint64_t dram_read_bytes = 0;
  std::uint64_t dram_write_bytes = 0;
  std::uint64_t macs = 0;              // on the systolic array: what MAC utilisation counts
  std::uint64_t vector_macs = 0;       // on the vector unit (depthwise convolutions)
  std::uint64_t lram_alloc_bytes = 0;  // local memory taken when the command starts
  std::uint64_t lram_free_bytes = 0;   // local memory given back when the command ends
  // Cycles the command occupies its unit with nothing competing for DRAM: the cost model's
  // figure, which the estimate uses and the simulation can only exceed.
  Cycles isolated_cycles = 0;
  IndexList deps;               // indices into Workload::commands
  std::uint32_t iteration = 0;  // the inference it belongs to (--iterations), from 0
  // Dynamic energy, fixed by the cost model from the same counts (profiler/energy.h).
  DynamicEnergy energy{};
  // EXT_HDMA and DEV_HDMA: the bytes they move over a link; `to_device` is an EXT_HDMA's
  // direction (host -> device) and `peer` a DEV_HDMA's destination device.
  std::uint64_t link_bytes = 0;
  std::uint32_t peer = 0;
  bool to_device = true;
};

struct ProgramInfo {
  std::string name;
  std::string location;
};

// The device as reports need it, with units already converted once.
struct DeviceInfo {
  std::string config_name;
  std::uint64_t clock_khz = 0;
  std::uint32_t slices = 0;
  std::uint32_t array_rows = 0;
  std::uint32_t array_cols = 0;
  std::string dataflow;
  std::uint64_t lram_bytes = 0;
  std::uint64_t dram_bandwidth_mbps = 0;  // MB/s, 10^6 bytes per second
  std::uint32_t dma_in_channels = 0;
  std::uint32_t dma_out_channels = 0;
  std::uint32_t dma_bytes_per_cycle = 0;  // per channel, through its port
  // With ideal memory DMA and DRAM take no cycles: they bound nothing.
  bool ideal_memory = false;
  // What bounds a channel's rate besides its port (0: unknown, or ideal memory): at most
  // `dma_max_outstanding` bursts of at most `dma_burst_bytes` in flight, each for at least its
  // DRAM service on one of `dram_channels` channels plus `dram_latency_cycles`.
  std::uint64_t dma_burst_bytes = 0;
  std::uint32_t dma_max_outstanding = 0;
  std::uint32_t dram_channels = 0;
  std::uint64_t dram_latency_cycles = 0;
  // Static power, drawn for the whole run (energy.slice_static_mw, energy.dram_static_mw).
  std::uint64_t slice_static_uw = 0;  // per slice
  std::uint64_t dram_static_uw = 0;
  // The links (docs/multi-device.md): the host link's rate per channel and the rate of one
  // direction of a device-to-device link, in MB/s (0: unknown or ideal), and their latencies.
  std::uint64_t host_link_mbps = 0;
  std::uint32_t host_link_channels = 0;
  std::uint64_t host_link_latency_cycles = 0;
  std::uint64_t device_link_mbps = 0;
  std::uint64_t device_link_latency_cycles = 0;
};

// One layer of the model as the compiler saw it (a fused group counts as one), with its untiled
// array GEMM in SCALE-Sim's terms: what `report --layers` compares the tiles against.
struct LayerInfo {
  std::string name;       // as in CommandInfo::layer
  bool on_array = false;  // whether the layer has a GEMM view (the rest are vector or host layers)
  std::uint64_t gemms = 1;  // independent GEMMs of this size (conv groups, batched matmul)
  std::uint64_t sr = 0, sc = 0, t = 0;  // dimension on the array's rows, its columns, in time
  std::uint64_t folds = 0;              // ceil(sr / rows) * ceil(sc / cols), per GEMM
  Cycles ideal_cycles = 0;              // the untiled layer on one array: gemms * (folds * P - 1)
  std::uint64_t macs = 0;               // of the untiled layer
  // SCALE-Sim's closed forms, in %: sr * sc / (folds * rows * cols), and that times T over the
  // cycles of one fold as it counts them (P for os, P + cols - 1 for ws and is).
  double mapping_efficiency_pct = 0;
  double compute_utilisation_pct = 0;
};

struct Workload {
  std::string model_name;
  std::string model_file;  // base name only, so outputs do not depend on where a file lives
  DeviceInfo device;
  std::vector<EngineInfo> engines;
  std::vector<ProgramInfo> programs;
  std::vector<CommandInfo> commands;
  std::vector<LayerInfo> layers;  // in schedule order; empty when the schedule does not say
};

struct CommandTiming {
  Cycles start = 0;        // first cycle the command occupies its unit (after dispatch)
  Cycles end = 0;          // cycle at which it completes; end >= start
  std::uint32_t unit = 0;  // which of its engine's units (DMA channels) ran it
};

// One DRAM burst as the simulation served it.
struct BurstRecord {
  Cycles arrival = 0;  // the burst reached DRAM
  Cycles done = 0;     // its data had arrived (service end rounded up, plus latency)
  std::uint64_t bytes = 0;
};

// DRAM behaviour aggregated over every burst: latency = done - arrival, which includes queueing
// behind other bursts, service and the fixed latency. Filled by the simulation only.
struct DramActivity {
  static constexpr std::size_t kHistogramBuckets = 24;
  std::uint64_t bursts = 0;
  std::uint64_t bytes = 0;
  std::uint64_t total_latency_cycles = 0;
  Cycles max_latency_cycles = 0;
  // Bucket 0 counts latencies of 0 cycles, bucket k >= 1 those in [2^(k-1), 2^k); the last bucket
  // also everything longer.
  std::vector<std::uint64_t> latency_histogram = std::vector<std::uint64_t>(kHistogramBuckets, 0);
  void add(const BurstRecord& burst);
};

// Trace names of the commands, indexed like Workload::commands, as the RBLN profiler names
// them: `{iteration}_{layer}_{k}`, k counting the commands of that layer within that iteration
// in schedule order from 0; the op type stands for an empty layer. The same names go into
// trace.json, trace.pftrace, annotated.csv, stats.json and summary.txt.
std::vector<std::string> command_names(const Workload& workload);
// The names of the commands at `indices` only, in that order: a few of millions.
std::vector<std::string> command_names(const Workload& workload,
                                       const std::vector<std::size_t>& indices);

// When each command ran, indexed like Workload::commands.
struct Timeline {
  std::vector<CommandTiming> commands;
  DramActivity dram;
  // Cycle at which the last command completes (0 for an empty schedule).
  Cycles total_cycles() const;
};

// What the estimator and the SystemC platform report as they run commands. The profiler defines
// it so that producers depend on the profiler, never the other way round.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void command_started(std::uint32_t command, Cycles at, std::uint32_t unit) = 0;
  virtual void command_finished(std::uint32_t command, Cycles at) = 0;
  virtual void dram_burst(const BurstRecord& burst) = 0;
};

// Collects start/end events into a Timeline.
class TimelineRecorder final : public EventSink {
 public:
  explicit TimelineRecorder(std::size_t command_count);
  void command_started(std::uint32_t command, Cycles at, std::uint32_t unit) override;
  void command_finished(std::uint32_t command, Cycles at) override;
  void dram_burst(const BurstRecord& burst) override;
  const Timeline& timeline() const { return timeline_; }
  Timeline take() { return std::move(timeline_); }

 private:
  Timeline timeline_;
};

// Converts cycles to microseconds at a clock given in kHz, exactly where the result is integer.
struct Clock {
  std::uint64_t khz = 0;
  double to_us(Cycles cycles) const;
  // Nearest integer microsecond, halves rounded up; exact integer arithmetic.
  std::uint64_t to_us_rounded(Cycles cycles) const;
};

}  // namespace npusim::profiler
