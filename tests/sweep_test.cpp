// End-to-end tests of `npusim sweep` and `npusim check`: they spawn the binary, which spawns one
// `npusim run` per point or budget entry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

const fs::path kSource = NPUSIM_SOURCE_DIR;

using npusim::test::quote;
using npusim::test::read_file;
using npusim::test::Result;

std::string model(const std::string& name) {
  return (kSource / "models" / (name + ".json")).string();
}
std::string zoo(const std::string& name) {
  return (kSource / "models" / "zoo" / (name + ".json")).string();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Splits a CSV line without quoted fields.
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("npusim_sweep_" + std::string(info->test_suite_name()) +
                                        "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  Result shell(const std::string& command) const {
    const std::string cmd = command + " >" + quote((dir_ / "stdout").string()) + " 2>" +
                            quote((dir_ / "stderr").string()) + " </dev/null";
    const int status = std::system(cmd.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(dir_ / "stdout");
    r.err = read_file(dir_ / "stderr");
    return r;
  }

  Result npusim(const std::vector<std::string>& args) const {
    std::string cmd = quote(NPUSIM_BINARY);
    for (const std::string& a : args) cmd += " " + quote(a);
    return shell(cmd);
  }

  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  fs::path dir_;
};

// ---- sweep --------------------------------------------------------------------------------------

// Every point's row holds exactly what a single `npusim run` of that point writes to its
// stats.json (which the sweep runs at --stats-level 40, the run here at the default 70). The BERT
// layer: array and vector work on several slices, and the cheapest zoo model to compile (eight
// compiles here, slow under the sanitizers).
TEST_F(Sweep, PointFiguresEqualSingleRuns) {
  const fs::path out = dir_ / "sw";
  const Result r =
      npusim({"sweep", "--model", zoo("bert_base_layer"), "--config", "server", "--clock-mhz",
              "500,1000", "--slices", "4,8", "--jobs", "2", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json sweep = Json::parse(read_file(out / "sweep.json"));
  const auto csv = lines_of(read_file(out / "sweep.csv"));
  ASSERT_EQ(csv.size(), 5u);
  EXPECT_EQ(csv[0],
            "index,clock_mhz,slices.count,status,exit_code,total_cycles,latency_us,mac_utilization,"
            "dram_gbps,bound,compute_busy_cycles,dma_busy_cycles,lower_bound_array_cycles,"
            "lower_bound_vector_cycles,lower_bound_mac_peak_cycles,lower_bound_dma_in_port_cycles,"
            "lower_bound_dma_out_port_cycles,lower_bound_dram_cycles,lower_bound_host_cycles,"
            "energy_uj,ttft_ms,tpot_mean_ms,tpot_p99_ms,decode_tokens_per_s,error");
  ASSERT_EQ(sweep["points"].size(), 4u);
  const std::vector<std::pair<std::string, std::string>> grid = {
      {"500", "4"}, {"500", "8"}, {"1000", "4"}, {"1000", "8"}};
  for (std::size_t i = 0; i < grid.size(); ++i) {
    SCOPED_TRACE("point " + std::to_string(i));
    const fs::path single = dir_ / ("single" + std::to_string(i));
    const Result run = npusim({"run", "--model", zoo("bert_base_layer"), "--config", "server",
                               "--set", "clock_mhz=" + grid[i].first, "--set",
                               "slices.count=" + grid[i].second, "--out", single.string(), "-q"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const Json stats = Json::parse(read_file(single / "stats.json"));
    const Json& rt = stats["runtime"];
    std::uint64_t compute = 0, dma = 0;
    for (const auto& [name, e] : rt["engines"].items()) {
      auto& slot = name.rfind("DMA", 0) == 0 ? dma : compute;
      slot = std::max(slot, e["busy_cycles"].get<std::uint64_t>());
    }
    const Json& p = sweep["points"][i];
    EXPECT_EQ(p["index"], i);
    EXPECT_EQ(p["dir"], "points/" + std::to_string(i));
    EXPECT_EQ(p["values"]["clock_mhz"], std::stoi(grid[i].first));
    EXPECT_EQ(p["values"]["slices.count"], std::stoi(grid[i].second));
    EXPECT_EQ(p["status"], "ok");
    EXPECT_EQ(p["exit_code"], 0);
    EXPECT_EQ(p["total_cycles"], rt["total_cycles"]);
    EXPECT_EQ(p["latency_us"], rt["time_us"]);
    EXPECT_EQ(p["mac_utilization"], rt["mac_utilization"]);
    EXPECT_EQ(p["dram_gbps"], rt["dram_achieved_gbps"]);
    EXPECT_EQ(p["compute_busy_cycles"], compute);
    EXPECT_EQ(p["dma_busy_cycles"], dma);
    const std::vector<std::string> bounds = {"array",        "vector", "mac_peak", "dma_in_port",
                                             "dma_out_port", "dram",   "host"};
    for (const std::string& b : bounds) {
      EXPECT_EQ(p["lower_bound_" + b + "_cycles"], stats["bounds"][b + "_cycles"]) << b;
    }
    EXPECT_EQ(p["bound"], stats["bounds"]["binding"]);
    EXPECT_TRUE(p["error"].is_null());
    // The CSV row says the same, with numbers written as stats.json writes them.
    const auto f = fields_of(csv[i + 1]);
    ASSERT_EQ(f.size(), 25u) << csv[i + 1];
    EXPECT_EQ(f[0], std::to_string(i));
    EXPECT_EQ(f[1], grid[i].first);
    EXPECT_EQ(f[2], grid[i].second);
    EXPECT_EQ(f[3], "ok");
    EXPECT_EQ(f[4], "0");
    EXPECT_EQ(f[5], rt["total_cycles"].dump());
    EXPECT_EQ(std::stod(f[6]), rt["time_us"].get<double>());
    EXPECT_EQ(std::stod(f[7]), rt["mac_utilization"].get<double>());
    EXPECT_EQ(std::stod(f[8]), rt["dram_achieved_gbps"].get<double>());
    EXPECT_EQ(f[9], p["bound"].get<std::string>());
    EXPECT_EQ(f[10], std::to_string(compute));
    EXPECT_EQ(f[11], std::to_string(dma));
    for (std::size_t b = 0; b < bounds.size(); ++b) {
      EXPECT_EQ(f[12 + b], stats["bounds"][bounds[b] + "_cycles"].dump()) << bounds[b];
    }
    EXPECT_EQ(f[19], stats["energy"]["total_uj"].dump());
    EXPECT_EQ(p["energy_uj"], stats["energy"]["total_uj"]);
    // Not an LLM: no TTFT, TPOT or tokens/s.
    for (std::size_t k = 20; k < 25; ++k) EXPECT_EQ(f[k], "") << k;
    EXPECT_TRUE(p["ttft_ms"].is_null());
    // Each point's own outputs are kept, with its stderr and exit code.
    EXPECT_EQ(read_file(out / "points" / std::to_string(i) / "exit_code.txt"), "0\n");
    EXPECT_EQ(read_file(out / "points" / std::to_string(i) / "stderr.txt"), "");
  }
  EXPECT_EQ(sweep["summary"], Json::parse(R"({"points": 4, "ok": 4, "failed": 0})"));
}

TEST_F(Sweep, JobsDoNotChangeTheOutputs) {
  std::map<std::string, std::string> csv, json;
  for (const std::string jobs : {"1", "2"}) {
    const fs::path out = dir_ / ("jobs" + jobs);
    const Result r =
        npusim({"sweep", "-m", model("convnet"), "--sweep", "clock_mhz=400,800,1200", "--sweep",
                "dram.bandwidth_gbps=6.4,12.8", "--jobs", jobs, "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    csv[jobs] = read_file(out / "sweep.csv");
    json[jobs] = read_file(out / "sweep.json");
  }
  EXPECT_EQ(csv["1"], csv["2"]);
  EXPECT_EQ(json["1"], json["2"]);
  // Grid order: keys in command-line order, the last one fastest.
  const auto rows = lines_of(csv["1"]);
  ASSERT_EQ(rows.size(), 7u);
  const std::vector<std::string> expected = {"0,400,6.4",  "1,400,12.8", "2,800,6.4",
                                             "3,800,12.8", "4,1200,6.4", "5,1200,12.8"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rows[i + 1].substr(0, expected[i].size() + 3), expected[i] + ",ok") << rows[i + 1];
  }
}

TEST_F(Sweep, FailingPointIsReportedAndTheOthersComplete) {
  const fs::path out = dir_ / "sw";
  const Result r = npusim({"sweep", "-m", model("convnet"), "--sweep", "dram.bandwidth_gbps=0,12.8",
                           "--jobs", "2", "-o", out.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::string error =
      "npusim: error: built-in:default (with --set): /dram/bandwidth_gbps: value 0 out of range "
      "[0.001, 1e+06]";
  EXPECT_THAT(r.err, HasSubstr("point 0 (dram.bandwidth_gbps=0): failed (exit 2): " + error));
  EXPECT_THAT(r.out, HasSubstr("sweep: 2 point(s), 1 ok, 1 failed"));
  EXPECT_EQ(read_file(out / "points/0/exit_code.txt"), "2\n");
  EXPECT_EQ(read_file(out / "points/0/stderr.txt"), error + "\n");
  EXPECT_FALSE(fs::exists(out / "points/0/stats.json"));

  // The good point is exactly a plain run of the model (12.8 GB/s is the default).
  const Result run =
      npusim({"run", "-m", model("convnet"), "-o", (dir_ / "single").string(), "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Json stats = Json::parse(read_file(dir_ / "single/stats.json"));
  const Json sweep = Json::parse(read_file(out / "sweep.json"));
  EXPECT_EQ(sweep["points"][0]["status"], "failed");
  EXPECT_EQ(sweep["points"][0]["exit_code"], 2);
  EXPECT_EQ(sweep["points"][0]["error"], error);
  EXPECT_TRUE(sweep["points"][0]["total_cycles"].is_null());
  EXPECT_EQ(sweep["points"][1]["status"], "ok");
  EXPECT_EQ(sweep["points"][1]["total_cycles"], stats["runtime"]["total_cycles"]);
  EXPECT_EQ(sweep["summary"], Json::parse(R"({"points": 2, "ok": 1, "failed": 1})"));
  const auto csv = lines_of(read_file(out / "sweep.csv"));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[1], "0,0,failed,2,,,,,,,,,,,,,,,,,,,,\"" + error + "\"");  // 19 empty figures
  EXPECT_EQ(csv[2].substr(0, 13 + stats["runtime"]["total_cycles"].dump().size()),
            "1,12.8,ok,0," + stats["runtime"]["total_cycles"].dump() + ",");
}

// `bound` names the resource whose lower bound is the largest, whichever it is.
TEST_F(Sweep, BoundNamesTheBindingLimit) {
  const fs::path out = dir_ / "sw";
  const Result r = npusim({"sweep", "-m", model("fc"), "--sweep", "dma.bytes_per_cycle=1,8",
                           "--sweep", "dram.bandwidth_gbps=0.8,12.8", "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // fc at 800 MHz: 263168 B in, 256 B out, S0 1024 folds x 47 - 1 = 48127 array cycles.
  // DMA_IN port at 1 B/cycle: 263168 cycles; at 8: 32896.
  // DRAM at 0.8 GB/s = 1 B/cycle: 263424 cycles; at 12.8 GB/s = 16 B/cycle: 16464.
  const std::vector<std::string> expected = {"dram", "dma_in_port", "dram", "array"};
  const Json sweep = Json::parse(read_file(out / "sweep.json"));
  const auto csv = lines_of(read_file(out / "sweep.csv"));
  ASSERT_EQ(csv.size(), 5u);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(sweep["points"][i]["bound"], expected[i]) << i;
    EXPECT_EQ(fields_of(csv[i + 1])[9], expected[i]) << csv[i + 1];
  }
  EXPECT_EQ(sweep["points"][1]["lower_bound_dma_in_port_cycles"], 263168);
  EXPECT_EQ(sweep["points"][2]["lower_bound_dram_cycles"], 263424);
  EXPECT_EQ(sweep["points"][3]["lower_bound_array_cycles"], 48127);  // 1024 folds x 47 - 1
  EXPECT_THAT(r.err, HasSubstr("ok, 81455 cycles, bound by array, "));
}

TEST_F(Sweep, OneProgressLinePerPointWithoutATerminal) {
  const Result r = npusim({"sweep", "-m", model("fc"), "--clock-mhz", "400,800,1000", "-o",
                           (dir_ / "sw").string(), "-j", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  std::set<std::string> points;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind("npusim: sweep: [" + std::to_string(i + 1) + "/3] point ", 0), 0u)
        << lines[i];
    EXPECT_THAT(lines[i], HasSubstr("): ok, "));
    points.insert(lines[i].substr(lines[i].find("point "), 7));
  }
  EXPECT_EQ(points, (std::set<std::string>{"point 0", "point 1", "point 2"}));
  EXPECT_EQ(r.out, "sweep: 3 point(s), 3 ok, 0 failed; written to " +
                       (dir_ / "sw/sweep.csv").string() + " and " +
                       (dir_ / "sw/sweep.json").string() + "\n");
  // --quiet: nothing at all when every point succeeds.
  const Result q = npusim(
      {"sweep", "-m", model("fc"), "--clock-mhz", "400,800", "-o", (dir_ / "q").string(), "-q"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "");
  EXPECT_EQ(q.err, "");
}

TEST_F(Sweep, MergeOfEmittedJobsEqualsTheDirectSweep) {
  const std::vector<std::string> grid = {"-m",      model("convnet"), "--clock-mhz",
                                         "400,800", "--sweep",        "dram.bandwidth_gbps=0,12.8"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep"};
    args.insert(args.end(), grid.begin(), grid.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const fs::path direct = dir_ / "direct";
  const Result d = npusim(with({"-o", direct.string(), "-j", "2"}));
  ASSERT_EQ(d.exit_code, 3) << d.err;

  const fs::path emitted = dir_ / "emitted";
  const fs::path jobs = dir_ / "jobs.txt";
  const Result e = npusim(with({"-o", emitted.string(), "--emit-jobs", jobs.string()}));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_FALSE(fs::exists(emitted / "points"));  // nothing ran
  const auto lines = lines_of(read_file(jobs));
  ASSERT_EQ(lines.size(), 4u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string point = (fs::absolute(emitted) / "points" / std::to_string(i)).string();
    EXPECT_EQ(lines[i].rfind("mkdir -p " + point + " && (", 0), 0u) << lines[i];
    EXPECT_THAT(lines[i], HasSubstr(" run --model=" + model("convnet") + " --config=default"));
    EXPECT_THAT(lines[i], HasSubstr("--out=" + point + " --quiet"));
  }
  EXPECT_THAT(lines[1], HasSubstr("--set=clock_mhz=400 --set=dram.bandwidth_gbps=12.8 "));
  EXPECT_THAT(lines[2], HasSubstr("--set=clock_mhz=800 --set=dram.bandwidth_gbps=0 "));

  // As a job array would: each line on its own, in any order.
  for (const std::size_t i : {3, 0, 2, 1}) {
    const Result line = shell("bash -c " + quote(lines[i]));
    EXPECT_EQ(line.exit_code, i % 2 == 0 ? 2 : 0) << lines[i];
  }
  const Result m = npusim({"sweep", "--merge", emitted.string()});
  EXPECT_EQ(m.exit_code, 3) << m.err;
  EXPECT_THAT(m.err,
              HasSubstr("point 0 (clock_mhz=400 dram.bandwidth_gbps=0) failed: npusim: error: "));
  EXPECT_EQ(read_file(emitted / "sweep.csv"), read_file(direct / "sweep.csv"));
  EXPECT_EQ(read_file(emitted / "sweep.json"), read_file(direct / "sweep.json"));

  // The whole file through bash, then a merge, gives the same again; so does re-merging the
  // direct sweep's own folder.
  fs::remove_all(emitted / "points");
  ASSERT_EQ(shell("bash " + quote(jobs.string())).exit_code, 0);
  EXPECT_EQ(npusim({"sweep", "--merge", emitted.string(), "-q"}).exit_code, 3);
  EXPECT_EQ(read_file(emitted / "sweep.json"), read_file(direct / "sweep.json"));
  const std::string before = read_file(direct / "sweep.csv");
  EXPECT_EQ(npusim({"sweep", "--merge", direct.string(), "-q"}).exit_code, 3);
  EXPECT_EQ(read_file(direct / "sweep.csv"), before);
}

TEST_F(Sweep, MergeReportsPointsThatNeverRan) {
  const fs::path out = dir_ / "sw";
  ASSERT_EQ(npusim({"sweep", "-m", model("fc"), "--clock-mhz", "400,800", "-o", out.string(),
                    "--emit-jobs", (dir_ / "jobs.txt").string(), "-q"})
                .exit_code,
            0);
  const auto lines = lines_of(read_file(dir_ / "jobs.txt"));
  ASSERT_EQ(lines.size(), 2u);
  ASSERT_EQ(shell("bash -c " + quote(lines[1])).exit_code, 0);
  const Result m = npusim({"sweep", "--merge", out.string(), "-q"});
  EXPECT_EQ(m.exit_code, 3);
  EXPECT_THAT(
      m.err,
      HasSubstr("point 0 (clock_mhz=400) failed: not run: no exit code in points/0/exit_code.txt"));
  const Json sweep = Json::parse(read_file(out / "sweep.json"));
  EXPECT_TRUE(sweep["points"][0]["exit_code"].is_null());
  EXPECT_EQ(sweep["points"][1]["status"], "ok");
}

TEST_F(Sweep, BadInputOfTheSweepExits2AndRunsNothing) {
  const std::string out = (dir_ / "sw").string();
  const std::string fc = model("fc");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"sweep", "-m", fc, "--sweep", "foo.bar=1,2", "-o", out},
       "--sweep foo.bar: built-in:default (with --set): /foo: unknown key"},
      {{"sweep", "-m", fc, "--sweep", "slices.bogus=1", "-o", out}, "/slices/bogus: unknown key"},
      {{"sweep", "-m", fc, "--clock-mhz", "400,,800", "-o", out},
       "--clock-mhz: empty value in '400,,800'"},
      {{"sweep", "-m", fc, "--clock-mhz", "400,400", "-o", out}, "value '400' is given twice"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "--sweep", "clock_mhz=800", "-o", out},
       "clock_mhz is swept twice"},
      {{"sweep", "-m", fc, "--sweep", "clock_mhz", "-o", out}, "expected KEY=V1,V2,..."},
      {{"sweep", "-m", fc, "--clock-mhz", "400"}, "--out is required"},
      {{"sweep", "-m", fc, "-o", out}, "nothing to sweep"},
      {{"sweep", "--clock-mhz", "400", "-o", out}, "--model is required"},
      {{"sweep", "-m", (dir_ / "none.json").string(), "--clock-mhz", "400", "-o", out},
       "none.json: no such file"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "-o", out, "--jobs", "0"},
       "--jobs: expected 1 to 4096 processes at a time, found 0"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "-o", out, "--set", "dram.bandwidth_gbps=0"},
       "/dram/bandwidth_gbps: value 0 out of range"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "-o", out, "-c", "nosuchconfig"},
       "nosuchconfig: no such config file"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "-o", out, "--stats-level", "60"},
       "--stats-level: expected 40, 50, 70 or 100"},
      {{"sweep", "-m", fc, "--clock-mhz", "400", "-o", out, "--bogus"},
       "unrecognised option '--bogus'"},
      {{"sweep", "--merge", out},
       "sweep-plan.json: cannot open file: No such file or directory (is this a folder written by "
       "npusim sweep or --emit-jobs?)"},
      {{"sweep", "--merge", out, "--clock-mhz", "400"}, "--merge takes no --clock-mhz"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = npusim(args);
    std::string joined;
    for (const std::string& w : args) joined += " " + w;
    EXPECT_EQ(r.exit_code, 2) << joined << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_FALSE(fs::exists(out)) << message;
  }
}

TEST_F(Sweep, HelpListsTheOptions) {
  const Result r = npusim({"sweep", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* option : {"--clock-mhz", "--slices", "--sweep", "--set", "--jobs", "--emit-jobs",
                             "--merge", "--out"}) {
    EXPECT_THAT(r.out, HasSubstr(option));
  }
  const Result c = npusim({"check", "--help"});
  ASSERT_EQ(c.exit_code, 0);
  for (const char* option : {"--jobs", "--junit", "--update", "--out"})
    EXPECT_THAT(c.out, HasSubstr(option));
  const Result usage = npusim({"--help"});
  EXPECT_THAT(usage.out, HasSubstr("  sweep "));
  EXPECT_THAT(usage.out, HasSubstr("  check "));
}

bool have_matplotlib() {
  return std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
}

TEST_F(Sweep, PlotScriptWritesPngs) {
  if (!have_matplotlib())
    GTEST_SKIP() << "/usr/bin/python3 has no matplotlib (Debian: python3-matplotlib)";
  const std::string script = (kSource / "scripts" / "plot_sweep.py").string();
  EXPECT_EQ(shell(quote(script) + " --help").exit_code, 0);
  const fs::path out = dir_ / "sw";
  ASSERT_EQ(npusim({"sweep", "-m", zoo("bert_base_layer"), "-c", "server", "--clock-mhz",
                    "500,1000", "--slices", "4,8", "-o", out.string(), "-q"})
                .exit_code,
            0);
  const Result r =
      shell(quote(script) + " " + quote(out.string()) + " --out " + quote((dir_ / "png").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, (dir_ / "png/latency.png").string() + "\n" +
                       (dir_ / "png/heatmap_latency_us.png").string() + "\n");
  for (const char* name : {"latency.png", "heatmap_latency_us.png"}) {
    EXPECT_EQ(read_file(dir_ / "png" / name).substr(0, 8), "\x89PNG\r\n\x1a\n") << name;
  }
}

// ---- check --------------------------------------------------------------------------------------

class Check : public Sweep {
 protected:
  // total cycles of fc on the default config, as `npusim run` measures them
  std::uint64_t fc_cycles() const {
    const Result r = npusim({"run", "-m", model("fc"), "-o", (dir_ / "fc_run").string(), "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(read_file(dir_ / "fc_run/stats.json"))["runtime"]["total_cycles"]
        .get<std::uint64_t>();
  }
};

std::string without_times(const std::string& xml) {
  return std::regex_replace(xml, std::regex("time=\"[0-9.]+\""), "time=\"T\"");
}

TEST_F(Check, FailsPassesImprovesAndUpdates) {
  const std::uint64_t a = fc_cycles();
  const std::uint64_t below = a - a / 100;        // 1 % below the actual: a regression
  const std::uint64_t within = a + a * 3 / 1000;  // 0.3 % above: within 0.5 %
  const std::uint64_t above = a + a / 50;         // 2 % above: an improvement
  // The model is found relative to the budget file's folder.
  fs::create_directories(dir_ / "models");
  fs::copy_file(model("fc"), dir_ / "models/fc.json");
  const std::string text =
      "{\n"
      "  \"format\": \"npusim-budgets\",\n"
      "  \"version\": 1,\n"
      "  \"defaults\": {\"tolerance_percent\": 0.5},\n"
      "  \"budgets\": [\n"
      "    {\"name\": \"regressed\", \"model\": \"../models/fc.json\", \"expected\": " +
      std::to_string(below) +
      "},\n"
      "    {\"name\": \"within\", \"model\": \"../models/fc.json\", \"expected\": " +
      std::to_string(within) +
      ", \"description\": \"kept\"},\n"
      "    {\"name\": \"improved\", \"model\": \"../models/fc.json\", \"expected\": " +
      std::to_string(above) +
      "},\n"
      "    {\"name\": \"dma-max\", \"model\": \"../models/fc.json\", \"metric\": "
      "\"runtime/engines/DMA_IN/busy_cycles\", \"max\": 1000000}\n"
      "  ]\n"
      "}\n";
  const fs::path file = write("budgets/b.json", text);
  const fs::path junit = dir_ / "junit.xml";
  const Result r = npusim({"check", file.string(), "--junit", junit.string(), "--jobs", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto table = lines_of(r.out);
  ASSERT_EQ(table.size(), 6u) << r.out;
  EXPECT_THAT(table[0], HasSubstr("name"));
  EXPECT_THAT(table[1], ::testing::StartsWith("regressed"));
  EXPECT_THAT(table[1], ::testing::EndsWith("+1.01  FAIL"));
  EXPECT_THAT(table[2], ::testing::EndsWith("-0.30  PASS"));
  EXPECT_THAT(table[3], ::testing::EndsWith("-1.96  IMPROVED"));
  EXPECT_THAT(table[4], ::testing::EndsWith("PASS"));
  EXPECT_THAT(table[4], HasSubstr("<= 1000000"));
  EXPECT_EQ(table[5], "4 budget(s): 2 PASS, 1 IMPROVED, 1 FAIL, 0 NEW, 0 ERROR");
  // Failures are reported on stderr too.
  EXPECT_THAT(r.err, HasSubstr("regressed: FAIL, /runtime/total_cycles = " + std::to_string(a)));

  const std::string A = std::to_string(a);
  const std::string expected_xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"npusim check\" tests=\"4\" failures=\"1\" errors=\"0\" time=\"T\">\n"
      "  <testsuite name=\"" +
      file.string() +
      "\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"T\">\n"
      "    <testcase classname=\"npusim.check\" name=\"regressed\" time=\"T\">\n"
      "      <failure type=\"FAIL\" message=\"/runtime/total_cycles = " +
      A + ", expected " + std::to_string(below) +
      " +-0.5% (lower is better)\">FAIL: /runtime/total_cycles = " + A + ", expected " +
      std::to_string(below) +
      " +-0.5% (lower is better)</failure>\n"
      "    </testcase>\n"
      "    <testcase classname=\"npusim.check\" name=\"within\" time=\"T\">\n"
      "      <system-out>PASS: /runtime/total_cycles = " +
      A + ", expected " + std::to_string(within) +
      " +-0.5% (lower is better)</system-out>\n"
      "    </testcase>\n"
      "    <testcase classname=\"npusim.check\" name=\"improved\" time=\"T\">\n"
      "      <system-out>IMPROVED: /runtime/total_cycles = " +
      A + ", expected " + std::to_string(above) +
      " +-0.5% (lower is better); tighten the budget (npusim check --update)</system-out>\n"
      "    </testcase>\n"
      "    <testcase classname=\"npusim.check\" name=\"dma-max\" time=\"T\">\n"
      "      <system-out>PASS: /runtime/engines/DMA_IN/busy_cycles = ";
  const std::string xml = without_times(read_file(junit));
  EXPECT_EQ(xml.substr(0, expected_xml.size()), expected_xml);
  EXPECT_THAT(
      xml, ::testing::EndsWith(
               ", maximum 1000000</system-out>\n    </testcase>\n  </testsuite>\n</testsuites>\n"));

  // Only a regression fails: IMPROVED alone exits 0.
  const fs::path improved_only = write(
      "budgets/improved.json",
      "{\"budgets\": [{\"name\": \"improved\", \"model\": \"../models/fc.json\", \"expected\": " +
          std::to_string(above) + "}]}");
  EXPECT_EQ(npusim({"check", improved_only.string()}).exit_code, 0);

  // --update rewrites the expected values in place, keeping order and every other key.
  const Result u = npusim({"check", file.string(), "--update", "-q"});
  EXPECT_EQ(u.exit_code, 0) << u.err;
  const OJson updated = OJson::parse(read_file(file));
  OJson want = OJson::parse(text);
  for (int i = 0; i < 3; ++i) want["budgets"][i]["expected"] = a;
  EXPECT_EQ(updated, want);
  EXPECT_EQ(read_file(file), want.dump(2) + "\n");
  const Result again = npusim({"check", file.string(), "--junit", junit.string()});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("4 budget(s): 4 PASS, 0 IMPROVED, 0 FAIL, 0 NEW, 0 ERROR"));
  const std::string xml2 = read_file(junit);
  EXPECT_THAT(xml2, Not(HasSubstr("<failure")));
  EXPECT_THAT(xml2, Not(HasSubstr("<error")));
}

// An LLM's points carry its time to first token, time per output token and decode rate, as its
// own stats.json has them; decode tokens/s is batch (1) x 1000 / TPOT in ms, by definition.
TEST_F(Sweep, LlmPointsHaveTtftTpotAndTokensPerSecond) {
  const fs::path out = dir_ / "llm";
  // GPT-2 small's layers with 16 tokens of prefill and 4 of decode: the same fields, sooner.
  const fs::path model = npusim::test::llm_with_tokens(kSource / "models/llm/gpt2_small.json",
                                                       dir_ / "gpt2_short.json", 16, 4);
  const Result r = npusim({"sweep", "--model", model.string(), "--config", "server", "--clock-mhz",
                           "500,1000", "--jobs", "2", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto csv = lines_of(read_file(out / "sweep.csv"));
  ASSERT_EQ(csv.size(), 3u);
  const Json sweep = Json::parse(read_file(out / "sweep.json"));
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("point " + std::to_string(i));
    const Json llm =
        Json::parse(read_file(out / "points" / std::to_string(i) / "stats.json"))["llm"];
    const auto f = fields_of(csv[i + 1]);
    ASSERT_EQ(f.size(), 24u) << csv[i + 1];  // one swept key
    EXPECT_EQ(f[19], llm["ttft_ms"].dump());
    EXPECT_EQ(f[20], llm["tpot_mean_ms"].dump());
    EXPECT_EQ(f[21], llm["tpot_p99_ms"].dump());
    EXPECT_EQ(f[22], llm["decode_tokens_per_s"].dump());
    EXPECT_NEAR(std::stod(f[22]), 1000.0 / std::stod(f[20]), 1e-3);
    EXPECT_EQ(sweep["points"][i]["ttft_ms"], llm["ttft_ms"]);
    EXPECT_EQ(sweep["points"][i]["decode_tokens_per_s"], llm["decode_tokens_per_s"]);
  }
  // Twice the clock is never slower to the first token.
  EXPECT_LT(std::stod(fields_of(csv[2])[19]), std::stod(fields_of(csv[1])[19]));
}

TEST_F(Check, ToleranceBoundsAndDirections) {
  const std::uint64_t a = fc_cycles();
  const std::string m = model("fc");
  auto entry = [&](const std::string& name, const std::string& rest) {
    return "{\"name\": \"" + name + "\", \"model\": \"" + m + "\", " + rest + "}";
  };
  const std::string text =
      "{\"budgets\": [" +
      entry("exact", "\"expected\": " + std::to_string(a) + ", \"tolerance_percent\": 0") + ", " +
      entry("max-equal", "\"max\": " + std::to_string(a)) + ", " +
      entry("max-below", "\"max\": " + std::to_string(a - 1)) + ", " +
      entry("min-above", "\"min\": " + std::to_string(a + 1)) + ", " +
      entry("higher-better",
            "\"expected\": " + std::to_string(a * 2) + ", \"better\": \"higher\"") +
      ", " + entry("new", "\"expected\": null") + "]}";
  const fs::path file = write("b.json", text);
  const Result r = npusim({"check", file.string(), "-j", "3"});
  EXPECT_EQ(r.exit_code, 1);
  const auto t = lines_of(r.out);
  ASSERT_EQ(t.size(), 8u) << r.out;
  EXPECT_THAT(t[1], ::testing::EndsWith("+0.00  PASS"));
  EXPECT_THAT(t[2], ::testing::EndsWith("PASS"));
  EXPECT_THAT(t[3], ::testing::EndsWith("FAIL"));
  EXPECT_THAT(t[4], ::testing::EndsWith("FAIL"));
  EXPECT_THAT(t[5], ::testing::EndsWith("-50.00  FAIL"));  // higher is better: half is worse
  EXPECT_THAT(t[6], ::testing::EndsWith("NEW"));
  // --update fills in the new value and the expected ones; the limits stay and still fail.
  const Result u = npusim({"check", file.string(), "--update", "-q"});
  EXPECT_EQ(u.exit_code, 1);
  const Json j = Json::parse(read_file(file));
  EXPECT_EQ(j["budgets"][5]["expected"], a);
  EXPECT_EQ(j["budgets"][4]["expected"], a);
  EXPECT_EQ(j["budgets"][2]["max"], a - 1);
  EXPECT_EQ(j["budgets"][3]["min"], a + 1);
}

TEST_F(Check, RunThatCannotCompleteIsAnError) {
  const std::string text = std::string("{\"budgets\": [") + "{\"name\": \"ok\", \"model\": \"" +
                           model("fc") + "\", \"max\": 1e12}, " +
                           "{\"name\": \"tiny-lram\", \"model\": \"" + model("convnet") +
                           "\", \"overrides\": {\"lram_kib\": 48}, \"max\": 1e12}]}";
  const fs::path file = write("b.json", text);
  const fs::path junit = dir_ / "j.xml";
  const Result r = npusim({"check", file.string(), "--junit", junit.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 PASS, 0 IMPROVED, 0 FAIL, 0 NEW, 1 ERROR"));
  EXPECT_THAT(r.err, HasSubstr("tiny-lram: ERROR, npusim run failed (exit 3): npusim: estimate "
                               "failed: local memory capacity exceeded"));
  const std::string xml = without_times(read_file(junit));
  EXPECT_THAT(xml, HasSubstr("tests=\"2\" failures=\"0\" errors=\"1\""));
  EXPECT_THAT(xml,
              HasSubstr("<testcase classname=\"npusim.check\" name=\"tiny-lram\" time=\"T\">\n     "
                        " <error type=\"ERROR\" message=\"npusim run failed (exit 3): npusim: "
                        "estimate failed: local memory capacity exceeded"));
}

TEST_F(Check, BadBudgetFilesExit2NamingFileAndPointer) {
  const std::string fc = model("fc");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"expected\": 1, \"bogus\": 2}]}",
       {": /budgets/0/bogus: unknown key"}},
      {"{\"budgets\": [], \"extra\": 1}",
       {": /extra: unknown key", ": /budgets: expected a non-empty array"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc + "\", \"expected\": 1",
       {": byte ", "malformed JSON: "}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"missing.json\", \"expected\": 1}]}",
       {": /budgets/0/model: no such file 'missing.json' (looked for " +
        (dir_ / "missing.json").string() + ")"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc + "\"}]}",
       {": /budgets/0: give exactly one of"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1, \"tolerance_percent\": 2}]}",
       {": /budgets/0/tolerance_percent: applies to \"expected\" budgets only"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1}, {\"name\": \"a\", \"model\": \"" + fc + "\", \"max\": 1}]}",
       {": /budgets/1/name: duplicate name 'a'"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1, \"config\": \"nope\"}]}",
       {": /budgets/0/config: no such config file 'nope'"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1, \"overrides\": {\"dram.bogus\": 1}}]}",
       {": /budgets/0/overrides: built-in:default (with --set): /dram/bogus: unknown key"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1, \"metric\": \"/x~9\"}]}",
       {": /budgets/0/metric: '/x~9' is not a JSON pointer"}},
      {"{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc + "\", \"max\": \"1\"}]}",
       {": /budgets/0/max: expected a number"}},
      {"{\"format\": \"other\", \"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
           "\", \"max\": 1, \"stats_level\": 60}]}",
       {": /format: expected \"npusim-budgets\"",
        ": /budgets/0/stats_level: expected 40, 50, 70 or 100"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const fs::path file = write("bad" + std::to_string(i) + ".json", cases[i].first);
    const Result r = npusim({"check", file.string(), "--junit", (dir_ / "j.xml").string()});
    EXPECT_EQ(r.exit_code, 2) << cases[i].first << "\n" << r.err;
    for (const std::string& message : cases[i].second) {
      EXPECT_THAT(r.err, HasSubstr("npusim: error: ")) << cases[i].first;
      EXPECT_THAT(r.err, HasSubstr(message[0] == ':' ? file.string() + message : message))
          << cases[i].first;
    }
    EXPECT_FALSE(fs::exists(dir_ / "j.xml"));  // nothing ran, nothing written
  }
  // A metric that is not in stats.json is found after the run, and is bad input too.
  const fs::path file = write("metric.json", "{\"budgets\": [{\"name\": \"a\", \"model\": \"" + fc +
                                                 "\", \"max\": 1, \"metric\": \"runtime/nope\"}]}");
  const Result r = npusim({"check", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(file.string() +
                               ": /budgets/0/metric: metric /runtime/nope is not in stats.json"));
  // No budget file, or one that does not exist.
  EXPECT_EQ(npusim({"check"}).exit_code, 2);
  const Result missing = npusim({"check", (dir_ / "none.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr((dir_ / "none.json").string() + ": cannot open file"));
}

TEST_F(Check, StartsTheLargestRecordedRunFirstAndReportsInFileOrder) {
  auto entry = [&](const std::string& name, const std::string& m) {
    return "{\"name\": \"" + name + "\", \"model\": \"" + model(m) + "\", \"max\": 1e12}";
  };
  const fs::path file = write("b.json", "{\"budgets\": [" + entry("a", "fc") + ", " +
                                            entry("b", "convnet") + ", " + entry("c", "fc") + "]}");
  // Recorded sizes: b is the largest; c has none (new), so it may be the longest: first.
  write("b.sizes.json", "{\"commands\": {\"a\": 4, \"b\": 44}}");
  const Result r = npusim({"check", file.string(), "-j", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto progress = lines_of(r.err);
  ASSERT_EQ(progress.size(), 3u) << r.err;
  EXPECT_THAT(progress[0], HasSubstr("] c: PASS"));
  EXPECT_THAT(progress[1], HasSubstr("] b: PASS"));
  EXPECT_THAT(progress[2], HasSubstr("] a: PASS"));
  const auto table = lines_of(r.out);
  ASSERT_EQ(table.size(), 5u) << r.out;
  EXPECT_EQ(table[1].substr(0, 2), "a ");
  EXPECT_EQ(table[2].substr(0, 2), "b ");
  EXPECT_EQ(table[3].substr(0, 2), "c ");
  // --update records every entry's command count; the budget file keeps its limits.
  ASSERT_EQ(npusim({"check", file.string(), "--update", "-q"}).exit_code, 0);
  const Json sizes = Json::parse(read_file(dir_ / "b.sizes.json"));
  EXPECT_EQ(sizes["commands"], Json::parse("{\"a\": 4, \"b\": 44, \"c\": 4}"));
}

TEST_F(Check, KeepsOutputsWithOut) {
  const fs::path file =
      write("b.json", "{\"budgets\": [{\"name\": \"fc/default\", \"model\": \"" + model("fc") +
                          "\", \"max\": 1e12, \"stats_level\": 70}]}");
  const Result r = npusim({"check", file.string(), "--out", (dir_ / "runs").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(fs::exists(dir_ / "runs/0-fc_default/stats.json"));
  EXPECT_EQ(Json::parse(read_file(dir_ / "runs/0-fc_default/stats.json"))["stats_level"], 70);
}

}  // namespace
