// trace.pftrace: Perfetto's TrackEvent protobuf format, for the Perfetto UI and trace_processor.
#pragma once

#include <ostream>

#include "profiler/trace_model.h"

namespace npusim::profiler {

// A perfetto.protos.Trace, streamed one TracePacket at a time (each as a length-delimited field 1,
// so the whole trace is never one message in memory), all on one packet sequence:
//   - TrackDescriptors first: per process a process track (ProcessDescriptor pid, process_name;
//     children ordered explicitly), its engine tracks (ThreadDescriptor pid, tid, thread_name;
//     parent = the process track; sibling_order_rank = sort order) and its counter tracks
//     (CounterDescriptor; parent = the process track);
//   - then TrackEvents in the model's event order, timestamps in ns: TYPE_SLICE_BEGIN (name,
//     category, debug annotations, flow_ids of the flows leaving the slice, terminating_flow_ids
//     of those entering it), TYPE_SLICE_END, TYPE_COUNTER.
// Serialisation is deterministic: the same model gives the same bytes.
void write_perfetto_trace(std::ostream& out, const TraceModel& model);

}  // namespace npusim::profiler
