#include "profiler/chrome_trace.h"

#include <string>
#include <string_view>

#include "profiler/json_writer.h"
#include "profiler/text_out.h"

namespace npusim::profiler {
namespace {

// JSON text through a TextOut: no allocation per event, numbers by std::to_chars.
class JsonOut {
 public:
  JsonOut(std::ostream& out, std::uint64_t limit_bytes) : out_(out, limit_bytes) {}

  JsonOut& raw(std::string_view s) {
    out_.put(s);
    return *this;
  }
  JsonOut& str(std::string_view s) {
    put_json_string(out_, s);
    return *this;
  }
  JsonOut& num(std::uint64_t v) {
    out_.num(v);
    return *this;
  }
  JsonOut& num(std::int64_t v) {
    out_.num(v);
    return *this;
  }
  // Shortest text that reads back as the same double: deterministic, exact.
  JsonOut& num(double v) {
    out_.shortest(v);
    return *this;
  }
  JsonOut& us(std::uint64_t ns) {
    out_.us(ns);
    return *this;
  }
  void flush() { out_.flush(); }
  bool over_limit() const { return out_.over_limit(); }

 private:
  TextOut out_;
};

// The name of a flow's `s` and `f` events. Viewers match the two by id, category and name
// (Perfetto's JSON importer and DevTools key flows by all three), and DevTools binds each to the
// slice of its own category at its timestamp: so every slice and flow event carries
// kTraceCategory.
constexpr const char* kFlowName = "dependency";

// The `M` events: process names and sort order, then thread names and sort order.
template <typename BeginEvent>
void write_metadata(const TraceModel& model, BeginEvent begin_event) {
  for (const TraceProcess& p : model.processes) {
    const auto pid = static_cast<std::int64_t>(p.pid);
    begin_event()
        .raw("{\"ph\":\"M\",\"pid\":")
        .num(pid)
        .raw(",\"name\":\"process_name\",\"args\":{\"name\":")
        .str(p.name)
        .raw("}}");
    begin_event()
        .raw("{\"ph\":\"M\",\"pid\":")
        .num(pid)
        .raw(",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":")
        .num(pid)
        .raw("}}");
  }
  for (const TraceTrack& t : model.tracks) {
    const auto pid = static_cast<std::int64_t>(model.processes[t.process].pid);
    const auto tid = static_cast<std::int64_t>(t.tid);
    begin_event()
        .raw("{\"ph\":\"M\",\"pid\":")
        .num(pid)
        .raw(",\"tid\":")
        .num(tid)
        .raw(",\"name\":\"thread_name\",\"args\":{\"name\":")
        .str(t.name)
        .raw("}}");
    begin_event()
        .raw("{\"ph\":\"M\",\"pid\":")
        .num(pid)
        .raw(",\"tid\":")
        .num(tid)
        .raw(",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":")
        .num(static_cast<std::int64_t>(t.sort_index))
        .raw("}}");
  }
}

}  // namespace

bool write_chrome_trace(std::ostream& out, const TraceModel& model, std::uint64_t limit_bytes) {
  const Workload& w = *model.workload;
  JsonOut j(out, limit_bytes);
  std::vector<TraceArg> args;
  bool first = true;
  auto begin_event = [&]() -> JsonOut& {
    j.raw(first ? "\n" : ",\n");
    first = false;
    return j;
  };

  j.raw("{\"traceEvents\":[");
  write_metadata(model, begin_event);

  for (const TraceEvent& e : model.events) {
    if (e.kind == TraceEvent::Kind::kEnd) continue;  // X events carry their duration
    if (j.over_limit()) return false;
    if (e.kind == TraceEvent::Kind::kCounter) {
      const TraceCounter& c = model.counters[e.index];
      const TraceCounterSample& s = c.samples[e.sample];
      begin_event()
          .raw("{\"ph\":\"C\",\"pid\":")
          .num(static_cast<std::int64_t>(model.processes[c.process].pid))
          .raw(",\"ts\":")
          .us(s.ts_ns)
          .raw(",\"name\":")
          .str(c.group)
          .raw(",\"args\":{")
          .str(c.series)
          .raw(":");
      if (c.integer()) {
        j.num(static_cast<std::uint64_t>(s.value));
      } else {
        j.num(s.value);
      }
      j.raw("}}");
      continue;
    }
    const TraceSlice& s = model.slices[e.index];
    const TraceTrack& t = model.tracks[s.track];
    const auto pid = static_cast<std::int64_t>(model.processes[s.process].pid);
    const auto tid = static_cast<std::int64_t>(t.tid);
    const char* cat = TraceModel::slice_category(s);
    begin_event()
        .raw("{\"ph\":\"X\",\"pid\":")
        .num(pid)
        .raw(",\"tid\":")
        .num(tid)
        .raw(",\"ts\":")
        .us(s.begin_ns)
        .raw(",\"dur\":")
        .us(s.end_ns - s.begin_ns)
        .raw(",\"name\":")
        .str(model.slice_name(s))
        .raw(",\"cat\":")
        .str(cat)
        .raw(",\"args\":{");
    bool first_arg = true;
    model.slice_args(s, args);
    for (const TraceArg& a : args) {
      j.raw(first_arg ? "\"" : ",\"").raw(a.name).raw("\":");
      first_arg = false;
      switch (a.kind) {
        case TraceArg::Kind::kUint:
          j.num(a.uint_value);
          break;
        case TraceArg::Kind::kDouble:
          j.num(a.double_value);
          break;
        case TraceArg::Kind::kString:
          j.str(a.string_value);
          break;
      }
    }
    j.raw("}}");
    model.for_each_flow_out(e.index, [&](std::uint64_t id) {
      begin_event()
          .raw("{\"ph\":\"s\",\"pid\":")
          .num(pid)
          .raw(",\"tid\":")
          .num(tid)
          .raw(",\"ts\":")
          .us(s.begin_ns)
          .raw(",\"id\":")
          .num(id)
          .raw(",\"name\":\"")
          .raw(kFlowName)
          .raw("\",\"cat\":")
          .str(cat)
          .raw("}");
    });
    model.for_each_flow_in(e.index, [&](std::uint64_t id) {
      begin_event()
          .raw("{\"ph\":\"f\",\"bp\":\"e\",\"pid\":")
          .num(pid)
          .raw(",\"tid\":")
          .num(tid)
          .raw(",\"ts\":")
          .us(s.begin_ns)
          .raw(",\"id\":")
          .num(id)
          .raw(",\"name\":\"")
          .raw(kFlowName)
          .raw("\",\"cat\":")
          .str(cat)
          .raw("}");
    });
  }
  j.raw("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"npusim\",\"model\":")
      .str(w.model_name)
      .raw(",\"config\":")
      .str(w.device.config_name)
      .raw(",\"clock_khz\":")
      .num(w.device.clock_khz)
      .raw("}}\n");
  j.flush();
  return !j.over_limit();
}

}  // namespace npusim::profiler
