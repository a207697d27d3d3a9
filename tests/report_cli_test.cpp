// End-to-end tests of npusim report, convert and diff: the binary on hand-written CSVs and run
// folders (exact tables, files and exit codes), and on a real run of models/fc.json.
#include <gtest/gtest.h>

#include "tests/cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/perfetto/perfetto_trace.pb.h"
#include "profiler/report.h"

namespace {

namespace fs = std::filesystem;
namespace pb = perfetto::protos;
using Json = nlohmann::json;

const fs::path kSource = NPUSIM_SOURCE_DIR;

using npusim::test::quote;
using npusim::test::read_file;
using npusim::test::Result;

// A fresh folder per test; npusim runs inside it, so relative paths print the same everywhere.
class ProfilerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("npusim_report_cli_" + std::string(info->test_suite_name()) +
                                     "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result npusim(const std::vector<std::string>& args) const {
    std::string cmd = "cd " + quote(dir_.string()) + " && " + quote(NPUSIM_BINARY);
    for (const std::string& a : args) cmd += " " + quote(a);
    cmd += " >" + quote((dir_ / ".stdout").string()) + " 2>" + quote((dir_ / ".stderr").string());
    const int status = std::system(cmd.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(dir_ / ".stdout");
    r.err = read_file(dir_ / ".stderr");
    return r;
  }

  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  // A run folder: timeline.csv (estimate), optionally runtime_timeline.csv, and a stats.json
  // with the commands' layers. Rows: id, start, end, layer.
  struct Row {
    const char* id;
    std::uint64_t start, end;
    const char* layer;
  };
  void run_folder(const std::string& name, const std::vector<Row>& estimate,
                  const std::vector<Row>& runtime, int stats_level = 70) const {
    auto csv = [](const std::vector<Row>& rows) {
      std::string text = "ID,Start,End,Location,Op Type\n";
      for (const Row& r : rows) {
        text += std::string(r.id) + "," + std::to_string(r.start) + "," + std::to_string(r.end) +
                ",\"loc(\"\"" + r.id + "\"\")\"," +
                (r.id[0] == 'S'   ? "Conv"
                 : r.id[1] == 'I' ? "DMA_IN"
                                  : "DMA_OUT") +
                "\n";
      }
      return text;
    };
    write(name + "/timeline.csv", csv(estimate));
    if (!runtime.empty()) write(name + "/runtime_timeline.csv", csv(runtime));
    Json ops = Json::array();
    for (const Row& r : estimate) ops.push_back({{"id", r.id}, {"layer", r.layer}});
    Json stats = {
        {"format", "npusim-stats"}, {"stats_level", stats_level}, {"estimate", Json::object()}};
    if (stats_level >= 70) stats["estimate"]["ops"] = ops;
    write(name + "/stats.json", stats.dump(2));
  }

  fs::path dir_;
};

// ---- convert --------------------------------------------------------------------------------

const char* kNpusimTimeline =
    "ID,Start,End,Location,Op Type\n"
    "DI0,0,800,\"loc(\"\"w\"\")\",DMA_IN\n"
    "S0,800,2400,\"loc(\"\"conv\"\":tile 0)\",Conv\n"
    "DI1,1600,2000,\"loc(\"\"x\"\")\",DMA_IN\n"
    "DO0,2400,3200,\"loc(\"\"y\"\")\",DMA_OUT\n";

// As a vendor toolchain writes it: CRLF, quoted op types, locations with commas, doubled quotes
// and a line break, an empty quoted field, a row that overlaps another compute row.
const char* kVendorTimeline =
    "ID,Start,End,Location,Op Type\r\n"
    "DI0,100,900,\"loc(fused[\"\"model.tflite\"\":12, \"\"model.tflite\"\":13])\",DMA_IN\r\n"
    "S0,900,1700,\"loc(\"\"conv2d, relu\"\")\",\"CONV_2D\"\r\n"
    "S1,1000,1400,,\"DEPTHWISE_CONV_2D\"\r\n"
    "DO0,1600,2100,\"\",DMA_OUT\r\n"
    "S2,2500,2900,\"multi\r\nline\",MEAN\r\n";

const char* kRuntime =
    "id;time_since_open;time_since_start;location\n"
    "0;3;3;\"loc(\"\"npusim.py\"\":1:1)\"\n"
    "1;5;1;\"a;b\"\n";

TEST_F(ProfilerCli, ConvertNpusimAndVendorFilesIntoOneTrace) {
  write("npusim.csv", kNpusimTimeline);
  write("vendor.csv", kVendorTimeline);
  write("runtime.csv", kRuntime);
  const Result r = npusim({"convert", "--compile", "npusim.csv", "vendor.csv", "--runtime",
                           "runtime.csv", "--out", "out/T.pftrace"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No stats.json beside the CSVs and no --clock-mhz: 800 MHz, said.
  EXPECT_EQ(r.err,
            "npusim: warning: no --clock-mhz and no stats.json beside the timeline files: "
            "assuming 800 MHz\n");
  // At 800 MHz, ns = floor(cycles x 1.25). npusim.csv: DMA [0,1000) u [2000,2500) u [3000,4000),
  // slice [1000,3000). vendor.csv: DMA [125,1125) u [2000,2625), slice [1125,2125) u [1250,1750)
  // u [3125,3625). runtime.csv: programs [0,3) and [4,5) us.
  EXPECT_EQ(r.out,
            "overview (us; busy = union of all rows, idle = overall - busy, overall = last end - "
            "first start):\n"
            "   pid  kind         rows           DMA         slice      DMA only    slice only     "
            "DMA+slice          busy          idle       overall  file\n"
            "     1  timeline        4         2.500         2.000         2.000         1.500     "
            "    0.500         4.000         0.000         4.000  npusim.csv\n"
            "     2  timeline        5         1.625         1.500         1.500         1.375     "
            "    0.125         3.000         0.500         3.500  vendor.csv\n"
            "     3  runtime         2             -             -             -             -     "
            "        -         4.000         1.000         5.000  runtime.csv\n"
            "\n"
            "trace written to out/T.pftrace, overview to out/T.overview.json\n");
  const Json overview = Json::parse(read_file(dir_ / "out/T.overview.json"));
  EXPECT_EQ(overview["format"], "npusim-convert-overview");
  EXPECT_EQ(overview["trace"], "out/T.pftrace");
  EXPECT_EQ(overview["clock_mhz"], 800.0);
  ASSERT_EQ(overview["files"].size(), 3u);
  EXPECT_EQ(
      overview["files"][1]["ns"],
      Json::parse(R"({"first_start":125,"last_end":3625,"dma":1625,"slice":1500,"dma_only":1500,
                            "slice_only":1375,"dma_slice_overlap":125,"busy":3000,"idle":500,"overall":3500})"));
  EXPECT_EQ(
      overview["files"][1]["cycles"],
      Json::parse(R"({"first_start":100,"last_end":2900,"dma":1300,"slice":1200,"dma_only":1200,
                            "slice_only":1100,"dma_slice_overlap":100,"busy":2400,"idle":400,"overall":2800})"));
  EXPECT_EQ(overview["files"][2],
            Json::parse(R"({"pid":3,"file":"runtime.csv","kind":"runtime","rows":2,
                            "ns":{"first_start":0,"last_end":5000,"busy":4000,"idle":1000,"overall":5000}})"));

  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir_ / "out/T.pftrace")));
  std::vector<std::string> processes, tracks;
  std::map<std::uint64_t, std::string> track_of;
  std::vector<std::string> vendor_slices;
  for (const pb::TracePacket& p : trace.packet()) {
    if (p.has_track_descriptor()) {
      const pb::TrackDescriptor& d = p.track_descriptor();
      if (d.has_process())
        processes.push_back(std::to_string(d.process().pid()) + " " + d.process().process_name());
      if (d.has_thread()) {
        tracks.push_back(std::to_string(d.thread().pid()) + " " + d.name());
        track_of[d.uuid()] = std::to_string(d.thread().pid()) + " " + d.name();
      }
    } else if (p.track_event().type() == pb::TrackEvent::TYPE_SLICE_BEGIN &&
               track_of[p.track_event().track_uuid()][0] == '2') {
      vendor_slices.push_back(track_of[p.track_event().track_uuid()] + ": " +
                              p.track_event().name() + " @" + std::to_string(p.timestamp()));
    }
  }
  EXPECT_EQ(processes, (std::vector<std::string>{"1 timeline: npusim.csv", "2 timeline: vendor.csv",
                                                 "3 runtime: runtime.csv"}));
  EXPECT_EQ(tracks,
            (std::vector<std::string>{"1 compute", "1 DMA_IN", "1 DMA_OUT", "2 compute",
                                      "2 compute lane 1", "2 DMA_IN", "2 DMA_OUT", "3 programs"}));
  EXPECT_EQ(vendor_slices, (std::vector<std::string>{
                               "2 DMA_IN: 0_DMA_IN_DI0 @125", "2 compute: 1_CONV_2D_S0 @1125",
                               "2 compute lane 1: 2_DEPTHWISE_CONV_2D_S1 @1250",
                               "2 DMA_OUT: 3_DMA_OUT_DO0 @2000", "2 compute: 4_MEAN_S2 @3125"}));
}

TEST_F(ProfilerCli, ConvertClockAndQuiet) {
  write("npusim.csv", kNpusimTimeline);
  const Result r =
      npusim({"convert", "--compile", "npusim.csv", "-o", "t.trace", "--clock-mhz", "1000", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // Not ending in .pftrace: the overview's name is the whole name plus .overview.json.
  const Json overview = Json::parse(read_file(dir_ / "t.trace.overview.json"));
  EXPECT_EQ(overview["clock_mhz"], 1000.0);
  EXPECT_EQ(overview["files"][0]["ns"]["overall"], 3200);
  EXPECT_TRUE(fs::exists(dir_ / "t.trace"));
}

// A Torq compile profile: the MLIR location unquoted, with quotes and commas in it.
TEST_F(ProfilerCli, ConvertReadsVendorRowsAndTheClockOfTheRunFolder) {
  write("torq/compile.csv",
        "ID,Start,End,Location,Op Type\n"
        "S0,129,300,loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1)),fully_connected\n"
        "S1,300,400,loc(fused[\"/x/fc.mlir\":4:1, \"/x/fc.mlir\":5:1]),add\n");
  write("torq/runtime.csv",
        "id;time_since_open;time_since_start;location\n"
        "0;2;2;loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1))\n");
  Result r = npusim({"convert", "--compile", "torq/compile.csv", "--runtime", "torq/runtime.csv",
                     "-o", "t.pftrace", "-q", "--clock-mhz", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  Json overview = Json::parse(read_file(dir_ / "t.overview.json"));
  // At 1 GHz a cycle is 1 ns: compute [129, 400) ns.
  EXPECT_EQ(overview["files"][0]["ns"]["slice"], 271);
  EXPECT_EQ(overview["files"][0]["rows"], 2);
  EXPECT_EQ(overview["files"][1]["ns"]["busy"], 2000);
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir_ / "t.pftrace")));
  std::vector<std::string> names;
  for (const pb::TracePacket& p : trace.packet()) {
    if (p.track_event().type() != pb::TrackEvent::TYPE_SLICE_BEGIN) continue;
    names.push_back(p.track_event().name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0_fully_connected_S0", "1_add_S1", "0_program_0"}));

  // A 1 GHz run folder converted without --clock-mhz: its stats.json gives the clock, so the
  // timeline says 1 ns per cycle, as its runtime.csv does (no 800 MHz assumed).
  write("run/stats.json", R"({"format": "npusim-stats", "device": {"clock_mhz": 1000.0}})");
  write("run/timeline.csv", "ID,Start,End,Location,Op Type\nS0,0,1000,x,Conv\n");
  r = npusim({"convert", "--compile", "run/timeline.csv", "-o", "u.pftrace", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  overview = Json::parse(read_file(dir_ / "u.overview.json"));
  EXPECT_EQ(overview["clock_mhz"], 1000.0);
  EXPECT_EQ(overview["files"][0]["ns"]["overall"], 1000);  // 1000 cycles at 1 GHz
  // Two folders that disagree are an error.
  write("slow/stats.json", R"({"format": "npusim-stats", "device": {"clock_mhz": 800.0}})");
  write("slow/timeline.csv", "ID,Start,End,Location,Op Type\nS0,0,1000,x,Conv\n");
  r = npusim({"convert", "--compile", "run/timeline.csv", "slow/timeline.csv", "-o", "v.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: --clock-mhz: the stats.json files beside the timelines disagree on "
            "the clock (run/stats.json: 1000000 kHz, slow/stats.json: 800000 kHz); give "
            "--clock-mhz\n");
}

TEST_F(ProfilerCli, ConvertRejectsBadInputWithExit2AndWritesNothing) {
  write("npusim.csv", kNpusimTimeline);
  write("bad.csv",
        "ID,Start,End,Location,Op Type\r\nS0,0,10,\"a\",Conv\r\nS1,10,5,\"b, c\",Conv\r\n");
  write("runtime.csv", kRuntime);
  Result r = npusim({"convert", "--compile", "npusim.csv", "bad.csv", "--out", "T.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: bad.csv: row 3, field 'End': 5 is before Start 10\n");
  EXPECT_FALSE(fs::exists(dir_ / "T.pftrace"));
  EXPECT_FALSE(fs::exists(dir_ / "T.overview.json"));

  r = npusim({"convert", "--compile", "runtime.csv", "--out", "T.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "npusim: error: runtime.csv: row 1: expected the timeline.csv header "
      "'ID,Start,End,Location,Op Type', "
      "found 'id;time_since_open;time_since_start;location' (that is a runtime.csv header)\n");
  r = npusim({"convert", "--compile", "missing.csv", "--out", "T.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: missing.csv: cannot open file: No such file or directory\n");
  r = npusim({"convert", "--compile", "npusim.csv", "--out", "T.pftrace", "--clock-mhz", "0.0001"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: --clock-mhz: expected a clock above 0 MHz with at most 3 decimals, "
            "found '0.0001'\n");
  r = npusim({"convert", "--compile", "npusim.csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: --out is required (see npusim convert --help)\n");
  r = npusim({"convert", "--out", "T.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: no input: give --compile and/or --runtime files (see npusim convert "
            "--help)\n");
  write("file", "");
  r = npusim({"convert", "--compile", "npusim.csv", "--out", "file/T.pftrace"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("npusim: error: cannot write file/T.pftrace"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "T.pftrace"));
}

// ---- diff -----------------------------------------------------------------------------------

TEST_F(ProfilerCli, DiffEstimateVsRuntimeExactReport) {
  // Estimate ends at 1000, the simulation at 1005 (+0.50 %): within the default 1 %.
  run_folder("run", {{"DI0", 0, 200, "L1"}, {"S0", 200, 800, "L1"}, {"DO0", 800, 1000, "L2"}},
             {{"DI0", 0, 205, "L1"}, {"S0", 205, 805, "L1"}, {"DO0", 805, 1005, "L2"}});
  const Result r = npusim({"diff", "run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "npusim diff (tolerance 1 %)\n"
      "  A: run/timeline.csv (3 commands, clock unknown)\n"
      "  B: run/runtime_timeline.csv (3 commands, clock unknown)\n"
      "\n"
      "total cycles (last End): A 1000, B 1005, delta +5 (+0.50 %)\n"
      "commands: 3 matched, 0 only in A, 0 only in B\n"
      "\n"
      "layers by |delta| (cycles = union of the layer's commands; ! = past the tolerance), all 2:\n"
      "        A cycles      B cycles         delta   delta %  layer\n"
      "             800           805            +5     +0.63  L1\n"
      "             200           200             0      0.00  L2\n"
      "\n"
      "commands by |delta| (cycles = End - Start; ! = past the tolerance), all 3:\n"
      "  id                A cycles      B cycles         delta   delta %\n"
      "! DI0                    200           205            +5     +2.50\n"
      "  S0                     600           600             0      0.00\n"
      "  DO0                    200           200             0      0.00\n"
      "\n"
      "result: OK (total +0.50 %, tolerance 1 %)\n");
  EXPECT_EQ(npusim({"diff", "run", "--estimate-vs-runtime"}).out, r.out);
  // L1 is +0.63 %: past a 0.5 % tolerance, which the total (+0.50 %) is not.
  EXPECT_EQ(npusim({"diff", "run", "--tolerance", "0.5"}).exit_code, 0);
  const Result strict = npusim({"diff", "run", "--tolerance", "0.5", "--fail-on-layer"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.out.find("result: FAIL (total +0.50 %, 1 layer(s) past, tolerance 0.5 %)\n"),
            std::string::npos);
  EXPECT_EQ(npusim({"diff", "run", "--tolerance", "0.499999"}).exit_code, 1);
}

TEST_F(ProfilerCli, DiffTwoRunsExitCodes) {
  run_folder("a", {{"DI0", 0, 100, "L1"}, {"S0", 100, 1000, "L1"}},
             {{"DI0", 0, 100, "L1"}, {"S0", 100, 1000, "L1"}});
  run_folder("b", {{"DI0", 0, 100, "L1"}, {"S0", 100, 1020, "L1"}},
             {{"DI0", 0, 100, "L1"}, {"S0", 100, 1010, "L1"}});
  // Both hold a simulation: runtime_timeline.csv, 1000 -> 1010 (+1.00 %, exactly the tolerance).
  Result r = npusim({"diff", "a", "b"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  A: a/runtime_timeline.csv (2 commands, clock unknown)\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("result: OK (total +1.00 %, tolerance 1 %)\n"), std::string::npos);
  // Their estimates: 1000 -> 1020 (+2.00 %).
  r = npusim({"diff", "a", "b", "--estimate"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("  B: b/timeline.csv (2 commands, clock unknown)\n"), std::string::npos);
  EXPECT_NE(r.out.find("result: FAIL (total +2.00 %, tolerance 1 %)\n"), std::string::npos);
  EXPECT_EQ(npusim({"diff", "a", "b", "--estimate", "--tolerance", "2"}).exit_code, 0);
  // Quiet: the exit code only. B against A: -1.96 %.
  r = npusim({"diff", "b", "a", "--estimate", "-q"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  // Timeline files stand for runs; no layers then.
  r = npusim({"diff", "a/timeline.csv", "b/timeline.csv", "--tolerance", "5"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("layers: not compared: a/timeline.csv is a timeline file, not a run folder "
                       "with a stats.json\n"),
            std::string::npos);
}

TEST_F(ProfilerCli, DiffBadInputExit2) {
  run_folder("a", {{"S0", 0, 100, "L1"}}, {});
  run_folder("low", {{"S0", 0, 100, "L1"}}, {{"S0", 0, 100, "L1"}}, 40);
  write("bad/timeline.csv", "ID,Start,End,Location,Op Type\nS0,0,1x,,Conv\n");
  write("bad/runtime_timeline.csv", "ID,Start,End,Location,Op Type\nS0,0,1,,Conv\n");
  Result r = npusim({"diff", "nope", "a"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: nope: no such folder or file\n");
  r = npusim({"diff", "a"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: a/runtime_timeline.csv: not found (npusim estimate writes no "
            "simulation; use npusim run)\n");
  r = npusim({"diff", "bad"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: bad/timeline.csv: row 2, field 'End': expected a non-negative integer "
            "(cycles), found '1x'\n");
  r = npusim({"diff", "a", "a", "--tolerance", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: --tolerance: expected a percentage of at least 0 with at most 6 "
            "decimals, found '-1'\n");
  EXPECT_EQ(npusim({"diff", "a", "a", "a"}).exit_code, 2);
  EXPECT_EQ(npusim({"diff", "a", "a", "--estimate-vs-runtime"}).exit_code, 2);
  EXPECT_EQ(npusim({"diff"}).exit_code, 2);
  // Below stats level 70 the layers are left out, with the reason; the diff itself works.
  r = npusim({"diff", "low"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("layers: not compared: low/stats.json: written at stats level 40, without per-op "
                 "figures; they need stats level 70 or more (npusim run --stats-level 70)\n"),
      std::string::npos)
      << r.out;
}

// Two runs at different clocks: 800 cycles at 800 MHz and 1000 cycles at 1 GHz are both 1 us,
// so compared in time they agree, where their cycles differ by 25 %.
TEST_F(ProfilerCli, DiffAcrossClocksComparesMicroseconds) {
  for (const auto& [name, mhz, end] :
       {std::tuple{"slow", "800.0", "800"}, std::tuple{"fast", "1000.0", "1000"}}) {
    write(std::string(name) + "/timeline.csv",
          std::string("ID,Start,End,Location,Op Type\nS0,0,") + end + ",x,Conv\n");
    write(std::string(name) + "/stats.json",
          std::string(R"({"format": "npusim-stats", "stats_level": 70, "device": {"clock_mhz": )") +
              mhz + R"(}, "estimate": {"ops": [{"id": "S0", "layer": "L1"}]}})");
  }
  const Result r = npusim({"diff", "slow", "fast"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find("commands:")),
            "npusim diff (tolerance 1 %)\n"
            "  A: slow/timeline.csv (1 commands, clock 800.000 MHz)\n"
            "  B: fast/timeline.csv (1 commands, clock 1000.000 MHz)\n"
            "  the clocks differ: times are compared in us (cycles x 1000 / clock in kHz), not "
            "cycles\n"
            "\n"
            "total us (last End): A 1.000, B 1.000, delta 0 (0.00 %)\n");
  EXPECT_NE(r.out.find("        A us          B us         delta   delta %  layer\n"
                       "           1.000         1.000             0      0.00  L1\n"),
            std::string::npos)
      << r.out;
}

// ---- report ---------------------------------------------------------------------------------

// The report's totals of a real run, recomputed here from its stats.json.
TEST_F(ProfilerCli, ReportFiguresOfARun) {
  const std::string model = (kSource / "models/fc.json").string();
  ASSERT_EQ(npusim({"run", model, "-o", "run", "-q"}).exit_code, 0);
  const Json stats = Json::parse(read_file(dir_ / "run/stats.json"));
  const Json& rt = stats["runtime"];
  const std::uint64_t khz =
      static_cast<std::uint64_t>(stats["device"]["clock_mhz"].get<double>() * 1000 + 0.5);
  std::vector<npusim::profiler::Interval> npu, dma, both;
  std::uint64_t first = ~std::uint64_t{0}, last = 0;
  for (const Json& op : rt["ops"]) {
    const std::string engine = op["engine"];
    const npusim::profiler::Interval iv{op["start_cycle"], op["end_cycle"]};
    if (engine.find("SLICE") == 0) npu.push_back(iv);
    if (engine.find("DMA_") == 0) dma.push_back(iv);
    if (engine.find("SLICE") == 0 || engine.find("DMA_") == 0) {
      both.push_back(iv);
      first = std::min(first, iv.start);
      last = std::max(last, iv.end);
    }
  }
  // A merge of sorted intervals, independent of the library's.
  auto covered = [](std::vector<npusim::profiler::Interval> v) {
    std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.start < y.start; });
    std::uint64_t total = 0, until = 0;
    for (const auto& i : v) {
      const std::uint64_t from = std::max(i.start, until);
      if (i.end > from) {
        total += i.end - from;
        until = i.end;
      }
    }
    return total;
  };
  const std::uint64_t total = rt["total_cycles"];
  const std::uint64_t compute_cycles = covered(npu), dma_cycles = covered(dma);
  // Seed 004's NPU time: first to last NPU command, DMA included. |C n D| = |C| + |D| - |C u D|.
  const std::uint64_t npu_cycles = last - first;
  const std::uint64_t overlap = compute_cycles + dma_cycles - covered(both);
  const std::uint64_t neither = npu_cycles - covered(both);
  auto pad = [](std::string s, std::size_t w) {
    return std::string(w > s.size() ? w - s.size() : 0, ' ') + s;
  };
  auto row = [&](const std::string& label, std::uint64_t cycles, std::uint64_t whole,
                 const std::string& of) {
    return "  " + label + std::string(22 - label.size(), ' ') +
           pad(npusim::profiler::us_text(cycles, khz), 16) + " us" +
           pad(std::to_string(cycles), 16) + " cycles  " +
           npusim::profiler::percent_text(cycles, whole) + " % of " + of + "\n";
  };
  const std::string expected =
      "totals:\n"
      "  invoke time           " +
      pad(npusim::profiler::us_text(total, khz), 16) + " us" + pad(std::to_string(total), 16) +
      " cycles\n"
      "  NPU time              " +
      pad(npusim::profiler::us_text(npu_cycles, khz), 16) + " us" +
      pad(std::to_string(npu_cycles), 16) + " cycles  " +
      npusim::profiler::percent_text(npu_cycles, total) +
      " % of invoke time  (first to last NPU command, DMA included)\n" +
      row("  compute only", compute_cycles - overlap, npu_cycles, "NPU time") +
      row("  DMA only", dma_cycles - overlap, npu_cycles, "NPU time") +
      row("  compute and DMA", overlap, npu_cycles, "NPU time") +
      row("  neither", neither, npu_cycles, "NPU time") +
      row("compute time", compute_cycles, total, "invoke time") +
      row("DMA time", dma_cycles, total, "invoke time") + "  DRAM bytes moved      " +
      pad(std::to_string(stats["dram_read_bytes"].get<std::uint64_t>() +
                         stats["dram_write_bytes"].get<std::uint64_t>()),
          16) +
      " B   (read " + std::to_string(stats["dram_read_bytes"].get<std::uint64_t>()) +
      " B, written " + std::to_string(stats["dram_write_bytes"].get<std::uint64_t>()) +
      " B)\n"
      "  variable buffer size  " +
      pad(std::to_string(rt["lram_peak_bytes"].get<std::uint64_t>()), 16) +
      " B   (peak local memory)\n";
  const Result r = npusim({"report", "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("npusim report: run/stats.json (runtime simulation)\nmodel:   fc (fc.json), ", 0),
      0u)
      << r.out;
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out << "\nexpected:\n" << expected;
  EXPECT_GT(npu_cycles, 0u);
  EXPECT_NE(npusim({"report", "run", "--estimate"}).out.find("(compile-time estimate)"),
            std::string::npos);
  const Result quiet = npusim({"report", "run", "-q"});
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out, "");
  // fc's four commands are one layer, fc1: one row holding every cycle.
  const Result each = npusim({"report", "run/stats.json", "--mode", "each"});
  EXPECT_EQ(each.exit_code, 0);
  std::uint64_t op_cycles = 0;
  for (const Json& op : rt["ops"]) op_cycles += op["cycles"].get<std::uint64_t>();
  EXPECT_NE(each.out.find("ops by layer, one row per model operator"), std::string::npos);
  EXPECT_NE(
      each.out.find("       4" + pad(std::to_string(first), 14) + pad(std::to_string(last), 14) +
                    pad(std::to_string(op_cycles), 14) + "   100.00  fc1\n"),
      std::string::npos)
      << each.out;
  const Result by_command = npusim({"report", "run", "--mode", "each", "--by", "command"});
  EXPECT_NE(by_command.out.find("ops by index"), std::string::npos);
  EXPECT_EQ(npusim({"report", "run", "--mode", "each", "--by", "op"}).exit_code, 2);

  // Its estimate against its simulation: exit 0 or 1 as the totals say.
  const std::uint64_t est = stats["estimate"]["total_cycles"];
  const Result d = npusim({"diff", "run"});
  EXPECT_EQ(d.exit_code,
            npusim::profiler::past_tolerance(est, total, npusim::profiler::Tolerance{}) ? 1 : 0)
      << d.out;
  EXPECT_NE(d.out.find("  A: run/timeline.csv (4 commands, clock 800.000 MHz)\n"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("total cycles (last End): A " + std::to_string(est) + ", B " +
                       std::to_string(total)),
            std::string::npos);
}

// Past --trace-detail auto's threshold stats.json sums the per-op list per layer per engine:
// report says so and names the two ways out, each of which works.
TEST_F(ProfilerCli, ReportOnAggregatedStatsNamesTraceDetailFullAndLayers) {
  const std::string model = (kSource / "models/fc.json").string();
  ASSERT_EQ(
      npusim({"estimate", model, "-o", "agg", "-q", "--trace-detail-commands", "1"}).exit_code, 0);
  Result r = npusim({"report", "agg"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("npusim: error: agg/stats.json: its per-op figures were aggregated into "
                        "/estimate/op_groups (",
                        0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find(" commands, past --trace-detail auto's threshold); rerun with "
                       "--trace-detail full for them, or use npusim report --layers\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(npusim({"report", "agg", "--layers"}).exit_code, 0);
  ASSERT_EQ(npusim({"estimate", model, "-o", "full", "-q", "--trace-detail", "full",
                    "--trace-detail-commands", "1"})
                .exit_code,
            0);
  r = npusim({"report", "full"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("op types by cycles"), std::string::npos) << r.out;
  // Aggregated and below level 70: there are no op_groups either, so the level is the reason.
  ASSERT_EQ(npusim({"estimate", model, "-o", "agg40", "-q", "--trace-detail-commands", "1",
                    "--stats-level", "40"})
                .exit_code,
            0);
  r = npusim({"report", "agg40"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "npusim: error: agg40/stats.json: written at stats level 40, without per-op figures; "
            "they need stats level 70 or more (npusim run --stats-level 70)\n");
}

TEST_F(ProfilerCli, ReportRejectsLowStatsLevelAndBadUsage) {
  const std::string model = (kSource / "models/fc.json").string();
  ASSERT_EQ(npusim({"estimate", model, "-o", "low", "-q", "--stats-level", "40"}).exit_code, 0);
  Result r = npusim({"report", "low"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "npusim: error: low/stats.json: written at stats level 40, without per-op figures; they need "
      "stats level 70 or more (npusim run --stats-level 70)\n");
  r = npusim({"report", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: nope: no such folder\n");
  fs::create_directories(dir_ / "empty");
  r = npusim({"report", "empty"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "npusim: error: empty/stats.json: not found (written by npusim run and npusim estimate)\n");
  r = npusim({"report", "low", "--mode", "some"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: --mode: expected total or each, found 'some'\n");
  write("broken/stats.json", "{\"format\": \"npusim-stats\",");
  r = npusim({"report", "broken"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("npusim: error: broken/stats.json: not valid JSON: ", 0), 0u) << r.err;
  EXPECT_EQ(npusim({"report"}).exit_code, 2);
  r = npusim({"report", "low", "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(npusim({"report", "--help"}).exit_code, 0);
  EXPECT_EQ(npusim({"convert", "--help"}).exit_code, 0);
  EXPECT_EQ(npusim({"diff", "--help"}).exit_code, 0);
}

}  // namespace
