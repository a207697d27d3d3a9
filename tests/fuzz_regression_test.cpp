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

}  // namespace
}  // namespace npusim::fuzz
