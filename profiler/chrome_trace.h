// trace.json: the Chrome Trace Event Format, for chrome://tracing and the Perfetto UI.
#pragma once

#include <cstdint>
#include <ostream>

#include "profiler/trace_model.h"

namespace npusim::profiler {

// `{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}`, streamed event by event:
// `M` process_name / process_sort_index / thread_name / thread_sort_index events first, then, in
// the model's event order, an `X` event per slice (ts, dur, pid, tid, name, cat, args) followed by
// the `s` events of the flows leaving it and the `f` events (`"bp":"e"`) of the flows entering
// it, on the slice's own thread at its own start, and `C` events per counter sample. Both events
// of a flow carry the same name ("dependency") and the category of the slice it leaves: viewers
// pair `s` with `f` by id, category and name (Perfetto's JSON importer keys flows by all three),
// so an `f` in the destination's category would never be joined to its `s`. `displayTimeUnit`
// comes after the events: older Perfetto versions read it, at the start of a file only, as the
// unit of `ts`. Timestamps are µs with exactly three decimals, printed from the model's integer
// ns. A counter's `C` events are named by its group with its unit as the series
// (`"name":"DRAM","args":{"GB/s":12.8}`), which viewers show as "DRAM GB/s", the name the Perfetto
// trace gives the same counter. The same model gives the same bytes.
// Returns false, having stopped, when the file would grow past `limit_bytes` (the caller discards
// it: DevTools cannot load a trace.json of more than about 500 MB; docs/outputs.md#detail).
bool write_chrome_trace(std::ostream& out, const TraceModel& model,
                        std::uint64_t limit_bytes = ~std::uint64_t{0});

}  // namespace npusim::profiler
