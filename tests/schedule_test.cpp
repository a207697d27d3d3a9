#include "sim/ir/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "sim/ir/schedule_writer.h"
#include "sim/util/flat_index.h"

#include "sim/util/error.h"
#include "tests/schedule_support.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

Json schedule_with(Json commands) {
  return Json{{"format", "npusim-schedule"},
              {"version", 1},
              {"model", {{"name", "t"}}},
              {"commands", std::move(commands)}};
}

Json dma_in(const std::string& id, std::uint64_t bytes) {
  return {{"id", id}, {"engine", "DMA_IN"}, {"bytes", bytes}};
}

using test::gemm;  // a 16x16x16 GEMM: 61 cycles on default

std::string error_of(const Json& root) {
  try {
    parse_schedule(root, "s.json", parse_hw_config("{}", "cfg"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FlatIndex, ShortNamesHashApartAndLongOnesAsStdHash) {
  // finalize_schedule indexes buffers by name with hash_name: every buffer name the emitter
  // makes, "b0" to "b199999", and ids "DI0" to "DI199999" hash to distinct values (a collision
  // would only cost a probe, but the mix must spread them); the length counts ("b1" and "b1\0"
  // differ); names past 16 bytes hash as std::hash does; and an index built on it finds each.
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 200000; ++i) {
    seen.insert(hash_name("b" + std::to_string(i)));
    seen.insert(hash_name("DI" + std::to_string(i)));
  }
  EXPECT_EQ(seen.size(), 400000u);
  EXPECT_NE(hash_name(std::string_view("b1", 2)), hash_name(std::string_view("b1\0", 3)));
  EXPECT_EQ(hash_name("exactly sixteen!"), hash_name(std::string("exactly sixteen!")));
  const std::string long_name = "a buffer name longer than sixteen bytes";
  EXPECT_EQ(hash_name(long_name), std::hash<std::string_view>()(long_name));
  std::vector<std::string> names;
  names.reserve(1000);
  for (int i = 0; i < 1000; ++i) names.push_back("b" + std::to_string(i));
  FlatIndex index(names.size());
  for (std::uint32_t i = 0; i < names.size(); ++i) index.add(hash_name(names[i]), i);
  for (std::uint32_t i = 0; i < names.size(); ++i) {
    const std::uint32_t* at =
        index.find(hash_name(names[i]), [&](std::uint32_t v) { return names[v] == names[i]; });
    ASSERT_NE(at, nullptr);
    EXPECT_EQ(*at, i);
  }
}

TEST(Schedule, LayersRoundTripThroughTheJsonForm) {
  Json root = schedule_with({gemm("S0", 0)});
  root["layers"] = Json::array(
      {Json{{"name", "conv1"}, {"gemm", {{"batch", 2}, {"m", 64}, {"n", 8}, {"k", 27}}}},
       Json{{"name", "relu1"}}});
  const Schedule s = parse_schedule(root, "s.json", parse_hw_config("{}", "cfg"));
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_TRUE(s.layers[0].on_array);
  EXPECT_EQ(s.layers[0].gemm.batch, 2u);
  EXPECT_EQ(s.layers[0].gemm.m, 64u);
  EXPECT_EQ(s.layers[0].gemm.k, 27u);
  EXPECT_FALSE(s.layers[1].on_array);
  std::ostringstream text;
  write_schedule_json(text, s);
  const Schedule again =
      parse_schedule(Json::parse(text.str()), "s2.json", parse_hw_config("{}", "cfg"));
  ASSERT_EQ(again.layers.size(), 2u);
  EXPECT_EQ(again.layers[0].gemm.n, 8u);
  EXPECT_EQ(again.layers[1].name, "relu1");
}

// The writer's exact text for each kind of command (docs/schedule.md): fields at their default
// are left out, strings escaped as JSON requires (a quote, a control character), one command per
// line. Written by hand from the format, so that a change of the writer shows here first.
TEST(Schedule, WriterTextForEachKindOfCommand) {
  Json root = {{"format", "npusim-schedule"},
               {"version", 1},
               {"model", {{"name", "m\"q"}, {"batch", 1}, {"weights_bytes", 7}}},
               {"programs", Json::array({Json{{"name", "p"}, {"loc", "loc(\"x\")"}}})}};
  root["commands"] =
      Json::array({Json{{"id", "DI0"},
                        {"engine", "DMA_IN"},
                        {"bytes", 1024},
                        {"alloc", Json::array({Json{{"buffer", "b0"}, {"bytes", 1024}}})}},
                   Json{{"id", "H0"},
                        {"engine", "HOST"},
                        {"shape", {{"elements", 100}}},
                        {"deps", {"DI0"}},
                        {"layer", "nms\u0001"},
                        {"program", 0}},
                   Json{{"id", "S0"},
                        {"engine", "SLICE"},
                        {"slice", 1},
                        {"op", "Gemm"},
                        {"shape", {{"m", 2}, {"n", 3}, {"k", 4}}},
                        {"deps", {"H0", "DI0"}}},
                   Json{{"id", "DO0"},
                        {"engine", "DMA_OUT"},
                        {"bytes", 1024},
                        {"deps", {"S0"}},
                        {"free", {"b0"}}}});
  const Schedule s =
      parse_schedule(root, "s.json", parse_hw_config("{\"slices\": {\"count\": 2}}", "cfg"));
  std::ostringstream text;
  write_schedule_json(text, s);
  EXPECT_EQ(
      text.str(),
      "{\n"
      "  \"format\": \"npusim-schedule\",\n"
      "  \"version\": 1,\n"
      "  \"model\": {\"name\": \"m\\\"q\", \"batch\": 1, \"weights_bytes\": 7, \"inputs\": [], "
      "\"outputs\": []},\n"
      "  \"programs\": [\n"
      "    {\"name\": \"p\", \"loc\": \"loc(\\\"x\\\")\"}\n"
      "  ],\n"
      "  \"commands\": [\n"
      "    {\"id\": \"DI0\", \"engine\": \"DMA_IN\", \"bytes\": 1024, "
      "\"alloc\": [{\"buffer\": \"b0\", \"bytes\": 1024}]},\n"
      "    {\"id\": \"H0\", \"engine\": \"HOST\", \"op\": \"Host\", \"shape\": {\"elements\": "
      "100}, "
      "\"deps\": [\"DI0\"], \"layer\": \"nms\\u0001\"},\n"
      "    {\"id\": \"S0\", \"engine\": \"SLICE\", \"slice\": 1, \"op\": \"Gemm\", "
      "\"shape\": {\"m\": 2, \"n\": 3, \"k\": 4}, \"deps\": [\"H0\", \"DI0\"]},\n"
      "    {\"id\": \"DO0\", \"engine\": \"DMA_OUT\", \"bytes\": 1024, \"deps\": [\"S0\"], "
      "\"free\": [\"b0\"]}\n"
      "  ]\n"
      "}\n");
}

TEST(Schedule, LayerGemmWithoutKIsRejected) {
  Json root = schedule_with({gemm("S0", 0)});
  root["layers"] = Json::array({Json{{"name", "conv1"}, {"gemm", {{"m", 64}, {"n", 8}}}}});
  try {
    parse_schedule(root, "s.json", parse_hw_config("{}", "cfg"));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/layers/0/gemm/k"), std::string::npos) << e.what();
  }
}

TEST(Schedule, LoadsAndCostsCommands) {
  const Json root = schedule_with({dma_in("DI0", 256), gemm("S0", 1, {"DI0"})});
  const Schedule s = parse_schedule(root, "s.json", parse_hw_config("{}", "cfg"));
  ASSERT_EQ(s.commands.size(), 2u);
  EXPECT_EQ(s.commands[1].deps, std::vector<std::uint32_t>{0});
  EXPECT_EQ(s.commands[1].slice, 1u);
  // ws 16x16, (k, n, m) = (16, 16, 16): 1 fold of P = 32 + 16 + 16 - 2 = 62, counted as
  // SCALE-Sim does: 62 - 1.
  EXPECT_EQ(s.commands[1].compute_cycles, 61u);
  EXPECT_EQ(s.commands[1].macs, 4096u);
  ASSERT_EQ(s.programs.size(), 1u);  // a default program named after the model
  EXPECT_EQ(s.programs[0].name, "t");
}

TEST(Schedule, FormatAndVersionAreChecked) {
  Json root = schedule_with(Json::array());
  root["format"] = "other";
  root["version"] = 3;  // 1 and 2 are read (2 adds devices)
  const std::string e = error_of(root);
  EXPECT_THAT(e, HasSubstr("s.json: /format: expected \"npusim-schedule\""));
  EXPECT_THAT(e, HasSubstr("s.json: /version: unsupported version 3 (this npusim reads versions 1 "
                           "and 2)"));
}

TEST(Schedule, DependencyCycleIsNamed) {
  const Json root =
      schedule_with({gemm("S0", 0, {"S2"}), gemm("S1", 0, {"S0"}), gemm("S2", 1, {"S1"})});
  EXPECT_THAT(error_of(root),
              HasSubstr("s.json: /commands: dependency cycle: S0 -> S2 -> S1 -> S0"));
}

TEST(Schedule, SliceOutOfRange) {
  EXPECT_THAT(
      error_of(schedule_with({gemm("S0", 2)})),
      HasSubstr(
          "s.json: /commands/0/slice: slice 2 out of range: the config 'cfg' has 2 slice(s)"));
}

TEST(Schedule, ReferencesAreChecked) {
  const Json root =
      schedule_with({gemm("S0", 0, {"DI9", "S0"}), gemm("S0", 1), gemm("S2", 1, {"S0", "S0"})});
  const std::string e = error_of(root);
  EXPECT_THAT(e, HasSubstr("/commands/0/deps/0: unknown command id 'DI9'"));
  EXPECT_THAT(e, HasSubstr("/commands/0/deps/1: command 'S0' depends on itself"));
  EXPECT_THAT(e, HasSubstr("/commands/1/id: duplicate id 'S0', first used at /commands/0"));
  EXPECT_THAT(e, HasSubstr("/commands/2/deps/1: duplicate dependency 'S0'"));
}

TEST(Schedule, CommandFieldsAreChecked) {
  Json bad_engine = {{"id", "X0"}, {"engine", "GPU"}};
  Json bad_op = gemm("S1", 0);
  bad_op["op"] = "Fft";
  Json missing_dim = gemm("S2", 0);
  missing_dim["shape"].erase("k");
  Json zero_bytes = dma_in("DI3", 0);
  Json slice_on_dma = dma_in("DI4", 8);
  slice_on_dma["slice"] = 0;
  Json bad_id = dma_in("S5", 8);
  Json zero_id = gemm("S07", 0);
  Json unknown_key = gemm("S6", 0);
  unknown_key["priority"] = 1;
  const std::string e = error_of(schedule_with(
      {bad_engine, bad_op, missing_dim, zero_bytes, slice_on_dma, bad_id, unknown_key, zero_id}));
  EXPECT_THAT(e, HasSubstr("/commands/0/engine: unknown engine 'GPU'"));
  EXPECT_THAT(e, HasSubstr("/commands/1/op: unknown op 'Fft'"));
  EXPECT_THAT(e, HasSubstr("/commands/2/shape/k: missing required field"));
  EXPECT_THAT(e, HasSubstr("/commands/3/bytes: value 0 out of range"));
  EXPECT_THAT(e, HasSubstr("/commands/4/slice: slice applies to SLICE commands only"));
  EXPECT_THAT(e, HasSubstr("/commands/5/id: id 'S5' does not follow the convention"));
  EXPECT_THAT(e, HasSubstr("/commands/6/priority: unknown key"));
  EXPECT_THAT(e, HasSubstr("/commands/7/id: id 'S07' does not follow the convention"));
}

TEST(Schedule, ConvShapesAreChecked) {
  Json conv = {{"id", "S0"},
               {"engine", "SLICE"},
               {"slice", 0},
               {"op", "Conv"},
               {"shape",
                {{"in_h", 2},
                 {"in_w", 2},
                 {"in_c", 6},
                 {"out_c", 8},
                 {"kernel_h", 3},
                 {"kernel_w", 3},
                 {"groups", 4}}}};
  const std::string e = error_of(schedule_with({conv}));
  EXPECT_THAT(e, HasSubstr("/commands/0/shape/groups: groups 4 must divide in_c and out_c"));
  EXPECT_THAT(e, HasSubstr("/commands/0/shape/kernel_h: kernel taller than the padded input"));
  EXPECT_THAT(e, HasSubstr("/commands/0/shape/kernel_w: kernel wider than the padded input"));
}

TEST(Schedule, HugeShapesAreRejectedNotWrapped) {
  Json big = gemm("S0", 0);
  big["shape"] = {{"m", 4294967296}, {"n", 4294967296}, {"k", 4294967296}, {"batch", 4294967296}};
  EXPECT_THAT(error_of(schedule_with({big})), HasSubstr("/commands/0/shape: shape too large"));
  Json too_big = gemm("S1", 0);
  too_big["shape"]["m"] = 4294967297;
  EXPECT_THAT(error_of(schedule_with({too_big})),
              HasSubstr("/commands/0/shape/m: value 4294967297 out of range"));
}

TEST(Schedule, BuffersAreChecked) {
  Json a = dma_in("DI0", 8);
  a["alloc"] = {{{"buffer", "x"}, {"bytes", 8}}};
  Json b = dma_in("DI1", 8);
  b["alloc"] = {{{"buffer", "x"}, {"bytes", 8}}, {{"buffer", "huge"}, {"bytes", 524289}}};
  Json c = gemm("S0", 0, {"DI0"});
  c["free"] = {"x", "y"};
  Json d = gemm("S1", 0, {"S0"});
  d["free"] = {"x"};
  Json nameless = dma_in("DI9", 8);
  nameless["alloc"] = {{{"buffer", ""}, {"bytes", 8}}};
  nameless["free"] = {""};
  const std::string e = error_of(schedule_with({a, b, c, d, nameless}));
  EXPECT_THAT(e, HasSubstr("/commands/4/alloc/0/buffer: a buffer needs a name"));
  EXPECT_THAT(e, HasSubstr("/commands/4/free/0: expected a buffer name"));
  EXPECT_THAT(e, HasSubstr("/commands/1/alloc/0/buffer: buffer 'x' is allocated twice"));
  EXPECT_THAT(e, HasSubstr("/commands/1/alloc/1/bytes: buffer of 524289 bytes can never fit the "
                           "local memory of 524288 bytes"));
  EXPECT_THAT(e, HasSubstr("/commands/2/free/1: buffer 'y' is never allocated"));
  EXPECT_THAT(e, HasSubstr("/commands/3/free/0: buffer 'x' is freed twice"));
}

TEST(Schedule, FreeMustDependOnTheAllocation) {
  // DI1 frees what DI0 allocates, but nothing orders DI1 after DI0 (their queue does, but a
  // schedule's meaning may not hang on queue order); S0 frees after depending on DI0 through S1.
  Json a = dma_in("DI0", 8);
  a["alloc"] = {{{"buffer", "x"}, {"bytes", 8}}, {{"buffer", "y"}, {"bytes", 8}}};
  Json b = dma_in("DI1", 8);
  b["free"] = {"x"};
  Json s1 = gemm("S1", 0, {"DI0"});
  Json s0 = gemm("S0", 1, {"S1"});
  s0["free"] = {"y"};
  const std::string e = error_of(schedule_with({a, b, s1, s0}));
  EXPECT_THAT(e, HasSubstr("s.json: /commands/1/free/0: buffer 'x' is freed by DI1, which does not "
                           "depend on DI0 that allocates it"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("'y'")));
}

TEST(Schedule, TransfersHaveABurstLimit) {
  // 2^22 bursts of 256 bytes is the most one transfer may have.
  EXPECT_EQ(error_of(schedule_with(Json::array({dma_in("DI0", (std::uint64_t{1} << 22) * 256)}))),
            "no error");
  EXPECT_THAT(
      error_of(schedule_with(Json::array({dma_in("DI0", (std::uint64_t{1} << 22) * 256 + 1)}))),
      HasSubstr("/commands/0/bytes: 1073741825 bytes make 4194305 bursts"));
}

TEST(Schedule, ErrorsDoNotCascade) {
  Json unknown_engine = {{"id", "X0"}, {"engine", "GPU"}, {"slice", 0}, {"bytes", 4}};
  Json dma_with_shape = dma_in("DI0", 8);
  dma_with_shape["shape"] = {{"m", 1}};
  const std::string e = error_of(schedule_with({unknown_engine, dma_with_shape}));
  // One problem each: no "missing op" for the unknown engine, no "unknown key" for the shape.
  EXPECT_EQ(
      e,
      "s.json: /commands/0/engine: unknown engine 'GPU' (expected DMA_IN, DMA_OUT, SLICE, HOST, "
      "EXT_HDMA, DEV_HDMA or SYNC)\n"
      "s.json: /commands/1/shape: shape applies to SLICE commands only");
  Json no_model = schedule_with(Json::array());
  no_model.erase("model");
  EXPECT_EQ(error_of(no_model), "s.json: /model: missing required field");
}

TEST(Schedule, AllocAndFreeBytesAreSummed) {
  Json a = dma_in("DI0", 8);
  a["alloc"] = {{{"buffer", "x"}, {"bytes", 100}}, {{"buffer", "y"}, {"bytes", 28}}};
  Json c = gemm("S0", 0, {"DI0"});
  c["free"] = {"x", "y"};
  const Schedule s = parse_schedule(schedule_with({a, c}), "s.json", parse_hw_config("{}", "cfg"));
  EXPECT_EQ(s.commands[0].lram_alloc_bytes, 128u);
  EXPECT_EQ(s.commands[1].lram_free_bytes, 128u);
}

TEST(Schedule, MissingFileIsAnInputError) {
  EXPECT_THROW(load_schedule("/nonexistent/s.json", parse_hw_config("{}", "cfg")), InputError);
}

}  // namespace
}  // namespace npusim
