#include "profiler/perfetto_trace.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "profiler/perfetto/perfetto_trace.pb.h"

namespace npusim::profiler {
namespace {

namespace pb = perfetto::protos;

// Any fixed non-zero id: every packet is on this one sequence.
constexpr std::uint32_t kSequenceId = 0x6e7075;  // "npu"

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : stream_(&out), coded_(&stream_) {
    coded_.SetSerializationDeterministic(true);
  }
  // Trace.packet (field 1, length-delimited) holding `packet`.
  void write(pb::TracePacket& packet) {
    packet.set_trusted_packet_sequence_id(kSequenceId);
    if (first_) {
      packet.set_first_packet_on_sequence(true);
      packet.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      first_ = false;
    }
    const std::size_t size = packet.ByteSizeLong();
    coded_.WriteTag(kTracePacketTag);
    coded_.WriteVarint64(size);
    packet.SerializeWithCachedSizes(&coded_);
  }

 private:
  // Field 1, wire type 2 (length-delimited).
  static constexpr std::uint32_t kTracePacketTag = (1u << 3) | 2u;
  google::protobuf::io::OstreamOutputStream stream_;
  google::protobuf::io::CodedOutputStream coded_;
  bool first_ = true;
};

pb::CounterDescriptor::Unit counter_unit(TraceCounter::Unit unit) {
  return unit == TraceCounter::Unit::kBytes ? pb::CounterDescriptor::UNIT_SIZE_BYTES
                                            : pb::CounterDescriptor::UNIT_UNSPECIFIED;
}

}  // namespace

void write_perfetto_trace(std::ostream& out, const TraceModel& model) {
  PacketWriter writer(out);
  pb::TracePacket packet;

  for (std::uint32_t p = 0; p < model.processes.size(); ++p) {
    const TraceProcess& proc = model.processes[p];
    packet.Clear();
    pb::TrackDescriptor* d = packet.mutable_track_descriptor();
    d->set_uuid(proc.uuid);
    d->mutable_process()->set_pid(proc.pid);
    d->mutable_process()->set_process_name(proc.name);
    d->set_child_ordering(pb::TrackDescriptor::EXPLICIT);
    writer.write(packet);
    for (const TraceTrack& t : model.tracks) {
      if (t.process != p) continue;
      packet.Clear();
      d = packet.mutable_track_descriptor();
      d->set_uuid(t.uuid);
      d->set_parent_uuid(proc.uuid);
      d->set_name(t.name);
      d->mutable_thread()->set_pid(proc.pid);
      d->mutable_thread()->set_tid(t.tid);
      d->mutable_thread()->set_thread_name(t.name);
      d->set_sibling_order_rank(t.sort_index);
      writer.write(packet);
    }
    for (const TraceCounter& c : model.counters) {
      if (c.process != p) continue;
      packet.Clear();
      d = packet.mutable_track_descriptor();
      d->set_uuid(c.uuid);
      d->set_parent_uuid(proc.uuid);
      d->set_name(c.name);
      d->mutable_counter()->set_unit(counter_unit(c.unit));
      if (c.unit != TraceCounter::Unit::kBytes) d->mutable_counter()->set_unit_name(c.series);
      d->set_sibling_order_rank(c.sort_index);
      writer.write(packet);
    }
  }

  for (const TraceEvent& e : model.events) {
    packet.Clear();
    packet.set_timestamp(e.ts_ns);
    pb::TrackEvent* ev = packet.mutable_track_event();
    switch (e.kind) {
      case TraceEvent::Kind::kBegin: {
        const TraceSlice& s = model.slices[e.index];
        ev->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
        ev->set_track_uuid(model.tracks[s.track].uuid);
        ev->set_name(model.slice_name(s));
        ev->add_categories(TraceModel::slice_category(s));
        for (const TraceArg& a : model.slice_args(s)) {
          pb::DebugAnnotation* da = ev->add_debug_annotations();
          da->set_name(a.name);
          switch (a.kind) {
            case TraceArg::Kind::kUint:
              da->set_uint_value(a.uint_value);
              break;
            case TraceArg::Kind::kDouble:
              da->set_double_value(a.double_value);
              break;
            case TraceArg::Kind::kString:
              da->set_string_value(a.string_value);
              break;
          }
        }
        for (std::uint64_t id : model.flows_out(e.index)) ev->add_flow_ids(id);
        for (std::uint64_t id : model.flows_in(e.index)) ev->add_terminating_flow_ids(id);
        break;
      }
      case TraceEvent::Kind::kEnd:
        ev->set_type(pb::TrackEvent::TYPE_SLICE_END);
        ev->set_track_uuid(model.tracks[model.slices[e.index].track].uuid);
        break;
      case TraceEvent::Kind::kCounter: {
        const TraceCounter& c = model.counters[e.index];
        const double value = c.samples[e.sample].value;
        ev->set_type(pb::TrackEvent::TYPE_COUNTER);
        ev->set_track_uuid(c.uuid);
        if (c.integer()) {
          ev->set_counter_value(static_cast<std::int64_t>(value));
        } else {
          ev->set_double_counter_value(value);
        }
        break;
      }
    }
    writer.write(packet);
  }
}

}  // namespace npusim::profiler
