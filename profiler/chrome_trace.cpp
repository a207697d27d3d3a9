#include "profiler/chrome_trace.h"

#include <charconv>
#include <string>

namespace npusim::profiler {
namespace {

// Streams JSON text through a buffer, so that a trace of millions of events is never one object
// in memory.
class JsonOut {
 public:
  explicit JsonOut(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 4096); }
  ~JsonOut() { flush(); }
  JsonOut(const JsonOut&) = delete;
  JsonOut& operator=(const JsonOut&) = delete;

  JsonOut& raw(const char* s) {
    buf_ += s;
    return maybe_flush();
  }
  JsonOut& raw(const std::string& s) {
    buf_ += s;
    return maybe_flush();
  }
  JsonOut& str(const std::string& s) {
    buf_ += '"';
    for (char ch : s) {
      const auto u = static_cast<unsigned char>(ch);
      switch (ch) {
        case '"':
          buf_ += "\\\"";
          break;
        case '\\':
          buf_ += "\\\\";
          break;
        case '\n':
          buf_ += "\\n";
          break;
        case '\r':
          buf_ += "\\r";
          break;
        case '\t':
          buf_ += "\\t";
          break;
        case '\b':
          buf_ += "\\b";
          break;
        case '\f':
          buf_ += "\\f";
          break;
        default:
          if (u < 0x20) {
            static const char* const kHex = "0123456789abcdef";
            buf_ += "\\u00";
            buf_ += kHex[u >> 4];
            buf_ += kHex[u & 0xf];
          } else {
            buf_ += ch;
          }
      }
    }
    buf_ += '"';
    return maybe_flush();
  }
  JsonOut& num(std::uint64_t v) {
    char tmp[24];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
    return *this;
  }
  JsonOut& num(std::int64_t v) {
    char tmp[24];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
    return *this;
  }
  // Shortest text that reads back as the same double: deterministic, exact.
  JsonOut& num(double v) {
    char tmp[64];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
    return *this;
  }
  JsonOut& us(std::uint64_t ns) {
    buf_ += trace_us_text(ns);
    return *this;
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  JsonOut& maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
    return *this;
  }
  std::ostream& out_;
  std::string buf_;
};

// The name of a flow's `s` and `f` events. Viewers match the two by id, category and name
// (Perfetto's JSON importer and DevTools key flows by all three), and DevTools binds each to the
// slice of its own category at its timestamp: so every slice and flow event carries
// kTraceCategory.
constexpr const char* kFlowName = "dependency";

}  // namespace

void write_chrome_trace(std::ostream& out, const TraceModel& model) {
  const Workload& w = *model.workload;
  JsonOut j(out);
  bool first = true;
  auto begin_event = [&]() -> JsonOut& {
    j.raw(first ? "\n" : ",\n");
    first = false;
    return j;
  };

  j.raw("{\"traceEvents\":[");
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

  for (const TraceEvent& e : model.events) {
    if (e.kind == TraceEvent::Kind::kEnd) continue;  // X events carry their duration
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
    for (const TraceArg& a : model.slice_args(s)) {
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
    for (std::uint64_t id : model.flows_out(e.index)) {
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
    }
    for (std::uint64_t id : model.flows_in(e.index)) {
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
    }
  }
  j.raw("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"npusim\",\"model\":")
      .str(w.model_name)
      .raw(",\"config\":")
      .str(w.device.config_name)
      .raw(",\"clock_khz\":")
      .num(w.device.clock_khz)
      .raw("}}\n");
  j.flush();
}

}  // namespace npusim::profiler
