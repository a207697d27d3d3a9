// End-to-end tests of the npusim binary: what a user and a CI job see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/api/session.h"
#include "tests/cli_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

const fs::path kSource = NPUSIM_SOURCE_DIR;

using npusim::test::quote;
using npusim::test::read_file;
using npusim::test::Result;

// A fresh, empty folder per test.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();
    for (char& ch : name) {
      if (ch == '/') ch = '_';  // parameterised test names
    }
    dir_ = fs::temp_directory_path() / ("npusim_cli_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result npusim(const std::vector<std::string>& args, const fs::path& cwd = {}) const {
    std::string cmd =
        (cwd.empty() ? "" : "cd " + quote(cwd.string()) + " && ") + quote(NPUSIM_BINARY);
    for (const std::string& a : args) cmd += " " + quote(a);
    cmd += " >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
    const int status = std::system(cmd.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(dir_ / "stdout");
    r.err = read_file(dir_ / "stderr");
    return r;
  }

  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  fs::path dir_;
};

// Where two texts part: the first differing line of each, with its number.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(sa, la));
    const bool more_b = static_cast<bool>(std::getline(sb, lb));
    if (!more_a && !more_b) return "identical";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) + ":\n  actual: " + (more_a ? la : "<end>") +
             "\n  golden: " + (more_b ? lb : "<end>");
    }
  }
}

std::string model(const std::string& name) {
  return (kSource / "models" / (name + ".json")).string();
}

std::map<std::string, std::string> files_in(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    files[entry.path().filename().string()] = read_file(entry.path());
  }
  return files;
}

// Rows of a timeline CSV by id: (start, end).
std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> timeline_rows(const fs::path& csv) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> rows;
  std::istringstream in(read_file(csv));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, start, end;
    std::getline(fields, id, ',');
    std::getline(fields, start, ',');
    std::getline(fields, end, ',');
    rows[id] = {std::stoull(start), std::stoull(end)};
  }
  return rows;
}

// The simulation is never shorter than any resource's lower bound, and bounds.binding names the
// largest (ties to the first in stats.json's order).
void expect_within_bounds(const Json& stats) {
  const auto total = stats["runtime"]["total_cycles"].get<std::uint64_t>();
  const Json& bounds = stats["bounds"];
  const std::vector<std::string> names = {"array",        "vector", "mac_peak", "dma_in_port",
                                          "dma_out_port", "dram",   "host"};
  std::string largest = "none";
  std::uint64_t largest_cycles = 0;
  for (const std::string& name : names) {
    ASSERT_TRUE(bounds.contains(name + "_cycles")) << name;
    const auto cycles = bounds[name + "_cycles"].get<std::uint64_t>();
    EXPECT_GE(total, cycles) << name;
    if (cycles > largest_cycles) {
      largest = name;
      largest_cycles = cycles;
    }
  }
  EXPECT_EQ(bounds.size(), names.size() + 1);  // and `binding`
  EXPECT_EQ(bounds["binding"], largest);
}

const std::vector<std::string> kRunOutputs = {
    "annotated.csv", "runtime.csv",  "runtime_timeline.csv", "stats.json",
    "summary.txt",   "timeline.csv", "trace.json",           "trace.pftrace"};

TEST_F(Cli, RunWritesEveryOutput) {
  const Result r = npusim({"run", "-m", model("fc"), "-o", (dir_ / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& [name, text] : files_in(dir_ / "out")) names.push_back(name);
  EXPECT_EQ(names, kRunOutputs);
  EXPECT_THAT(r.out, HasSubstr("total cycles"));  // the summary is printed
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, BadDeviceRequestsAreBadInputWithNothingWritten) {
  // --devices stands for devices.count, checked against its range [1, 64].
  const Result zero = npusim({"run", "-m", (kSource / "models/fc.json").string(), "--devices", "0",
                              "-o", (dir_ / "zero").string()});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("/devices/count: value 0 out of range [1, 64]"));
  EXPECT_FALSE(fs::exists(dir_ / "zero"));
  // An npusim-llm model keeps its weights in DRAM across phases: uploading them is refused.
  const Result llm = npusim({"run", "-m", (kSource / "models/llm/gpt2_small.json").string(),
                             "--set", "host.upload_weights=true", "-o", (dir_ / "llm").string()});
  EXPECT_EQ(llm.exit_code, 2);
  EXPECT_THAT(llm.err, HasSubstr("gpt2_small.json"));
  EXPECT_THAT(llm.err, HasSubstr("host.upload_weights is not supported for npusim-llm models"));
  EXPECT_FALSE(fs::exists(dir_ / "llm"));
}

// An LLM's decode steps compile in batches of the worker threads at once (docs/llm.md): the
// outputs are those of one step after another, byte for byte. GPT-2 small's layers with 7 decode
// steps: batches of 3, 3 and a partial one of 1.
TEST_F(Cli, AnLlmRunIsTheSameOnOneThreadAsInBatchesOfThree) {
  const char* saved = std::getenv("NPUSIM_THREADS");
  const std::string restore = saved != nullptr ? saved : "";
  const fs::path model = npusim::test::llm_with_tokens(kSource / "models/llm/gpt2_small.json",
                                                       dir_ / "gpt2_7_steps.json", 16, 7);
  std::vector<std::string> stats, summaries;
  for (const char* threads : {"1", "3"}) {
    ::setenv("NPUSIM_THREADS", threads, 1);
    const fs::path out = dir_ / (std::string("llm") + threads);
    const Result r = npusim({"run", "-m", model.string(), "-c", "server", "-o", out.string(), "-q",
                             "--stats-level", "40"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    stats.push_back(read_file(out / "stats.json"));
    summaries.push_back(read_file(out / "summary.txt"));
  }
  if (saved != nullptr) {
    ::setenv("NPUSIM_THREADS", restore.c_str(), 1);
  } else {
    ::unsetenv("NPUSIM_THREADS");
  }
  ASSERT_FALSE(stats[0].empty());
  EXPECT_EQ(stats[0], stats[1]);
  EXPECT_EQ(summaries[0], summaries[1]);
  EXPECT_THAT(summaries[0], HasSubstr("time per output token"));
}

TEST_F(Cli, ABadThreadCountIsBadInputWithNothingWritten) {
  // NPUSIM_THREADS takes a count from 1 to 256; anything else stops the run before it starts.
  const char* saved = std::getenv("NPUSIM_THREADS");
  const std::string restore = saved != nullptr ? saved : "";
  int case_index = 0;
  for (const std::string bad : {"abc", "0", "257", "-1", "2x"}) {
    ::setenv("NPUSIM_THREADS", bad.c_str(), 1);
    const fs::path out = dir_ / ("out" + std::to_string(case_index++));
    const Result r =
        npusim({"run", "-m", (kSource / "models/fc.json").string(), "-o", out.string()});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("NPUSIM_THREADS: '" + bad + "' is not a thread count (1 to 256)"))
        << bad;
    EXPECT_FALSE(fs::exists(out)) << bad;
  }
  ::setenv("NPUSIM_THREADS", "1", 1);
  const Result one = npusim(
      {"run", "-m", (kSource / "models/fc.json").string(), "-o", (dir_ / "one").string(), "-q"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  if (saved != nullptr) {
    ::setenv("NPUSIM_THREADS", restore.c_str(), 1);
  } else {
    ::unsetenv("NPUSIM_THREADS");
  }
}

TEST_F(Cli, RunsTheTwoDeviceAllReduceExample) {
  // models/multi_device/allreduce_2dev.json on `default` with two devices, 800 MHz. The links
  // (32 GB/s) are faster than `default`'s DRAM (12.8 GB/s), so they move 12.8 GB/s: 16 B/cycle.
  //   EXT_HDMA of 8192 B: 8192 / 16 = 512 cycles, + 1000 ns latency = 800 cycles: 1312. Both
  //   devices load at once on the host link's 2 channels: [4, 1316)
  //   SYNC: devices.link_latency_ns 500 = 400 cycles: [1320, 1720)
  //   DEV_HDMA of 4096 B: 4096 / 16 = 256 + 400 = 656: [1724, 2380)
  //   Add of 2048 elements on 16 lanes: 128: [2384, 2512)
  //   DEV_HDMA [2516, 3172), SYNC [3176, 3576), EXT_HDMA to the host [3580, 4892)
  const fs::path out = dir_ / "out";
  const Result r =
      npusim({"run", "-m", (kSource / "models/multi_device/allreduce_2dev.json").string(), "--set",
              "devices.count=2", "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto est = timeline_rows(out / "timeline.csv");
  const auto sim = timeline_rows(out / "runtime_timeline.csv");
  EXPECT_EQ(sim.at("EH1"), std::make_pair(std::uint64_t{4}, std::uint64_t{1316}));
  EXPECT_EQ(sim.at("DS0"), std::make_pair(std::uint64_t{1320}, std::uint64_t{1720}));
  EXPECT_EQ(sim.at("DH1"), std::make_pair(std::uint64_t{1724}, std::uint64_t{2380}));
  EXPECT_EQ(sim.at("S1"), std::make_pair(std::uint64_t{2384}, std::uint64_t{2512}));
  EXPECT_EQ(sim.at("EH2"), std::make_pair(std::uint64_t{3580}, std::uint64_t{4892}));
  EXPECT_EQ(est, sim);  // nothing contends
  EXPECT_THAT(r.out, HasSubstr("DEV1.DEV_HDMA"));
  // On one device the example is refused: its commands name device 1.
  const Result one =
      npusim({"run", "-m", (kSource / "models/multi_device/allreduce_2dev.json").string(), "-o",
              (dir_ / "one").string()});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_THAT(one.err, HasSubstr("/commands/1/device: device 1 out of range"));
  EXPECT_FALSE(fs::exists(dir_ / "one"));
}

TEST_F(Cli, TheTwoDeviceExampleReportsLinksDevicesCollectivesAndTracesPerDevice) {
  // The example as above (800 MHz; every link lane moves DRAM's 12.8 GB/s, 16 B/cycle, not its
  // 32; the host link has 2 channels; latencies 400 and 800 cycles), hand-computed:
  //   device link, each direction: DH of 4096 + 4096 bytes: 8192 / 16 = 512 + 400 = 912 cycles
  //   host link: EH0 + EH1 + EH2 = 24576 bytes over 2 channels: 24576 / 32 = 768 + 800 = 1568
  //     cycles: above the device link's and the vector bound (128), so it binds
  //   collective time (DEV_HDMA and SYNC; no layer is named "collective."):
  //     device 0: DS0 [1320, 1720) + DH0 [1724, 2380) + DH2 [2516, 3172) + DS1 [3176, 3576)
  //       = 400 + 656 + 656 + 400 = 2112
  //     device 1: DH1 [1724, 2380) + DH3 [2516, 3172) = 1312
  //   busy: device 0 adds EH0 [4, 1316), S0 [2384, 2512), EH2 [3580, 4892): 2112 + 1312 + 128 +
  //     1312 = 4864; device 1: EH1 1312 + DH1 656 + S1 128 + DH3 656 = 2752
  //   bytes: DEV_HDMA 8192 each way per device (16384 in all); EXT_HDMA to device 0 and 1 8192
  //     each, to the host 8192 from device 0 (24576 in all)
  const fs::path out = dir_ / "out";
  const Result r =
      npusim({"run", "-m", (kSource / "models/multi_device/allreduce_2dev.json").string(), "--set",
              "devices.count=2", "-o", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json stats = Json::parse(read_file(out / "stats.json"));
  EXPECT_EQ(stats.at("bounds").at("device_link_cycles"), 912);
  EXPECT_EQ(stats.at("bounds").at("host_link_cycles"), 1568);
  EXPECT_EQ(stats.at("bounds").at("binding"), "host_link");
  EXPECT_EQ(stats.at("device").at("devices"), 2);
  for (const char* section : {"estimate", "runtime"}) {
    const Json& d = stats.at(section).at("devices");
    ASSERT_EQ(d.size(), 2u) << section;
    EXPECT_EQ(d[0].at("collective_cycles"), 2112) << section;
    EXPECT_EQ(d[1].at("collective_cycles"), 1312) << section;
    EXPECT_EQ(d[0].at("busy_cycles"), 4864) << section;
    EXPECT_EQ(d[1].at("busy_cycles"), 2752) << section;
    EXPECT_EQ(d[0].at("compute_busy_cycles"), 128) << section;
    EXPECT_EQ(d[0].at("dev_hdma_sent_bytes"), 8192) << section;
    EXPECT_EQ(d[0].at("dev_hdma_received_bytes"), 8192) << section;
    EXPECT_EQ(d[0].at("ext_hdma_to_device_bytes"), 8192) << section;
    EXPECT_EQ(d[0].at("ext_hdma_to_host_bytes"), 8192) << section;
    EXPECT_EQ(d[1].at("ext_hdma_to_host_bytes"), 0) << section;
    EXPECT_EQ(stats.at(section).at("interconnect").at("device_link_bytes"), 16384) << section;
    EXPECT_EQ(stats.at(section).at("interconnect").at("host_link_bytes"), 24576) << section;
  }
  // The link commands' bytes are in ops[].
  EXPECT_EQ(stats.at("runtime").at("ops").at(0).at("bytes"), 8192);
  const std::string summary = read_file(out / "summary.txt");
  EXPECT_THAT(summary, HasSubstr("binding limit: host_link"));
  EXPECT_THAT(summary, HasSubstr("devices (simulation):"));
  EXPECT_THAT(summary, HasSubstr("interconnect: device links 16384 B"));
  // npusim report prints the same per-device figures.
  const Result rep = npusim({"report", out.string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_THAT(rep.out, HasSubstr("devices (busy and collective"));
  EXPECT_THAT(rep.out, HasSubstr("2112"));

  // trace.json: a process per device and a Host process, per run; tracks in the seed's
  // categories; flows between the devices' processes.
  const Json trace = Json::parse(read_file(out / "trace.json"));
  std::map<int, std::string> process;
  std::set<std::string> threads;
  std::map<std::uint64_t, int> flow_from, flow_to;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      process[e.at("pid")] = e.at("args").at("name");
    } else if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      threads.insert(std::to_string(e.at("pid").get<int>()) + " " +
                     e.at("args").at("name").get<std::string>());
    } else if (e.at("ph") == "s") {
      flow_from[e.at("id")] = e.at("pid");
    } else if (e.at("ph") == "f") {
      flow_to[e.at("id")] = e.at("pid");
    }
  }
  EXPECT_EQ(process, (std::map<int, std::string>{{1, "Device 0 (compile-time estimate)"},
                                                 {2, "Device 1 (compile-time estimate)"},
                                                 {3, "Host (compile-time estimate)"},
                                                 {4, "Device 0 (runtime simulation)"},
                                                 {5, "Device 1 (runtime simulation)"},
                                                 {6, "Host (runtime simulation)"}}));
  EXPECT_EQ(threads.count("1 External HDMA: EXT_HDMA ch0"), 1u);
  EXPECT_EQ(threads.count("1 Device Sync: SYNC"), 1u);
  EXPECT_EQ(threads.count("2 Device HDMA: DEV_HDMA ch0"), 1u);
  EXPECT_EQ(threads.count("2 Neural Engine Clusters: SLICE0.VECTOR"), 1u);
  // Per run, each command's binding dependency (9 commands have dependencies), plus the edges
  // between devices that do not bind: EH1 -> DS0 (EH0 ends at the same cycle and is listed first)
  // and DH3 -> DS1: 11. Between devices: EH1 -> DS0, DS0 -> DH1, DH1 -> S0, DH0 -> S1,
  // DH3 -> DS1: 5.
  ASSERT_EQ(flow_from.size(), 22u);
  int across = 0;
  for (const auto& [id, pid] : flow_from) across += pid != flow_to.at(id) ? 1 : 0;
  EXPECT_EQ(across, 10);
}

TEST_F(Cli, OneDeviceRunsHaveNoMultiDeviceFields) {
  const fs::path out = dir_ / "out";
  const Result r = npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json stats = Json::parse(read_file(out / "stats.json"));
  EXPECT_FALSE(stats.at("bounds").contains("device_link_cycles"));
  EXPECT_FALSE(stats.at("bounds").contains("host_link_cycles"));
  EXPECT_FALSE(stats.at("device").contains("devices"));
  EXPECT_FALSE(stats.at("runtime").contains("devices"));
  EXPECT_FALSE(stats.at("runtime").contains("interconnect"));
  const std::string summary = read_file(out / "summary.txt");
  EXPECT_THAT(summary, Not(HasSubstr("device_link")));
  EXPECT_THAT(summary, Not(HasSubstr("devices (")));
  const Json trace = Json::parse(read_file(out / "trace.json"));
  std::vector<std::string> processes;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name")
      processes.push_back(e.at("args").at("name"));
  }
  EXPECT_EQ(processes, (std::vector<std::string>{"compile-time estimate", "runtime simulation"}));
}

TEST_F(Cli, QuietPrintsNothing) {
  const Result r = npusim({"run", "-m", model("fc"), "-o", (dir_ / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, EstimateWritesOnlyTheEstimate) {
  const Result r =
      npusim({"estimate", "-m", model("convnet"), "-o", (dir_ / "out").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& [name, text] : files_in(dir_ / "out")) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"stats.json", "summary.txt", "timeline.csv",
                                             "trace.json", "trace.pftrace"}));
  EXPECT_FALSE(Json::parse(read_file(dir_ / "out" / "stats.json")).contains("runtime"));
}

TEST_F(Cli, GoldenOutputs) {
  // Regenerate with scripts/update_goldens.sh after an intended change, and review the diff.
  for (const std::string name : {"fc", "convnet"}) {
    const fs::path out = dir_ / name;
    const Result r = npusim({"run", "-m", model(name), "-o", out.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto actual = files_in(out);
    const auto golden = files_in(kSource / "traces" / "golden" / name);
    ASSERT_EQ(golden.size(), kRunOutputs.size()) << "golden folder for " << name << " incomplete";
    for (const auto& [file, text] : golden) {
      ASSERT_TRUE(actual.count(file)) << file;
      EXPECT_TRUE(actual.at(file) == text)
          << name << "/" << file << " differs from its golden copy at "
          << first_difference(actual.at(file), text);
    }
  }
}

TEST_F(Cli, TwoRunsAreByteIdentical) {
  for (const std::string config : {"default", "server"}) {
    const fs::path a = dir_ / (config + "_a");
    const fs::path b = dir_ / (config + "_b");
    ASSERT_EQ(
        npusim({"run", "-m", model("convnet"), "-c", config, "-o", a.string(), "-q"}).exit_code, 0);
    ASSERT_EQ(
        npusim({"run", "-m", model("convnet"), "-c", config, "-o", b.string(), "-q"}).exit_code, 0);
    EXPECT_EQ(files_in(a), files_in(b)) << config;
  }
}

TEST_F(Cli, TraceDetailAggregatesPastTheThresholdAndFullWritesEverything) {
  // convnet has 44 commands: under the default threshold every output is per command, and
  // --trace-detail full changes nothing.
  const fs::path plain = dir_ / "plain", full = dir_ / "full", agg = dir_ / "agg";
  ASSERT_EQ(npusim({"run", "-m", model("convnet"), "-o", plain.string(), "-q"}).exit_code, 0);
  ASSERT_EQ(npusim({"run", "-m", model("convnet"), "-o", full.string(), "-q", "--trace-detail",
                    "full", "--trace-detail-commands", "10"})
                .exit_code,
            0);
  EXPECT_EQ(files_in(plain), files_in(full));
  // With the threshold lowered below 44, auto aggregates: the CSVs stay exact, the traces hold
  // one slice per layer per engine whose counts and cycles add up to the commands'.
  const Result r =
      npusim({"run", "-m", model("convnet"), "-o", agg.string(), "--trace-detail-commands", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("detail:  traces and stats.json aggregated per layer and engine (44 "
                               "commands > 10, --trace-detail auto)"));
  const auto a = files_in(agg), p = files_in(plain);
  for (const char* csv : {"timeline.csv", "runtime_timeline.csv", "runtime.csv", "annotated.csv"}) {
    EXPECT_EQ(a.at(csv), p.at(csv)) << csv;
  }
  const Json stats = Json::parse(a.at("stats.json"));
  const Json full_stats = Json::parse(p.at("stats.json"));
  EXPECT_EQ(stats.at("aggregated"), true);
  for (const char* run : {"estimate", "runtime"}) {
    EXPECT_FALSE(stats.at(run).contains("ops"));
    std::uint64_t commands = 0, cycles = 0, full_cycles = 0;
    for (const Json& g : stats.at(run).at("op_groups")) {
      commands += g.at("commands").get<std::uint64_t>();
      cycles += g.at("cycles").get<std::uint64_t>();
    }
    for (const Json& o : full_stats.at(run).at("ops"))
      full_cycles += o.at("cycles").get<std::uint64_t>();
    EXPECT_EQ(commands, 44u) << run;
    EXPECT_EQ(cycles, full_cycles) << run;
    EXPECT_EQ(stats.at(run).at("total_cycles"), full_stats.at(run).at("total_cycles"));
  }
  std::map<int, std::uint64_t> commands, cycles, full_cycles;
  const Json trace = Json::parse(a.at("trace.json"));
  const Json full_trace = Json::parse(p.at("trace.json"));
  for (const Json& e : trace.at("traceEvents")) {
    EXPECT_NE(e.at("ph"), "s");
    if (e.at("ph") != "X") continue;
    commands[e.at("pid").get<int>()] += e.at("args").at("commands").get<std::uint64_t>();
    cycles[e.at("pid").get<int>()] += e.at("args").at("cycles").get<std::uint64_t>();
  }
  for (const Json& e : full_trace.at("traceEvents")) {
    if (e.at("ph") == "X")
      full_cycles[e.at("pid").get<int>()] += e.at("args").at("cycles").get<std::uint64_t>();
  }
  EXPECT_EQ(commands, (std::map<int, std::uint64_t>{{1, 44}, {2, 44}}));
  EXPECT_EQ(cycles, full_cycles);
  // summary always aggregates; bad values are usage errors.
  const fs::path summary = dir_ / "summary";
  ASSERT_EQ(npusim({"run", "-m", model("convnet"), "-o", summary.string(), "-q", "--trace-detail",
                    "summary"})
                .exit_code,
            0);
  EXPECT_EQ(Json::parse(read_file(summary / "stats.json")).at("aggregated"), true);
  const Result bad =
      npusim({"run", "-m", model("fc"), "-o", (dir_ / "bad").string(), "--trace-detail", "some"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--trace-detail: expected auto, full or summary, found some"));
}

TEST_F(Cli, InvariantsHoldOnEveryExample) {
  for (const std::string name : {"fc", "convnet"}) {
    for (const std::string config : {"default", "server"}) {
      SCOPED_TRACE(name + " on " + config);
      const fs::path out = dir_ / (name + "_" + config);
      const Result r = npusim({"run", "-m", model(name), "-c", config, "-o", out.string(), "-q"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const Json stats = Json::parse(read_file(out / "stats.json"));
      // Never faster than any resource allows.
      expect_within_bounds(stats);
      EXPECT_GT(stats["bounds"]["dram_cycles"].get<std::uint64_t>(), 0u);
      EXPECT_GT(stats["bounds"]["dma_in_port_cycles"].get<std::uint64_t>(), 0u);
      EXPECT_GT(stats["bounds"]["array_cycles"].get<std::uint64_t>(), 0u);
      // No command finishes before the estimate says it can.
      const auto est = timeline_rows(out / "timeline.csv");
      const auto sim = timeline_rows(out / "runtime_timeline.csv");
      ASSERT_EQ(est.size(), sim.size());
      ASSERT_EQ(est.size(), stats["commands"].get<std::size_t>());
      for (const auto& [id, times] : est) {
        EXPECT_GE(sim.at(id).second, times.second) << id;
        EXPECT_GE(sim.at(id).first, times.first) << id;
      }
    }
  }
}

TEST_F(Cli, OneTransferAtATimeWithFastDramMeansEstimateEqualsSimulation) {
  // fc moves its transfers one after another, and DRAM (16 B/cycle) outruns a DMA channel
  // (8 B/cycle): the two timelines agree to the cycle.
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  EXPECT_EQ(read_file(out / "timeline.csv"), read_file(out / "runtime_timeline.csv"));
  const Json stats = Json::parse(read_file(out / "stats.json"));
  // DI0 262144 B: 4 + 32 + 1024 * 32 + 16 + 80 = 32900; DI1 1024 B: 32904 + 256 = 33160;
  // S0: 33164 + 1024 folds * 47 - 1 = 81291 (SCALE-Sim's count); DO0 256 B:
  // 81295 + 32 + 32 + 16 + 80 = 81455.
  EXPECT_EQ(stats["runtime"]["total_cycles"], 81455);
  EXPECT_EQ(stats["estimate"]["total_cycles"], 81455);
}

TEST_F(Cli, SetOverridesReachTheSimulation) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q", "--set",
                    "dma.setup_cycles=0", "--set", "dispatch_cycles=0"})
                .exit_code,
            0);
  const Json stats = Json::parse(read_file(out / "stats.json"));
  // 81455 - 4 dispatches * 4 - 3 transfers * 32 setup = 81343.
  EXPECT_EQ(stats["runtime"]["total_cycles"], 81343);
}

TEST_F(Cli, BoundsOfFcFollowItsCommands) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  const Json stats = Json::parse(read_file(out / "stats.json"));
  // default: 2 slices of 16x16, 800 MHz, DRAM 12.8 GB/s = 16 B/cycle, one DMA_IN and one DMA_OUT
  // channel of 8 B/cycle. fc: DI0 262144 B + DI1 1024 B in, S0 Gemm 1x256x1024 on slice 0,
  // DO0 256 B out.
  const Json expected = {{"array_cycles", 48127},        // S0: 1024 folds x 47 cycles - 1
                         {"vector_cycles", 0},           // no vector op
                         {"mac_peak_cycles", 512},       // 262144 MACs / (2 x 16 x 16)
                         {"dma_in_port_cycles", 32896},  // 263168 B / (1 x 8 B/cycle)
                         {"dma_out_port_cycles", 32},    // 256 B / (1 x 8 B/cycle)
                         {"dram_cycles", 16464},         // 263424 B / 16 B/cycle
                         {"host_cycles", 0},
                         {"binding", "array"}};
  EXPECT_EQ(stats["bounds"], expected);
  EXPECT_EQ(stats["device"]["dma_in_port_gbps"], 6.4);  // 1 x 8 B x 800 MHz
  EXPECT_EQ(stats["device"]["dma_out_port_gbps"], 6.4);
  EXPECT_THAT(read_file(out / "summary.txt"), HasSubstr("binding limit: array\n"));
}

// ResNet-50 on `default`: which limit binds, and whether the one the bounds call the tighter
// memory limit is the one the simulation responds to.
TEST_F(Cli, ResNet50LimitsOnDefault) {
  auto run = [&](const std::string& name, const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"run", (kSource / "models/zoo/resnet50.json").string(),
                                     "-o",  (dir_ / name).string(),
                                     "-q",  "--stats-level",
                                     "40"};
    for (const std::string& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const Result r = npusim(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(read_file(dir_ / name / "stats.json"));
  };
  auto total = [](const Json& stats) {
    return static_cast<double>(stats["runtime"]["total_cycles"].get<std::uint64_t>());
  };
  const Json base = run("base", {});
  const Json& b = base["bounds"];
  const auto read = base["dram_read_bytes"].get<std::uint64_t>();
  const auto written = base["dram_write_bytes"].get<std::uint64_t>();
  // One DMA_IN channel of 8 B/cycle moves half of DRAM's 16 B/cycle, so the port, not DRAM, is
  // the memory side's limit: ceil(read / 8) against ceil((read + written) / 16).
  EXPECT_EQ(b["dma_in_port_cycles"], (read + 7) / 8);
  EXPECT_EQ(b["dram_cycles"], (read + written + 15) / 16);
  EXPECT_GT(b["dma_in_port_cycles"], b["dram_cycles"]);
  // Yet the largest bound is the busiest array's work: 2 slices of 16x16 PEs for its convolutions.
  EXPECT_EQ(b["binding"], "array");
  EXPECT_GT(b["array_cycles"], b["dma_in_port_cycles"]);
  // The simulation responds to the port, not to DRAM: doubling DRAM bandwidth changes little.
  const Json fast_dram = run("fast_dram", {"dram.bandwidth_gbps=25.6"});
  EXPECT_LT(std::abs(total(fast_dram) / total(base) - 1), 0.01);

  // Ports of 64 B/cycle: DRAM becomes the tighter memory limit (the array still binds)...
  const Json wide = run("wide", {"dma.bytes_per_cycle=64"});
  const Json& w = wide["bounds"];
  // The compiler costs its mappings on the config, so wider ports may change what it moves.
  const auto wide_read = wide["dram_read_bytes"].get<std::uint64_t>();
  const auto wide_written = wide["dram_write_bytes"].get<std::uint64_t>();
  // A port of 64 B/cycle is not what limits the channel now: it keeps at most 8 bursts of 256 B in
  // flight, each for at least 256 / 16 = 16 cycles of DRAM service plus 80 of latency (100 ns at
  // 800 MHz), so at most 2048 B per 96 cycles (21.3 B/cycle). In ticks of 1/16 cycle:
  // ceil((bytes + 80 x 16 x bursts) / (16 x 8)).
  EXPECT_EQ(w["dma_in_port_cycles"], (wide_read + 1280 * ((wide_read + 255) / 256) + 127) / 128);
  EXPECT_GT(w["dma_in_port_cycles"], (wide_read + 63) / 64);
  EXPECT_EQ(w["dram_cycles"], (wide_read + wide_written + 15) / 16);
  EXPECT_GT(w["dram_cycles"], w["dma_in_port_cycles"]);
  EXPECT_GT(w["dram_cycles"], w["dma_out_port_cycles"]);
  EXPECT_EQ(w["binding"], "array");
  // ... and then doubling DRAM bandwidth (12.8 -> 25.6 GB/s) takes some cycles off. (Only about
  // 1 %: with the residual Adds fused into the convs, DRAM moves a quarter less and the array
  // binds more tightly; before that fusion it took more than 5 % off.)
  const Json wide_fast = run("wide_fast", {"dma.bytes_per_cycle=64", "dram.bandwidth_gbps=25.6"});
  EXPECT_EQ(wide_fast["bounds"]["dram_cycles"],
            (wide_fast["dram_read_bytes"].get<std::uint64_t>() +
             wide_fast["dram_write_bytes"].get<std::uint64_t>() + 31) /
                32);
  EXPECT_LT(total(wide_fast), total(wide));
}

// Bad input: exit 2, a message naming the file and the field, and no output at all.
void expect_bad_input(const Result& r, const fs::path& out, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(message));
  EXPECT_FALSE(fs::exists(out)) << "output written for bad input";
}

TEST_F(Cli, MalformedJsonIsBadInput) {
  const fs::path bad = write("bad.json", "{\"format\": \"npusim-schedule\", \"commands\": [");
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", bad.string(), "-o", out.string()}), out,
                   "bad.json: byte 44: malformed JSON");
}

TEST_F(Cli, UnknownConfigKeyIsBadInput) {
  const fs::path cfg = write("cfg.json", R"({"slices": {"count": 2, "colour": "red"}})");
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", model("fc"), "-c", cfg.string(), "-o", out.string()}), out,
                   "cfg.json: /slices/colour: unknown key");
}

TEST_F(Cli, BadEnergyConfigIsBadInput) {
  const fs::path out = dir_ / "out";
  const fs::path unknown = write("e1.json", R"({"energy": {"leakage_mw": 3}})");
  expect_bad_input(npusim({"run", "-m", model("fc"), "-c", unknown.string(), "-o", out.string()}),
                   out, "e1.json: /energy/leakage_mw: unknown key");
  const fs::path negative = write("e2.json", R"({"energy": {"mac_int8_pj": -0.5}})");
  expect_bad_input(npusim({"run", "-m", model("fc"), "-c", negative.string(), "-o", out.string()}),
                   out, "e2.json: /energy/mac_int8_pj: value -0.5 out of range [0, 1e+06]");
  expect_bad_input(
      npusim({"run", "-m", model("fc"), "--set", "energy.dram_pj_per_byte=x", "-o", out.string()}),
      out, "built-in:default (with --set): /energy/dram_pj_per_byte: expected a number");
  expect_bad_input(npusim({"run", "-m", model("fc"), "--set", "energy.slice_static_mw=0.0001", "-o",
                           out.string()}),
                   out, "/energy/slice_static_mw: value 0.0001 has more than three decimals");
}

TEST_F(Cli, EnergyOverridesChangeTheEnergyNotTheCycles) {
  const fs::path a = dir_ / "a";
  const fs::path b = dir_ / "b";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", a.string(), "-q"}).exit_code, 0);
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "--set", "energy.dram_pj_per_byte=0", "--set",
                    "energy.dram_static_mw=0", "-o", b.string(), "-q"})
                .exit_code,
            0);
  const Json sa = Json::parse(read_file(a / "stats.json"));
  const Json sb = Json::parse(read_file(b / "stats.json"));
  EXPECT_EQ(sa["runtime"]["total_cycles"], sb["runtime"]["total_cycles"]);
  EXPECT_EQ(sa["energy"]["total_uj"], 46.047623);  // tests/energy_test.cpp computes it by hand
  EXPECT_EQ(sb["energy"]["dynamic"]["dram_uj"], 0.0);
  EXPECT_EQ(sb["energy"]["static"]["dram_uj"], 0.0);
  // 46.047623 - DRAM 42.14784 - DRAM static 2.036375 = 1.863408 uJ.
  EXPECT_NEAR(sb["energy"]["total_uj"].get<double>(), 1.863408, 2e-6);
  EXPECT_EQ(read_file(a / "timeline.csv"), read_file(b / "timeline.csv"));
}

TEST_F(Cli, DependencyCycleIsBadInput) {
  Json s = Json::parse(read_file(model("fc")));
  s["commands"][0]["deps"] = {"DO0"};
  const fs::path bad = write("cycle.json", s.dump());
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", bad.string(), "-o", out.string()}), out,
                   "cycle.json: /commands: dependency cycle: DI0 -> DO0 -> S0 -> DI0");
}

TEST_F(Cli, SliceOutOfRangeIsBadInput) {
  const fs::path out = dir_ / "out";
  expect_bad_input(
      npusim({"run", "-m", model("convnet"), "--set", "slices.count=1", "-o", out.string()}), out,
      "convnet.json: /commands/5/slice: slice 1 out of range");
}

TEST_F(Cli, ZeroBandwidthIsBadInput) {
  const fs::path out = dir_ / "out";
  expect_bad_input(
      npusim({"run", "-m", model("fc"), "--set", "dram.bandwidth_gbps=0", "-o", out.string()}), out,
      "built-in:default (with --set): /dram/bandwidth_gbps: value 0 out of range");
}

TEST_F(Cli, UsageErrorsAreBadInput) {
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-o", out.string()}), out, "--model is required");
  expect_bad_input(npusim({"run", "-m", model("fc"), "--frobnicate", "-o", out.string()}), out,
                   "unrecognised option '--frobnicate'");
  expect_bad_input(npusim({"fly"}), out, "unknown command 'fly'");
  expect_bad_input(npusim({"run", "-m", "/no/such.json", "-o", out.string()}), out,
                   "/no/such.json: cannot open file");
  expect_bad_input(npusim({"run", model("fc"), model("fc"), "-o", out.string()}), out,
                   "too many positional options");
  expect_bad_input(npusim({"run", "--mod", model("fc"), "-o", out.string()}), out,
                   "unrecognised option '--mod'");
}

TEST_F(Cli, UnwritableOutputIsBadInput) {
  const fs::path file = write("plain-file", "x");
  const Result r = npusim({"run", "-m", model("fc"), "-o", (file / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot create output folder"));
}

TEST_F(Cli, OutputsOfAnEarlierRunDoNotLinger) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  std::ofstream(out / "notes.txt") << "mine";
  ASSERT_EQ(npusim({"estimate", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  std::vector<std::string> names;
  for (const auto& [name, text] : files_in(out)) names.push_back(name);
  // runtime.csv and runtime_timeline.csv were the run's; a user's own file stays.
  EXPECT_EQ(names, (std::vector<std::string>{"notes.txt", "stats.json", "summary.txt",
                                             "timeline.csv", "trace.json", "trace.pftrace"}));
}

TEST_F(Cli, DefaultOutputFolderIsNamedSafelyAfterTheModelFile) {
  Json s = Json::parse(read_file(model("fc")));
  s["model"]["name"] = "../escape/me";  // the model's own name plays no part
  write("my model (v2).json", s.dump());
  ASSERT_EQ(npusim({"run", "-m", "my model (v2).json", "-q"}, dir_).exit_code, 0);
  // The stem "my model (v2)", with ' ', '(' and ')' made '_'.
  EXPECT_TRUE(fs::exists(dir_ / "traces" / "my_model__v2_" / "stats.json"));
  EXPECT_FALSE(fs::exists(dir_ / "escape"));
  EXPECT_EQ(npusim::api::default_out_for("../shared/models/onnx/mnist-8.onnx"),
            fs::path("traces/mnist-8"));
  EXPECT_EQ(npusim::api::default_out_for("..."), fs::path("traces/model"));
}

// ONNX graph names repeat (mnist-8 and mnist_int8_dynamic are both CNTKGraph; six are
// torch-jit-export or torch_jit): the file stems do not.
TEST(SharedModels, DefaultOutputFoldersAreAllDistinct) {
  const fs::path shared = kSource.parent_path() / "shared" / "models" / "onnx";
  ASSERT_TRUE(fs::is_directory(shared));
  std::set<fs::path> folders;
  std::size_t models = 0;
  for (const auto& e : fs::directory_iterator(shared)) {
    ++models;
    EXPECT_TRUE(folders.insert(npusim::api::default_out_for(e.path().string())).second)
        << e.path() << " shares its default folder";
  }
  EXPECT_EQ(models, 18u);
  EXPECT_EQ(folders.count(fs::path("traces/mnist_int8_dynamic")), 1u);
}

// summary.txt's op-type shares are of all busy engine cycles: they sum to 100 (each is rounded to
// 2 decimals, so within 0.1), and a DMA type's engine busy % is its engine's busy %.
TEST_F(Cli, SummaryOpTypeSharesSumTo100) {
  for (const char* name : {"convnet", "fc"}) {
    const fs::path out = dir_ / name;
    ASSERT_EQ(npusim({"run", "-m", model(name), "-o", out.string(), "-q"}).exit_code, 0);
    std::istringstream summary(read_file(out / "summary.txt"));
    std::string line;
    double total = 0, dma_in_busy = 0;  // the simulation's total cycles, DMA_IN's busy cycles
    while (std::getline(summary, line) && line.rfind("op types by cycles (", 0) != 0) {
      std::istringstream row(line);
      std::string first, second, third, estimate, simulation;
      row >> first;
      if (first == "total") {
        row >> second >> estimate >> simulation;
        total = std::stod(simulation);
      }
      if (first == "DMA_IN") {
        row >> second;
        dma_in_busy = std::stod(second);
      }
    }
    ASSERT_TRUE(std::getline(summary, line));  // the column header
    double shares = 0;
    std::size_t rows = 0;
    std::map<std::string, std::string> engine_busy;
    while (std::getline(summary, line) && !line.empty()) {
      std::istringstream row(line);
      std::string type, count, cycles, share, cdf, wall, wall_pct, engine, busy;
      row >> type >> count >> cycles >> share >> cdf >> wall >> wall_pct >> engine >> busy;
      shares += std::stod(share);
      engine_busy[type] = busy;
      ++rows;
    }
    EXPECT_GT(rows, 0u) << name;
    EXPECT_NEAR(shares, 100.0, 0.1) << name;
    // DMA_IN is one engine: the op type's engine busy % is that engine's busy cycles over the
    // total, as the engine table above gives them.
    char expected[32];
    std::snprintf(expected, sizeof expected, "%.2f", 100.0 * dma_in_busy / total);
    EXPECT_EQ(engine_busy["DMA_IN"], expected) << name;
  }
}

TEST_F(Cli, OutputFolderOfAnotherModelIsRefusedUnlessForced) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  const std::string fc_stats = read_file(out / "stats.json");
  // The same model again is fine.
  EXPECT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  const Result r = npusim({"run", "-m", model("convnet"), "-o", out.string(), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "npusim: error: " + out.string() +
                       ": holds the outputs of another model, fc (fc.json); give --force to "
                       "replace them, or another --out\n");
  EXPECT_EQ(read_file(out / "stats.json"), fc_stats);  // untouched
  ASSERT_EQ(
      npusim({"estimate", "-m", model("convnet"), "-o", out.string(), "-q", "--force"}).exit_code,
      0);
  EXPECT_EQ(Json::parse(read_file(out / "stats.json"))["model"]["file"], "convnet.json");
}

TEST_F(Cli, ScheduleCompiledForAnotherConfigSaysSoFirst) {
  Json s = Json::parse(read_file(model("convnet")));
  s["target"]["config"] = "server";
  s["commands"][5]["slice"] = 7;  // server has 8 slices, default 2
  const fs::path bad = write("for_server.json", s.dump());
  const fs::path out = dir_ / "out";
  const Result r = npusim({"run", "-m", bad.string(), "-o", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1),
            "npusim: error: " + bad.string() +
                ": /target/config: compiled for config 'server', not 'default': run it with -c "
                "server, or compile the model for 'default'. Its problems on 'default':\n");
  EXPECT_THAT(r.err, HasSubstr("/commands/5/slice: slice 7 out of range"));
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, DeadlockExitsThreeNamingTheCommandsAndWritesWhatFinished) {
  Json s = Json::parse(read_file(model("fc")));
  // No dependency cycle, but the in-order DMA_OUT queue closes one: DO0 waits for S0, and a new
  // store DO1 queued before it waits for DO0. DI0, DI1 and S0 finish; the stores never start.
  s["commands"][3]["id"] = "DO1";
  s["commands"].insert(
      s["commands"].begin() + 3,
      Json{{"id", "DO0"}, {"engine", "DMA_OUT"}, {"bytes", 64}, {"deps", {"DO1"}}});
  const fs::path bad = write("deadlock.json", s.dump());
  const fs::path out = dir_ / "out";
  const Result r = npusim({"run", "-m", bad.string(), "-o", out.string()});
  EXPECT_EQ(r.exit_code, 3);
  // Found by the estimate, which stops the run before the simulation: not "simulation failed".
  EXPECT_EQ(r.err.rfind("npusim: estimate failed: ", 0), 0u) << r.err;
  EXPECT_THAT(
      r.err,
      HasSubstr("DMA_OUT holds DO0, waiting for DO1 (queued on DMA_OUT behind 1 command(s))"));
  EXPECT_THAT(r.err, HasSubstr("outputs up to that point written to"));
  // The estimate already deadlocks, so only its outputs exist, holding the three commands that
  // finished, and say they are incomplete.
  const Json stats = Json::parse(read_file(out / "stats.json"));
  EXPECT_EQ(stats["complete"], false);
  EXPECT_THAT(stats["incomplete_reason"].get<std::string>(), HasSubstr("deadlock"));
  EXPECT_EQ(stats["commands"], 3);
  EXPECT_FALSE(stats.contains("runtime"));
  EXPECT_EQ(timeline_rows(out / "timeline.csv").size(), 3u);
  EXPECT_THAT(read_file(out / "summary.txt"), HasSubstr("INCOMPLETE: the run could not complete"));
}

TEST_F(Cli, LocalMemoryOverflowExitsThree) {
  // Two 300 KiB buffers live at once in 512 KiB.
  Json s = Json::parse(read_file(model("fc")));
  s["commands"][0]["bytes"] = 300 * 1024;
  s["commands"][0]["alloc"][0]["bytes"] = 300 * 1024;
  s["commands"][1]["bytes"] = 300 * 1024;
  s["commands"][1]["alloc"][0]["bytes"] = 300 * 1024;
  const fs::path bad = write("big.json", s.dump());
  const fs::path out = dir_ / "out";
  const Result r = npusim({"run", "-m", bad.string(), "-o", out.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("npusim: estimate failed: local memory capacity exceeded in the "
                               "estimate: DI1 allocates at cycle"));
  EXPECT_THAT(r.err, HasSubstr("bringing occupancy to 614400 of 524288 bytes"));
  const Json stats = Json::parse(read_file(out / "stats.json"));
  EXPECT_EQ(stats["complete"], false);
  EXPECT_EQ(stats["commands"], 4);  // every command ran; the schedule is still invalid
  EXPECT_THAT(read_file(out / "summary.txt"), HasSubstr("INCOMPLETE"));
}

TEST_F(Cli, StatsLevelsAreAdditive) {
  std::map<int, Json> stats;
  std::map<int, std::size_t> trace_bytes;
  for (int level : {40, 50, 70, 100}) {
    const fs::path out = dir_ / std::to_string(level);
    ASSERT_EQ(npusim({"run", "-m", model("convnet"), "-o", out.string(), "-q", "--stats-level",
                      std::to_string(level)})
                  .exit_code,
              0);
    stats[level] = Json::parse(read_file(out / "stats.json"));
    trace_bytes[level] =
        read_file(out / "trace.json").size() + read_file(out / "trace.pftrace").size();
    EXPECT_EQ(stats[level]["stats_level"], level);
  }
  const auto& dma40 = stats[40]["runtime"]["engines"]["DMA_IN"];
  EXPECT_EQ(dma40["dram_read_bytes"], 154752);  // totals from level 40 on
  EXPECT_FALSE(dma40.contains("wait_dram_cycles"));
  EXPECT_FALSE(stats[40]["runtime"].contains("ops"));
  // 50 adds waits: convnet's simulation is 16 cycles behind its estimate on DMA_OUT alone.
  EXPECT_TRUE(stats[50]["runtime"]["engines"]["DMA_OUT"].contains("wait_dram_cycles"));
  EXPECT_EQ(stats[50]["estimate"]["engines"]["DMA_OUT"]["wait_dram_cycles"], 0);
  EXPECT_FALSE(stats[50]["runtime"].contains("ops"));
  // 70 adds per-op figures, one per command, whose cycles add up to the engines' work.
  ASSERT_TRUE(stats[70]["runtime"].contains("ops"));
  EXPECT_EQ(stats[70]["runtime"]["ops"].size(), 44u);
  EXPECT_FALSE(stats[70]["runtime"].contains("dram"));
  // 100 adds DRAM latencies, per-op MAC utilisation and per-program local-memory peaks.
  const Json& dram = stats[100]["runtime"]["dram"];
  // One burst per started 256 bytes of each transfer.
  std::uint64_t bursts = 0;
  const Json convnet = Json::parse(read_file(model("convnet")));
  for (const Json& c : convnet["commands"]) {
    if (c.contains("bytes")) bursts += (c["bytes"].get<std::uint64_t>() + 255) / 256;
  }
  EXPECT_EQ(bursts, 862u);
  EXPECT_EQ(dram["bursts"], bursts);
  EXPECT_TRUE(stats[100]["runtime"]["programs"][0].contains("lram_peak_bytes"));
  EXPECT_TRUE(stats[100]["runtime"]["ops"][2].contains("mac_utilization"));
  EXPECT_FALSE(stats[100]["estimate"].contains("dram"));  // bursts are the simulation's
  // Traces grow with the level: 50 adds counters, 70 flows and every argument, 100 a flow for
  // every dependency rather than the one each command waited for.
  EXPECT_LT(trace_bytes[40], trace_bytes[50]);
  EXPECT_LT(trace_bytes[50], trace_bytes[70]);
  EXPECT_LT(trace_bytes[70], trace_bytes[100]);
  EXPECT_EQ(npusim({"run", "-m", model("fc"), "--stats-level", "60", "-o", (dir_ / "x").string()})
                .exit_code,
            2);
}

TEST_F(Cli, IterationsRunBackToBackAndProfileAWindow) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(npusim({"run", "-m", model("fc"), "-o", out.string(), "-q", "--iterations", "4",
                    "--profile-start-iter", "1", "--profile-samples", "2"})
                .exit_code,
            0);
  const Json stats = Json::parse(read_file(out / "stats.json"));
  const Json& it = stats["iterations"];
  EXPECT_EQ(it["count"], 4);
  // Each inference takes fc's 81451 cycles (81455 - 4 of dispatch) and starts 4 cycles (its
  // dispatch) after the previous one ended.
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(it["runtime"][k]["latency_cycles"], 81451) << k;
    EXPECT_EQ(it["runtime"][k]["start_cycle"], 81455 * k + 4) << k;
    EXPECT_EQ(it["runtime"][k]["profiled"], k == 1 || k == 2) << k;
  }
  // The outputs hold inferences 1 and 2, with times from the end of inference 0.
  EXPECT_EQ(stats["commands"], 8);
  EXPECT_EQ(stats["runtime"]["total_cycles"], 2 * 81455);
  const std::string timeline = read_file(out / "timeline.csv");
  EXPECT_EQ(timeline.substr(0, timeline.find('\n', timeline.find('\n') + 1)),
            "ID,Start,End,Location,Op Type\nDI2,4,32900,\"loc(\"\"fc1.weight\"\")\",DMA_IN");
  EXPECT_EQ(read_file(out / "runtime.csv"),
            "id;time_since_open;time_since_start;location\n"
            "0;102;102;\"loc(\"\"fc.json\"\":1:1)\"\n"
            "1;204;102;\"loc(\"\"fc.json\"\":1:1)\"\n");
  EXPECT_EQ(npusim({"run", "-m", model("fc"), "--iterations", "2", "--profile-start-iter", "2",
                    "-o", (dir_ / "x").string()})
                .exit_code,
            2);
}

TEST_F(Cli, TracesHoldBothRunsWithOneFlowPerWaitingCommandOrEveryDependencyAt100) {
  const Json schedule = Json::parse(read_file(model("convnet")));
  std::size_t edges = 0, waiting = 0;
  for (const Json& c : schedule["commands"]) {
    const std::set<std::string> deps = c.value("deps", std::set<std::string>{});
    edges += deps.size();
    waiting += deps.empty() ? 0 : 1;
  }
  ASSERT_LT(waiting, edges);  // some command has more than one dependency
  for (int level : {70, 100}) {
    const fs::path out = dir_ / std::to_string(level);
    ASSERT_EQ(npusim({"run", "-m", model("convnet"), "-o", out.string(), "-q", "--stats-level",
                      std::to_string(level)})
                  .exit_code,
              0);
    const Json trace = Json::parse(read_file(out / "trace.json"));
    std::size_t slices = 0, flow_starts = 0, flow_ends = 0;
    std::set<std::string> processes, categories;
    for (const Json& e : trace["traceEvents"]) {
      const std::string ph = e["ph"];
      if (ph == "X") ++slices;
      if (ph == "s") ++flow_starts;
      if (ph == "f") ++flow_ends;
      if (ph == "X" || ph == "s" || ph == "f") categories.insert(e["cat"].get<std::string>());
      if (ph == "M" && e["name"] == "process_name")
        processes.insert(e["args"]["name"].get<std::string>());
    }
    EXPECT_EQ(slices, 2u * 44u);  // every command, in the estimate and the simulation
    // Level 70: one arrow into each command with dependencies (the one it waited for); 100: all.
    const std::size_t flows = level == 70 ? waiting : edges;
    EXPECT_EQ(flow_starts, 2u * flows);
    EXPECT_EQ(flow_ends, 2u * flows);
    // One category, so that DevTools binds every flow end to its slice.
    EXPECT_EQ(categories, (std::set<std::string>{"npu"}));
    EXPECT_EQ(processes, (std::set<std::string>{"compile-time estimate", "runtime simulation"}));
  }
}

TEST_F(Cli, HostLayersRunOnTheHost) {
  // A 1x1 conv, a host op over 100 elements, a Relu after it.
  const fs::path graph = write("h.json", R"({"format": "npusim-graph", "version": 1, "name": "h",
    "tensors": [{"name": "x", "shape": [1, 16, 8, 8]}, {"name": "w", "shape": [16, 16, 1, 1], "constant": true},
                {"name": "c", "shape": [1, 16, 8, 8]}, {"name": "y", "shape": [1, 100]}, {"name": "z", "shape": [1, 100]}],
    "inputs": ["x"], "outputs": ["z"],
    "layers": [{"name": "conv", "op": "Conv", "inputs": ["x", "w"], "outputs": ["c"], "attrs": {"kernel_shape": [1, 1]}},
               {"name": "nms", "op": "Host", "inputs": ["c"], "outputs": ["y"]},
               {"name": "relu", "op": "Relu", "inputs": ["y"], "outputs": ["z"]}]})");
  const fs::path out = dir_ / "out";
  ASSERT_EQ(
      npusim({"run", graph.string(), "-o", out.string(), "-q", "--set", "host.call_cycles=1000"})
          .exit_code,
      0);
  const auto rows = timeline_rows(out / "runtime_timeline.csv");
  // 1000 for the call plus 4 per element: 1400 cycles, after the conv's last store.
  EXPECT_EQ(rows.at("H0").second - rows.at("H0").first, 1400u);
  // It starts one dispatch (4 cycles) after the conv's last store, the latest DMA_OUT before it;
  // the Relu's loads, the last DMA_IN, start after it: the Relu reads what the host wrote.
  std::uint64_t last_conv_store = 0, last_load = 0;
  std::string last_load_id;
  for (const auto& [id, span] : rows) {
    if (id.rfind("DO", 0) == 0 && span.second <= rows.at("H0").first) {
      last_conv_store = std::max(last_conv_store, span.second);
    }
    if (id.rfind("DI", 0) == 0 && std::stoul(id.substr(2)) >= last_load) {
      last_load = std::stoul(id.substr(2));
      last_load_id = id;
    }
  }
  EXPECT_EQ(rows.at("H0").first, last_conv_store + 4);
  EXPECT_GE(rows.at(last_load_id).first, rows.at("H0").second);
}

// Every model the project ships or was given compiles and simulates on both shipped configs, and
// the compiled MACs equal the graph's (npusim info's count).
class ModelRun : public Cli,
                 public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(ModelRun, CompilesAndSimulates) {
  const auto& [path, config] = GetParam();
  const fs::path out = dir_ / "out";
  const Result r =
      npusim({"run", path, "-c", config, "-o", out.string(), "-q", "--stats-level", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json stats = Json::parse(read_file(out / "stats.json"));
  expect_within_bounds(stats);
  EXPECT_LE(stats["runtime"]["lram_peak_bytes"].get<std::uint64_t>(),
            stats["device"]["lram_bytes"].get<std::uint64_t>());
  const Result info = npusim({"info", path, "-c", config});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto at = info.out.find("MACs:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(std::stoull(info.out.substr(at + 5)),
            stats["macs"].get<std::uint64_t>() + stats["vector_macs"].get<std::uint64_t>());
}

std::vector<std::string> all_models() {
  std::vector<std::string> models;
  for (const char* folder : {"models/zoo"}) {
    for (const auto& e : fs::directory_iterator(kSource / folder))
      models.push_back(e.path().string());
  }
  // The shared models sit beside the repository (../shared); without them only the zoo runs, and
  // SharedModels.ArePresent says why.
  const fs::path shared = kSource.parent_path() / "shared" / "models" / "onnx";
  if (fs::is_directory(shared)) {
    for (const auto& e : fs::directory_iterator(shared)) models.push_back(e.path().string());
  }
  std::sort(models.begin(), models.end());
  return models;
}

std::string model_run_name(
    const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& p) {
  std::string name = fs::path(std::get<0>(p.param)).stem().string() + "_" + std::get<1>(p.param);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

TEST(SharedModels, ArePresent) {
  const fs::path shared = kSource.parent_path() / "shared" / "models" / "onnx";
  ASSERT_TRUE(fs::is_directory(shared))
      << shared << " is missing: the tests run every shared model";
  EXPECT_EQ(std::distance(fs::directory_iterator(shared), fs::directory_iterator()), 18);
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelRun,
                         ::testing::Combine(::testing::ValuesIn(all_models()),
                                            ::testing::Values("default", "server")),
                         model_run_name);

// ---- issue 17: no input reaches an internal error ----------------------------------------------

// A graph JSON of one layer, `op` over `in` into `out` (shapes as JSON arrays), with `attrs`.
std::string one_layer_graph(const std::string& op, const std::string& in, const std::string& w,
                            const std::string& out, const std::string& attrs) {
  std::string tensors = R"({"name": "x", "shape": )" + in + "}";
  std::string inputs = R"(["x")";
  if (!w.empty()) {
    tensors += R"(, {"name": "w", "shape": )" + w + R"(, "constant": true})";
    inputs += R"(, "w")";
  }
  tensors += R"(, {"name": "y", "shape": )" + out + "}";
  return R"({"format": "npusim-graph", "version": 1, "name": "g", "tensors": [)" + tensors +
         R"(], "inputs": ["x"], "outputs": ["y"], "layers": [{"name": "L", "op": ")" + op +
         R"(", "inputs": )" + inputs + R"(], "outputs": ["y"])" +
         (attrs.empty() ? "" : ", " + attrs) + "}]}";
}

// Devices, FIFOs and folders are refused before a byte is read: /dev/zero as a schedule or a
// config used to be read until memory ran out (std::bad_alloc, exit 4); a FIFO would block.
TEST_F(Cli, NonRegularInputFilesAreBadInput) {
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", "/dev/zero", "-o", out.string()}), out,
                   "/dev/zero: is a device, not a regular file");
  expect_bad_input(npusim({"run", "-m", model("fc"), "-c", "/dev/zero", "-o", out.string()}), out,
                   "/dev/zero: is a device, not a regular file");
  const fs::path fifo = dir_ / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_bad_input(npusim({"run", "-m", fifo.string(), "-o", out.string()}), out,
                   "pipe.json: is a FIFO (named pipe), not a regular file");
  const fs::path fifo_onnx = dir_ / "pipe.onnx";
  ASSERT_EQ(::mkfifo(fifo_onnx.c_str(), 0600), 0);
  expect_bad_input(npusim({"estimate", "-m", fifo_onnx.string(), "-o", out.string()}), out,
                   "pipe.onnx: is a FIFO (named pipe), not a regular file");
  fs::create_directories(dir_ / "folder.csv");
  expect_bad_input(npusim({"run", "-m", (dir_ / "folder.csv").string(), "-o", out.string()}), out,
                   "folder.csv: is a folder, not a file");
  const fs::path trace = dir_ / "t.pftrace";
  const Result convert = npusim({"convert", "--compile", "/dev/zero", "-o", trace.string()});
  EXPECT_EQ(convert.exit_code, 2) << convert.err;
  EXPECT_THAT(convert.err, HasSubstr("/dev/zero: is a device, not a regular file"));
  EXPECT_FALSE(fs::exists(trace));
}

// The limit is 2^31 bytes (docs/reliability.md); the files are sparse, so the test writes nothing.
TEST_F(Cli, InputFilesOverTheSizeLimitAreBadInput) {
  const fs::path out = dir_ / "out";
  const std::string limit = "is 2147483649 bytes, more than the 2147483648 bytes (2 GiB)";
  for (const std::string name : {"big.json", "big.onnx", "big.csv"}) {
    const fs::path big = write(name, "");
    fs::resize_file(big, (std::uintmax_t{1} << 31) + 1);
    expect_bad_input(npusim({"run", "-m", big.string(), "-o", out.string()}), out,
                     name + ": " + limit);
  }
  const fs::path cfg = write("cfg.json", "");
  fs::resize_file(cfg, (std::uintmax_t{1} << 31) + 1);
  expect_bad_input(npusim({"run", "-m", model("fc"), "-c", cfg.string(), "-o", out.string()}), out,
                   "cfg.json: " + limit);
}

// A file or folder name that is not UTF-8: nlohmann used to throw type_error.316 writing it into
// stats.json (exit 4). The name is kept, with each invalid byte written as \xNN.
TEST_F(Cli, NonUtf8FileNamesAreEscapedInOutputsAndMessages) {
  const std::string topology =
      "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,"
      "Channels,Num Filter,Strides,\nconv1,8,8,3,3,4,8,1,\n";
  const fs::path model_file = write("net\xff.csv", topology);
  const fs::path out = dir_ / "out\xfe";
  const Result r = npusim({"run", "-m", model_file.string(), "-o", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json stats = Json::parse(read_file(out / "stats.json"));  // valid UTF-8 JSON
  EXPECT_THAT(stats.dump(), HasSubstr(R"(net\\xFF)"));
  EXPECT_TRUE(Json::accept(read_file(out / "trace.json")));
  // A sweep of that model into a folder so named: sweep.json and sweep-plan.json stay JSON.
  const fs::path sweep = dir_ / "sweep\xfd";
  const Result sw = npusim({"sweep", "-m", model_file.string(), "--clock-mhz", "400,800", "--jobs",
                            "1", "-o", sweep.string(), "-q"});
  ASSERT_EQ(sw.exit_code, 0) << sw.err;
  const Json plan = Json::parse(read_file(sweep / "sweep-plan.json"));
  EXPECT_THAT(plan["model_path"].get<std::string>(), HasSubstr("net\\xFF.csv"));
  EXPECT_EQ(Json::parse(read_file(sweep / "sweep.json"))["summary"]["ok"], 2);
  // A message naming such a file names it escaped.
  const Result missing = npusim({"run", "-m", (dir_ / "gone\xff.json").string(), "-o", "x"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("gone\\xFF.json: cannot open file"));
}

// A ReLU over 2^48 elements compiles into billions of commands: the compiler estimates them
// before allocating anything and names the layer (it used to take 55 s and 8 GB first).
TEST_F(Cli, HugeLayerIsRejectedBeforeAllocatingNamingIt) {
  const fs::path g = write("huge.json", one_layer_graph("Relu", "[256, 1048576, 1048576]", "",
                                                        "[256, 1048576, 1048576]", ""));
  const fs::path out = dir_ / "out";
  const Result r = npusim({"run", "-m", g.string(), "-o", out.string()});
  expect_bad_input(r, out, "huge.json: layer 'L' loc(\"huge.json\":/layers/0)");
  EXPECT_THAT(r.err, HasSubstr("more than the 16777216 a schedule may have"));
  // A depthwise topology layer over 2^32 channels.
  const fs::path dw = write("dw.csv",
                            "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,"
                            "Channels,Num Filter,Strides,\nDP_huge,64,64,3,3,4294967296,1,1,\n");
  const Result d = npusim({"run", "-m", dw.string(), "-o", out.string()});
  expect_bad_input(d, out, "dw.csv: layer 'DP_huge' loc(\"dw.csv\":2)");
  EXPECT_THAT(d.err, HasSubstr("more than the 16777216 a schedule may have"));
}

// SCALE-Sim: a stride larger than the IFMAP leaves output rows whose window lies wholly in the
// padding; the compiler used to emit a buffer of 2^64 - 32 bytes for them.
TEST_F(Cli, TopologyStrideLargerThanTheIfmapIsRejectedAtItsRow) {
  const fs::path t =
      write("stride.csv",
            "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,"
            "Channels,Num Filter,Strides,\nok,8,8,3,3,4,8,1,\nwide,4,4,2,2,4,8,8,\n");
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", t.string(), "-o", out.string()}), out,
                   "stride.csv: row 3: layer 'wide': stride 8x8 is larger than the IFMAP 4x4");
}

// Graph JSON: a Conv whose padding is as wide as its kernel window (1x1 kernel, stride 5, pads
// 4): output pixels that read only padding.
TEST_F(Cli, ConvWindowsWhollyInThePaddingAreRejectedAtTheLayer) {
  // Input 1x4x4x4, kernel 1x1, stride 5, pads 4: padded 12, (12 - 1) / 5 + 1 = 3 outputs per
  // side; the first window (row 0) and the last (row 10) read only padding.
  const fs::path g =
      write("pad.json", one_layer_graph("Conv", "[1, 4, 4, 4]", "[8, 4, 1, 1]", "[1, 8, 3, 3]",
                                        R"("attrs": {"strides": [5, 5], "pads": [4, 4, 4, 4]})"));
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", g.string(), "-o", out.string()}), out,
                   "pad.json: layer 'L' (loc(\"pad.json\":/layers/0)): pads [4, 4, 4, 4] are not "
                   "smaller than the kernel window 1x1");
}

TEST_F(Cli, UnproducedGraphOutputIsNamed) {
  std::string g = one_layer_graph("Relu", "[1, 4]", "", "[1, 4]", "");
  const std::string from = R"("outputs": ["y"], "layers")";
  g.replace(g.find(from), from.size(), R"("outputs": ["y", "z"], "layers")");
  const std::string tensor = R"({"name": "y", "shape": [1, 4]})";
  g.replace(g.find(tensor), tensor.size(), tensor + R"(, {"name": "z", "shape": [1, 4]})");
  const fs::path file = write("unproduced.json", g);
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", file.string(), "-o", out.string()}), out,
                   "unproduced.json: graph outputs: output tensor 'z' is never produced");
}

// ONNX models the importer cannot read faithfully: hand-made in
// tests/fuzz/corpus/make_onnx_probes.py and kept as regressions. Each used to exit 0.
TEST_F(Cli, OnnxVersionsAndMissingExternalDataAreBadInput) {
  const fs::path onnx = kSource / "tests" / "fuzz" / "regressions" / "onnx";
  const fs::path out = dir_ / "out";
  expect_bad_input(npusim({"run", "-m", (onnx / "opset_999.onnx").string(), "-o", out.string()}),
                   out,
                   "opset_999.onnx: opset_import: default-domain opset 999 is not supported "
                   "(npusim reads opsets 1 to 21)");
  expect_bad_input(
      npusim({"run", "-m", (onnx / "ir_version_11.onnx").string(), "-o", out.string()}), out,
      "ir_version_11.onnx: ir_version: IR version 11 is not supported (npusim reads IR versions "
      "3 to 10)");
  expect_bad_input(
      npusim({"run", "-m", (onnx / "external_data_missing.onnx").string(), "-o", out.string()}),
      out,
      "external_data_missing.onnx: initializer 'w': external data file 'weights_not_here.bin' (");
}

// Found by the onnx_proto fuzzer: a ReLU over [1, 4, 8, 8, 2^31] float32 with lram_kib = 2^25
// makes tiles of one 2^31-byte row piece, 2^23 bursts of 256 bytes where a transfer may have
// 2^22. No slice count gives a schedule that checks; that was an internal error (exit 4).
TEST_F(Cli, TileLargerThanOneTransferIsBadInputNamingTheLayer) {
  const fs::path onnx = kSource / "tests" / "fuzz" / "regressions" / "onnx" /
                        "relu_tile_past_dma_transfer_limit.onnx";
  const Result r = npusim({"info", onnx.string(), "--set", "lram_kib=33554432"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("relu_tile_past_dma_transfer_limit.onnx: layer 'Relu_1' "
                        "loc(\"relu_tile_past_dma_transfer_limit.onnx\":node 1 \"Relu_1\"): no "
                        "mapping of it makes a valid schedule for this config: "
                        "/commands/0/bytes: 2147483648 bytes make 8388608 bursts"));
}

TEST_F(Cli, NegativeCountsOfOptionsAreUsageErrors) {
  const Result top = npusim({"diff", model("fc"), model("fc"), "--top=-1"});
  EXPECT_EQ(top.exit_code, 2) << top.err;
  EXPECT_THAT(top.err, HasSubstr("--top: expected a number of rows of at least 0 (0 shows all), "
                                 "found -1"));
  for (const std::string jobs : {"-1", "0"}) {
    const fs::path out = dir_ / "sweep";
    const Result r = npusim({"sweep", "-m", model("fc"), "--clock-mhz", "400,800", "--jobs=" + jobs,
                             "-o", out.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--jobs: expected 1 to 4096 processes at a time, found " + jobs));
    EXPECT_FALSE(fs::exists(out));
  }
}

// A sweep plan whose point count is past the limit, wraps 64 bits or is not what its keys make is
// refused before any point is read (a plan claiming 2^40 points used to loop for hours; one whose
// keys make 2^64 points wrapped to 0 and exited 0).
TEST_F(Cli, SweepMergeChecksThePlanAgainstTheFolderFirst) {
  const fs::path sweep = dir_ / "sweep";
  const Result made = npusim({"sweep", "-m", model("fc"), "--clock-mhz", "400,800", "--emit-jobs",
                              (dir_ / "jobs.txt").string(), "-o", sweep.string(), "-q"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const Json plan = Json::parse(read_file(sweep / "sweep-plan.json"));
  auto merge_with = [&](const Json& p) {
    std::ofstream(sweep / "sweep-plan.json", std::ios::binary | std::ios::trunc) << p.dump();
    return npusim({"sweep", "--merge", sweep.string()});
  };
  // 40 keys of 2 values: 2^40 points.
  Json huge = plan;
  huge["keys"] = Json::array();
  for (int k = 0; k < 40; ++k)
    huge["keys"].push_back({{"key", "clock_mhz"}, {"values", {"1", "2"}}});
  huge["points"] = std::uint64_t{1} << 40;
  Result r = merge_with(huge);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sweep-plan.json: /points: expected a point count of 1 to 100000"));
  // 64 keys of 2 values: the product wraps to 0 in 64 bits; the plan says 0.
  Json wraps = plan;
  wraps["keys"] = Json::array();
  for (int k = 0; k < 64; ++k)
    wraps["keys"].push_back({{"key", "clock_mhz"}, {"values", {"1", "2"}}});
  wraps["points"] = 0;
  r = merge_with(wraps);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sweep-plan.json: /points: expected a point count of 1 to 100000"));
  // A count that the keys do not make.
  Json three = plan;
  three["points"] = 3;
  r = merge_with(three);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sweep-plan.json: /points: the keys' values make 2 point(s), but "
                               "the plan says 3"));
  EXPECT_FALSE(fs::exists(sweep / "sweep.json"));
  // A valid plan none of whose points has a folder (its jobs never ran, or the plan is another
  // folder's): bad input, before any point is read.
  r = merge_with(plan);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("points: holds none of the 2 point(s) of sweep-plan.json"));
  EXPECT_FALSE(fs::exists(sweep / "sweep.json"));
  // A plan of 10000 points over this folder's 2: loops over them without a file system call for
  // the missing ones, each "not run".
  Json many = plan;
  many["keys"] = Json::array();
  for (int k = 0; k < 4; ++k) {
    many["keys"].push_back(
        {{"key", "clock_mhz"}, {"values", {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}}});
  }
  many["points"] = 10000;
  fs::create_directories(sweep / "points" / "1");
  std::ofstream(sweep / "points" / "1" / "exit_code.txt") << "2\n";
  r = merge_with(many);
  EXPECT_EQ(r.exit_code, 3) << r.err.substr(0, 400);
  EXPECT_EQ(Json::parse(read_file(sweep / "sweep.json"))["points"].size(), 10000u);
  // The folder of a bigger sweep merged with a smaller plan: its extra points are ignored.
  const fs::path bigger = dir_ / "bigger";
  ASSERT_EQ(
      npusim({"sweep", "-m", model("fc"), "--clock-mhz", "400,800", "-o", bigger.string(), "-q"})
          .exit_code,
      0);
  Json smaller = Json::parse(read_file(bigger / "sweep-plan.json"));
  smaller["keys"][0]["values"] = {"400"};
  smaller["points"] = 1;
  std::ofstream(bigger / "sweep-plan.json", std::ios::binary | std::ios::trunc) << smaller.dump();
  r = npusim({"sweep", "--merge", bigger.string(), "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(read_file(bigger / "sweep.json"))["points"].size(), 1u);
}

// ---- issue 17: nothing left behind by a kill ----------------------------------------------------

// A pid that does not exist: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(Cli, StaleStagingOfDeadProcessesIsRemovedAndLiveOnesKept) {
  const fs::path out = dir_ / "out";
  const fs::path stale = out / (".npusim-staging-" + std::to_string(dead_pid()));
  const fs::path live = out / (".npusim-staging-" + std::to_string(::getpid()));  // this test
  fs::create_directories(stale);
  fs::create_directories(live);
  std::ofstream(stale / "trace.json") << "half";
  ASSERT_EQ(npusim({"estimate", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

// kill -9 of a run while it writes its outputs leaves its staging folder; the next run into the
// same folder removes it. The model is large enough that writing takes a while (resnet50 at
// --stats-level 100); the run is killed as soon as its staging folder appears.
TEST_F(Cli, KilledRunLeavesNoStagingAfterTheNextRun) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  bool killed_while_staging = false;
  for (int attempt = 0; attempt < 3 && !killed_while_staging; ++attempt) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string m = model("zoo/resnet50"), o = out.string();
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(NPUSIM_BINARY, "npusim", "run", m.c_str(), "-o", o.c_str(), "--stats-level", "100",
              "-q", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const fs::path staging = out / (".npusim-staging-" + std::to_string(pid));
    int status = 0;
    for (;;) {
      if (fs::exists(staging)) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        killed_while_staging = WIFSIGNALED(status);
        break;
      }
      if (::waitpid(pid, &status, WNOHANG) == pid) break;  // finished first: try again
      ::usleep(1000);
    }
  }
  ASSERT_TRUE(killed_while_staging) << "the run never showed its staging folder";
  bool stale = false;
  for (const auto& e : fs::directory_iterator(out))
    stale = stale || e.path().filename().string().rfind(".npusim-staging-", 0) == 0;
  ASSERT_TRUE(stale) << "kill -9 left no staging folder to clean";
  ASSERT_EQ(npusim({"estimate", "-m", model("fc"), "-o", out.string(), "-q"}).exit_code, 0);
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_NE(e.path().filename().string().rfind(".npusim-staging-", 0), 0u) << e.path();
}

// `compile -o FILE` writes FILE.tmp-<pid> and renames it; the temporaries of FILE that processes
// no longer alive left are removed by the next write of FILE, those of live ones and of other
// files are kept.
TEST_F(Cli, StaleTemporariesOfDeadProcessesAreRemovedAndLiveOnesKept) {
  const fs::path file = dir_ / "fc.schedule.json";
  const fs::path stale = dir_ / ("fc.schedule.json.tmp-" + std::to_string(dead_pid()));
  const fs::path live = dir_ / ("fc.schedule.json.tmp-" + std::to_string(::getpid()));
  const fs::path other = dir_ / ("other.json.tmp-" + std::to_string(dead_pid()));
  for (const fs::path& p : {stale, live, other}) std::ofstream(p) << "{\"half";
  ASSERT_EQ(npusim({"compile", model("zoo/resnet50"), "-o", file.string(), "-q"}).exit_code, 0);
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

// kill -9 of `compile -o FILE` while it writes leaves FILE.tmp-<pid>; the next compile into FILE
// removes it. The model (one Llama-2-7B layer, 300k commands) takes a while to write; the compile
// is killed as soon as its temporary appears.
TEST_F(Cli, KilledCompileLeavesNoTemporaryAfterTheNextRun) {
  const fs::path file = dir_ / "layer.schedule.json";
  bool killed_while_writing = false;
  for (int attempt = 0; attempt < 3 && !killed_while_writing; ++attempt) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string m = model("zoo/llm7b_decoder_layer"), o = file.string();
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(NPUSIM_BINARY, "npusim", "compile", m.c_str(), "-o", o.c_str(), "-q",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const fs::path tmp = file.string() + ".tmp-" + std::to_string(pid);
    int status = 0;
    for (;;) {
      if (fs::exists(tmp)) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        killed_while_writing = WIFSIGNALED(status);
        break;
      }
      if (::waitpid(pid, &status, WNOHANG) == pid) break;  // finished first: try again
      ::usleep(1000);
    }
  }
  ASSERT_TRUE(killed_while_writing) << "the compile never showed its temporary file";
  const auto temporaries = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_))
      n += e.path().filename().string().rfind("layer.schedule.json.tmp-", 0) == 0 ? 1 : 0;
    return n;
  };
  ASSERT_GE(temporaries(), 1) << "kill -9 left no temporary to clean";
  ASSERT_EQ(npusim({"compile", model("zoo/resnet50"), "-o", file.string(), "-q"}).exit_code, 0);
  EXPECT_EQ(temporaries(), 0);
  EXPECT_TRUE(fs::exists(file));
}

// kill -9 of a sweep: its running child dies with it (PR_SET_PDEATHSIG) instead of running to
// its end. The child is found among the sweep's children in /proc; the model (one Llama-2-7B
// layer) takes seconds to simulate, so a child left running would still be writing.
TEST_F(Cli, SweepChildDiesWithItsParent) {
  const pid_t sweep = ::fork();
  ASSERT_GE(sweep, 0);
  if (sweep == 0) {
    const std::string m = model("zoo/llm7b_decoder_layer"), o = (dir_ / "sweep").string();
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(NPUSIM_BINARY, "npusim", "sweep", "-m", m.c_str(), "--clock-mhz", "400,800", "--jobs",
            "1", "-o", o.c_str(), "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t child = 0;
  const fs::path children =
      fs::path("/proc") / std::to_string(sweep) / "task" / std::to_string(sweep) / "children";
  while (child == 0) {
    std::ifstream in(children);
    long c = 0;
    if (in >> c) child = static_cast<pid_t>(c);
    if (::waitpid(sweep, nullptr, WNOHANG) == sweep)
      FAIL() << "the sweep ended before its child ran";
    ::usleep(1000);
  }
  ::kill(sweep, SIGKILL);
  ::waitpid(sweep, nullptr, 0);
  // The child is reparented and killed by the kernel; it exists until its new parent reaps it.
  bool gone = false;
  for (int i = 0; i < 100000 && !gone; ++i) {
    const std::string text = read_file("/proc/" + std::to_string(child) + "/stat");
    const auto close = text.rfind(')');
    gone = text.empty() || (close != std::string::npos && close + 2 < text.size() &&
                            (text[close + 2] == 'Z' || text[close + 2] == 'X'));
    if (!gone) ::usleep(1000);
  }
  EXPECT_TRUE(gone) << "sweep child " << child << " outlived its killed parent";
  // Killed, not finished: a child that ran to its end (about 12 s) would have written its outputs.
  EXPECT_FALSE(fs::exists(dir_ / "sweep" / "points" / "0" / "stats.json"));
}

// Started by the dynamic loader by name, /proc/self/exe is the loader: the heap's second start
// (sim/util/heap_pages.h) must not run it again with npusim's arguments, which made the loader
// take --version for its own and print its version instead of npusim's.
TEST_F(Cli, StartedByTheLoaderByNameItRunsAsItself) {
  const fs::path loader = "/lib64/ld-linux-x86-64.so.2";
  if (!fs::exists(loader)) GTEST_SKIP() << loader << " is not this machine's loader";
  const std::string cmd = quote(loader.string()) + " " + quote(NPUSIM_BINARY) + " --version >" +
                          quote((dir_ / "stdout").string()) + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(dir_ / "stdout"), "npusim 0.1.0\n");
}

TEST_F(Cli, HelpDescribesEachCommand) {
  const Result r = npusim({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--model"));
  EXPECT_THAT(r.out, HasSubstr("--set"));
  const Result top = npusim({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("exit codes"));
}

}  // namespace
