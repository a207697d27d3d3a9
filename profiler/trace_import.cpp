#include "profiler/trace_import.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "profiler/perfetto_trace.h"

namespace npusim::profiler {
namespace {

constexpr std::uint64_t kMaxTraceNs =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// Engines of a timeline file's workload, in track order.
constexpr std::uint32_t kCompute = 0;
constexpr std::uint32_t kDmaIn = 1;
constexpr std::uint32_t kDmaOut = 2;

std::uint32_t class_engine(const std::string& op_type) {
  if (op_type == "DMA_IN") return kDmaIn;
  if (op_type == "DMA_OUT") return kDmaOut;
  return kCompute;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Only names and times: the rows carry no bytes, MACs or dependencies, so the trace claims none.
TraceOptions import_options() {
  TraceOptions o;
  o.flows = false;
  o.counters = false;
  o.detailed_args = false;
  return o;
}

}  // namespace

std::string track_class(const std::string& op_type) {
  switch (class_engine(op_type)) {
    case kDmaIn:
      return "DMA_IN";
    case kDmaOut:
      return "DMA_OUT";
    default:
      return "compute";
  }
}

OverviewFigures overview_figures(const std::vector<Interval>& dma,
                                 const std::vector<Interval>& slice) {
  OverviewFigures f;
  bool any = false;
  for (const auto* list : {&dma, &slice}) {
    for (const Interval& i : *list) {
      f.first_start = any ? std::min(f.first_start, i.start) : i.start;
      f.last_end = any ? std::max(f.last_end, i.end) : i.end;
      any = true;
    }
  }
  const std::vector<Interval> du = interval_union(dma);
  const std::vector<Interval> su = interval_union(slice);
  for (const Interval& i : du) f.dma += i.end - i.start;
  for (const Interval& i : su) f.slice += i.end - i.start;
  f.overlap = intersection_length(du, su);
  f.dma_only = f.dma - f.overlap;
  f.slice_only = f.slice - f.overlap;
  f.busy = f.dma_only + f.slice_only + f.overlap;
  f.overall = f.last_end - f.first_start;
  f.idle = f.overall - f.busy;
  return f;
}

ImportedTrace::ImportedTrace(std::vector<ImportedFile> files, std::uint64_t clock_khz)
    : clock_khz_(clock_khz), files_(std::move(files)) {
  std::int32_t next_tid = static_cast<std::int32_t>(files_.size()) + 1;
  std::uint64_t next_uuid = 1;
  for (std::size_t k = 0; k < files_.size(); ++k) {
    const ImportedFile& file = files_[k];
    auto part = std::make_unique<Part>();
    Workload& w = part->workload;
    Timeline& t = part->timeline;
    FileOverview ov;
    ov.path = file.path;
    ov.kind = file.kind;
    ov.pid = static_cast<std::int32_t>(k) + 1;
    w.programs.push_back({"", ""});
    if (file.kind == ImportedFile::Kind::kTimeline) {
      w.model_name = file.path;
      w.device.clock_khz = clock_khz;
      w.engines = {{"compute", EngineKind::kArray, 1, 0, 0, ""},
                   {"DMA_IN", EngineKind::kDmaIn, 1, 0, 0, ""},
                   {"DMA_OUT", EngineKind::kDmaOut, 1, 0, 0, ""}};
      std::vector<Interval> dma_ns, slice_ns, dma_cycles, slice_cycles;
      for (const TimelineRow& row : file.timeline) {
        const std::uint64_t end_ns = trace_ns(row.end, clock_khz);
        if (end_ns > kMaxTraceNs) {
          throw ParseError(file.path, row.row, "End",
                           std::to_string(row.end) +
                               " cycles is past the latest time a trace can "
                               "hold (2^63-1 ns) at this clock");
        }
        CommandInfo c{};
        c.id = row.id;
        c.engine = class_engine(row.op_type);
        c.op_type = row.op_type;
        c.location = row.location;
        w.commands.push_back(std::move(c));
        t.commands.push_back({row.start, row.end, 0});
        const Interval ns{trace_ns(row.start, clock_khz), end_ns};
        const Interval cy{row.start, row.end};
        const bool dma = class_engine(row.op_type) != kCompute;
        (dma ? dma_ns : slice_ns).push_back(ns);
        (dma ? dma_cycles : slice_cycles).push_back(cy);
      }
      ov.rows = file.timeline.size();
      ov.ns = overview_figures(dma_ns, slice_ns);
      ov.cycles = overview_figures(dma_cycles, slice_cycles);
    } else {
      // One tick = 1 µs: a row's "cycles" argument is its duration in the file's own unit.
      w.model_name = file.path;
      w.device.clock_khz = 1000;
      w.engines = {{"programs", EngineKind::kArray, 1, 0, 0, ""}};
      std::vector<Interval> programs_ns;
      for (const RuntimeRow& row : file.runtime) {
        CommandInfo c{};
        c.id = std::to_string(row.id);
        c.engine = 0;
        c.op_type = "program";
        c.location = row.location;
        w.commands.push_back(std::move(c));
        t.commands.push_back({row.start_us(), row.end_us, 0});
        programs_ns.push_back({row.start_us() * 1000, row.end_us * 1000});
      }
      ov.rows = file.runtime.size();
      ov.ns = overview_figures({}, programs_ns);
    }
    const std::string name =
        (file.kind == ImportedFile::Kind::kTimeline ? "timeline: " : "runtime: ") + file.path;
    // Named `{row index}_{Op Type}_{ID}`: a vendor file's rows carry no layer.
    std::vector<std::string> names;
    for (std::size_t i = 0; i < w.commands.size(); ++i) {
      names.push_back(std::to_string(i) + "_" + w.commands[i].op_type + "_" + w.commands[i].id);
    }
    part->model = build_trace_model(w, {{name, &t}}, import_options(), std::move(names));
    // Unique in the whole file: pid = file number, tids above every pid, uuids counted up.
    TraceModel& m = part->model;
    m.processes[0].pid = ov.pid;
    m.processes[0].uuid = next_uuid++;
    for (TraceTrack& track : m.tracks) {
      track.tid = next_tid++;
      track.uuid = next_uuid++;
    }
    parts_.push_back(std::move(part));
    overview_.push_back(std::move(ov));
  }
}

void ImportedTrace::write_perfetto(std::ostream& out) const {
  // A Perfetto trace is a sequence of packets, so the processes' traces concatenate into one.
  for (const auto& part : parts_) write_perfetto_trace(out, part->model);
}

std::vector<const TraceModel*> ImportedTrace::models() const {
  std::vector<const TraceModel*> list;
  for (const auto& part : parts_) list.push_back(&part->model);
  return list;
}

void write_overview_table(std::ostream& out, const ImportedTrace& trace) {
  out << "overview (us; busy = union of all rows, idle = overall - busy, overall = last end - "
         "first start):\n";
  const char* columns[] = {"DMA",       "slice", "DMA only", "slice only",
                           "DMA+slice", "busy",  "idle",     "overall"};
  out << "  " << pad_left("pid", 4) << "  " << pad_right("kind", 9) << pad_left("rows", 8);
  for (const char* c : columns) out << pad_left(c, 14);
  out << "  file\n";
  for (const FileOverview& f : trace.overview()) {
    const bool timeline = f.kind == ImportedFile::Kind::kTimeline;
    out << "  " << pad_left(std::to_string(f.pid), 4) << "  "
        << pad_right(timeline ? "timeline" : "runtime", 9) << pad_left(std::to_string(f.rows), 8);
    const OverviewFigures& n = f.ns;
    for (std::uint64_t v : {n.dma, n.slice, n.dma_only, n.slice_only, n.overlap}) {
      out << pad_left(timeline ? trace_us_text(v) : "-", 14);
    }
    for (std::uint64_t v : {n.busy, n.idle, n.overall}) out << pad_left(trace_us_text(v), 14);
    out << "  " << f.path << '\n';
  }
}

void write_overview_json(std::ostream& out, const ImportedTrace& trace,
                         const std::string& trace_path) {
  using Json = nlohmann::ordered_json;
  auto figures = [](const OverviewFigures& f, bool timeline) {
    Json j = {{"first_start", f.first_start}, {"last_end", f.last_end}};
    if (timeline) {
      j["dma"] = f.dma;
      j["slice"] = f.slice;
      j["dma_only"] = f.dma_only;
      j["slice_only"] = f.slice_only;
      j["dma_slice_overlap"] = f.overlap;
    }
    j["busy"] = f.busy;
    j["idle"] = f.idle;
    j["overall"] = f.overall;
    return j;
  };
  Json files = Json::array();
  for (const FileOverview& f : trace.overview()) {
    const bool timeline = f.kind == ImportedFile::Kind::kTimeline;
    Json j = {{"pid", f.pid},
              {"file", f.path},
              {"kind", timeline ? "timeline" : "runtime"},
              {"rows", f.rows},
              {"ns", figures(f.ns, timeline)}};
    if (f.cycles) j["cycles"] = figures(*f.cycles, true);
    files.push_back(std::move(j));
  }
  const Json j = {{"format", "npusim-convert-overview"},
                  {"version", 1},
                  {"trace", trace_path},
                  {"clock_mhz", static_cast<double>(trace.clock_khz()) / 1000},
                  {"files", std::move(files)}};
  out << j.dump(2) << '\n';
}

}  // namespace npusim::profiler
