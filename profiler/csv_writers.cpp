#include "profiler/csv_writers.h"

#include <algorithm>
#include <numeric>

#include "profiler/stats.h"
#include "profiler/trace_model.h"

namespace npusim::profiler {

std::string csv_field(const std::string& value, char separator) {
  if (value.find_first_of(std::string{separator, '"', '\n', '\r'}) == std::string::npos) {
    return value;
  }
  std::string quoted = "\"";
  for (char ch : value) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  quoted += '"';
  return quoted;
}

void write_timeline_csv(std::ostream& out, const Workload& workload, const Timeline& timeline) {
  std::vector<std::uint32_t> order(workload.commands.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return timeline.commands[a].start < timeline.commands[b].start;
  });
  out << "ID,Start,End,Location,Op Type\n";
  for (std::uint32_t i : order) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    out << csv_field(c.id) << ',' << t.start << ',' << t.end << ',' << csv_field(c.location) << ','
        << csv_field(c.op_type) << '\n';
  }
}

void write_runtime_csv(std::ostream& out, const Workload& workload, const Timeline& timeline) {
  const RunStats stats = compute_stats(workload, timeline);
  const Clock clock{workload.device.clock_khz};
  out << "id;time_since_open;time_since_start;location\n";
  for (std::size_t i = 0; i < stats.programs.size(); ++i) {
    const ProgramStats& p = stats.programs[i];
    if (p.commands == 0) continue;  // a declared program with no commands never ran
    out << i << ';' << clock.to_us_rounded(p.end) << ';' << clock.to_us_rounded(p.end - p.start)
        << ';' << csv_field(workload.programs[i].location, ';') << '\n';
  }
}

void write_annotated_csv(std::ostream& out, const Workload& workload, const Timeline& timeline) {
  const std::size_t slices = workload.device.slices;
  // Which slices and DMA engines each program uses.
  std::vector<std::vector<bool>> uses(workload.programs.size(),
                                      std::vector<bool>(slices + 3, false));
  for (const CommandInfo& c : workload.commands) {
    const EngineKind kind = workload.engines[c.engine].kind;
    const std::size_t flag = kind == EngineKind::kDmaIn    ? slices
                             : kind == EngineKind::kDmaOut ? slices + 1
                             : kind == EngineKind::kHost
                                 ? slices + 2
                                 : std::size_t{workload.engines[c.engine].slice};
    uses[c.program][flag] = true;
  }
  out << "program;operation;slice;invocation;start_us;end_us;total_us";
  for (std::size_t s = 0; s < slices; ++s) out << ";slice" << s << "_used";
  out << ";dma_in_used;dma_out_used;host_used\n";
  std::vector<std::uint32_t> order(workload.commands.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const CommandInfo& ca = workload.commands[a];
    const CommandInfo& cb = workload.commands[b];
    if (ca.program != cb.program) return ca.program < cb.program;
    return timeline.commands[a].start < timeline.commands[b].start;
  });
  const std::uint64_t khz = workload.device.clock_khz;
  const std::vector<std::string> names = command_names(workload);
  for (std::uint32_t i : order) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    const std::uint64_t start_ns = trace_ns(t.start, khz), end_ns = trace_ns(t.end, khz);
    const EngineInfo& engine = workload.engines[c.engine];
    out << c.program << ';' << csv_field(c.op_type, ';') << ';'
        << (on_slice(engine.kind) ? std::to_string(engine.slice) : std::string("-")) << ';'
        << csv_field(names[i], ';') << ';' << trace_us_text(start_ns) << ';'
        << trace_us_text(end_ns) << ';' << trace_us_text(end_ns - start_ns);
    for (bool used : uses[c.program]) out << ';' << (used ? 1 : 0);
    out << '\n';
  }
}

}  // namespace npusim::profiler
