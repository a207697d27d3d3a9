// The figures of `npusim report` and `npusim diff`, computed from a run's stats.json and timeline
// CSVs. SystemC-free and pure: every figure is defined in docs/report.md, and tests check them on
// hand-computed schedules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/csv_readers.h"
#include "profiler/timeline.h"

namespace npusim::profiler {

// ---- interval arithmetic -------------------------------------------------------------------

// Half-open [start, end) in cycles (or any integer unit).
struct Interval {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

// Sorted, disjoint, non-empty intervals covering exactly the union of `intervals` (empty ones
// dropped; touching ones merged).
std::vector<Interval> interval_union(std::vector<Interval> intervals);
// Total length of the union.
std::uint64_t union_length(std::vector<Interval> intervals);
// Length of the intersection of two unions (each as interval_union returns them).
std::uint64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// ---- exact text ----------------------------------------------------------------------------

// part / whole × 100 with `decimals` decimals, rounded to nearest with halves up, in exact
// integer arithmetic: percent_text(1, 3, 2) = "33.33", percent_text(1, 8, 1) = "12.5",
// percent_text(1, 0, 2) = "0.00".
std::string percent_text(std::uint64_t part, std::uint64_t whole, int decimals = 2);
// cycles × 1000 / clock_khz µs with 3 decimals, rounded to the nearest ns with halves up, exactly:
// us_text(1001, 800000) = "1.251" (1251.25 ns).
std::string us_text(std::uint64_t cycles, std::uint64_t clock_khz);

// The kind of an engine named in a stats.json (which may come from another tool or version):
// `SLICE<n>.ARRAY` array, `SLICE<n>.VECTOR` vector, `DMA_IN`, `DMA_OUT`, `HOST`, `EXT_HDMA`,
// `DEV_HDMA`, `SYNC`, each but HOST also after a device prefix `DEV<d>.`; nothing for any other
// name.
std::optional<EngineKind> engine_kind_of_name(const std::string& engine);

// ---- npusim report -------------------------------------------------------------------------

// One entry of a stats.json section's `ops`.
struct OpRecord {
  std::uint64_t index = 0;
  std::string id;
  std::string op;
  std::string layer;
  std::string engine;
  std::uint64_t program = 0;
  Cycles start = 0;
  Cycles end = 0;
  std::uint64_t bytes = 0;
  std::uint64_t macs = 0;
  std::uint64_t energy_pj = 0;  // its dynamic energy (`energy_uj` x 10^6); 0 when not stated
};

// What the report reads from stats.json.
struct ReportInput {
  std::string file;     // the stats.json path, for messages and the heading
  std::string section;  // "runtime" or "estimate"
  std::string model_name;
  std::string model_file;
  std::string config;
  std::uint64_t clock_khz = 0;  // round(device.clock_mhz × 1000)
  std::uint64_t slices = 0;
  std::uint64_t array_rows = 0;
  std::uint64_t array_cols = 0;
  std::uint64_t dram_read_bytes = 0;
  std::uint64_t dram_write_bytes = 0;
  Cycles total_cycles = 0;            // <section>.total_cycles
  std::uint64_t lram_peak_bytes = 0;  // <section>.lram_peak_bytes
  std::vector<OpRecord> ops;          // <section>.ops, in index order
  // <section>.energy_uj and static_energy_uj in pJ; unset for a stats.json without energy.
  std::optional<std::uint64_t> energy_pj;
  std::uint64_t static_energy_pj = 0;
  // <section>.devices, indexed by device: present in multi-device runs only.
  struct Device {
    Cycles busy_cycles = 0;
    Cycles compute_busy_cycles = 0;
    Cycles collective_cycles = 0;
    std::uint64_t dev_hdma_sent_bytes = 0;
    std::uint64_t dev_hdma_received_bytes = 0;
    std::uint64_t ext_hdma_to_device_bytes = 0;
    std::uint64_t ext_hdma_to_host_bytes = 0;
  };
  std::vector<Device> devices;
};

// Reads a parsed stats.json: the `runtime` section if present and `prefer_estimate` is false,
// else `estimate`. Throws ParseError (file, JSON pointer, message) on a missing or mistyped key,
// and when the file was written below stats level 70 (no `ops`).
ReportInput read_report_input(const nlohmann::json& stats, const std::string& file,
                              bool prefer_estimate = false);
// The same from a file.
ReportInput read_report_input_file(const std::string& path, bool prefer_estimate = false);
// A parsed file's JSON; ParseError if it cannot be read or is not JSON.
nlohmann::json read_json_file(const std::string& path);

struct OpTypeFigures {
  std::string op;
  std::uint64_t count = 0;
  Cycles cycles = 0;  // sum of its ops' cycles (end - start)
  Cycles wall = 0;    // length of the union of its ops' intervals
  // The engines its ops ran on: the one engine's name, or "<n> engines".
  std::string engines;
  std::uint64_t engine_count = 0;
  // Sum over those engines of the union of its ops' intervals on the engine: engine busy % =
  // engine_busy / (engine_count x invoke cycles), its engines' busy share averaged.
  Cycles engine_busy = 0;
};

// What op_type_figures reads of an op: views of strings that outlive the call.
struct OpSpan {
  std::string_view op;
  std::string_view engine;
  Cycles start = 0;
  Cycles end = 0;
};

// Per op type, by cycles descending (ties by name). The one definition `report` and
// summary.txt share.
std::vector<OpTypeFigures> op_type_figures(const std::vector<OpSpan>& ops);
std::vector<OpTypeFigures> op_type_figures(const std::vector<OpRecord>& ops);
// The op-type table as `report` and summary.txt print it: heading, column header, rows.
// `op_cycles` = all ops' cycles (the shares' denominator), `invoke_cycles` the run's.
void write_op_type_table(std::ostream& out, const std::vector<OpTypeFigures>& types,
                         Cycles op_cycles, Cycles invoke_cycles);

struct LayerFigures {
  std::string layer;  // "" for commands without a layer
  std::uint64_t commands = 0;
  Cycles first_start = 0;
  Cycles last_end = 0;
  Cycles cycles = 0;  // union of its commands' intervals
  // Unions of its commands' intervals on array engines, vector engines, DMA_IN, DMA_OUT and
  // other engines.
  Cycles array = 0;
  Cycles vector = 0;
  Cycles dma_in = 0;
  Cycles dma_out = 0;
  Cycles other = 0;
};

struct ModelFigures {
  Cycles invoke_cycles = 0;  // total_cycles: cycle 0 to the last end
  // NPU time as SigmaStar's profiler counts it: from the first start to the last end of every
  // command on the NPU (array, vector, DMA_IN, DMA_OUT; not HOST); 0 without such commands.
  Cycles npu_cycles = 0;
  Cycles compute_cycles = 0;                // union of every array and vector command's interval
  Cycles dma_cycles = 0;                    // union of every DMA_IN and DMA_OUT command's interval
  Cycles overlap_cycles = 0;                // intersection of those two unions
  std::uint64_t dram_bytes = 0;             // read + written
  std::uint64_t variable_buffer_bytes = 0;  // peak local-memory occupancy
  Cycles op_cycles = 0;  // sum of every op's cycles (the op-type shares' denominator)
};

struct LayerOpFigures {
  std::string layer;  // "" for commands without a layer
  std::uint64_t commands = 0;
  Cycles first_start = 0;
  Cycles last_end = 0;
  Cycles cycles = 0;  // sum of its ops' cycles (its share of all ops' cycles)
};

struct Report {
  ModelFigures model;
  std::vector<OpTypeFigures> op_types;    // by cycles, descending; ties by name
  std::vector<LayerFigures> layers;       // by first command index
  std::vector<LayerOpFigures> layer_ops;  // same order as layers
};

Report compute_report(const ReportInput& input);

// kTotal: op types; kEach: one row per layer (model operator); kEachCommand: one per command.
enum class ReportMode : std::uint8_t { kTotal, kEach, kEachCommand };
void write_report(std::ostream& out, const ReportInput& input, const Report& report,
                  ReportMode mode);

// ---- npusim diff ---------------------------------------------------------------------------

// A tolerance in millionths of a percent (1 % = 1'000'000), exact.
struct Tolerance {
  std::uint64_t micro_pct = 1'000'000;
};
// "1", "0.5", "2.25": up to 6 decimals, not negative. Nullopt otherwise.
std::optional<Tolerance> parse_tolerance(const std::string& text);
std::string tolerance_text(const Tolerance& t);  // "1", "0.5"
// |b - a| / a × 100 > tolerance, exactly; with a = 0: b > 0.
bool past_tolerance(std::uint64_t a, std::uint64_t b, const Tolerance& t);
// (b - a) / a × 100 with 2 decimals and a sign ("+1.75", "-0.50", "0.00"); "n/a" for a = 0 < b.
std::string delta_percent_text(std::uint64_t a, std::uint64_t b);
// b - a with a sign ("+12", "-3", "0").
std::string delta_text(std::uint64_t a, std::uint64_t b);

// One side of a diff: a timeline and, where known, the layer of each command id.
struct DiffSide {
  std::string label;  // the file it came from
  std::vector<TimelineRow> rows;
  std::optional<std::map<std::string, std::string>> layer_of;  // from stats.json ops
  std::string no_layers_reason;  // why layer_of is missing, for the report
  std::uint64_t clock_khz = 0;   // from its stats.json; 0: unknown (a CSV file)
};

// When both sides' clocks are known and differ, cycles do not compare: converts both sides' rows
// to integer ns (trace_ns) and returns true; write_diff then prints µs. False otherwise.
bool diff_in_time(DiffSide& a, DiffSide& b);

// Command id -> layer from a stats.json's per-op figures (the estimate's; both sections hold the
// same commands). Nullopt, with `why` set, when the file was written below stats level 70;
// ParseError when it is malformed.
std::optional<std::map<std::string, std::string>> read_layer_map(const nlohmann::json& stats,
                                                                 const std::string& file,
                                                                 std::string& why);

struct CommandDelta {
  std::string id;
  std::optional<Cycles> a;  // End - Start; nullopt: not in that side
  std::optional<Cycles> b;
};

struct LayerDelta {
  std::string layer;
  Cycles a = 0;  // union of its commands' intervals (0 if none on that side)
  Cycles b = 0;
  bool past = false;  // past the tolerance
};

struct DiffResult {
  Cycles total_a = 0;  // the last End of side A (0 if empty)
  Cycles total_b = 0;
  bool total_past = false;
  std::uint64_t matched = 0;
  std::vector<std::string> only_a;  // ids, in A's row order
  std::vector<std::string> only_b;
  std::vector<CommandDelta> commands;  // every id of either side, by |delta| descending
  bool has_layers = false;             // both sides have layer_of
  std::vector<LayerDelta> layers;      // by |delta| descending
  bool any_layer_past = false;
};

DiffResult compute_diff(const DiffSide& a, const DiffSide& b, const Tolerance& tolerance);

struct DiffPrintOptions {
  std::size_t top = 20;  // rows per table; 0: all
  bool fail_on_layer = false;
  bool in_time = false;  // the rows hold ns (diff_in_time): print µs instead of cycles
};
// The tables and the verdict line; returns whether the check failed.
bool write_diff(std::ostream& out, const DiffSide& a, const DiffSide& b, const DiffResult& result,
                const Tolerance& tolerance, const DiffPrintOptions& options);

}  // namespace npusim::profiler
