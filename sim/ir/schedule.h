// The op schedule: what a compiler hands the NPU's command processor (docs/schedule.md is the
// format). Loaded from JSON and checked against a HwConfig, which also fixes each slice
// command's cost, so the estimator and the simulation read one number.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "profiler/interned_string.h"
#include "sim/config/hw_config.h"
#include "sim/ir/ops.h"
#include "sim/util/json_reader.h"

namespace npusim {

using profiler::IndexList;
using profiler::InternedString;

struct GemmShape {
  std::uint64_t batch = 1;  // independent GEMMs of the same size (batched matmul)
  std::uint64_t m = 0;      // rows of the left operand and of the result
  std::uint64_t n = 0;      // columns of the right operand and of the result
  std::uint64_t k = 0;      // the reduction dimension
};

// Conv, DepthwiseConv, pools and global pools; pools have out_c == in_c.
struct ConvShape {
  std::uint64_t batch = 1;
  std::uint64_t in_h = 0, in_w = 0, in_c = 0, out_c = 0;
  std::uint64_t kernel_h = 1, kernel_w = 1;
  std::uint64_t stride_h = 1, stride_w = 1;
  std::uint64_t pad_h = 0, pad_w = 0;  // on each side
  std::uint64_t groups = 1;
  std::uint64_t out_h() const { return (in_h + 2 * pad_h - kernel_h) / stride_h + 1; }
  std::uint64_t out_w() const { return (in_w + 2 * pad_w - kernel_w) / stride_w + 1; }
};

struct ElementsShape {
  std::uint64_t elements = 0;
};

using Shape = std::variant<std::monostate, GemmShape, ConvShape, ElementsShape>;

struct BufferAlloc {
  std::string buffer;  // unique across the schedule
  std::uint64_t bytes = 0;
};
// The schedule format's name of the engine a command runs on: "DMA_IN", "DMA_OUT", "SLICE" (the
// array and the vector unit), "HOST", "EXT_HDMA", "DEV_HDMA" or "SYNC".
const char* schedule_engine_name(EngineKind kind);

// Millions of these make a large schedule: fields are ordered so that none pads (360 bytes).
struct Command {
  std::string id;  // DI<n>, DO<n>, S<n>, H<n>, EH<n>, DH<n>, Y<n>
  // A SLICE command runs on its op's unit: kArray or kVector (OpInfo::unit).
  EngineKind engine = EngineKind::kArray;
  // EXT_HDMA: true host -> device, false device -> host. DEV_HDMA: the device it writes to.
  bool to_device = true;
  OpId op = 0;               // slice commands only
  std::uint32_t device = 0;  // the NPU whose engine runs it (version 2)
  std::uint32_t slice = 0;   // slice commands only
  std::uint32_t peer = 0;
  std::uint32_t program = 0;
  IndexList peers;             // SYNC: the devices the barrier joins, besides `device`
  Shape shape;                 // slice commands only
  std::uint64_t bytes = 0;     // DMA and HDMA commands only
  std::uint64_t elements = 0;  // host commands only: what the host's per-element cost scales with
  IndexList deps;              // indices into Schedule::commands
  // Interned: a layer's or a location's text is shared by all its commands.
  InternedString layer;
  InternedString loc;
  std::vector<BufferAlloc> alloc;  // local memory taken at start
  std::vector<std::string> free;   // buffers given back at end
  // Fixed by finalize_schedule from alloc and free:
  std::uint64_t lram_alloc_bytes = 0;
  std::uint64_t lram_free_bytes = 0;
  // Fixed by the cost model for the config the schedule was loaded with:
  std::uint64_t macs = 0;            // on the systolic array
  std::uint64_t vector_macs = 0;     // on the vector unit
  std::uint64_t compute_cycles = 0;  // slice commands: cycles on their unit
  // Cycles on its unit with DRAM to itself: compute_cycles for slice commands, the isolated
  // transfer time for DMA commands. The estimator's duration.
  std::uint64_t isolated_cycles = 0;
  // Its dynamic energy is not kept here: make_workload asks the cost model for it, so that a
  // schedule of millions of commands holds it once, in the profiler's workload.
};

struct TensorInfo {
  std::string name;
  std::string dtype;
  std::string layout;
  std::vector<std::uint64_t> shape;
};

struct ModelInfo {
  std::string name;
  std::uint64_t batch = 1;
  std::uint64_t weights_bytes = 0;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
};

struct Program {
  std::string name;
  std::string loc;
};

// A layer as the compiler mapped it (a fused group counts as one), named as its commands' `layer`:
// its untiled array GEMM, if it has one, so reports can compare the tiles with the whole layer.
struct LayerView {
  std::string name;
  bool on_array = false;
  GemmShape gemm;  // batch = independent GEMMs (conv groups, batched matmul)
};

struct Schedule {
  std::string file;
  ModelInfo model;
  std::string target_config;        // the config it was compiled for, if stated
  std::uint32_t target_slices = 0;  // 0 when not stated
  std::vector<Program> programs;    // at least one
  std::vector<Command> commands;
  std::vector<LayerView> layers;  // optional ("layers" in the JSON form)
};

// Documented limits (docs/schedule.md); past them a schedule is rejected, never wrapped.
inline constexpr std::uint64_t kMaxCommands = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kMaxDimension = std::uint64_t{1} << 32;
inline constexpr std::uint64_t kMaxTransferBytes = std::uint64_t{1} << 48;
// A transfer is simulated burst by burst; past this many bursts it would run for hours.
inline constexpr std::uint64_t kMaxBurstsPerTransfer = std::uint64_t{1} << 22;
// Simulated time is 64-bit picoseconds in SystemC; a schedule whose estimate passes this many
// cycles is rejected (the simulation of it stops with an error at the same point).
inline constexpr std::uint64_t kMaxCycles = std::uint64_t{1} << 50;

// Throws InputError listing every problem, each with the file and a JSON pointer.
Schedule load_schedule(const std::string& path, const HwConfig& config);
Schedule parse_schedule(const Json& root, const std::string& origin, const HwConfig& config);

// The checks and costs every schedule goes through, whether parsed or compiled: buffers (each
// allocated once, fits the local memory, freed once, by its allocator or a command depending on
// it), no dependency cycle, and each command's costs for `config`. Problems are recorded with
// JSON pointers into the schedule's JSON form; the caller throws them.
void finalize_schedule(Schedule& schedule, const HwConfig& config, Diagnostics& diag);

}  // namespace npusim
