// The streaming loader (load_schedule, which never holds the file as one JSON document) against
// the document loader (parse_schedule of the parsed file): the same commands and costs, or the
// same problems in the same order, for every schedule the project has and for broken variants.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/compiler/compiler.h"
#include "sim/frontend/graph_json.h"
#include "sim/ir/schedule.h"
#include "sim/ir/schedule_writer.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace npusim {
namespace {

namespace fs = std::filesystem;

const HwConfig& config() {
  static const HwConfig c = parse_hw_config("{}", "cfg");
  return c;
}

// Everything a load yields: the schedule in its JSON form with every cost, or the error text.
std::string describe(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(out, s);
  out << s.file << ' ' << s.model.name << ' ' << s.target_config << ' ' << s.target_slices << '\n';
  for (const Command& c : s.commands) {
    out << c.program << ' ' << c.lram_alloc_bytes << ' ' << c.lram_free_bytes << ' ' << c.macs
        << ' ' << c.vector_macs << ' ' << c.compute_cycles << ' ' << c.isolated_cycles << '\n';
  }
  return out.str();
}

std::string streamed(const std::string& path) {
  try {
    return describe(load_schedule(path, config()));
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

std::string from_document(const std::string& path) {
  try {
    return describe(parse_schedule(read_json_file(path), path, config()));
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_(fs::temp_directory_path() /
              ("npusim_stream_" +
               std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
               std::to_string(counter_++) + ".json")) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void expect_same(const std::string& path) {
  SCOPED_TRACE(path);
  EXPECT_EQ(streamed(path), from_document(path));
}

void expect_same_text(const std::string& text) {
  SCOPED_TRACE(text.substr(0, 400));
  const TempFile file(text);
  EXPECT_EQ(streamed(file.path()), from_document(file.path()));
}

std::vector<std::string> json_files_under(const fs::path& dir) {
  std::vector<std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kSource = NPUSIM_SOURCE_DIR;

TEST(ScheduleStream, EveryScheduleFileLoadsAsItsDocument) {
  std::vector<std::string> files = {kSource + "/models/fc.json", kSource + "/models/convnet.json"};
  for (const char* dir : {"/tests/fuzz/corpus/schedule", "/tests/fuzz/regressions/schedule"}) {
    for (const std::string& f : json_files_under(kSource + dir)) files.push_back(f);
  }
  ASSERT_GE(files.size(), 8u);
  for (const std::string& f : files) expect_same(f);
}

TEST(ScheduleStream, EveryFuzzInputLoadsAsItsDocument) {
  // Inputs of the other fuzz targets are not schedules; their problems must still agree.
  for (const char* dir : {"/tests/fuzz/corpus", "/tests/fuzz/regressions"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kSource + dir)) {
      if (entry.is_regular_file() && entry.path().extension() != ".md" &&
          entry.path().extension() != ".py")
        expect_same(entry.path().string());
    }
  }
}

TEST(ScheduleStream, CompiledZooSchedulesLoadAsTheirDocuments) {
  for (const std::string& model : json_files_under(kSource + "/models/zoo")) {
    if (model.find("llm7b") != std::string::npos) continue;  // 300k commands: seconds, no news
    std::ostringstream text;
    write_schedule_json(text, compile_schedule(load_graph_json(model), config()));
    const TempFile file(text.str());
    SCOPED_TRACE(model);
    const std::string loaded = streamed(file.path());
    EXPECT_EQ(loaded.rfind("error", 0), std::string::npos) << loaded.substr(0, 2000);
    EXPECT_EQ(loaded, from_document(file.path()));
  }
}

// Problems in each part of a schedule, with the commands before the programs they name (as a
// writer that sorts keys puts them), repeated keys and broken JSON.
TEST(ScheduleStream, BrokenSchedulesGiveTheSameProblems) {
  const std::string model = R"("format": "npusim-schedule", "version": 1, "model": {"name": "m"})";
  const std::string dma = R"({"id": "DI0", "engine": "DMA_IN", "bytes": 16})";
  const std::vector<std::string> texts = {
      // programs after the commands: in range, out of range, not an integer, among other problems
      "{\"commands\": [" + dma +
          R"(, {"id": "DI1", "engine": "DMA_IN", "bytes": 16, "program": 1}], )" + model +
          R"(, "programs": [{"name": "a"}, {"name": "b"}]})",
      "{\"commands\": [" + dma +
          R"(, {"id": "X1", "engine": "DMA_IN", "bytes": 0, "program": 7, "deps": [3, "DI9"], "free": [""]}], )" +
          model + R"(, "programs": [{"name": "a"}, {"name": "b"}], "extra": 1})",
      "{" + model +
          R"(, "commands": [{"id": "DI1", "engine": "DMA_IN", "bytes": 16, "program": "x"},
          {"id": "DI2", "engine": "DMA_IN", "bytes": 16, "program": 2.5},
          {"id": "DI3", "engine": "DMA_IN", "bytes": 16, "program": 1e3},
          {"id": "DI4", "engine": "DMA_IN", "bytes": 16, "program": 18446744073709551615}]})",
      // commands that are not objects, unknown engines and ops, shapes and buffers
      "{" + model + R"(, "commands": [1, null, [], "S0", {"id": "S0", "engine": "GPU"},
          {"id": "S1", "engine": "SLICE", "slice": 9, "op": "Foo", "shape": {}},
          {"id": "S2", "engine": "SLICE", "slice": 0, "op": "Conv", "shape": {"in_h": 1, "in_w": 1,
           "in_c": 3, "out_c": 4, "kernel_h": 3, "kernel_w": 3, "groups": 2, "bogus": 1}},
          {"id": "DI1", "engine": "DMA_IN", "bytes": 16, "alloc": [{"buffer": "b", "bytes": 1}, {}],
           "free": ["b", "c"]}, {"id": "DI1", "engine": "DMA_IN", "bytes": 16, "deps": ["DI1", "S2", "S2"]}]})",
      // a cycle, and a free by a command that does not depend on the allocator
      "{" + model +
          R"(, "commands": [{"id": "DI0", "engine": "DMA_IN", "bytes": 16, "deps": ["DI1"]},
          {"id": "DI1", "engine": "DMA_IN", "bytes": 16, "deps": ["DI0"]}]})",
      "{" + model + R"(, "commands": [{"id": "DI0", "engine": "DMA_IN", "bytes": 16,
          "alloc": [{"buffer": "x", "bytes": 4}]}, {"id": "DO0", "engine": "DMA_OUT", "bytes": 16, "free": ["x"]}]})",
      // repeated "commands": the last one counts, whether an array or not
      "{" + model + ", \"commands\": [" + dma + R"(], "commands": {"a": 1}})",
      "{" + model + R"(, "commands": {"a": 1}, "commands": [)" + dma + "]}",
      "{" + model + ", \"commands\": [" + dma + R"(], "commands": [{"id": "S0"}]})",
      "{" + model + "}",
      "{" + model + R"(, "commands": "none"})",
      "[" + dma + "]",
      "42",
      "",
      "{" + model + ", \"commands\": [" + dma + "]",
      "{" + model + ", \"commands\": [" + dma + "]} x",
      "{" + model + ", \"commands\": [" + dma + R"(, {"id": 1e400}]})",
      "{" + model + ", \"commands\": [" + dma + ", \"\\ud800\"]}",
      // nesting too deep, after a syntax error and inside a command
      "{\"a\": tru, \"b\": " + std::string(600, '[') + std::string(600, ']') + "}",
      "{" + model + ", \"commands\": [{\"id\": " + std::string(700, '[') + std::string(700, ']') +
          "}]}",
      "{" + model + R"(, "commands": [{"id": "a\"[[[[", "engine": "DMA_IN", "bytes": 1}]})",
  };
  for (const std::string& text : texts) expect_same_text(text);
}

// Single-byte edits of a real schedule, from a fixed seed: whatever they break, both loaders
// must report it alike.
TEST(ScheduleStream, EditedSchedulesGiveTheSameProblems) {
  const std::string base = read(kSource + "/models/convnet.json");
  ASSERT_FALSE(base.empty());
  std::mt19937 rng(17);
  const std::string alphabet = "{}[],:\"0123456789-.eE aDIOS_x\\";
  for (int i = 0; i < 150; ++i) {
    std::string text = base;
    const std::size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      default:
        text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        break;
    }
    expect_same_text(text);
  }
}

}  // namespace
}  // namespace npusim
