// trace.json and trace.pftrace: the stall figures, the trace model, and both writers, checked
// against the rules the viewers rely on. The Perfetto output is decoded with the project's own
// generated classes; the JSON with nlohmann.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "profiler/chrome_trace.h"
#include "profiler/op_groups.h"
#include "profiler/perfetto/perfetto_trace.pb.h"
#include "profiler/perfetto_trace.h"
#include "profiler/report_writers.h"
#include "profiler/stats.h"
#include "profiler/timeline.h"
#include "profiler/trace_model.h"

namespace npusim::profiler {
namespace {

namespace pb = perfetto::protos;
using Json = nlohmann::json;

constexpr std::uint32_t kArray = 0;
constexpr std::uint32_t kVector = 1;
constexpr std::uint32_t kDmaIn = 2;
constexpr std::uint32_t kDmaOut = 3;

struct Cmd {
  const char* id;
  std::uint32_t engine;
  const char* op;
  const char* layer;
  std::uint32_t program;
  std::uint64_t read, write, macs, alloc, free;
  Cycles isolated;
  std::vector<std::uint32_t> deps;
};

CommandInfo command(const Cmd& c) {
  CommandInfo info{};
  info.id = c.id;
  info.engine = c.engine;
  info.op_type = c.op;
  info.layer = c.layer;
  info.location = std::string("loc(\"") + c.id + "\")";
  info.program = c.program;
  info.dram_read_bytes = c.read;
  info.dram_write_bytes = c.write;
  info.macs = c.macs;
  info.lram_alloc_bytes = c.alloc;
  info.lram_free_bytes = c.free;
  info.isolated_cycles = c.isolated;
  info.deps = c.deps;
  return info;
}

// One slice with array and vector, a two-channel DMA_IN and a DMA_OUT, at 800 MHz (1 cycle =
// 1.25 ns; DRAM 12.8 GB/s = 16 bytes per cycle).
Workload workload() {
  Workload w;
  w.model_name = "tiny";
  w.model_file = "tiny.json";
  w.device.config_name = "test";
  w.device.clock_khz = 800000;
  w.device.slices = 1;
  w.device.array_rows = 16;
  w.device.array_cols = 16;
  w.device.lram_bytes = 1000;
  w.device.dram_bandwidth_mbps = 12800;
  w.engines = {{"SLICE0.ARRAY", EngineKind::kArray, 1, 0, 0, "Neural Engine Clusters"},
               {"SLICE0.VECTOR", EngineKind::kVector, 1, 0, 0, "Neural Engine Clusters"},
               {"DMA_IN", EngineKind::kDmaIn, 2, 0, 0, "Task DMA"},
               {"DMA_OUT", EngineKind::kDmaOut, 1, 0, 0, "Task DMA"}};
  w.programs = {{"p0", "loc(p0)"}, {"p1", "loc(p1)"}};
  const std::vector<Cmd> cmds = {
      // id     engine   op         layer program read  write macs  alloc free iso deps
      {"DI0", kDmaIn, "DMA_IN", "l0", 0, 1600, 0, 0, 600, 0, 80, {}},
      {"DI1", kDmaIn, "DMA_IN", "l0", 0, 800, 0, 0, 300, 0, 50, {}},
      {"S0", kArray, "Gemm", "", 0, 0, 0, 12672, 0, 900, 99, {0, 1}},
      {"V0", kVector, "Relu", "l1", 1, 0, 0, 0, 100, 0, 20, {2}},
      {"DO0", kDmaOut, "DMA_OUT", "l1", 1, 0, 320, 0, 0, 100, 20, {3}},
      {"DI2", kDmaIn, "DMA_IN", "l2", 1, 160, 0, 0, 0, 0, 10, {}},
      {"S1", kArray, "Gemm", "l2", 1, 0, 0, 12800, 0, 0, 70, {5}},
      {"V1", kVector, "Add", "l2", 1, 0, 0, 0, 0, 0, 0, {6}},
      {"DO1", kDmaOut, "DMA_OUT", "l2", 1, 0, 160, 0, 0, 0, 20, {7}},
  };
  for (const Cmd& c : cmds) w.commands.push_back(command(c));
  return w;
}

Timeline estimate() {
  Timeline t;
  t.commands = {
      {0, 100, 0},    // DI0: 20 cycles over its isolated 80
      {40, 120, 1},   // DI1 overlaps DI0, on the other channel
      {131, 230, 0},  // S0 waits for DI0 and DI1 (done at 120)
      {230, 250, 0},  // V0
      {250, 270, 0},  // DO0
      {100, 110, 0},  // DI2 on channel 0 right after DI0
      {230, 300, 0},  // S1 right after S0
      {300, 300, 0},  // V1: zero cycles, at the moment S1 ends and DO1 starts
      {300, 320, 0},  // DO1
  };
  return t;
}

Timeline runtime() {
  Timeline t = estimate();
  t.commands[8].end = 325;  // DO1 took longer
  return t;
}

// ---------------------------------------------------------------------------------------------
// command_stalls

TEST(TraceStalls, DependencyAndDramStallsAreExact) {
  const Workload w = workload();
  const std::vector<CommandStalls> s = command_stalls(w, estimate());
  ASSERT_EQ(s.size(), w.commands.size());
  const std::vector<std::pair<Cycles, Cycles>> expected = {
      {0, 20},   // DI0: no deps; 100 - 80
      {0, 30},   // DI1: no deps; 80 - 50
      {120, 0},  // S0: deps done at 120, its unit idle since 0; compute: no DRAM stall
      {230, 0},  // V0: deps done at 230, vector unit idle since 0
      {250, 0},  // DO0: deps done at 250; 20 - 20
      {0, 0},    // DI2: no deps; channel 0 ready at 100; 10 - 10
      {0, 0},    // S1: dep DI2 done at 110, long before its unit was free at 230
      {50, 0},   // V1: dep S1 done at 300, vector unit free since 250
      {30, 0},   // DO1: dep V1 done at 300, DMA_OUT free since 270
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s[i].deps, expected[i].first) << w.commands[i].id;
    EXPECT_EQ(s[i].dram, expected[i].second) << w.commands[i].id;
  }
}

TEST(TraceStalls, UnitsAreSeparateAndDramStallIsClamped) {
  Workload w = workload();
  Timeline t = estimate();
  // DI1 on channel 1 depends on DI2 (done at 110): channel 1 was idle from 0, so it waited 110,
  // even though channel 0 was busy until 110. It also ran faster than isolated: clamped to 0.
  w.commands[1].deps = {5};
  t.commands[1] = {110, 140, 1};
  const std::vector<CommandStalls> s = command_stalls(w, t);
  EXPECT_EQ(s[1].deps, 110u);
  EXPECT_EQ(s[1].dram, 0u);  // 30 < isolated 50
}

// ---------------------------------------------------------------------------------------------
// Time conversion

TEST(TraceTime, NanosecondsAreFlooredExactly) {
  EXPECT_EQ(trace_ns(0, 800000), 0u);
  EXPECT_EQ(trace_ns(3, 800000), 3u);      // 3.75
  EXPECT_EQ(trace_ns(131, 800000), 163u);  // 163.75
  EXPECT_EQ(trace_ns(4, 800000), 5u);
  EXPECT_EQ(trace_ns(7, 3000000), 2u);  // 2.33 at 3 GHz
  EXPECT_EQ(trace_ns(10, 0), 10u);      // no clock: 1 ns per cycle
  const Cycles big = std::numeric_limits<Cycles>::max();
  EXPECT_EQ(trace_ns(big, 1000000), big);
  EXPECT_EQ(trace_ns(big, 2000000), big / 2);
  EXPECT_EQ(trace_ns(big, 1000), big);  // saturates instead of wrapping
  // Monotone.
  for (Cycles c = 0; c < 1000; ++c) EXPECT_LE(trace_ns(c, 2500000), trace_ns(c + 1, 2500000));
}

TEST(TraceTime, MicrosecondTextHasThreeDecimalsFromIntegers) {
  EXPECT_EQ(trace_us_text(0), "0.000");
  EXPECT_EQ(trace_us_text(5), "0.005");
  EXPECT_EQ(trace_us_text(163), "0.163");
  EXPECT_EQ(trace_us_text(1000), "1.000");
  EXPECT_EQ(trace_us_text(1234567), "1234.567");
  EXPECT_EQ(trace_us_text(std::numeric_limits<std::uint64_t>::max()), "18446744073709551.615");
}

// ---------------------------------------------------------------------------------------------
// The model

TraceModel model(const Workload& w, const Timeline& est, const Timeline& rt,
                 const TraceOptions& options = {}) {
  return build_trace_model(w, {{"compile-time estimate", &est}, {"runtime simulation", &rt}},
                           options);
}

TEST(TraceModel, TracksPerEngineUnitInEngineOrder) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const TraceModel m = model(w, est, rt);
  ASSERT_EQ(m.processes.size(), 2u);
  EXPECT_EQ(m.processes[0].pid, 1);
  EXPECT_EQ(m.processes[1].pid, 2);
  EXPECT_EQ(m.processes[0].window_cycles, 2u);  // ceil(320 / 200)
  std::vector<std::string> names;
  std::set<std::int32_t> tids;
  std::set<std::uint64_t> uuids;
  for (const TraceTrack& t : m.tracks) {
    if (t.process == 0) names.push_back(t.name);
    tids.insert(t.tid);
    uuids.insert(t.uuid);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "Neural Engine Clusters: SLICE0.ARRAY", "Neural Engine Clusters: SLICE0.VECTOR",
                "Task DMA: DMA_IN ch0", "Task DMA: DMA_IN ch1", "Task DMA: DMA_OUT"}));
  EXPECT_EQ(tids.size(), m.tracks.size());
  for (const TraceCounter& c : m.counters) uuids.insert(c.uuid);
  for (const TraceProcess& p : m.processes) uuids.insert(p.uuid);
  EXPECT_EQ(uuids.size(), m.tracks.size() + m.counters.size() + m.processes.size());
  EXPECT_EQ(uuids.count(0), 0u);
  EXPECT_EQ(m.slice_name(m.slices[2]), "0_Gemm_0");  // no layer: the op type
  EXPECT_EQ(m.slice_name(m.slices[0]), "0_l0_0");
  EXPECT_EQ(m.slice_category(m.slices[0]), std::string("npu"));
  EXPECT_NE(m.slices[0].track, m.slices[1].track);  // DI0 and DI1 overlap
  // 7 edges per run; S0 waits for DI0 (ends at 100) and DI1 (ends at 120): only DI1 is drawn.
  EXPECT_EQ(m.flows.size(), 2u * 6u);
}

// Seed 003: {iteration}_{layer}_{k}, k counting the layer's commands within one iteration.
TEST(TraceModel, SlicesAreNamedByIterationLayerAndIndexWithinTheLayer) {
  Workload w = workload();
  // As two inferences of a schedule whose commands 0-3 are DI0, DI1, S0, V0 (layers l0, l0, -,
  // l1) and 4-8 the rest: the second inference counts each layer from 0 again.
  for (std::size_t i = 4; i < w.commands.size(); ++i) w.commands[i].iteration = 1;
  w.commands[5].layer = "l1";  // DI2 of inference 1 is l1's second command there (after DO0)
  EXPECT_EQ(command_names(w),
            (std::vector<std::string>{"0_l0_0", "0_l0_1", "0_Gemm_0", "0_l1_0", "1_l1_0", "1_l1_1",
                                      "1_l2_0", "1_l2_1", "1_l2_2"}));
}

TEST(TraceModel, FlowsAreTheBindingDependencyByDefaultAndEveryEdgeWithAllFlows) {
  const Workload w = workload();
  const Timeline est = estimate();
  const TraceModel binding = build_trace_model(w, {{"run", &est}});
  // Dependant by dependant: S0 <- DI1 (120 > 100), V0 <- S0, DO0 <- V0, S1 <- DI2, V1 <- S1,
  // DO1 <- V1.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (const TraceFlow& f : binding.flows) edges.emplace_back(f.from, f.to);
  EXPECT_EQ(edges, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{
                       {1, 2}, {2, 3}, {3, 4}, {5, 6}, {6, 7}, {7, 8}}));
  EXPECT_EQ(binding.flows.front().id, 1u);
  EXPECT_EQ(binding.flows.back().id, 6u);
  // A tie goes to the first dependency listed.
  Timeline tie = est;
  tie.commands[1].end = 100;
  EXPECT_EQ(build_trace_model(w, {{"run", &tie}}).flows.front().from, 0u);

  TraceOptions all;
  all.all_flows = true;
  edges.clear();
  for (const TraceFlow& f : build_trace_model(w, {{"run", &est}}, all).flows) {
    edges.emplace_back(f.from, f.to);
  }
  EXPECT_EQ(edges, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{
                       {0, 2}, {1, 2}, {2, 3}, {3, 4}, {5, 6}, {6, 7}, {7, 8}}));
  EXPECT_TRUE(trace_options_for(StatsLevel::kExtended).all_flows);
  EXPECT_FALSE(trace_options_for(StatsLevel::kOps).all_flows);
}

TEST(TraceModel, OverlappingCommandsOnOneUnitGoToExtraLanes) {
  const Workload w = workload();
  Timeline t = estimate();
  t.commands[1].unit = 0;  // DI1 overlaps DI0 on the same channel: an inconsistent timeline
  const TraceModel m = build_trace_model(w, {{"run", &t}});
  EXPECT_NE(m.slices[0].track, m.slices[1].track);
  EXPECT_EQ(m.tracks[m.slices[1].track].name, "Task DMA: DMA_IN ch0 lane 1");
  EXPECT_EQ(m.slices[5].track, m.slices[0].track);  // DI2 fits after DI0 again
}

TEST(TraceModel, SliceArgumentsCarryStallsAndUtilisation) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const TraceModel m = model(w, est, rt);
  std::map<std::string, TraceArg> args;
  for (const TraceArg& a : m.slice_args(m.slices[2])) args[a.name] = a;
  EXPECT_EQ(args.at("id").string_value, "S0");
  EXPECT_EQ(args.at("cycles").uint_value, 99u);
  EXPECT_EQ(args.at("macs").uint_value, 12672u);
  EXPECT_EQ(args.at("utilisation_pct").double_value, 50.0);  // 12672 / (256 x 99)
  EXPECT_EQ(args.at("layer").string_value, "");
  EXPECT_EQ(args.at("location").string_value, "loc(\"S0\")");
  EXPECT_EQ(args.at("program").uint_value, 0u);
  EXPECT_EQ(args.at("program_name").string_value, "p0");
  EXPECT_EQ(args.at("stall_deps_cycles").uint_value, 120u);
  EXPECT_EQ(args.at("stall_dram_cycles").uint_value, 0u);
  args.clear();
  for (const TraceArg& a : m.slice_args(m.slices[0])) args[a.name] = a;
  EXPECT_EQ(args.at("bytes").uint_value, 1600u);
  EXPECT_EQ(args.at("utilisation_pct").double_value, 100.0);  // 1600 B in 100 cycles at 16 B/cycle
  EXPECT_EQ(args.at("stall_dram_cycles").uint_value, 20u);
  args.clear();
  for (const TraceArg& a : m.slice_args(m.slices[3])) args[a.name] = a;
  EXPECT_EQ(args.count("utilisation_pct"), 0u);  // vector op
  // Runtime process: DO1 took 25 cycles.
  args.clear();
  for (const TraceArg& a : m.slice_args(m.slices[w.commands.size() + 8])) args[a.name] = a;
  EXPECT_EQ(args.at("cycles").uint_value, 25u);
  EXPECT_EQ(args.at("stall_dram_cycles").uint_value, 5u);
}

TEST(TraceModel, CountersAreExact) {
  const Workload w = workload();
  const Timeline est = estimate();
  const TraceModel m = build_trace_model(w, {{"run", &est}});
  auto counter = [&](const std::string& name) -> const TraceCounter& {
    for (const TraceCounter& c : m.counters) {
      if (c.name == name) return c;
    }
    throw std::runtime_error("no counter " + name);
  };
  // The step function's value at `ns`: the last sample at or before it.
  auto value_at = [](const TraceCounter& c, std::uint64_t ns) {
    double value = -1.0;
    for (const TraceCounterSample& s : c.samples) {
      if (s.ts_ns <= ns) value = s.value;
    }
    return value;
  };
  // Window 2 cycles. [40, 42) at 50 ns: DI0 moves 1600/100 x 2 = 32 B, DI1 800/80 x 2 = 20 B:
  // 52 B in 2 cycles = 26 B/cycle = 20.8 GB/s.
  const TraceCounter& dram = counter("DRAM GB/s");
  EXPECT_DOUBLE_EQ(value_at(dram, 50), 20.8);
  EXPECT_DOUBLE_EQ(value_at(dram, 0), 12.8);   // [0, 2): DI0 alone
  EXPECT_DOUBLE_EQ(value_at(dram, 150), 0.0);  // [120, 122): nothing
  EXPECT_EQ(dram.samples.back().ts_ns, 400u);  // 0 at the end: 320 cycles
  EXPECT_EQ(dram.samples.back().value, 0.0);
  for (std::size_t k = 1; k < dram.samples.size(); ++k) {
    EXPECT_LT(dram.samples[k - 1].ts_ns, dram.samples[k].ts_ns);
    if (k + 1 < dram.samples.size()) {  // repeated values are left out
      EXPECT_NE(dram.samples[k - 1].value, dram.samples[k].value);
    }
  }
  // [0, 100) moves DI0's 1600 B at 12.8 GB/s, then DI1 joins at 40: samples at 0 and 50 ns only.
  EXPECT_EQ(dram.samples[0].ts_ns, 0u);
  EXPECT_EQ(dram.samples[1].ts_ns, 50u);
  // The array is busy in [131, 230): window [130, 132) at 162 ns is half busy.
  const TraceCounter& array = counter("SLICE0.ARRAY utilisation %");
  EXPECT_DOUBLE_EQ(value_at(array, 162), 50.0);
  EXPECT_DOUBLE_EQ(value_at(array, 165), 100.0);  // [132, 134)
  EXPECT_DOUBLE_EQ(value_at(array, 160), 0.0);    // [128, 130)
  // DMA_IN is busy when either channel is: [40, 42) is 100 %, not 200 %.
  EXPECT_DOUBLE_EQ(value_at(counter("DMA_IN utilisation %"), 50), 100.0);
  // Local memory: +600 at 0, +300 at 40, at 230 S0 frees 900 before V0 takes 100, -100 at 270.
  const TraceCounter& lram = counter("LRAM bytes");
  ASSERT_EQ(lram.samples.size(), 4u);
  EXPECT_EQ(lram.samples[0].ts_ns, 0u);
  EXPECT_EQ(lram.samples[0].value, 600.0);
  EXPECT_EQ(lram.samples[1].ts_ns, 50u);
  EXPECT_EQ(lram.samples[1].value, 900.0);
  EXPECT_EQ(lram.samples[2].ts_ns, 287u);  // 287.5
  EXPECT_EQ(lram.samples[2].value, 100.0);
  EXPECT_EQ(lram.samples[3].ts_ns, 337u);
  EXPECT_EQ(lram.samples[3].value, 0.0);
  // The unused engines have no counter.
  for (const TraceCounter& c : m.counters) EXPECT_EQ(c.name.find("SLICE1"), std::string::npos);
}

TEST(TraceModel, RejectsTimelinesThatDoNotMatchTheWorkload) {
  const Workload w = workload();
  Timeline short_timeline = estimate();
  short_timeline.commands.pop_back();
  EXPECT_THROW(build_trace_model(w, {{"run", &short_timeline}}), std::invalid_argument);
  EXPECT_THROW(build_trace_model(w, {{"run", nullptr}}), std::invalid_argument);
}

TEST(TraceModel, OptionsTrimTheTrace) {
  const Workload w = workload();
  const Timeline est = estimate();
  TraceOptions options;
  options.flows = false;
  options.counters = false;
  options.detailed_args = false;
  const TraceModel m = build_trace_model(w, {{"run", &est}}, options);
  EXPECT_TRUE(m.flows.empty());
  EXPECT_TRUE(m.counters.empty());
  const std::vector<TraceArg> args = m.slice_args(m.slices[0]);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_STREQ(args[0].name, "id");
  EXPECT_STREQ(args[1].name, "index");
  EXPECT_STREQ(args[2].name, "cycles");
}

// ---------------------------------------------------------------------------------------------
// trace.pftrace

pb::Trace decode(const std::string& bytes) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  return trace;
}

std::string pftrace(const TraceModel& m) {
  std::ostringstream out;
  write_perfetto_trace(out, m);
  return out.str();
}

std::string chrome(const TraceModel& m) {
  std::ostringstream out;
  write_chrome_trace(out, m);
  return out.str();
}

struct DecodedSlice {
  std::uint64_t track;
  std::string name;
  std::uint64_t begin;
  std::uint64_t end;
  std::size_t begin_packet;
  const pb::TrackEvent* event;
};

// Checks every rule a viewer relies on and returns the slices for further checks.
std::vector<DecodedSlice> check_perfetto_rules(const pb::Trace& trace) {
  std::set<std::uint64_t> uuids;
  std::map<std::uint64_t, const pb::TrackDescriptor*> descriptors;
  std::set<std::int32_t> tids;
  std::map<std::uint64_t, std::vector<std::size_t>> open;  // track -> open slices
  std::vector<DecodedSlice> slices;
  std::map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> flow_start, flow_end;
  std::uint64_t last_ts = 0;
  bool seen_event = false;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pb::TracePacket& p = trace.packet(i);
    EXPECT_TRUE(p.has_trusted_packet_sequence_id());
    if (i == 0) {
      EXPECT_TRUE(p.first_packet_on_sequence());
      EXPECT_EQ(p.sequence_flags(), 1u);
    }
    if (p.has_track_descriptor()) {
      EXPECT_FALSE(seen_event) << "descriptor after events, packet " << i;
      const pb::TrackDescriptor& d = p.track_descriptor();
      EXPECT_NE(d.uuid(), 0u);
      EXPECT_TRUE(uuids.insert(d.uuid()).second) << "duplicate uuid " << d.uuid();
      descriptors[d.uuid()] = &d;
      if (d.has_parent_uuid()) {
        EXPECT_EQ(descriptors.count(d.parent_uuid()), 1u);
      }
      if (d.has_thread()) {
        EXPECT_TRUE(tids.insert(d.thread().tid()).second) << "duplicate tid";
        EXPECT_TRUE(d.thread().has_pid());
        EXPECT_FALSE(d.thread().thread_name().empty());
        EXPECT_EQ(descriptors.at(d.parent_uuid())->process().pid(), d.thread().pid());
      }
      continue;
    }
    EXPECT_TRUE(p.has_track_event()) << "packet " << i;
    if (!p.has_track_event()) continue;
    seen_event = true;
    const pb::TrackEvent& e = p.track_event();
    EXPECT_TRUE(p.has_timestamp());
    EXPECT_GE(p.timestamp(), last_ts) << "packets out of time order at " << i;
    last_ts = p.timestamp();
    EXPECT_EQ(descriptors.count(e.track_uuid()), 1u) << "event on an undeclared track";
    const pb::TrackDescriptor& d = *descriptors.at(e.track_uuid());
    switch (e.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN: {
        EXPECT_TRUE(d.has_thread());
        // Slices on one track never overlap: at one timestamp the end of the previous slice
        // must already have come.
        EXPECT_TRUE(open[e.track_uuid()].empty())
            << "begin of " << e.name() << " while another slice is open on its track";
        EXPECT_EQ(e.categories_size(), 1);
        open[e.track_uuid()].push_back(slices.size());
        slices.push_back(
            {e.track_uuid(), e.name(), p.timestamp(), 0, static_cast<std::size_t>(i), &e});
        for (std::uint64_t id : e.flow_ids()) {
          EXPECT_TRUE(flow_start.emplace(id, std::make_pair(i, p.timestamp())).second)
              << "flow " << id << " starts twice";
        }
        for (std::uint64_t id : e.terminating_flow_ids()) {
          EXPECT_TRUE(flow_end.emplace(id, std::make_pair(i, p.timestamp())).second)
              << "flow " << id << " ends twice";
        }
        break;
      }
      case pb::TrackEvent::TYPE_SLICE_END: {
        auto& stack = open[e.track_uuid()];
        EXPECT_FALSE(stack.empty()) << "end without begin at packet " << i;
        if (stack.empty()) break;
        DecodedSlice& s = slices[stack.back()];
        stack.pop_back();
        EXPECT_GE(p.timestamp(), s.begin);
        s.end = p.timestamp();
        break;
      }
      case pb::TrackEvent::TYPE_COUNTER:
        EXPECT_TRUE(d.has_counter());
        EXPECT_TRUE(e.has_counter_value() || e.has_double_counter_value());
        break;
      default:
        ADD_FAILURE() << "unexpected event type " << e.type();
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "unclosed slice";
  EXPECT_EQ(flow_start.size(), flow_end.size());
  for (const auto& [id, start] : flow_start) {
    EXPECT_EQ(flow_end.count(id), 1u) << "flow " << id << " never ends";
    if (flow_end.count(id) == 0) continue;
    EXPECT_LT(start.first, flow_end.at(id).first) << "flow " << id << " ends before it starts";
    EXPECT_LE(start.second, flow_end.at(id).second);
  }
  for (const auto& [id, end] : flow_end) EXPECT_EQ(flow_start.count(id), 1u);
  return slices;
}

const DecodedSlice& find_slice(const std::vector<DecodedSlice>& slices,
                               const std::map<std::uint64_t, int>& track_pid, int pid,
                               const std::string& name) {
  for (const DecodedSlice& s : slices) {
    if (s.name == name && track_pid.at(s.track) == pid) return s;
  }
  throw std::runtime_error("no slice " + name);
}

TEST(TracePerfetto, DecodesAndFollowsTheRules) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const TraceModel m = model(w, est, rt);
  const pb::Trace trace = decode(pftrace(m));
  const std::vector<DecodedSlice> slices = check_perfetto_rules(trace);
  EXPECT_EQ(slices.size(), 2 * w.commands.size());

  // Processes and tracks.
  std::map<std::uint64_t, int> track_pid;
  std::map<int, std::string> process_names;
  std::map<int, std::vector<std::pair<int, std::string>>> threads;  // pid -> (rank, name)
  std::map<std::string, std::uint64_t> counter_uuid;                // of pid 1
  for (const pb::TracePacket& p : trace.packet()) {
    if (!p.has_track_descriptor()) continue;
    const pb::TrackDescriptor& d = p.track_descriptor();
    if (d.has_process()) {
      process_names[d.process().pid()] = d.process().process_name();
      EXPECT_EQ(d.child_ordering(), pb::TrackDescriptor::EXPLICIT);
    }
    if (d.has_thread()) {
      track_pid[d.uuid()] = d.thread().pid();
      threads[d.thread().pid()].emplace_back(d.sibling_order_rank(), d.thread().thread_name());
    }
    if (d.has_counter()) {
      for (const pb::TracePacket& q : trace.packet()) {
        if (q.has_track_descriptor() && q.track_descriptor().uuid() == d.parent_uuid() &&
            q.track_descriptor().process().pid() == 1) {
          counter_uuid[d.name()] = d.uuid();
        }
      }
    }
  }
  EXPECT_EQ(process_names,
            (std::map<int, std::string>{{1, "compile-time estimate"}, {2, "runtime simulation"}}));
  auto ranked = threads[1];
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> order;
  for (const auto& r : ranked) order.push_back(r.second);
  EXPECT_EQ(order,
            (std::vector<std::string>{
                "Neural Engine Clusters: SLICE0.ARRAY", "Neural Engine Clusters: SLICE0.VECTOR",
                "Task DMA: DMA_IN ch0", "Task DMA: DMA_IN ch1", "Task DMA: DMA_OUT"}));

  // A slice's exact times in ns: S0 runs [131, 230) cycles = [163.75, 287.5) ns, floored.
  const DecodedSlice& s0 = find_slice(slices, track_pid, 1, "0_Gemm_0");
  EXPECT_EQ(s0.begin, 163u);
  EXPECT_EQ(s0.end, 287u);
  EXPECT_EQ(s0.event->categories(0), "npu");
  std::map<std::string, const pb::DebugAnnotation*> args;
  for (const pb::DebugAnnotation& a : s0.event->debug_annotations()) args[a.name()] = &a;
  EXPECT_EQ(args.at("cycles")->uint_value(), 99u);
  EXPECT_EQ(args.at("stall_deps_cycles")->uint_value(), 120u);
  EXPECT_EQ(args.at("location")->string_value(), "loc(\"S0\")");
  EXPECT_DOUBLE_EQ(args.at("utilisation_pct")->double_value(), 50.0);
  EXPECT_EQ(s0.event->terminating_flow_ids_size(), 1);  // from DI1, which ended after DI0
  EXPECT_EQ(s0.event->flow_ids_size(), 1);              // to V0

  // The overlapping DMA commands are on different tracks.
  EXPECT_NE(find_slice(slices, track_pid, 1, "0_l0_0").track,
            find_slice(slices, track_pid, 1, "0_l0_1").track);
  // The runtime process has its own slices.
  EXPECT_EQ(find_slice(slices, track_pid, 2, "0_l2_3").end, 406u);  // 325 cycles

  // At 375 ns (300 cycles) S1 ends, V1 begins and ends, DO1 begins, in that order; the flow
  // V1 -> DO1 starts before it ends although both are at one timestamp.
  const DecodedSlice& v1 = find_slice(slices, track_pid, 1, "0_l2_2");
  const DecodedSlice& do1 = find_slice(slices, track_pid, 1, "0_l2_3");
  EXPECT_EQ(v1.begin, 375u);
  EXPECT_EQ(v1.end, 375u);
  EXPECT_EQ(do1.begin, 375u);
  EXPECT_LT(v1.begin_packet, do1.begin_packet);

  // Counters: exact values at hand-computed windows.
  std::map<std::uint64_t, std::map<std::uint64_t, double>> counter_values;
  std::map<std::uint64_t, std::vector<std::int64_t>> int_values;
  for (const pb::TracePacket& p : trace.packet()) {
    if (!p.has_track_event() || p.track_event().type() != pb::TrackEvent::TYPE_COUNTER) continue;
    const pb::TrackEvent& e = p.track_event();
    if (e.has_counter_value()) int_values[e.track_uuid()].push_back(e.counter_value());
    counter_values[e.track_uuid()][p.timestamp()] =
        e.has_counter_value() ? static_cast<double>(e.counter_value()) : e.double_counter_value();
  }
  EXPECT_DOUBLE_EQ(counter_values[counter_uuid.at("DRAM GB/s")].at(50), 20.8);
  EXPECT_DOUBLE_EQ(counter_values[counter_uuid.at("SLICE0.ARRAY utilisation %")].at(162), 50.0);
  EXPECT_EQ(int_values[counter_uuid.at("LRAM bytes")],
            (std::vector<std::int64_t>{600, 900, 100, 0}));
}

TEST(TracePerfetto, SlicesCollapsingToOneNanosecondStillNest) {
  // At 4 GHz a cycle is 0.25 ns: A [0, 2) and B [2, 3) both become [0, 0) ns. B depends on A.
  Workload w = workload();
  w.device.clock_khz = 4000000;
  w.commands.resize(2);
  w.commands[1].deps = {0};
  Timeline t;
  t.commands = {{0, 2, 0}, {2, 3, 0}};
  const TraceModel m = build_trace_model(w, {{"run", &t}});
  const std::vector<DecodedSlice> slices = check_perfetto_rules(decode(pftrace(m)));
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].name, "0_l0_0");
  EXPECT_EQ(slices[0].track, slices[1].track);
}

TEST(TracePerfetto, WritingTwiceGivesIdenticalBytes) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const std::string first = pftrace(model(w, est, rt));
  const std::string second = pftrace(model(w, est, rt));
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, second);
}

// ---------------------------------------------------------------------------------------------
// trace.json

std::uint64_t ns_of(const Json& us) {
  return static_cast<std::uint64_t>(std::llround(us.get<double>() * 1000.0));
}

TEST(TraceChrome, ParsesAndFollowsTheRules) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const TraceModel m = model(w, est, rt);
  const std::string text = chrome(m);
  const Json j = Json::parse(text);
  ASSERT_TRUE(j.at("traceEvents").is_array());
  EXPECT_EQ(j.at("displayTimeUnit"), "ns");
  EXPECT_EQ(j.at("otherData").at("clock_khz"), 800000);

  std::map<std::string, int> phases;
  std::set<std::string> counters;  // name + " " + series
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, int> thread_sort;
  // (pid, tid) -> [begin, end) in ns, in file order.
  std::map<std::pair<int, int>, std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
  std::map<std::uint64_t, std::pair<std::size_t, Json>> starts, finishes;
  const Json* s0 = nullptr;
  for (std::size_t i = 0; i < j.at("traceEvents").size(); ++i) {
    const Json& e = j.at("traceEvents")[i];
    const std::string ph = e.at("ph");
    phases[ph] += 1;
    if (ph == "M") {
      const int pid = e.at("pid");
      if (e.at("name") == "process_name") process_names[pid] = e.at("args").at("name");
      if (e.at("name") == "thread_name") thread_names[{pid, e.at("tid")}] = e.at("args").at("name");
      if (e.at("name") == "thread_sort_index") {
        thread_sort[{pid, e.at("tid")}] = e.at("args").at("sort_index");
      }
      EXPECT_LT(i, std::size_t{2} * (2 + 10)) << "metadata events come first";
    } else if (ph == "X") {
      for (const char* key : {"ts", "dur", "pid", "tid", "name", "cat", "args"}) {
        EXPECT_TRUE(e.contains(key)) << key;
      }
      const std::pair<int, int> thread{e.at("pid"), e.at("tid")};
      EXPECT_EQ(thread_names.count(thread), 1u) << "slice on an unnamed thread";
      EXPECT_EQ(e.at("cat"), "npu");
      spans[thread].emplace_back(ns_of(e.at("ts")), ns_of(e.at("ts")) + ns_of(e.at("dur")));
      if (e.at("name") == "0_Gemm_0" && e.at("pid") == 1) s0 = &e;
    } else if (ph == "s" || ph == "f") {
      for (const char* key : {"ts", "pid", "tid", "id", "name", "cat"}) {
        EXPECT_TRUE(e.contains(key)) << key;
      }
      auto& map = ph == "s" ? starts : finishes;
      EXPECT_TRUE(map.emplace(e.at("id").get<std::uint64_t>(), std::make_pair(i, e)).second)
          << "flow id " << e.at("id") << " used twice";
      if (ph == "f") {
        EXPECT_EQ(e.at("bp"), "e");
      }
    } else if (ph == "C") {
      EXPECT_EQ(e.at("args").size(), 1u);
      EXPECT_TRUE(e.at("args").begin().value().is_number());
      EXPECT_EQ(e.at("pid").is_number(), true);
      counters.insert(e.at("name").get<std::string>() + " " + e.at("args").begin().key());
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  for (const char* ph : {"M", "X", "C", "s", "f"}) EXPECT_GT(phases[ph], 0) << ph;
  EXPECT_EQ(counters,
            (std::set<std::string>{"DRAM GB/s", "LRAM bytes", "Power W",
                                   "SLICE0.ARRAY utilisation %", "SLICE0.VECTOR utilisation %",
                                   "DMA_IN utilisation %", "DMA_OUT utilisation %"}));
  EXPECT_EQ(phases["X"], static_cast<int>(2 * w.commands.size()));
  EXPECT_EQ(process_names,
            (std::map<int, std::string>{{1, "compile-time estimate"}, {2, "runtime simulation"}}));
  EXPECT_EQ(thread_sort.at({1, thread_names.begin()->first.second}), 0);

  // Slices on a thread never overlap (so they nest trivially).
  for (auto& [thread, list] : spans) {
    std::sort(list.begin(), list.end());
    for (std::size_t k = 1; k < list.size(); ++k) {
      EXPECT_LE(list[k - 1].second, list[k].first) << "overlap on tid " << thread.second;
    }
  }

  // Flows: each id has one start and one finish, the start first in the file and in time, both
  // at the start of a slice on their own thread, with matching category and name.
  EXPECT_EQ(starts.size(), 12u);  // 6 binding dependencies per run
  EXPECT_EQ(starts.size(), finishes.size());
  for (const auto& [id, start] : starts) {
    ASSERT_EQ(finishes.count(id), 1u);
    const auto& [fi, f] = finishes.at(id);
    const auto& [si, s] = start;
    EXPECT_LT(si, fi);
    EXPECT_LE(ns_of(s.at("ts")), ns_of(f.at("ts")));
    EXPECT_EQ(s.at("cat"), f.at("cat"));
    // DevTools binds a flow event to the slice of its own category at its timestamp: every
    // slice is "npu" (checked above), so both ends must be too.
    EXPECT_EQ(f.at("cat"), "npu");
    EXPECT_EQ(s.at("name"), f.at("name"));
    for (const Json* ev : {&s, &f}) {
      const auto& list = spans.at({ev->at("pid"), ev->at("tid")});
      EXPECT_TRUE(std::any_of(list.begin(), list.end(), [&](const auto& span) {
        return span.first == ns_of(ev->at("ts"));
      })) << "flow event not at a slice start";
    }
  }

  // µs with three decimals: S0 at 163 ns for 124 ns.
  ASSERT_NE(s0, nullptr);
  EXPECT_NE(text.find("\"ts\":0.163,\"dur\":0.124,\"name\":\"0_Gemm_0\""), std::string::npos);
  EXPECT_EQ(s0->at("cat"), "npu");
  EXPECT_EQ(s0->at("args").at("index"), 2);
  EXPECT_EQ(s0->at("args").at("engine"), "SLICE0.ARRAY");
  EXPECT_EQ(s0->at("args").at("group"), "Neural Engine Clusters");
  EXPECT_EQ(s0->at("args").at("stall_deps_cycles"), 120);
  EXPECT_EQ(s0->at("args").at("location"), "loc(\"S0\")");
  EXPECT_EQ(s0->at("args").at("utilisation_pct"), 50.0);
  // Counter at 50 ns: 20.8 GB/s.
  bool found = false;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") == "C" && e.at("name") == "DRAM" && e.at("pid") == 1 &&
        ns_of(e.at("ts")) == 50) {
      EXPECT_DOUBLE_EQ(e.at("args").at("GB/s").get<double>(), 20.8);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(TraceChrome, AgreesWithThePerfettoTrace) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const TraceModel m = model(w, est, rt);
  const Json j = Json::parse(chrome(m));
  std::set<std::tuple<int, std::string, std::uint64_t, std::uint64_t>> from_json, from_proto;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    from_json.emplace(e.at("pid"), e.at("name"), ns_of(e.at("ts")),
                      ns_of(e.at("ts")) + ns_of(e.at("dur")));
  }
  const pb::Trace trace = decode(pftrace(m));
  std::map<std::uint64_t, int> pid_of;
  for (const pb::TracePacket& p : trace.packet()) {
    if (p.has_track_descriptor() && p.track_descriptor().has_thread()) {
      pid_of[p.track_descriptor().uuid()] = p.track_descriptor().thread().pid();
    }
  }
  for (const DecodedSlice& s : check_perfetto_rules(trace)) {
    from_proto.emplace(pid_of.at(s.track), s.name, s.begin, s.end);
  }
  EXPECT_EQ(from_json, from_proto);
}

TEST(TraceChrome, EscapesStringsAndIsDeterministic) {
  Workload w = workload();
  w.commands[0].location = "a\"b\\c\nd\te\x01";
  w.commands[0].layer = "fused(conv1+bn1+relu)";
  const Timeline est = estimate();
  const Timeline rt = runtime();
  const std::string first = chrome(model(w, est, rt));
  const std::string second = chrome(model(w, est, rt));
  EXPECT_EQ(first, second);
  const Json j = Json::parse(first);
  bool found = false;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("name") == "0_fused(conv1+bn1+relu)_0") {
      EXPECT_EQ(e.at("args").at("location"), "a\"b\\c\nd\te\x01");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(TraceChrome, EmptyWorkloadGivesAValidTrace) {
  Workload w = workload();
  w.commands.clear();
  Timeline t;
  const TraceModel m = build_trace_model(w, {{"run", &t}});
  const Json j = Json::parse(chrome(m));
  EXPECT_TRUE(j.at("traceEvents").is_array());
  check_perfetto_rules(decode(pftrace(m)));
}

// ---------------------------------------------------------------------------------------------
// The hand-written protobuf encoder against libprotobuf

// trace.pftrace as libprotobuf serialises it (deterministically), message by message: the
// writer's earlier implementation, kept as the reference for its bytes.
std::string pftrace_by_libprotobuf(const TraceModel& model) {
  std::string bytes;
  bool first = true;
  auto write = [&](pb::TracePacket& packet) {
    packet.set_trusted_packet_sequence_id(0x6e7075);
    if (first) {
      packet.set_first_packet_on_sequence(true);
      packet.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      first = false;
    }
    pb::Trace one;
    *one.add_packet() = packet;
    std::string s;
    {
      google::protobuf::io::StringOutputStream stream(&s);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      one.SerializeToCodedStream(&coded);
    }
    bytes += s;
  };
  pb::TracePacket packet;
  for (std::uint32_t p = 0; p < model.processes.size(); ++p) {
    const TraceProcess& proc = model.processes[p];
    packet.Clear();
    pb::TrackDescriptor* d = packet.mutable_track_descriptor();
    d->set_uuid(proc.uuid);
    d->mutable_process()->set_pid(proc.pid);
    d->mutable_process()->set_process_name(proc.name);
    d->set_child_ordering(pb::TrackDescriptor::EXPLICIT);
    write(packet);
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
      write(packet);
    }
    for (const TraceCounter& c : model.counters) {
      if (c.process != p) continue;
      packet.Clear();
      d = packet.mutable_track_descriptor();
      d->set_uuid(c.uuid);
      d->set_parent_uuid(proc.uuid);
      d->set_name(c.name);
      d->mutable_counter()->set_unit(c.unit == TraceCounter::Unit::kBytes
                                         ? pb::CounterDescriptor::UNIT_SIZE_BYTES
                                         : pb::CounterDescriptor::UNIT_UNSPECIFIED);
      if (c.unit != TraceCounter::Unit::kBytes) d->mutable_counter()->set_unit_name(c.series);
      d->set_sibling_order_rank(c.sort_index);
      write(packet);
    }
  }
  for (const TraceEvent& e : model.events) {
    packet.Clear();
    packet.set_timestamp(e.ts_ns);
    pb::TrackEvent* ev = packet.mutable_track_event();
    if (e.kind == TraceEvent::Kind::kBegin) {
      const TraceSlice& s = model.slices[e.index];
      ev->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
      ev->set_track_uuid(model.tracks[s.track].uuid);
      ev->set_name(model.slice_name(s));
      ev->add_categories(TraceModel::slice_category(s));
      for (const TraceArg& a : model.slice_args(s)) {
        pb::DebugAnnotation* da = ev->add_debug_annotations();
        da->set_name(a.name);
        if (a.kind == TraceArg::Kind::kUint) da->set_uint_value(a.uint_value);
        if (a.kind == TraceArg::Kind::kDouble) da->set_double_value(a.double_value);
        if (a.kind == TraceArg::Kind::kString) da->set_string_value(std::string(a.string_value));
      }
      for (std::uint64_t id : model.flows_out(e.index)) ev->add_flow_ids(id);
      for (std::uint64_t id : model.flows_in(e.index)) ev->add_terminating_flow_ids(id);
    } else if (e.kind == TraceEvent::Kind::kEnd) {
      ev->set_type(pb::TrackEvent::TYPE_SLICE_END);
      ev->set_track_uuid(model.tracks[model.slices[e.index].track].uuid);
    } else {
      const TraceCounter& c = model.counters[e.index];
      ev->set_type(pb::TrackEvent::TYPE_COUNTER);
      ev->set_track_uuid(c.uuid);
      if (c.integer()) {
        ev->set_counter_value(static_cast<std::int64_t>(c.samples[e.sample].value));
      } else {
        ev->set_double_counter_value(c.samples[e.sample].value);
      }
    }
    write(packet);
  }
  return bytes;
}

TEST(TracePerfetto, BytesAreThoseLibprotobufWrites) {
  Workload w = workload();
  w.commands[0].location = "a\"b\\c\nd\te\x01 \xc3\xa9";
  w.programs[1].name = std::string(300, 'p');  // a length that takes a two-byte varint
  const Timeline est = estimate();
  const Timeline rt = runtime();
  for (StatsLevel level :
       {StatsLevel::kTotals, StatsLevel::kWaits, StatsLevel::kOps, StatsLevel::kExtended}) {
    for (bool aggregate : {false, true}) {
      TraceOptions options = trace_options_for(level);
      options.aggregate = aggregate;
      const TraceModel m = model(w, est, rt, options);
      EXPECT_EQ(pftrace(m), pftrace_by_libprotobuf(m))
          << "level " << static_cast<int>(level) << (aggregate ? ", aggregated" : "");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Several devices: a process per device and a Host process

// Two devices of one slice each (array, vector, DMA_IN, DMA_OUT, EXT_HDMA, DEV_HDMA, SYNC), then
// HOST, as EngineLayout lays them out, at 800 MHz. Device 0 loads 1000 B from the host and sends
// them to device 1, which adds; device 1's SYNC releases device 0's Gemm, which also waits for a
// local DMA_IN; the host takes the result.
Workload two_device_workload() {
  Workload w = workload();
  w.programs = {{"p0", "loc(p0)"}};
  w.engines.clear();
  for (std::uint32_t d = 0; d < 2; ++d) {
    const std::string dev = device_prefix(d);
    w.engines.push_back(
        {dev + "SLICE0.ARRAY", EngineKind::kArray, 1, 0, d, "Neural Engine Clusters"});
    w.engines.push_back(
        {dev + "SLICE0.VECTOR", EngineKind::kVector, 1, 0, d, "Neural Engine Clusters"});
    w.engines.push_back({dev + "DMA_IN", EngineKind::kDmaIn, 1, 0, d, "Task DMA"});
    w.engines.push_back({dev + "DMA_OUT", EngineKind::kDmaOut, 1, 0, d, "Task DMA"});
    w.engines.push_back({dev + "EXT_HDMA", EngineKind::kExtHdma, 1, 0, d, "External HDMA"});
    w.engines.push_back({dev + "DEV_HDMA", EngineKind::kDevHdma, 1, 0, d, "Device HDMA"});
    w.engines.push_back({dev + "SYNC", EngineKind::kSync, 1, 0, d, "Device Sync"});
  }
  w.engines.push_back({"HOST", EngineKind::kHost, 1, 0, 0, "Host"});
  // Engine indices: device d's engine k is 7 * d + k; HOST is 14.
  const std::vector<Cmd> cmds = {
      // id   engine op          layer        prog read write macs alloc free iso deps
      {"EH0", 4, "EXT_HDMA", "load", 0, 0, 0, 0, 0, 0, 50, {}},
      {"DH0", 5, "DEV_HDMA", "collective.x", 0, 0, 0, 0, 0, 0, 40, {0}},
      {"S0", 8, "Add", "collective.x", 0, 0, 0, 0, 64, 64, 10, {1}},
      {"DS0", 13, "SYNC", "collective.x", 0, 0, 0, 0, 0, 0, 5, {2}},
      {"DI0", 2, "DMA_IN", "mm", 0, 320, 0, 0, 100, 0, 20, {}},
      {"S1", 0, "Gemm", "mm", 0, 0, 0, 4096, 0, 100, 16, {3, 4}},
      {"H0", 14, "Host", "out", 0, 0, 0, 0, 0, 0, 8, {5}},
  };
  w.commands.clear();
  for (const Cmd& c : cmds) w.commands.push_back(command(c));
  w.commands[0].link_bytes = 1000;
  w.commands[1].link_bytes = 1000;
  w.commands[1].peer = 1;
  return w;
}

Timeline two_device_timeline() {
  Timeline t;
  t.commands = {
      {4, 54, 0},     // EH0
      {58, 98, 0},    // DH0
      {102, 112, 0},  // S0 on device 1
      {116, 121, 0},  // DS0 on device 1
      {4, 24, 0},     // DI0 on device 0: ends long before DS0
      {125, 141, 0},  // S1 waits for DS0 (binding) and DI0
      {145, 153, 0},  // H0
  };
  return t;
}

TEST(TraceDevices, OneProcessPerDevicePlusHostWithTheSeedsCategories) {
  const Workload w = two_device_workload();
  const Timeline t = two_device_timeline();
  const TraceModel m = build_trace_model(w, {{"estimate", &t}, {"simulation", &t}});
  std::vector<std::string> names;
  for (const TraceProcess& p : m.processes) names.push_back(std::to_string(p.pid) + " " + p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"1 Device 0 (estimate)", "2 Device 1 (estimate)",
                                             "3 Host (estimate)", "4 Device 0 (simulation)",
                                             "5 Device 1 (simulation)", "6 Host (simulation)"}));
  // Tracks of the first run: the engines that ran something, in their device's process, named
  // without the device prefix.
  std::vector<std::string> tracks;
  for (const TraceTrack& k : m.tracks) {
    if (k.process < 3) tracks.push_back(std::to_string(k.process) + " " + k.name);
  }
  EXPECT_EQ(tracks,
            (std::vector<std::string>{
                "0 Neural Engine Clusters: SLICE0.ARRAY", "0 Task DMA: DMA_IN",
                "0 External HDMA: EXT_HDMA", "0 Device HDMA: DEV_HDMA",
                "1 Neural Engine Clusters: SLICE0.VECTOR", "1 Device Sync: SYNC", "2 Host: HOST"}));
  // Tids stay above every pid.
  EXPECT_EQ(m.tracks.front().tid, 7);
  // Flows per run: the binding dependency of each command (EH0->DH0, DH0->S0, S0->DS0, DS0->S1,
  // S1->H0), and every other edge between two processes. DI0->S1 stays within device 0 and does
  // not bind (DI0 ended at 24, DS0 at 121): not drawn. So 5 flows per run; DH0->S0 goes from
  // device 0 to 1, DS0->S1 from 1 to 0, S1->H0 to the host.
  ASSERT_EQ(m.flows.size(), 10u);
  auto edge = [&](const TraceFlow& f) {
    return std::string(w.commands[m.slices[f.from].command].id) + "->" +
           w.commands[m.slices[f.to].command].id + " " + std::to_string(m.slices[f.from].process) +
           "->" + std::to_string(m.slices[f.to].process);
  };
  std::vector<std::string> edges;
  for (std::size_t i = 0; i < 5; ++i) edges.push_back(edge(m.flows[i]));
  EXPECT_EQ(edges, (std::vector<std::string>{"EH0->DH0 0->0", "DH0->S0 0->1", "S0->DS0 1->1",
                                             "DS0->S1 1->0", "S1->H0 0->2"}));
  EXPECT_EQ(edge(m.flows[5]), "EH0->DH0 3->3");
  // A cross-device edge that is not binding is drawn too: make DI0 end last, so that it binds
  // S1, and DS0 -> S1 is still drawn (ids in deps order: DS0 first).
  Timeline late = t;
  late.commands[4] = {4, 123, 0};
  const TraceModel m2 = build_trace_model(w, {{"estimate", &late}});
  ASSERT_EQ(m2.flows.size(), 6u);
  EXPECT_EQ(w.commands[m2.slices[m2.flows[3].from].command].id, "DS0");
  EXPECT_EQ(w.commands[m2.slices[m2.flows[4].from].command].id, "DI0");
  EXPECT_EQ(w.commands[m2.slices[m2.flows[4].to].command].id, "S1");
  // Counters per device process: LRAM of device 1 is S0's 64 bytes only; the host process has
  // only its engine's utilisation.
  std::vector<std::string> counters;
  for (const TraceCounter& c : m.counters) {
    if (c.process < 3) counters.push_back(std::to_string(c.process) + " " + c.name);
  }
  EXPECT_EQ(counters,
            (std::vector<std::string>{"0 DRAM GB/s", "0 LRAM bytes", "0 SLICE0.ARRAY utilisation %",
                                      "0 DMA_IN utilisation %", "0 EXT_HDMA utilisation %",
                                      "0 DEV_HDMA utilisation %", "1 DRAM GB/s", "1 LRAM bytes",
                                      "1 SLICE0.VECTOR utilisation %", "1 SYNC utilisation %",
                                      "2 HOST utilisation %", "0 Power W", "1 Power W"}));
  const TraceCounter& lram1 = m.counters[7];
  ASSERT_EQ(lram1.samples.size(), 3u);  // 0, 64 at S0's start, 0 at its end
  EXPECT_EQ(lram1.samples[1].value, 64.0);
  EXPECT_EQ(lram1.samples[1].ts_ns, trace_ns(102, 800000));
}

TEST(TraceDevices, BothFilesShowTheProcessesAndLibprotobufAgrees) {
  const Workload w = two_device_workload();
  const Timeline t = two_device_timeline();
  for (StatsLevel level :
       {StatsLevel::kTotals, StatsLevel::kWaits, StatsLevel::kOps, StatsLevel::kExtended}) {
    for (bool aggregate : {false, true}) {
      TraceOptions options = trace_options_for(level);
      options.aggregate = aggregate;
      const TraceModel m = build_trace_model(w, {{"estimate", &t}, {"simulation", &t}}, options);
      EXPECT_EQ(pftrace(m), pftrace_by_libprotobuf(m))
          << "level " << static_cast<int>(level) << (aggregate ? ", aggregated" : "");
      check_perfetto_rules(decode(pftrace(m)));
    }
  }
  // trace.json: the process names, and flows whose two ends are in different processes.
  const TraceModel m = build_trace_model(w, {{"estimate", &t}});
  const Json j = Json::parse(chrome(m));
  std::map<int, std::string> process;
  std::map<std::uint64_t, int> flow_from, flow_to;
  for (const Json& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      process[e.at("pid")] = e.at("args").at("name");
    } else if (e.at("ph") == "s") {
      flow_from[e.at("id")] = e.at("pid");
    } else if (e.at("ph") == "f") {
      flow_to[e.at("id")] = e.at("pid");
    }
  }
  EXPECT_EQ(process,
            (std::map<int, std::string>{
                {1, "Device 0 (estimate)"}, {2, "Device 1 (estimate)"}, {3, "Host (estimate)"}}));
  ASSERT_EQ(flow_from.size(), 5u);
  EXPECT_EQ(flow_from.at(2), 1);  // DH0 on device 0 ...
  EXPECT_EQ(flow_to.at(2), 2);    // ... to the Add on device 1
  EXPECT_EQ(flow_from.at(4), 2);  // DS0 on device 1 to the Gemm on device 0
  EXPECT_EQ(flow_to.at(4), 1);
}

// ---------------------------------------------------------------------------------------------
// Aggregated traces (--trace-detail)

TEST(TraceAggregate, GroupsSumTheirCommandsPerLayerAndEngine) {
  const Workload w = workload();
  const Timeline est = estimate();
  const std::vector<OpGroup> g = group_ops(w, est, command_stalls(w, est));
  // In order of first command: l0 on DMA_IN (DI0, DI1), S0's op type standing for its empty
  // layer, l1 on the vector unit and on DMA_OUT, then l2 on each of the four engines.
  ASSERT_EQ(g.size(), 8u);
  const std::vector<std::string> names = {"0_l0", "0_Gemm", "0_l1", "0_l1",
                                          "0_l2", "0_l2",   "0_l2", "0_l2"};
  const std::vector<std::uint32_t> engines = {kDmaIn, kArray, kVector, kDmaOut,
                                              kDmaIn, kArray, kVector, kDmaOut};
  // Cycles by hand: DI0 100 + DI1 80; S0 99; V0 20; DO0 20; DI2 10; S1 70; V1 0; DO1 20.
  const std::vector<Cycles> cycles = {180, 99, 20, 20, 10, 70, 0, 20};
  const std::vector<std::uint32_t> commands = {2, 1, 1, 1, 1, 1, 1, 1};
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i].name, names[i]) << i;
    EXPECT_EQ(g[i].engine, engines[i]) << i;
    EXPECT_EQ(g[i].cycles, cycles[i]) << i;
    EXPECT_EQ(g[i].commands, commands[i]) << i;
  }
  EXPECT_EQ(g[0].start, 0u);
  EXPECT_EQ(g[0].end, 120u);  // DI1's end: a span, not the sum
  EXPECT_EQ(g[0].bytes, 2400u);
  EXPECT_EQ(g[1].macs, 12672u);
  EXPECT_EQ(g[0].op, "DMA_IN");
  // S0 waited for DI1 (done at 120) from 0: 120 cycles; DI0 and DI1 did not wait but took 20 and
  // 30 cycles over their isolated 80 and 50.
  EXPECT_EQ(g[1].wait_deps, 120u);
  EXPECT_EQ(g[0].wait_dram, 50u);
}

TEST(TraceAggregate, ChromeTraceHasOneSlicePerGroupSummingToTheCommands) {
  const Workload w = workload();
  const Timeline est = estimate();
  const Timeline rt = runtime();
  TraceOptions options;
  options.aggregate = true;
  const TraceModel m = model(w, est, rt, options);
  const Json j = Json::parse(chrome(m));
  std::map<int, std::uint64_t> commands, cycles, slices;
  std::set<std::string> tracks;
  for (const Json& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    EXPECT_NE(ph, "s");  // no flows
    EXPECT_NE(ph, "f");
    if (ph == "M" && e.at("name") == "thread_name") tracks.insert(e.at("args").at("name"));
    if (ph != "X") continue;
    const int pid = e.at("pid");
    slices[pid] += 1;
    commands[pid] += e.at("args").at("commands").get<std::uint64_t>();
    cycles[pid] += e.at("args").at("cycles").get<std::uint64_t>();
    EXPECT_EQ(e.at("args").at("layer"), e.at("name").get<std::string>().substr(2));
  }
  // Per run: 8 groups, the 9 commands, and their cycles (runtime: DO1 took 5 more).
  EXPECT_EQ(slices, (std::map<int, std::uint64_t>{{1, 8}, {2, 8}}));
  EXPECT_EQ(commands, (std::map<int, std::uint64_t>{{1, 9}, {2, 9}}));
  EXPECT_EQ(cycles, (std::map<int, std::uint64_t>{{1, 419}, {2, 424}}));
  // One track per engine, not per channel; l2's DMA_IN (100-110) overlaps l0's (0-120).
  EXPECT_TRUE(tracks.count("Task DMA: DMA_IN"));
  EXPECT_TRUE(tracks.count("Task DMA: DMA_IN lane 1"));
  EXPECT_FALSE(tracks.count("Task DMA: DMA_IN ch1"));
  check_perfetto_rules(decode(pftrace(m)));
}

TEST(TraceAggregate, LocalMemoryIsThePeakOfEachWindow) {
  const Workload w = workload();
  const Timeline est = estimate();
  TraceOptions options;
  options.aggregate = true;
  const TraceModel m = build_trace_model(w, {{"estimate", &est}}, options);
  // 320 cycles in windows of 2: DI0 takes 600 at 0, DI1 300 at 40, V0 100 at 230, S0 frees 900
  // at 230 (frees first), DO0 frees 100 at 270. Peaks: 600 from 0, 900 from 40, 100 from 230,
  // 0 from 270, and 0 at the end.
  const TraceCounter* lram = nullptr;
  for (const TraceCounter& c : m.counters) {
    if (c.name == "LRAM bytes") lram = &c;
  }
  ASSERT_NE(lram, nullptr);
  std::vector<std::pair<std::uint64_t, double>> samples;
  for (const TraceCounterSample& s : lram->samples) samples.emplace_back(s.ts_ns, s.value);
  auto at = [](Cycles c) { return trace_ns(c, 800000); };
  EXPECT_EQ(samples, (std::vector<std::pair<std::uint64_t, double>>{
                         {at(0), 600}, {at(40), 900}, {at(230), 100}, {at(270), 0}, {at(320), 0}}));
}

}  // namespace
}  // namespace npusim::profiler
