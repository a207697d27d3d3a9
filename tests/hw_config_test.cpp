#include "sim/config/hw_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/util/error.h"

namespace npusim {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& json, const std::vector<std::string>& overrides = {}) {
  try {
    parse_hw_config(json, "cfg.json", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HwConfig, EmptyObjectGivesTheDocumentedDefaults) {
  const HwConfig c = parse_hw_config("{}", "cfg.json");
  EXPECT_EQ(c.clock_khz, 800000u);
  EXPECT_EQ(c.slices.count, 2u);
  EXPECT_EQ(c.slices.rows, 16u);
  EXPECT_EQ(c.slices.cols, 16u);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kWeightStationary);
  EXPECT_EQ(c.lram_bytes, 512u * 1024u);
  EXPECT_EQ(c.dma.bytes_per_cycle, 8u);
  EXPECT_EQ(c.dram.bandwidth_mbps, 12800u);
  EXPECT_EQ(c.dram.latency_ps, 100000u);
  EXPECT_EQ(c.dram_latency_cycles(), 80u);
}

TEST(HwConfig, BuiltInDefaultMatchesTheIssue) {
  const HwConfig c = load_hw_config("default");
  EXPECT_EQ(c.name, "default");
  EXPECT_EQ(c.clock_khz, 800000u);
  EXPECT_EQ(c.slices.count, 2u);
  EXPECT_EQ(c.slices.rows * c.slices.cols, 256u);  // 256 int8 MACs per cycle per slice
  EXPECT_EQ(c.lram_bytes, 512u * 1024u);
  EXPECT_EQ(c.dram.bandwidth_mbps, 12800u);
  const HwConfig s = load_hw_config("server");
  EXPECT_EQ(s.slices.count, 8u);
  EXPECT_EQ(s.slices.rows, 128u);
  EXPECT_EQ(s.lram_bytes, 24u * 1024u * 1024u);
  EXPECT_EQ(s.dram.bandwidth_mbps, 512000u);
}

TEST(HwConfig, AnUnnamedConfigIsKnownByItsFileStem) {
  EXPECT_EQ(parse_hw_config("{}", "configs/edge-4s.json").name, "edge-4s");
  EXPECT_EQ(parse_hw_config(R"({"name": "x"})", "configs/edge-4s.json").name, "x");
}

TEST(HwConfig, DecimalUnitsConvertExactly) {
  const HwConfig c = parse_hw_config(
      R"({"clock_mhz": 933.333, "dram": {"bandwidth_gbps": 25.6, "latency_ns": 87.5}})", "cfg.json");
  EXPECT_EQ(c.clock_khz, 933333u);
  EXPECT_EQ(c.dram.bandwidth_mbps, 25600u);
  EXPECT_EQ(c.dram.latency_ps, 87500u);
  // 87.5 ns at 933.333 MHz = 81.666... cycles, rounded up.
  EXPECT_EQ(c.dram_latency_cycles(), 82u);
}

TEST(HwConfig, UnknownKeysAreErrorsNamingThePointer) {
  EXPECT_THAT(error_of(R"({"slices": {"cnt": 4}})"),
              HasSubstr("cfg.json: /slices/cnt: unknown key"));
  EXPECT_THAT(error_of(R"({"colour": "red"})"), HasSubstr("cfg.json: /colour: unknown key"));
}

TEST(HwConfig, OutOfRangeAndWrongTypesAreErrors) {
  EXPECT_THAT(error_of(R"({"dram": {"bandwidth_gbps": 0}})"),
              HasSubstr("/dram/bandwidth_gbps: value 0 out of range"));
  EXPECT_THAT(error_of(R"({"slices": {"count": 0}})"), HasSubstr("/slices/count: value 0 out of range"));
  EXPECT_THAT(error_of(R"({"slices": {"rows": 2.5}})"), HasSubstr("/slices/rows: expected a non-negative integer"));
  EXPECT_THAT(error_of(R"({"slices": {"rows": -1}})"), HasSubstr("/slices/rows: expected a non-negative integer"));
  EXPECT_THAT(error_of(R"({"slices": {"dataflow": "rs"}})"), HasSubstr("/slices/dataflow: unknown dataflow 'rs'"));
  EXPECT_THAT(error_of(R"({"clock_mhz": "fast"})"), HasSubstr("/clock_mhz: expected a number"));
  EXPECT_THAT(error_of(R"({"clock_mhz": 800.0001})"), HasSubstr("more than three decimals"));
  EXPECT_THAT(error_of(R"({"lram_kib": 18446744073709551615})"), HasSubstr("/lram_kib: value 18446744073709551615 out of range"));
  EXPECT_THAT(error_of(R"({"slices": {"vector_op_cycles": {"Gemm": 2}}})"),
              HasSubstr("/slices/vector_op_cycles/Gemm: unknown key"));
}

TEST(HwConfig, ReportsEveryProblemAtOnce) {
  const std::string e = error_of(R"({"slices": {"count": 0, "rows": 0}, "bogus": 1})");
  EXPECT_THAT(e, HasSubstr("/slices/count"));
  EXPECT_THAT(e, HasSubstr("/slices/rows"));
  EXPECT_THAT(e, HasSubstr("/bogus"));
}

TEST(HwConfig, MalformedJsonNamesTheFile) {
  EXPECT_THAT(error_of(R"({"slices": )"), HasSubstr("cfg.json: byte"));
  EXPECT_THAT(error_of(R"({"slices": )"), HasSubstr("malformed JSON"));
}

TEST(HwConfig, SetOverridesAnyField) {
  const HwConfig c = parse_hw_config(
      "{}", "cfg.json", {"dram.bandwidth_gbps=25.6", "slices.count=4", "slices.dataflow=os", "name=\"x\""});
  EXPECT_EQ(c.dram.bandwidth_mbps, 25600u);
  EXPECT_EQ(c.slices.count, 4u);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kOutputStationary);
  EXPECT_EQ(c.name, "x");
}

TEST(HwConfig, SetOfAnUnknownKeyIsAnError) {
  EXPECT_THAT(error_of("{}", {"slices.cnt=4"}), HasSubstr("cfg.json (with --set): /slices/cnt: unknown key"));
  EXPECT_THAT(error_of(R"({"clock_mhz": 800})", {"clock_mhz.x=4"}),
              HasSubstr("--set clock_mhz.x=4: /clock_mhz is not an object"));
  EXPECT_THAT(error_of("{}", {"clock_mhz.x=4"}), HasSubstr("/clock_mhz: expected a number"));
  EXPECT_THAT(error_of("{}", {"novalue"}), HasSubstr("expected key.path=value"));
  EXPECT_THAT(error_of("{}", {"dram.bandwidth_gbps=0"}), HasSubstr("/dram/bandwidth_gbps: value 0 out of range"));
}

TEST(HwConfig, UnknownConfigNameListsTheBuiltIns) {
  try {
    load_hw_config("no-such-config");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no-such-config: no such config file"));
    EXPECT_THAT(e.what(), HasSubstr("default, server"));
  }
}

}  // namespace
}  // namespace npusim
