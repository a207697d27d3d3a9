// Replays, through the fuzz targets' entry functions (tests/fuzz/fuzz_entries.h), every input a
// fuzzer found a bug with (tests/fuzz/regressions/<target>/, one file per finding, kept after the
// fix) and every seed of the corpora (tests/fuzz/corpus/<target>/). Built with the ordinary
// compiler and no libFuzzer, so the findings stay fixed in every build; a crash fails the test
// with the process, an unexpected exception with its message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/config/builtin_configs.h"
#include "sim/config/hw_config.h"
#include "sim/frontend/graph_json.h"
#include "sim/frontend/onnx_import.h"
#include "sim/frontend/scalesim.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "tests/fuzz/fuzz_entries.h"

namespace npusim::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzzDir = fs::path(NPUSIM_SOURCE_DIR) / "tests" / "fuzz";

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name != "README.md" && name.front() != '.')
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Entry entry_of(const std::string& target) {
  for (const Target& t : targets()) {
    if (target == t.name) return t.entry;
  }
  return nullptr;
}

void replay(const std::string& target, const fs::path& dir) {
  const Entry entry = entry_of(target);
  ASSERT_NE(entry, nullptr);
  for (const fs::path& file : files_in(dir)) {
    SCOPED_TRACE(file.string());
    const std::vector<std::uint8_t> data = bytes_of(file);
    EXPECT_NO_THROW(entry(data.data(), data.size()));
  }
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const Target& t : targets()) names.emplace_back(t.name);
  return names;
}

class FuzzReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzReplay, Regressions) { replay(GetParam(), kFuzzDir / "regressions" / GetParam()); }

TEST_P(FuzzReplay, Corpus) {
  EXPECT_FALSE(files_in(kFuzzDir / "corpus" / GetParam()).empty()) << "no seeds for " << GetParam();
  replay(GetParam(), kFuzzDir / "corpus" / GetParam());
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(target_names()),
                         [](const ::testing::TestParamInfo<std::string>& target) {
                           return target.param;
                         });

// Findings whose inputs are too large to keep as files, generated here.
std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

void run_text(Entry entry, const std::string& text) {
  EXPECT_NO_THROW(entry(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

// 200000 levels of nesting used to overflow the stack where a loader printed the value in its
// error message (nlohmann's dump() recurses per level): now past 512 levels a file is rejected.
TEST(FuzzRegressions, DeeplyNestedJson) {
  const std::string deep = nested(200000);
  run_text(fuzz_hw_config, "{\"clock_mhz\": " + deep + "}");
  run_text(fuzz_hw_config, std::string("{}") + '\0' + "clock_mhz=" + deep);
  run_text(fuzz_schedule,
           R"({"format": "npusim-schedule", "version": 1, "model": {"name": "m"}, "commands": [)"
           R"({"id": "DI0", "engine": "DMA_IN", "bytes": 1, "deps": [)" +
               deep + "]}]}");
  run_text(fuzz_graph_json, R"({"format": "npusim-graph", "version": 1, "name": )" + deep + "}");
}

// Every regression folder belongs to a target (a typo would silently replay nothing).
TEST(FuzzRegressions, FoldersNameTargets) {
  for (const fs::path& dir : {kFuzzDir / "regressions", kFuzzDir / "corpus"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_directory()) continue;
      EXPECT_NE(entry_of(entry.path().filename().string()), nullptr) << entry.path();
    }
  }
}

// ---- issue 17: the inputs of the bad-input corpus, each rejected by its loader (exit 2 in the
// CLI) with a message that names the file and the field or layer, or compiled without wrapping.

const fs::path kRegressions = kFuzzDir / "regressions";

// The message of the InputError that `load` throws; "" (and a test failure) when it throws none.
template <typename F>
std::string rejection(F&& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

HwConfig default_hw() {
  for (const BuiltinConfig& b : builtin_configs()) {
    if (b.name == "default") return parse_hw_config(std::string(b.json), "built-in:default");
  }
  throw std::logic_error("no built-in config 'default'");
}

TEST(FuzzRegressions, NonRegularFilesAreRejectedBeforeReading) {
  EXPECT_EQ(rejection([] { read_text_file("/dev/zero"); }),
            "/dev/zero: is a device, not a regular file");
  EXPECT_EQ(rejection([] { load_graph_json(kRegressions.string()); }),
            kRegressions.string() + ": is a folder, not a file");
  EXPECT_EQ(rejection([] { import_onnx("/dev/zero", OnnxImportOptions{}); }),
            "/dev/zero: is a device, not a regular file");
}

TEST(FuzzRegressions, GeometryIsCheckedAtTheLayer) {
  const fs::path pad = kRegressions / "graph_json" / "conv_window_in_padding.json";
  EXPECT_EQ(rejection([&] { load_graph_json(pad.string()); }),
            pad.string() +
                ": layer 'L' (loc(\"conv_window_in_padding.json\":/layers/0)): pads [4, 4, 4, 4] "
                "are not smaller than the kernel window 1x1: its first output row would read "
                "only padding");
  const fs::path stride = kRegressions / "topology" / "stride_larger_than_ifmap.csv";
  EXPECT_EQ(rejection([&] { load_scalesim_topology(stride.string()); }),
            stride.string() + ": row 3: layer 'wide': stride 8x8 is larger than the IFMAP 4x4");
  const fs::path unproduced = kRegressions / "graph_json" / "output_never_produced.json";
  EXPECT_EQ(rejection([&] { load_graph_json(unproduced.string()); }),
            unproduced.string() +
                ": graph outputs: output tensor 'z' is never produced (no layer writes it and it "
                "is not a graph input)");
}

// SCALE-Sim's output size for a 5x5 IFMAP, 1x1 filter, stride 3 is ceil((5 - 1 + 3) / 3) = 3:
// the third output row and column start at input row and column 6, past the input, so their tiles
// read nothing. The input tile of a tile of them used to be 2^64 - lo bytes. No buffer may be
// larger than the whole input, 5 x 5 x 300 int8 = 7500 bytes.
TEST(FuzzRegressions, TilesWhollyInTheTrailingPaddingReadNothing) {
  const Graph g = load_scalesim_topology(
      (kRegressions / "topology" / "window_in_trailing_padding.csv").string());
  const Schedule s = compile_schedule(g, default_hw());
  ASSERT_FALSE(s.commands.empty());
  for (const Command& c : s.commands) {
    for (const BufferAlloc& a : c.alloc) EXPECT_LE(a.bytes, 7500u) << c.id;
  }
}

TEST(FuzzRegressions, HugeLayersAreRejectedBeforeAllocatingNamingThem) {
  const fs::path relu = kRegressions / "graph_json" / "relu_2_48_elements.json";
  const Graph g = load_graph_json(relu.string());
  const std::string message = rejection([&] { compile_schedule(g, default_hw()); });
  EXPECT_EQ(message.rfind(relu.string() + ": layer 'L' loc(\"relu_2_48_elements.json\":/layers/0): "
                                          "compiling for this config takes about ",
                          0),
            0u)
      << message;
}

TEST(FuzzRegressions, OnnxVersionsAndExternalDataAreChecked) {
  const fs::path onnx = kRegressions / "onnx";
  auto import = [&](const std::string& name) {
    return rejection([&] { import_onnx((onnx / name).string(), OnnxImportOptions{}); });
  };
  EXPECT_EQ(import("opset_999.onnx"),
            (onnx / "opset_999.onnx").string() +
                ": opset_import: default-domain opset 999 is not supported (npusim reads opsets 1 "
                "to 21)");
  EXPECT_EQ(import("ir_version_11.onnx"),
            (onnx / "ir_version_11.onnx").string() +
                ": ir_version: IR version 11 is not supported (npusim reads IR versions 3 to 10)");
  EXPECT_EQ(import("external_data_missing.onnx"),
            (onnx / "external_data_missing.onnx").string() +
                ": initializer 'w': external data file 'weights_not_here.bin' (" +
                (onnx / "weights_not_here.bin").string() +
                "): cannot open file: No such file or directory");
}

}  // namespace
}  // namespace npusim::fuzz
