// The file loaders against the document loader (parse_schedule of the parsed file): the fast
// reader (load_schedule) and the exact streaming path (nlohmann's SAX parser, each command built
// as a JSON value) give the same commands and costs, or the same problems in the same order, for
// every schedule the project has and for broken variants.
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
#include "sim/ir/schedule_fast.h"
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

std::string exact(const std::string& path) {
  try {
    return describe(detail::load_schedule_exact(path, config()));
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
  const std::string document = from_document(path);
  EXPECT_EQ(streamed(path), document);
  EXPECT_EQ(exact(path), document);
}

void expect_same_text(const std::string& text) {
  SCOPED_TRACE(text.substr(0, 400));
  const TempFile file(text);
  expect_same(file.path());
}

// How the fast reader took the file: whether it read it at all, and how many commands it left to
// the exact path.
detail::FastReadResult fast_read(const std::string& text) {
  const TempFile file(text);
  detail::CommandStream stream(file.path(), config());
  Json root;
  return detail::read_schedule_fast(file.path(), stream, root);
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
    EXPECT_EQ(loaded, exact(file.path()));
    // The fast reader read every command itself: the comparison above is of the fast path.
    const detail::FastReadResult fast = fast_read(text.str());
    EXPECT_TRUE(fast.read);
    EXPECT_EQ(fast.exact_commands, 0u);
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

// Single-byte edits of `base`, from a fixed seed: whatever they break, the loaders must report
// it alike.
void edit_and_compare(const std::string& base, int edits) {
  ASSERT_FALSE(base.empty());
  std::mt19937 rng(17);
  const std::string alphabet = "{}[],:\"0123456789-.eE aDIOS_x\\";
  for (int i = 0; i < edits; ++i) {
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

TEST(ScheduleStream, EditedSchedulesGiveTheSameProblems) {
  for (const char* name : {"/models/convnet.json", "/models/fc.json"}) {
    SCOPED_TRACE(name);
    edit_and_compare(read(kSource + name), 300);
  }
}

// Texts written to reach each way out of the fast reader: values it decodes itself (escapes,
// UTF-8, numbers) and everything it hands to the exact path (a command with an unknown key, a
// value of another type or out of range, a string it does not decode, broken JSON).
TEST(ScheduleStream, FastReaderEdgeCasesLoadAsTheirDocuments) {
  const std::string head = R"({"format": "npusim-schedule", "version": 1, "model": {"name": "m"},
      "programs": [{"name": "p0"}, {"name": "p1"}], "commands": [)";
  const std::string dma = R"({"id": "DI0", "engine": "DMA_IN", "bytes": 16})";
  const std::vector<std::string> commands = {
      // strings: escapes, UTF-8 (valid and not), surrogates, control characters
      R"J({"id": "S0", "engine": "SLICE", "slice": 1, "op": "Gemm", "shape": {"m": 1, "n": 2, "k": 3}, "layer": "l\u00e9\u4e2d\n\t\"\\\/\b\f\r", "loc": "loc(\"x\")"})J",
      std::string(R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "layer": ")") +
          "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"}",
      "{\"id\": \"DI1\", \"engine\": \"DMA_IN\", \"bytes\": 1, \"layer\": \"bad \xc3\x28\"}",
      "{\"id\": \"DI1\", \"engine\": \"DMA_IN\", \"bytes\": 1, \"layer\": \"bad \xed\xa0\x80\"}",
      "{\"id\": \"DI1\", \"engine\": \"DMA_IN\", \"bytes\": 1, \"layer\": \"tab\tin\"}",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "loc": "\ud83d\ude00"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "loc": "\ud83d"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "loc": "\u00zz"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "loc": "\q"})",
      R"({"id": "D\u00491", "engine": "DMA_\u0049N", "bytes": 1})",
      R"({"i\u0064": "DI1", "engine": "DMA_IN", "bytes": 1})",
      // numbers
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1e3})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 16.0})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 16.5})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": -16})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 016})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 0})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 281474976710656})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 281474976710657})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 123456789012345678901234567890})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": 1})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": 2})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": 999999999999999999})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": 18446744073709551615})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": 0})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "program": "1"})",
      // keys: repeated, unknown (a field a later version adds), of another type, missing
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "bytes": 2})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "device": 0})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": "DI0"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": ["DI0", 0]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": ["DI0", "DI0"]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": ["DI1"]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": [""]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": []})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "layer": null})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "op": "DMA_IN"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "op": "DMA_OUT"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "slice": 0})",
      R"({"id": "DI1", "engine": "DMA_IN"})",
      R"({"id": "DI1", "bytes": 1})",
      R"({"engine": "DMA_IN", "bytes": 1})",
      R"({"id": "", "engine": "DMA_IN", "bytes": 1})",
      R"({"id": "DI01", "engine": "DMA_IN", "bytes": 1})",
      R"({"id": "DO1", "engine": "DMA_IN", "bytes": 1})",
      R"({"id": "DI1234567890123", "engine": "DMA_IN", "bytes": 1})",
      R"({})",
      R"({ })",
      R"([])",
      R"("DI1")",
      R"(null)",
      // buffers
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "a", "bytes": 4}], "free": ["a"]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"bytes": 4, "buffer": "a"}, {"buffer": "b", "bytes": 4}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "a", "bytes": 4, "x": 1}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "", "bytes": 4}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "a", "bytes": 0}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "a", "bytes": 600000}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{"buffer": "a", "buffer": "b", "bytes": 4}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": [{}]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "alloc": {}})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "free": ["zz"]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "free": [""]})",
      // slice and host commands, shapes
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Conv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "out_c": 8, "kernel_h": 3, "kernel_w": 3, "stride_h": 2, "stride_w": 1, "pad_h": 1, "pad_w": 0, "groups": 2, "batch": 2}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Conv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "out_c": 6, "kernel_h": 3, "kernel_w": 3, "groups": 4}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Conv", "shape": {"in_h": 2, "in_w": 8, "in_c": 4, "out_c": 8, "kernel_h": 3, "kernel_w": 3}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Conv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "kernel_h": 3, "kernel_w": 3}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "DepthwiseConv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "kernel_h": 3, "kernel_w": 3}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "DepthwiseConv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "out_c": 8, "kernel_h": 3, "kernel_w": 3}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "DepthwiseConv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "out_c": 6, "kernel_h": 3, "kernel_w": 3}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "DepthwiseConv", "shape": {"in_h": 8, "in_w": 8, "in_c": 4, "kernel_h": 3, "kernel_w": 3, "groups": 4}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "MaxPool", "shape": {"in_h": 8, "in_w": 8, "channels": 4, "kernel_h": 2, "kernel_w": 2, "stride_h": 2, "stride_w": 2}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "AveragePool", "shape": {"in_h": 8, "in_w": 8, "channels": 4, "kernel_h": 9, "kernel_w": 2, "pad_h": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "GlobalAveragePool", "shape": {"in_h": 8, "in_w": 8, "channels": 4}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "GlobalAveragePool", "shape": {"in_h": 8, "in_w": 8, "channels": 4, "stride_h": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Relu", "shape": {"elements": 281474976710656}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Relu", "shape": {"elements": 0}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Relu", "shape": {"elements": 5, "elements": 6}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Gemm", "shape": {"m": 4294967296, "n": 1, "k": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Gemm", "shape": {"m": 4294967297, "n": 1, "k": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Gemm", "shape": {"m": 4294967296, "n": 4294967296, "k": 4294967296, "batch": 4294967296}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Gemm", "shape": {"m": 1, "n": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 2, "op": "Gemm", "shape": {"m": 1, "n": 1, "k": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 1, "op": "Gemmm", "shape": {"m": 1, "n": 1, "k": 1}})",
      R"({"id": "S1", "engine": "SLICE", "op": "Gemm", "shape": {"m": 1, "n": 1, "k": 1}})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Gemm", "shape": {"m": 1, "n": 1, "k": 1}, "bytes": 4})",
      R"({"id": "S1", "engine": "SLICE", "slice": 0, "op": "Gemm", "shape": []})",
      R"({"id": "H1", "engine": "HOST", "shape": {"elements": 0}})",
      R"({"id": "H1", "engine": "HOST", "op": "Host", "shape": {"elements": 100}, "deps": ["DI0"]})",
      R"({"id": "H1", "engine": "HOST", "op": "Gemm", "shape": {"elements": 100}})",
      R"({"id": "H1", "engine": "HOST", "shape": {"elements": 1, "m": 1}})",
      R"({"id": "H1", "engine": "HOST", "shape": {}})",
      R"({"id": "H1", "engine": "HOST"})",
      R"({"id": "H1", "engine": "HOST", "shape": {"elements": 1}, "slice": 0})",
      R"({"id": "S1", "engine": "GPU", "bytes": 1})",
      // whitespace everywhere JSON allows it, and broken separators
      std::string("{ \"id\" :\t\"DI1\" ,\r\n \"engine\"\n:\"DMA_IN\",\"bytes\":7 , ") +
          "\"deps\" : [ \"DI0\" , \"S0\" ] }",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1,})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1 "layer": "x"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": ["DI0",]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "deps": ["DI0" "S0"]})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1x})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1}})",
      R"({"id": "DI1" "engine": "DMA_IN", "bytes": 1})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "layer": "a" "b"})",
      R"({"id": "DI1", "engine": "DMA_IN", "bytes": 1, "x": [[[[{"a": [1, {"b": "]}"}]}]]]]})",
  };
  for (const std::string& cmd : commands) {
    std::string after = head;
    after.append(dma).append(", ").append(cmd).append("]}");
    expect_same_text(after);
    std::string before = head;
    before.append(cmd).append(", ").append(dma).append("]}");
    expect_same_text(before);
  }
  // The document around the commands.
  const std::vector<std::string> documents = {
      "\xef\xbb\xbf" + head + dma + "]}",
      head + dma + "]}\n\n  \t",
      head + dma + "]} {}",
      head + dma + "],}",
      head + dma + "]",
      head + dma + "],",
      head + dma + ",]}",
      head + "]}",
      head + " ]}",
      head + dma + "], \"layers\": [{\"name\": \"l\", \"gemm\": {\"m\": 1, \"n\": 1, \"k\": 1}}]}",
      head + dma + "], \"format\": \"npusim-schedule\"}",
      head + dma + "], \"extra\": " + std::string(100, '[') + std::string(100, ']') + "}",
      head + dma + "], \"extra\": [1, 2 3]}",
      head + dma + "], \"extra\": tru}",
      head + dma + "], \"extra\": 1e400}",
      head + dma + "], \"t\\u0061rget\": {\"config\": \"x\"}}",
      head + dma + "], \"target\": {\"config\": \"x\"}, \"targe\\u0074\": {}}",
      R"({"commands": [)" + dma +
          R"(], "format": "npusim-schedule", "version": 1, "model": {"name": "m"}})",
      R"({"format": "npusim-schedule", "version": 1, "model": {"name": "m"}})",
      R"({"format": "npusim-schedule", "version": 1, "model": {"name": "m"}, "commands": {}})",
      "{}",
      "[]",
      "",
      " ",
  };
  for (const std::string& text : documents) expect_same_text(text);
}

TEST(ScheduleStream, FastReaderReadsCommonFilesItselfAndLeavesTheUnusualToTheExactPath) {
  const std::string head =
      R"({"format": "npusim-schedule", "version": 1, "model": {"name": "m"}, "commands": [)";
  const std::string dma = R"({"id": "DI0", "engine": "DMA_IN", "bytes": 16})";
  detail::FastReadResult r = fast_read(head + dma + "]}");
  EXPECT_TRUE(r.read);
  EXPECT_EQ(r.exact_commands, 0u);
  // A key a later version adds: that command alone goes to the exact path (which reports it).
  r = fast_read(head + dma + R"(, {"id": "DI1", "engine": "DMA_IN", "bytes": 1, "device": 1}, )" +
                R"({"id": "DI2", "engine": "DMA_IN", "bytes": 1}]})");
  EXPECT_TRUE(r.read);
  EXPECT_EQ(r.exact_commands, 1u);
  // Malformed JSON: the whole file goes to the exact path, for its message.
  EXPECT_FALSE(fast_read(head + dma + "}").read);
  EXPECT_FALSE(fast_read(head + dma + "]").read);
  // A repeated top-level key.
  EXPECT_FALSE(fast_read(head + dma + R"(], "model": {"name": "n"}})").read);
}

// A file larger than the fast reader's window (4 MiB): commands, strings and top-level values
// that straddle the window's end, and ones larger than the window, are read again once more of
// the file is in.
TEST(ScheduleStream, FastReaderReadsFilesLargerThanItsWindow) {
  std::string text = R"({"format": "npusim-schedule", "version": 1, "model": {"name": ")" +
                     std::string(5 << 20, 'n') + R"("}, "commands": [)";
  const int count = 60000;
  for (int i = 0; i < count; ++i) {
    // Command 45000's bytes are a float, which the exact path reads; 30000's layer is larger
    // than the window.
    text += R"({"id": "DI)" + std::to_string(i) + R"(", "engine": "DMA_IN", "bytes": )" +
            (i == 45000 ? std::string("1.6e1") : std::to_string(i + 1)) + R"(, "layer": "layer)" +
            std::string(i == 30000 ? 5 << 20 : i % 97, 'x') + R"(", "loc": "loc(\")" +
            std::to_string(i) + "\\\")\"";
    if (i > 0) text += R"(, "deps": ["DI)" + std::to_string(i - 1) + "\"]";
    text += i + 1 < count ? "},\n" : "}\n";
  }
  text += "]}";
  ASSERT_GT(text.size(), std::size_t{12} << 20);
  const detail::FastReadResult r = fast_read(text);
  EXPECT_TRUE(r.read);
  EXPECT_EQ(r.exact_commands, 1u);  // the one with bytes 1.6e1
  expect_same_text(text);
}

}  // namespace
}  // namespace npusim
