// Every layer of every SCALE-Sim topology in ../shared/models/scalesim/, on 32x32 and 128x128
// arrays, os, ws and is, through the documented recipe:
//   npusim run TOPOLOGY.csv --config scale.cfg --ideal-memory; npusim report --layers --format csv
// Each layer's Total Cycles must equal SCALE-Sim v2's COMPUTE_REPORT. The expected values come
// from an oracle written here from SCALE-Sim's source (scalesim-project/scale-sim-v2 @22f88b17),
// not from npusim's code:
// - topology_utils.py: the header line is skipped, the field after the last comma is dropped, a
//   single stride serves both directions; conv ofmap = ceil((H - F + S) / S); a GEMM row
//   "name, M, N, K," is ifmap M x K, filter 1 x K, 1 channel, N filters;
// - M = ofmap_h * ofmap_w, K = filter_h * filter_w * channels, N = filters;
// - systolic_compute_{os,ws,is}.py: (Sr, Sc, T) = os (M, N, K), ws (K, N, M), is (K, M, N);
//   folds = ceil(Sr/R) * ceil(Sc/C); demand rows per fold P = R + C + T - 2 (os),
//   2R + C + T - 2 (ws, is);
// - double_buffered_scratchpad_mem.py: Total Cycles = folds * P - 1 (with no stalls, CALC mode);
// - Mapping Efficiency % = 100 * Sr * Sc / (folds * R * C); Compute Util % multiplies it by T over
//   P (os) or P + C - 1 (ws, is); Overall Util % = 100 * M * N * K / (Total * R * C).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_support.h"

namespace npusim::test {
namespace {

namespace fs = std::filesystem;

struct OracleLayer {
  std::string name;
  std::uint64_t total = 0;
  double mapping_pct = 0, compute_pct = 0, overall_pct = 0;
};

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream s(line);
  std::string f;
  while (std::getline(s, f, ',')) fields.push_back(f);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  fields.pop_back();  // SCALE-Sim drops what follows the last comma
  return fields;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::vector<OracleLayer> oracle(const fs::path& topology, bool gemm, std::uint64_t r,
                                std::uint64_t c, const std::string& dataflow) {
  std::ifstream in(topology);
  std::string line;
  std::getline(in, line);  // header
  std::vector<OracleLayer> layers;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    const std::vector<std::string> f = split_fields(line);
    // Resnet50.csv has a row of bare commas and extra empty columns: rows with no name are not
    // layers, and an empty second stride means one stride for both directions.
    if (f.empty() || f[0].find_first_not_of(" \t") == std::string::npos) continue;
    std::uint64_t m = 0, n = 0, k = 0;
    if (gemm) {
      m = std::stoull(f[1]), n = std::stoull(f[2]), k = std::stoull(f[3]);
    } else {
      const std::uint64_t h = std::stoull(f[1]), w = std::stoull(f[2]);
      const std::uint64_t fh = std::stoull(f[3]), fw = std::stoull(f[4]);
      const std::uint64_t ch = std::stoull(f[5]), filters = std::stoull(f[6]);
      const std::uint64_t sh = std::stoull(f[7]);
      const std::uint64_t sw = f.size() > 8 && !f[8].empty() ? std::stoull(f[8]) : sh;
      const std::uint64_t oh = ceil_div(h - fh + sh, sh), ow = ceil_div(w - fw + sw, sw);
      m = oh * ow, k = fh * fw * ch, n = filters;
    }
    std::uint64_t sr = k, sc = n, t = m;  // ws
    if (dataflow == "os") sr = m, sc = n, t = k;
    if (dataflow == "is") sr = k, sc = m, t = n;
    const std::uint64_t folds = ceil_div(sr, r) * ceil_div(sc, c);
    const std::uint64_t p = (dataflow == "os" ? 0 : r) + r + c + t - 2;
    OracleLayer l;
    // npusim names a layer by its trimmed name field.
    l.name = f[0].substr(0, f[0].find_last_not_of(" \t") + 1);
    l.total = folds * p - 1;
    l.mapping_pct = 100.0 * static_cast<double>(sr * sc) / static_cast<double>(folds * r * c);
    l.compute_pct = l.mapping_pct * static_cast<double>(t) /
                    static_cast<double>(dataflow == "os" ? p : p + c - 1);
    l.overall_pct = 100.0 * static_cast<double>(m * n * k) / static_cast<double>(l.total * r * c);
    layers.push_back(l);
  }
  return layers;
}

// A SCALE-Sim config as its configs/scale.cfg is laid out, with the array and dataflow set.
std::string scale_cfg(std::uint64_t r, std::uint64_t c, const std::string& dataflow) {
  return "[general]\nrun_name = scale_test\n\n[architecture_presets]\nArrayHeight:    " +
         std::to_string(r) + "\nArrayWidth:     " + std::to_string(c) +
         "\nIfmapSramSzkB:    6144\nFilterSramSzkB:   6144\nOfmapSramSzkB:    2048\n"
         "IfmapOffset:    0\nFilterOffset:   10000000\nOfmapOffset:    20000000\n"
         "Dataflow : " +
         dataflow +
         "\nBandwidth : 10\nMemoryBanks: 1\n\n"
         "[run_presets]\nInterfaceBandwidth: CALC\n";
}

struct Case {
  std::string topology;  // path under ../shared/models/scalesim
  std::uint64_t array;
  std::string dataflow;
};

class ScaleSimReference : public ::testing::TestWithParam<Case> {};

TEST_P(ScaleSimReference, EveryLayerEqualsScaleSimsComputeReport) {
  const Case& k = GetParam();
  const fs::path topology =
      fs::path(NPUSIM_SOURCE_DIR) / ".." / "shared" / "models" / "scalesim" / k.topology;
  ASSERT_TRUE(fs::exists(topology)) << topology << " is missing: ../shared/models must be present";
  const bool gemm = k.topology.rfind("gemm/", 0) == 0;
  const std::vector<OracleLayer> expected = oracle(topology, gemm, k.array, k.array, k.dataflow);

  const fs::path dir =
      fs::temp_directory_path() / ("npusim_scalesim_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "scale.cfg") << scale_cfg(k.array, k.array, k.dataflow);
  const std::string run = quote(NPUSIM_BINARY) + " run " + quote(topology.string()) + " --config " +
                          quote((dir / "scale.cfg").string()) + " --ideal-memory -q -o " +
                          quote((dir / "out").string()) + " 2>" + quote((dir / "err").string());
  ASSERT_EQ(std::system(run.c_str()), 0) << read_file(dir / "err");
  const std::string report = quote(NPUSIM_BINARY) + " report " + quote((dir / "out").string()) +
                             " --layers --format csv >" + quote((dir / "layers.csv").string());
  ASSERT_EQ(std::system(report.c_str()), 0);

  std::ifstream csv(dir / "layers.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, "
                       "Compute Util %,",
                       0),
            0u)
      << line;
  std::size_t row = 0;
  while (std::getline(csv, line)) {
    ASSERT_LT(row, expected.size()) << "more layers than the topology has: " << line;
    std::vector<std::string> f;
    std::stringstream s(line);
    std::string field;
    while (std::getline(s, field, ','))
      f.push_back(field.empty() || field[0] != ' ' ? field : field.substr(1));
    const OracleLayer& e = expected[row];
    EXPECT_EQ(f[0], std::to_string(row));
    EXPECT_EQ(f[6], e.name) << "row " << row;
    EXPECT_EQ(std::stoull(f[1]), e.total) << e.name;  // Total Cycles: zero error
    EXPECT_EQ(std::stoull(f[2]), 0u) << e.name;       // Stall Cycles, as in CALC mode
    EXPECT_NEAR(std::stod(f[3]), e.overall_pct, 1e-9 * e.overall_pct) << e.name;
    EXPECT_NEAR(std::stod(f[4]), e.mapping_pct, 1e-9 * e.mapping_pct) << e.name;
    EXPECT_NEAR(std::stod(f[5]), e.compute_pct, 1e-9 * e.compute_pct) << e.name;
    ++row;
  }
  EXPECT_EQ(row, expected.size());
  fs::remove_all(dir);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const fs::path root = fs::path(NPUSIM_SOURCE_DIR) / ".." / "shared" / "models" / "scalesim";
  std::vector<std::string> files;
  for (const char* sub : {"conv_nets", "gemm"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root / sub, ec)) {
      if (e.path().extension() == ".csv")
        files.push_back(std::string(sub) + "/" + e.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  // A missing ../shared makes one case that fails with a clear message, not zero cases.
  if (files.empty()) files.push_back("conv_nets/missing.csv");
  for (const std::string& f : files) {
    for (std::uint64_t a : {32u, 128u}) {
      for (const char* df : {"os", "ws", "is"}) cases.push_back({f, a, df});
    }
  }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n =
      info.param.topology + "_" + std::to_string(info.param.array) + "_" + info.param.dataflow;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Topologies, ScaleSimReference, ::testing::ValuesIn(all_cases()),
                         case_name);

}  // namespace
}  // namespace npusim::test
