#include "profiler/perfetto_trace.h"

#include <cstring>
#include <string>
#include <string_view>

#include "profiler/text_out.h"

namespace npusim::profiler {
namespace {

// The protobuf wire format, written by hand: libprotobuf's messages cost an allocation per string
// and per annotation, and the traces of large runs have millions of them. Every message writes its
// fields in field-number order, as libprotobuf's deterministic serialisation does, so the bytes are
// those it would write (tests/trace_test.cpp compares the two). Field numbers and types are those
// of profiler/perfetto/perfetto_trace.proto.
class Proto {
 public:
  explicit Proto(std::string& buf) : b_(buf) { b_.clear(); }

  void varint_field(std::uint32_t field, std::uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  // int32 and int64 fields: negative values as their 64-bit two's complement, as protobuf does.
  void int_field(std::uint32_t field, std::int64_t v) {
    varint_field(field, static_cast<std::uint64_t>(v));
  }
  void fixed64_field(std::uint32_t field, std::uint64_t v) {
    tag(field, 1);
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    b_.append(bytes, 8);
  }
  void double_field(std::uint32_t field, double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64_field(field, bits);
  }
  void bytes_field(std::uint32_t field, std::string_view v) {
    tag(field, 2);
    varint(v.size());
    b_.append(v.data(), v.size());
  }

 private:
  void tag(std::uint32_t field, std::uint32_t wire_type) {
    varint((std::uint64_t{field} << 3) | wire_type);
  }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      b_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b_.push_back(static_cast<char>(v));
  }
  std::string& b_;
};

// Field numbers (perfetto_trace.proto).
namespace field {
// TracePacket
constexpr std::uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kSequenceFlags = 13,
                        kTrackDescriptor = 60, kFirstPacketOnSequence = 87;
// TrackDescriptor
constexpr std::uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5,
                        kCounter = 8, kChildOrdering = 11, kSiblingOrderRank = 12;
// ProcessDescriptor, ThreadDescriptor
constexpr std::uint32_t kPid = 1, kTid = 2, kThreadName = 5, kProcessName = 6;
// CounterDescriptor
constexpr std::uint32_t kUnit = 3, kUnitName = 6;
// TrackEvent
constexpr std::uint32_t kDebugAnnotations = 4, kType = 9, kTrackUuid = 11, kCategories = 22,
                        kEventName = 23, kCounterValue = 30, kDoubleCounterValue = 44,
                        kFlowIds = 47, kTerminatingFlowIds = 48;
// DebugAnnotation
constexpr std::uint32_t kUintValue = 3, kDoubleValue = 5, kStringValue = 6, kAnnotationName = 10;
}  // namespace field

// Enum values (perfetto_trace.proto).
constexpr std::uint64_t kSliceBegin = 1, kSliceEnd = 2, kCounterEvent = 4;
constexpr std::uint64_t kExplicitOrdering = 3;
constexpr std::uint64_t kUnitUnspecified = 0, kUnitSizeBytes = 3;
constexpr std::uint64_t kIncrementalStateCleared = 1;

// Any fixed non-zero id: every packet is on this one sequence.
constexpr std::uint32_t kSequenceId = 0x6e7075;  // "npu"

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out) {}
  // Trace.packet (field 1, length-delimited) holding a TracePacket with an optional timestamp
  // and either a track event or a track descriptor, both already encoded.
  void write(const std::uint64_t* timestamp, const std::string* track_event,
             const std::string* track_descriptor) {
    Proto p(packet_);
    if (timestamp != nullptr) p.varint_field(field::kTimestamp, *timestamp);
    p.varint_field(field::kSequenceId, kSequenceId);
    if (track_event != nullptr) p.bytes_field(field::kTrackEvent, *track_event);
    if (first_) p.varint_field(field::kSequenceFlags, kIncrementalStateCleared);
    if (track_descriptor != nullptr) p.bytes_field(field::kTrackDescriptor, *track_descriptor);
    if (first_) p.varint_field(field::kFirstPacketOnSequence, 1);
    first_ = false;
    Proto(frame_).bytes_field(1, packet_);
    out_.put(frame_);
  }

 private:
  TextOut out_;
  std::string packet_;
  std::string frame_;
  bool first_ = true;
};

}  // namespace

void write_perfetto_trace(std::ostream& out, const TraceModel& model) {
  PacketWriter writer(out);
  std::string desc, sub, event, annotation;
  std::vector<TraceArg> args;

  for (std::uint32_t p = 0; p < model.processes.size(); ++p) {
    const TraceProcess& proc = model.processes[p];
    {
      Proto s(sub);
      s.int_field(field::kPid, proc.pid);
      s.bytes_field(field::kProcessName, proc.name);
      Proto d(desc);
      d.varint_field(field::kUuid, proc.uuid);
      d.bytes_field(field::kProcess, sub);
      d.varint_field(field::kChildOrdering, kExplicitOrdering);
      writer.write(nullptr, nullptr, &desc);
    }
    for (const TraceTrack& t : model.tracks) {
      if (t.process != p) continue;
      Proto s(sub);
      s.int_field(field::kPid, proc.pid);
      s.int_field(field::kTid, t.tid);
      s.bytes_field(field::kThreadName, t.name);
      Proto d(desc);
      d.varint_field(field::kUuid, t.uuid);
      d.bytes_field(field::kName, t.name);
      d.bytes_field(field::kThread, sub);
      d.varint_field(field::kParentUuid, proc.uuid);
      d.int_field(field::kSiblingOrderRank, t.sort_index);
      writer.write(nullptr, nullptr, &desc);
    }
    for (const TraceCounter& c : model.counters) {
      if (c.process != p) continue;
      Proto s(sub);
      const bool bytes = c.unit == TraceCounter::Unit::kBytes;
      s.varint_field(field::kUnit, bytes ? kUnitSizeBytes : kUnitUnspecified);
      if (!bytes) s.bytes_field(field::kUnitName, c.series);
      Proto d(desc);
      d.varint_field(field::kUuid, c.uuid);
      d.bytes_field(field::kName, c.name);
      d.varint_field(field::kParentUuid, proc.uuid);
      d.bytes_field(field::kCounter, sub);
      d.int_field(field::kSiblingOrderRank, c.sort_index);
      writer.write(nullptr, nullptr, &desc);
    }
  }

  for (const TraceEvent& e : model.events) {
    Proto ev(event);
    switch (e.kind) {
      case TraceEvent::Kind::kBegin: {
        const TraceSlice& s = model.slices[e.index];
        model.slice_args(s, args);
        for (const TraceArg& a : args) {
          Proto da(annotation);
          switch (a.kind) {
            case TraceArg::Kind::kUint:
              da.varint_field(field::kUintValue, a.uint_value);
              break;
            case TraceArg::Kind::kDouble:
              da.double_field(field::kDoubleValue, a.double_value);
              break;
            case TraceArg::Kind::kString:
              da.bytes_field(field::kStringValue, a.string_value);
              break;
          }
          da.bytes_field(field::kAnnotationName, a.name);
          ev.bytes_field(field::kDebugAnnotations, annotation);
        }
        ev.varint_field(field::kType, kSliceBegin);
        ev.varint_field(field::kTrackUuid, model.tracks[s.track].uuid);
        ev.bytes_field(field::kCategories, TraceModel::slice_category(s));
        ev.bytes_field(field::kEventName, model.slice_name(s));
        model.for_each_flow_out(e.index,
                                [&](std::uint64_t id) { ev.fixed64_field(field::kFlowIds, id); });
        model.for_each_flow_in(
            e.index, [&](std::uint64_t id) { ev.fixed64_field(field::kTerminatingFlowIds, id); });
        break;
      }
      case TraceEvent::Kind::kEnd:
        ev.varint_field(field::kType, kSliceEnd);
        ev.varint_field(field::kTrackUuid, model.tracks[model.slices[e.index].track].uuid);
        break;
      case TraceEvent::Kind::kCounter: {
        const TraceCounter& c = model.counters[e.index];
        const double value = c.samples[e.sample].value;
        ev.varint_field(field::kType, kCounterEvent);
        ev.varint_field(field::kTrackUuid, c.uuid);
        if (c.integer()) {
          ev.int_field(field::kCounterValue, static_cast<std::int64_t>(value));
        } else {
          ev.double_field(field::kDoubleCounterValue, value);
        }
        break;
      }
    }
    writer.write(&e.ts_ns, &event, nullptr);
  }
}

}  // namespace npusim::profiler
