// `npusim convert`: timeline.csv and runtime.csv files (npusim's or a vendor toolchain's) as one
// Perfetto trace, one process per file, plus an overview of each file (docs/report.md).
//
// Each file becomes a small Workload (one engine per track class, one command per row) and a
// Timeline, laid out by build_trace_model (so overlapping rows of a class go to extra lanes exactly
// as in npusim's own traces) and serialised by write_perfetto_trace; the processes of the files
// are renumbered so that pids, tids and track uuids are unique in the file.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "profiler/csv_readers.h"
#include "profiler/report.h"
#include "profiler/trace_model.h"

namespace npusim::profiler {

struct ImportedFile {
  enum class Kind : std::uint8_t { kTimeline, kRuntime };
  std::string path;  // as given; names the process
  Kind kind = Kind::kTimeline;
  std::vector<TimelineRow> timeline;  // kTimeline
  std::vector<RuntimeRow> runtime;    // kRuntime
};

// Track class of a timeline.csv op type: "DMA_IN", "DMA_OUT", or "compute" for any other.
std::string track_class(const std::string& op_type);

// What the figures of one file are, in the trace's nanoseconds (and, for a timeline, in cycles).
// busy = DMA only + slice only + overlap; idle = overall - busy; overall = last end - first start
// of the file's rows (0 without rows). For a runtime.csv, whose rows are programs, only busy
// (union of the programs), idle and overall apply.
struct OverviewFigures {
  std::uint64_t dma = 0;         // union of the DMA_IN and DMA_OUT rows
  std::uint64_t slice = 0;       // union of the other (compute) rows
  std::uint64_t dma_only = 0;    // dma - overlap
  std::uint64_t slice_only = 0;  // slice - overlap
  std::uint64_t overlap = 0;     // length of the intersection of the two unions
  std::uint64_t busy = 0;        // union of all rows
  std::uint64_t idle = 0;        // overall - busy
  std::uint64_t overall = 0;     // last end - first start
  std::uint64_t first_start = 0;
  std::uint64_t last_end = 0;
};

struct FileOverview {
  std::string path;
  ImportedFile::Kind kind = ImportedFile::Kind::kTimeline;
  std::size_t rows = 0;
  std::int32_t pid = 0;
  OverviewFigures ns;                     // from the slices' ns, as the trace shows them
  std::optional<OverviewFigures> cycles;  // timeline files: the same in cycles
};

// Row times in ns: timeline cycles with trace_ns(cycles, clock_khz); runtime µs × 1000.
OverviewFigures overview_figures(const std::vector<Interval>& dma,
                                 const std::vector<Interval>& slice);

class ImportedTrace {
 public:
  // Throws ParseError (file, row, field) if a row's time does not fit a trace (ns above 2^63-1).
  ImportedTrace(std::vector<ImportedFile> files, std::uint64_t clock_khz);
  ImportedTrace(const ImportedTrace&) = delete;
  ImportedTrace& operator=(const ImportedTrace&) = delete;

  void write_perfetto(std::ostream& out) const;
  const std::vector<FileOverview>& overview() const { return overview_; }
  // The processes' trace models, in file order (for tests).
  std::vector<const TraceModel*> models() const;
  std::uint64_t clock_khz() const { return clock_khz_; }

 private:
  struct Part {
    Workload workload;
    Timeline timeline;
    TraceModel model;
  };
  std::uint64_t clock_khz_;
  std::vector<ImportedFile> files_;
  std::vector<std::unique_ptr<Part>> parts_;  // stable addresses: models point into them
  std::vector<FileOverview> overview_;
};

// The overview as a table for people (µs with 3 decimals) and as JSON
// (`"format": "npusim-convert-overview"`, docs/report.md).
void write_overview_table(std::ostream& out, const ImportedTrace& trace);
void write_overview_json(std::ostream& out, const ImportedTrace& trace,
                         const std::string& trace_path);

}  // namespace npusim::profiler
