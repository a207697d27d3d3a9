#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "profiler/chrome_trace.h"
#include "profiler/csv_readers.h"
#include "profiler/csv_writers.h"
#include "profiler/perfetto_trace.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "profiler/trace_import.h"
#include "profiler/trace_model.h"
#include "sim/compiler/compiler.h"
#include "sim/config/builtin_configs.h"
#include "sim/config/hw_config.h"
#include "sim/estimator/estimator.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/onnx_import.h"
#include "sim/frontend/scalesim.h"
#include "sim/ir/engines.h"
#include "sim/ir/graph.h"
#include "sim/ir/schedule.h"
#include "sim/ir/schedule_writer.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim::fuzz {
namespace {

std::string text_of(const std::uint8_t* data, std::size_t size) {
  return size == 0 ? std::string() : std::string(reinterpret_cast<const char*>(data), size);
}

// A broken invariant of accepted input: a finding, never a normal outcome.
[[noreturn]] void finding(const std::string& what) {
  throw std::logic_error("fuzz invariant: " + what);
}

const HwConfig& default_config() {
  static const HwConfig config = [] {
    for (const BuiltinConfig& b : builtin_configs()) {
      if (b.name == "default") return parse_hw_config(std::string(b.json), "built-in:default");
    }
    throw std::logic_error("no built-in config 'default'");
  }();
  return config;
}

constexpr std::size_t kMaxRoundTripCommands = 1 << 14;
constexpr std::size_t kMaxWrittenCommands = 1 << 9;

// The timeline.csv and runtime.csv of an accepted run must read back with convert's readers,
// row for row.
void check_csv_round_trip(const profiler::Workload& workload, const profiler::Timeline& timeline) {
  std::ostringstream tl;
  profiler::write_timeline_csv(tl, workload, timeline);
  std::vector<profiler::TimelineRow> rows;
  try {
    rows = profiler::read_timeline_csv(tl.str(), "timeline.csv");
  } catch (const profiler::ParseError& e) {
    finding(std::string("timeline.csv as written does not read back: ") + e.what());
  }
  if (rows.size() != workload.commands.size()) finding("timeline.csv lost or added rows");
  std::unordered_map<std::string, std::size_t> by_id;
  for (std::size_t i = 0; i < workload.commands.size(); ++i)
    by_id.emplace(workload.commands[i].id, i);
  for (const profiler::TimelineRow& row : rows) {
    const auto it = by_id.find(row.id);
    if (it == by_id.end() || timeline.commands[it->second].start != row.start ||
        timeline.commands[it->second].end != row.end) {
      finding("timeline.csv row " + std::to_string(row.row) + " (" + row.id +
              ") does not match its command");
    }
  }
  std::ostringstream rt;
  profiler::write_runtime_csv(rt, workload, timeline);
  try {
    profiler::read_runtime_csv(rt.str(), "runtime.csv");
  } catch (const profiler::ParseError& e) {
    finding(std::string("runtime.csv as written does not read back: ") + e.what());
  }
}

// Every other output `npusim run` writes, into memory; the estimate stands in for the simulation
// too. The JSON ones must parse.
void write_outputs(const profiler::Workload& workload, const profiler::Timeline& timeline) {
  std::ostringstream annotated, summary, stats, chrome, perfetto;
  profiler::write_annotated_csv(annotated, workload, timeline);
  profiler::ReportOptions options;
  options.level = profiler::StatsLevel::kExtended;
  profiler::write_summary(summary, workload, timeline, &timeline, options);
  profiler::write_stats_json(stats, workload, timeline, &timeline, options);
  const std::vector<profiler::TraceRun> runs = {{"compile-time estimate", &timeline},
                                                {"simulation", &timeline}};
  const profiler::TraceModel model =
      profiler::build_trace_model(workload, runs, profiler::trace_options_for(options.level));
  profiler::write_chrome_trace(chrome, model);
  profiler::write_perfetto_trace(perfetto, model);
  for (const auto& [name, text] :
       {std::pair{"stats.json", stats.str()}, std::pair{"trace.json", chrome.str()}}) {
    try {
      const Json parsed = Json::parse(text);
      if (parsed.is_discarded()) finding(std::string(name) + " as written is not JSON");
    } catch (const Json::exception& e) {
      finding(std::string(name) + " as written is not JSON: " + e.what());
    }
  }
}

// What `npusim estimate` and `info` do with a schedule, short of writing files: the estimate,
// the statistics and, when asked, the CSV round trip. Rejections are normal outcomes.
void measure(const Schedule& schedule, const HwConfig& config, bool round_trip) {
  const profiler::Workload workload = make_workload(schedule, config);
  std::optional<profiler::Timeline> timeline;
  try {
    timeline = estimate(schedule, config);
  } catch (const InputError&) {
    return;  // runs past kMaxCycles
  } catch (const SimulationError&) {
    return;  // a deadlock, reported
  }
  if (timeline->commands.size() != schedule.commands.size()) finding("estimate lost commands");
  for (std::size_t i = 0; i < schedule.commands.size(); ++i) {
    const auto& t = timeline->commands[i];
    if (t.end < t.start || t.end > kMaxCycles)
      finding("estimate has end < start or past kMaxCycles");
    for (std::uint32_t d : schedule.commands[i].deps) {
      if (timeline->commands[d].end > t.start)
        finding("a command starts before its dependency ends");
    }
  }
  profiler::compute_stats(workload, *timeline);
  profiler::compute_bounds(workload);
  profiler::command_stalls(workload, *timeline);
  // The outputs of a compiled giant cost far more to write (and, under ASan, to parse back)
  // than to compile: only for schedules of a size a fuzz iteration can afford.
  if (round_trip && schedule.commands.size() <= kMaxRoundTripCommands) {
    check_csv_round_trip(workload, *timeline);
    if (schedule.commands.size() <= kMaxWrittenCommands) write_outputs(workload, *timeline);
  }
}

// Bytes of every tensor of a graph, saturating.
std::uint64_t graph_bytes(const Graph& g) {
  std::uint64_t total = 0;
  for (const Tensor& t : g.tensors) {
    std::uint64_t bytes = dtype_bytes(t.dtype);
    for (std::uint64_t d : t.shape) {
      if (__builtin_mul_overflow(bytes, d, &bytes)) return ~std::uint64_t{0};
    }
    if (__builtin_add_overflow(total, bytes, &total)) return ~std::uint64_t{0};
  }
  return total;
}

// The compiler's work grows with the model's bytes over the local memory (the number of tiles).
// A tiny file can describe a model of terabytes (check_graph allows 2^48 bytes per tensor), which
// compiles, correctly, into millions of commands: not a hang, but too slow for a fuzz iteration.
// So a graph of more than kSmallGraph bytes compiles for the default config with lram_kib scaled
// up with it (local memory = bytes / 8, as the default's 512 KiB for 4 MiB), at most to 2^30 KiB,
// which keeps it to some hundreds of tiles per tensor and drives the compiler's arithmetic to
// large sizes.
constexpr std::uint64_t kSmallGraph = std::uint64_t{1} << 22;
constexpr std::uint64_t kMaxLramKib = std::uint64_t{1} << 30;

HwConfig config_for(const Graph& g) {
  const std::uint64_t bytes = graph_bytes(g);
  if (bytes <= kSmallGraph) return default_config();
  const std::uint64_t kib = std::min(kMaxLramKib, (bytes >> 13) + 1);
  return parse_hw_config("{}", "built-in:default", {"lram_kib=" + std::to_string(kib)});
}

// What `npusim estimate` does with a model: compile it, then measure the schedule.
void compile_and_measure(const Graph& graph) {
  const HwConfig config = config_for(graph);
  std::optional<Schedule> schedule;
  try {
    schedule = compile_schedule(graph, config);
  } catch (const InputError&) {
    return;  // a layer that cannot be compiled for this config
  }
  measure(*schedule, config, true);
}

// A small model every config should compile unless its local memory is too small.
constexpr const char* kSmallModel = R"({
  "format": "npusim-graph", "version": 1, "name": "small",
  "tensors": [
    {"name": "x", "shape": [1, 8, 16, 16]},
    {"name": "w1", "shape": [16, 8, 3, 3], "constant": true},
    {"name": "c1", "shape": [1, 16, 16, 16]},
    {"name": "r1", "shape": [1, 16, 16, 16]},
    {"name": "dw", "shape": [16, 1, 3, 3], "constant": true},
    {"name": "c2", "shape": [1, 16, 8, 8]},
    {"name": "p", "shape": [1, 16, 1, 1]},
    {"name": "f", "shape": [1, 16]},
    {"name": "w2", "shape": [16, 10], "constant": true},
    {"name": "y", "shape": [1, 10]},
    {"name": "s", "shape": [1, 10], "dtype": "float32"},
    {"name": "h", "shape": [1, 10], "dtype": "float32"}
  ],
  "inputs": ["x"], "outputs": ["h"],
  "layers": [
    {"name": "conv1", "op": "Conv", "inputs": ["x", "w1"], "outputs": ["c1"],
     "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
    {"name": "relu1", "op": "Relu", "inputs": ["c1"], "outputs": ["r1"]},
    {"name": "dw2", "op": "Conv", "inputs": ["r1", "dw"], "outputs": ["c2"],
     "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "group": 16}},
    {"name": "pool", "op": "GlobalAveragePool", "inputs": ["c2"], "outputs": ["p"]},
    {"name": "flat", "op": "Flatten", "inputs": ["p"], "outputs": ["f"]},
    {"name": "fc", "op": "MatMul", "inputs": ["f", "w2"], "outputs": ["y"]},
    {"name": "soft", "op": "Softmax", "inputs": ["y"], "outputs": ["s"]},
    {"name": "host", "op": "Host", "inputs": ["s"], "outputs": ["h"], "attrs": {"onnx_op": "Neg"}}
  ]
})";

const Graph& small_graph() {
  static const Graph graph =
      parse_graph_json(parse_json_text(kSmallModel, "small.json"), "small.json");
  return graph;
}

// What `npusim convert` does with a file it read: a Perfetto trace and an overview (JSON, which
// must parse, and a table), at the default clock and at 1 kHz, where large times no longer fit
// the trace's nanoseconds (a ParseError, a normal outcome).
void convert(profiler::ImportedFile file) {
  for (const std::uint64_t khz : {std::uint64_t{800000}, std::uint64_t{1}}) {
    std::optional<profiler::ImportedTrace> trace;
    try {
      trace.emplace(std::vector<profiler::ImportedFile>{file}, khz);
    } catch (const profiler::ParseError&) {
      continue;
    }
    std::ostringstream perfetto, overview, table;
    trace->write_perfetto(perfetto);
    profiler::write_overview_json(overview, *trace, "fuzz.pftrace");
    profiler::write_overview_table(table, *trace);
    try {
      if (Json::parse(overview.str()).is_discarded()) finding("output is not JSON");
    } catch (const Json::exception& e) {
      finding(std::string("the convert overview as written is not JSON: ") + e.what());
    }
  }
}

// A temporary file for import_onnx, which reads a path: one per process, overwritten each time.
class TempFile {
 public:
  explicit TempFile(const std::string& name) {
    dir_ = std::filesystem::temp_directory_path() / ("npusim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    if (size > 0)
      out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path_);
    return path_;
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

// A schedule with every field the loader sets, to compare two loads of one file.
std::string describe_schedule(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(out, s);
  for (const Command& c : s.commands) {
    out << c.program << ' ' << c.lram_alloc_bytes << ' ' << c.lram_free_bytes << ' ' << c.macs
        << ' ' << c.vector_macs << ' ' << c.compute_cycles << ' ' << c.isolated_cycles << '\n';
  }
  return out.str();
}

}  // namespace

int fuzz_hw_config(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  // JSON, then NUL-separated overrides.
  const std::size_t nul = text.find('\0');
  const std::string json = text.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    std::size_t from = nul + 1;
    while (true) {
      const std::size_t next = text.find('\0', from);
      overrides.push_back(text.substr(from, next == std::string::npos ? next : next - from));
      if (next == std::string::npos) break;
      from = next + 1;
    }
  }
  std::optional<HwConfig> config;
  try {
    config = parse_hw_config(json, "fuzz.json", overrides);
  } catch (const InputError&) {
    return 0;
  }
  config->dram_latency_cycles();
  std::optional<Schedule> schedule;
  try {
    schedule = compile_schedule(small_graph(), *config);
  } catch (const InputError&) {
    return 0;  // too little local memory for the model
  }
  measure(*schedule, *config, false);
  return 0;
}

int fuzz_schedule(const std::uint8_t* data, std::size_t size) {
  // Through a file, as the CLI reads it: the fast reader (load_schedule) must load it exactly as
  // the document loader does, the same schedule or the same problems.
  static TempFile file("fuzz.json");
  const std::string& path = file.write(data, size);
  std::optional<Schedule> schedule;
  std::string problems;
  try {
    schedule = load_schedule(path, default_config());
  } catch (const InputError& e) {
    problems = e.what();
  }
  std::optional<Schedule> document;
  std::string document_problems;
  try {
    document = parse_schedule(read_json_file(path), path, default_config());
  } catch (const InputError& e) {
    document_problems = e.what();
  }
  if (problems != document_problems) {
    finding("load_schedule and parse_schedule disagree: '" + problems.substr(0, 300) + "' vs '" +
            document_problems.substr(0, 300) + "'");
  }
  if (!schedule) return 0;
  if (describe_schedule(*schedule) != describe_schedule(*document))
    finding("load_schedule and parse_schedule load different schedules");
  measure(*schedule, default_config(), true);
  return 0;
}

int fuzz_graph_json(const std::uint8_t* data, std::size_t size) {
  std::optional<Graph> graph;
  try {
    graph = parse_graph_json(parse_json_text(text_of(data, size), "fuzz.json"), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  compile_and_measure(*graph);
  return 0;
}

int fuzz_topology(const std::uint8_t* data, std::size_t size) {
  std::optional<Graph> graph;
  try {
    graph = parse_scalesim_topology(text_of(data, size), "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  compile_and_measure(*graph);
  return 0;
}

int fuzz_onnx(const std::uint8_t* data, std::size_t size) {
  static TempFile file("fuzz.onnx");
  const std::string& path = file.write(data, size);
  std::optional<Graph> graph;
  for (const bool host_fallback : {false, true}) {
    OnnxImportOptions options;
    options.host_fallback = host_fallback;
    try {
      graph = import_onnx(path, options);
      break;
    } catch (const InputError&) {
    }
  }
  if (graph) compile_and_measure(*graph);
  return 0;
}

int fuzz_timeline_csv(const std::uint8_t* data, std::size_t size) {
  profiler::ImportedFile file;
  file.path = "fuzz.csv";
  file.kind = profiler::ImportedFile::Kind::kTimeline;
  try {
    file.timeline = profiler::read_timeline_csv(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const profiler::ParseError&) {
    return 0;
  }
  for (const auto& row : file.timeline) {
    if (row.end < row.start || row.end > profiler::kMaxCsvInteger || row.id.empty() ||
        row.op_type.empty()) {
      finding("read_timeline_csv accepted a row it documents as invalid");
    }
  }
  convert(std::move(file));
  return 0;
}

int fuzz_runtime_csv(const std::uint8_t* data, std::size_t size) {
  profiler::ImportedFile file;
  file.path = "fuzz.csv";
  file.kind = profiler::ImportedFile::Kind::kRuntime;
  try {
    file.runtime = profiler::read_runtime_csv(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const profiler::ParseError&) {
    return 0;
  }
  for (const auto& row : file.runtime) {
    if (row.duration_us > row.end_us || row.end_us > profiler::kMaxCsvInteger) {
      finding("read_runtime_csv accepted a row it documents as invalid");
    }
  }
  convert(std::move(file));
  return 0;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> list = {
      {"hw_config", fuzz_hw_config},
      {"schedule", fuzz_schedule},
      {"graph_json", fuzz_graph_json},
      {"topology", fuzz_topology},
      {"onnx", fuzz_onnx},
      {"timeline_csv", fuzz_timeline_csv},
      {"runtime_csv", fuzz_runtime_csv},
  };
  return list;
}

}  // namespace npusim::fuzz
