#include "profiler/csv_writers.h"

#include <algorithm>
#include <numeric>

#include "profiler/stats.h"

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
    out << i << ';' << clock.to_us_rounded(p.end) << ';'
        << clock.to_us_rounded(p.end - p.start) << ';'
        << csv_field(workload.programs[i].location, ';') << '\n';
  }
}

}  // namespace npusim::profiler
