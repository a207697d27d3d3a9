#include "profiler/csv_writers.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "profiler/stats.h"
#include "profiler/text_out.h"
#include "profiler/trace_model.h"

namespace npusim::profiler {
namespace {

// csv_field's text, appended without building a string.
void put_field(TextOut& out, std::string_view value, char separator) {
  bool plain = true;
  for (char ch : value) {
    if (ch == separator || ch == '"' || ch == '\n' || ch == '\r') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out.put(value);
    return;
  }
  out.put('"');
  for (char ch : value) {
    if (ch == '"') out.put('"');
    out.put(ch);
  }
  out.put('"');
}

}  // namespace

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

bool write_timeline_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                        std::uint64_t limit_bytes) {
  std::vector<std::uint32_t> order(workload.commands.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return timeline.commands[a].start < timeline.commands[b].start;
  });
  TextOut text(out, limit_bytes);
  text.put("ID,Start,End,Location,Op Type\n");
  for (std::uint32_t i : order) {
    const CommandInfo& c = workload.commands[i];
    const CommandTiming& t = timeline.commands[i];
    put_field(text, c.id, ',');
    text.put(',').num(t.start).put(',').num(t.end).put(',');
    put_field(text, c.location, ',');
    text.put(',');
    put_field(text, c.op_type, ',');
    text.put('\n');
    if (text.over_limit()) return false;
  }
  return !text.over_limit();
}

void write_runtime_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                       const RunStats* given_stats) {
  std::optional<RunStats> computed;
  if (given_stats == nullptr) computed = compute_stats(workload, timeline);
  const RunStats& stats = given_stats != nullptr ? *given_stats : *computed;
  const Clock clock{workload.device.clock_khz};
  out << "id;time_since_open;time_since_start;location\n";
  for (std::size_t i = 0; i < stats.programs.size(); ++i) {
    const ProgramStats& p = stats.programs[i];
    if (p.commands == 0) continue;  // a declared program with no commands never ran
    out << i << ';' << clock.to_us_rounded(p.end) << ';' << clock.to_us_rounded(p.end - p.start)
        << ';' << csv_field(workload.programs[i].location, ';') << '\n';
  }
}

bool write_annotated_csv(std::ostream& out, const Workload& workload, const Timeline& timeline,
                         std::uint64_t limit_bytes) {
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
  TextOut text(out, limit_bytes);
  text.put("program;operation;slice;invocation;start_us;end_us;total_us");
  for (std::size_t s = 0; s < slices; ++s) text.put(";slice").num(s).put("_used");
  text.put(";dma_in_used;dma_out_used;host_used\n");
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
    text.num(c.program).put(';');
    put_field(text, c.op_type, ';');
    text.put(';');
    if (on_slice(engine.kind)) {
      text.num(engine.slice);
    } else {
      text.put('-');
    }
    text.put(';');
    put_field(text, names[i], ';');
    text.put(';').us(start_ns).put(';').us(end_ns).put(';').us(end_ns - start_ns);
    for (bool used : uses[c.program]) text.put(used ? ";1" : ";0");
    text.put('\n');
    if (text.over_limit()) return false;
  }
  return !text.over_limit();
}

}  // namespace npusim::profiler
