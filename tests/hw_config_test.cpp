#include "sim/config/hw_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/config/config_fields.h"
#include "sim/config/scalesim_cfg.h"
#include "sim/util/error.h"

namespace npusim {
namespace {

using ::testing::ElementsAre;
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
      R"({"clock_mhz": 933.333, "dram": {"bandwidth_gbps": 25.6, "latency_ns": 87.5}})",
      "cfg.json");
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
  EXPECT_THAT(error_of(R"({"slices": {"count": 0}})"),
              HasSubstr("/slices/count: value 0 out of range"));
  EXPECT_THAT(error_of(R"({"slices": {"rows": 2.5}})"),
              HasSubstr("/slices/rows: expected a non-negative integer"));
  EXPECT_THAT(error_of(R"({"slices": {"rows": -1}})"),
              HasSubstr("/slices/rows: expected a non-negative integer"));
  EXPECT_THAT(error_of(R"({"slices": {"dataflow": "rs"}})"),
              HasSubstr("/slices/dataflow: unknown dataflow 'rs'"));
  EXPECT_THAT(error_of(R"({"clock_mhz": "fast"})"), HasSubstr("/clock_mhz: expected a number"));
  EXPECT_THAT(error_of(R"({"clock_mhz": 800.0001})"), HasSubstr("more than three decimals"));
  EXPECT_THAT(error_of(R"({"lram_kib": 18446744073709551615})"),
              HasSubstr("/lram_kib: value 18446744073709551615 out of range"));
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
      "{}", "cfg.json",
      {"dram.bandwidth_gbps=25.6", "slices.count=4", "slices.dataflow=os", "name=\"x\""});
  EXPECT_EQ(c.dram.bandwidth_mbps, 25600u);
  EXPECT_EQ(c.slices.count, 4u);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kOutputStationary);
  EXPECT_EQ(c.name, "x");
}

TEST(HwConfig, SetOfAnUnknownKeyIsAnError) {
  EXPECT_THAT(error_of("{}", {"slices.cnt=4"}),
              HasSubstr("cfg.json (with --set): /slices/cnt: unknown key"));
  EXPECT_THAT(error_of(R"({"clock_mhz": 800})", {"clock_mhz.x=4"}),
              HasSubstr("--set clock_mhz.x=4: /clock_mhz is not an object"));
  EXPECT_THAT(error_of("{}", {"clock_mhz.x=4"}), HasSubstr("/clock_mhz: expected a number"));
  EXPECT_THAT(error_of("{}", {"novalue"}), HasSubstr("expected key.path=value"));
  EXPECT_THAT(error_of("{}", {"dram.bandwidth_gbps=0"}),
              HasSubstr("/dram/bandwidth_gbps: value 0 out of range"));
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

TEST(HwConfig, DefaultConstructedHasTheDeclaredDefaults) {
  const HwConfig d;
  const HwConfig c = parse_hw_config("{}", "cfg.json");
  EXPECT_EQ(d.clock_khz, c.clock_khz);
  EXPECT_EQ(d.lram_bytes, c.lram_bytes);
  EXPECT_EQ(d.dispatch_cycles, 4u);
  EXPECT_FALSE(d.ideal_memory);
  EXPECT_EQ(d.slices.count, 2u);
  EXPECT_EQ(d.slices.vector_lanes, 16u);
  EXPECT_EQ(d.slices.vector_op_cycles, c.slices.vector_op_cycles);
  EXPECT_EQ(d.slices.vector_op_cycles[find_op("Exp")], 4u);
  EXPECT_EQ(d.dma.in_channels, 1u);
  EXPECT_EQ(d.dma.out_channels, 1u);
  EXPECT_EQ(d.dma.burst_bytes, 256u);
  EXPECT_EQ(d.dma.setup_cycles, 32u);
  EXPECT_EQ(d.dma.max_outstanding, 8u);
  EXPECT_EQ(d.dram.channels, 1u);
  EXPECT_EQ(d.dram.latency_ps, 100000u);
  EXPECT_EQ(d.host.call_cycles, 5000u);
  EXPECT_EQ(d.host.cycles_per_element, 4u);
  EXPECT_TRUE(d.warnings.empty());
}

TEST(HwConfig, IdealMemoryIsABooleanDefaultingToFalse) {
  EXPECT_FALSE(parse_hw_config("{}", "cfg.json").ideal_memory);
  EXPECT_TRUE(parse_hw_config(R"({"ideal_memory": true})", "cfg.json").ideal_memory);
  EXPECT_TRUE(parse_hw_config("{}", "cfg.json", {"ideal_memory=true"}).ideal_memory);
  EXPECT_THAT(error_of(R"({"ideal_memory": 1})"),
              HasSubstr("cfg.json: /ideal_memory: expected a boolean, found 1"));
  EXPECT_THAT(
      error_of(R"({"x": 1})"),
      HasSubstr("/x: unknown key (expected one of: clock_mhz, devices, dispatch_cycles, dma, "
                "dram, energy, host, ideal_memory, lram_kib, name, slices)"));
}

TEST(HwConfig, AnObjectOverrideResetsTheOtherFieldsToTheirDefaults) {
  const HwConfig c = parse_hw_config(R"({"dram": {"bandwidth_gbps": 25.6}})", "cfg.json",
                                     {R"(dram={"channels":2})"});
  EXPECT_EQ(c.dram.channels, 2u);
  EXPECT_EQ(c.dram.bandwidth_mbps, 12800u);
}

// --- docs/config.md's field table against the declarations ---

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The table that follows the "## Fields" heading.
std::vector<std::string> documented_field_table(const std::string& markdown) {
  std::vector<std::string> table;
  bool in_section = false;
  for (const std::string& line : lines_of(markdown)) {
    if (line.rfind("## ", 0) == 0) {
      if (in_section) break;
      in_section = line == "## Fields";
    } else if (in_section && line.rfind("|", 0) == 0) {
      table.push_back(line);
    } else if (in_section && !table.empty()) {
      break;
    }
  }
  return table;
}

// One entry per row that differs between the documented table and the declared one.
std::vector<std::string> field_table_differences(const std::string& markdown) {
  const std::vector<std::string> documented = documented_field_table(markdown);
  const std::vector<std::string> declared = lines_of(config_field_table());
  std::vector<std::string> differences;
  for (std::size_t i = 0; i < std::max(documented.size(), declared.size()); ++i) {
    const std::string doc = i < documented.size() ? documented[i] : "(no row)";
    const std::string code = i < declared.size() ? declared[i] : "(no row)";
    if (doc != code) differences.push_back("docs: " + doc + "\ncode: " + code);
  }
  return differences;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigFields, DocsTableIsTheDeclaredTable) {
  const std::string doc = read_text(std::filesystem::path(NPUSIM_SOURCE_DIR) / "docs/config.md");
  ASSERT_FALSE(documented_field_table(doc).empty())
      << "no table after '## Fields' in docs/config.md";
  const std::vector<std::string> differences = field_table_differences(doc);
  std::string all;
  for (const std::string& d : differences) all += d + "\n";
  EXPECT_TRUE(differences.empty())
      << all << "\nThe declarations are in sim/config/config_fields.cpp. Table they give:\n"
      << config_field_table();
}

TEST(ConfigFields, TableCheckFailsWhenADocumentedDefaultRangeOrUnitDiffers) {
  const std::string doc = read_text(std::filesystem::path(NPUSIM_SOURCE_DIR) / "docs/config.md");
  const std::string row = "| `dma.bytes_per_cycle` | integer | bytes/cycle | `8` | [1, 1048576] |";
  ASSERT_NE(doc.find(row), std::string::npos);
  for (const std::string wrong :
       {"| `dma.bytes_per_cycle` | integer | bytes/cycle | `16` | [1, 1048576] |",
        "| `dma.bytes_per_cycle` | integer | bytes/cycle | `8` | [1, 1024] |",
        "| `dma.bytes_per_cycle` | integer | bytes | `8` | [1, 1048576] |"}) {
    std::string changed = doc;
    changed.replace(changed.find(row), row.size(), wrong);
    const auto differences = field_table_differences(changed);
    ASSERT_EQ(differences.size(), 1u) << wrong;
    EXPECT_THAT(differences[0], HasSubstr(wrong));
  }
  std::string without_row = doc;
  without_row.erase(without_row.find(row),
                    without_row.find('\n', without_row.find(row)) + 1 - without_row.find(row));
  EXPECT_FALSE(field_table_differences(without_row).empty());
}

TEST(ConfigFields, EveryFieldIsDeclaredOnceWithARowOfItsOwn) {
  std::set<std::string> keys;
  for (const ConfigField& f : config_fields()) {
    EXPECT_TRUE(keys.insert(f.key()).second) << f.key() << " declared twice";
    EXPECT_EQ(f.table_row().rfind("| `" + f.key(), 0), 0u) << f.table_row();
  }
  EXPECT_EQ(keys.count("ideal_memory"), 1u);
  EXPECT_THAT(lines_of(config_field_table())[2],
              "| `name` | string | — | the file's stem | any string | Name shown in `summary.txt` "
              "and `stats.json` (`device.config`). It is also compared with a schedule's "
              "`target.config`. |");
}

// --- SCALE-Sim v2 .cfg files ---

// SCALE-Sim v2's configs/scale.cfg (github.com/scalesim-project/scale-sim-v2, branch main, commit
// 22f88b1), byte for byte: note the blanks after the SRAM sizes and after CALC.
const char* const kScaleCfg =
    "[general]\n"
    "run_name = scale_example_run_32x32_os\n"
    "\n"
    "[architecture_presets]\n"
    "ArrayHeight:    32\n"
    "ArrayWidth:     32\n"
    "IfmapSramSzkB:   64 \n"
    "FilterSramSzkB:  64 \n"
    "OfmapSramSzkB:   64 \n"
    "IfmapOffset:    0\n"
    "FilterOffset:   10000000\n"
    "OfmapOffset:    20000000\n"
    "Bandwidth : 10\n"
    "Dataflow : os\n"
    "MemoryBanks:   1\n"
    "\n"
    "[run_presets]\n"
    "InterfaceBandwidth: CALC \n";

// SCALE-Sim v2's configs/google.cfg (same repository and commit).
const char* const kGoogleCfg =
    "[general]\n"
    "run_name = GoogleTPU_v1_ws\n"
    "\n"
    "[architecture_presets]\n"
    "ArrayHeight:    256\n"
    "ArrayWidth:     256\n"
    "IfmapSramSzkB:    6144\n"
    "FilterSramSzkB:   6144\n"
    "OfmapSramSzkB:    2048\n"
    "IfmapOffset:    0\n"
    "FilterOffset:   10000000\n"
    "OfmapOffset:    20000000\n"
    "Dataflow : ws\n"
    "Bandwidth : 10\n"
    "MemoryBanks: 1\n"
    "\n"
    "[run_presets]\n"
    "InterfaceBandwidth: CALC\n";

// SCALE-Sim v2's configs/scale.cfg on its dev branch (commit 9b3f10a): USER bandwidth, and the
// [layout] and [sparsity] sections of later versions.
const char* const kScaleDevCfg =
    "[general]\n"
    "run_name = scale_example_run_32x32_os\n"
    "\n"
    "[architecture_presets]\n"
    "ArrayHeight:    32\n"
    "ArrayWidth:     32\n"
    "IfmapSramSzkB:   64\n"
    "FilterSramSzkB:  64\n"
    "OfmapSramSzkB:   64\n"
    "IfmapOffset:    0\n"
    "FilterOffset:   10000000\n"
    "OfmapOffset:    20000000\n"
    "Bandwidth : 10\n"
    "Dataflow : os\n"
    "MemoryBanks:   1\n"
    "\n"
    "[layout]\n"
    "IfmapCustomLayout: False\n"
    "IfmapSRAMBankBandwidth: 10\n"
    "IfmapSRAMBankNum: 10\n"
    "IfmapSRAMBankPort: 2\n"
    "FilterCustomLayout: False\n"
    "FilterSRAMBankBandwidth: 10\n"
    "FilterSRAMBankNum: 10\n"
    "FilterSRAMBankPort: 2\n"
    "\n"
    "[sparsity]\n"
    "SparsitySupport : false\n"
    "SparseRep : ellpack_block\n"
    "OptimizedMapping : false\n"
    "BlockSize : 8\n"
    "RandomNumberGeneratorSeed : 40\n"
    "\n"
    "[run_presets]\n"
    "InterfaceBandwidth: USER\n";

std::string cfg_error_of(const std::string& cfg, const std::vector<std::string>& overrides = {}) {
  try {
    parse_scalesim_cfg(cfg, "scale.cfg", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// `cfg` (kScaleCfg if not given) with one line replaced, or removed when `by` is empty.
std::string scale_cfg_with(const std::string& line, const std::string& by,
                           std::string cfg = kScaleCfg) {
  const auto at = cfg.find(line + "\n");
  EXPECT_NE(at, std::string::npos) << line;
  if (at != std::string::npos) cfg.replace(at, line.size() + 1, by.empty() ? "" : by + "\n");
  return cfg;
}

std::string user_bandwidth(const std::string& cfg) {
  return scale_cfg_with("InterfaceBandwidth: CALC ", "InterfaceBandwidth: USER", cfg);
}

TEST(ScaleSimCfg, ShippedScaleCfgMapsOntoOneArray) {
  const HwConfig c = parse_scalesim_cfg(kScaleCfg, "configs/scale.cfg");
  EXPECT_EQ(c.name, "scale_example_run_32x32_os");
  EXPECT_EQ(c.source, "configs/scale.cfg");
  EXPECT_EQ(c.slices.count, 1u);
  EXPECT_EQ(c.slices.rows, 32u);
  EXPECT_EQ(c.slices.cols, 32u);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kOutputStationary);
  // The three SRAMs are 192 KiB, but CALC means ideal memory, whose local memory is unbounded
  // (2^40 bytes) so that each layer is one array command, as SCALE-Sim computes it.
  EXPECT_EQ(c.lram_bytes, std::uint64_t{1} << 40);
  EXPECT_EQ(parse_hw_config("{\"lram_kib\": 192}", "x").lram_bytes, (64u + 64u + 64u) * 1024u);
  EXPECT_TRUE(c.ideal_memory);           // InterfaceBandwidth: CALC
  EXPECT_EQ(c.dma.bytes_per_cycle, 8u);  // npusim's default: CALC ignores Bandwidth
  EXPECT_EQ(c.clock_khz, 800000u);       // SCALE-Sim has no clock: npusim's default
  EXPECT_EQ(c.slices.vector_lanes, 16u);
  EXPECT_THAT(c.warnings,
              ElementsAre("configs/scale.cfg: SCALE-Sim keys that npusim does not model, ignored: "
                          "[architecture_presets] IfmapOffset, FilterOffset, OfmapOffset, "
                          "Bandwidth, MemoryBanks"));
}

TEST(ScaleSimCfg, ShippedGoogleCfg) {
  const HwConfig c = parse_scalesim_cfg(kGoogleCfg, "google.cfg");
  EXPECT_EQ(c.name, "GoogleTPU_v1_ws");
  EXPECT_EQ(c.slices.count, 1u);
  EXPECT_EQ(c.slices.rows, 256u);
  EXPECT_EQ(c.slices.cols, 256u);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kWeightStationary);
  EXPECT_EQ(c.lram_bytes, std::uint64_t{1} << 40);  // CALC: ideal memory, unbounded (not 14 MiB)
  EXPECT_TRUE(c.ideal_memory);
}

TEST(ScaleSimCfg, UserBandwidthSetsTheDmaPortRateAndLaterSectionsAreIgnored) {
  const HwConfig c = parse_scalesim_cfg(kScaleDevCfg, "scale.cfg");
  EXPECT_FALSE(c.ideal_memory);
  EXPECT_EQ(c.dma.bytes_per_cycle, 10u);  // 10 words of 1 byte per cycle
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0],
              HasSubstr("ignored: [architecture_presets] IfmapOffset, FilterOffset, OfmapOffset, "
                        "MemoryBanks; [layout] IfmapCustomLayout, IfmapSRAMBankBandwidth, "));
  EXPECT_THAT(c.warnings[0], HasSubstr("; [sparsity] SparsitySupport, SparseRep, "));
  // SCALE-Sim uses the first of several per-bank bandwidths.
  const std::string two_banks =
      user_bandwidth(scale_cfg_with("Bandwidth : 10", "Bandwidth : 20, 30"));
  EXPECT_EQ(parse_scalesim_cfg(two_banks, "scale.cfg").dma.bytes_per_cycle, 20u);
}

TEST(ScaleSimCfg, KeysAreCaseInsensitiveAndCommentsAndBothDelimitersAreRead) {
  // SCALE-Sim writes its own files with lower-case keys (scale_config.write_conf_file).
  const std::string cfg =
      "# a comment\n"
      "[general]\n"
      "run_name=lower\n"
      "[architecture_presets]\n"
      "; another comment\n"
      "arrayheight = 8\n"
      "ARRAYWIDTH: 4\n"
      "ifmapsramszkB = 1\n"
      "filtersramszkB = 2\n"
      "ofmapsramszkB = 3\n"
      "IfmapOffset = 0\n"
      "FilterOffset = 1_000\n"
      "OfmapOffset = -5\n"
      "Dataflow = is\n"
      "[run_presets]\n"
      "InterfaceBandwidth = CALC\n";
  const HwConfig c = parse_scalesim_cfg(cfg, "x.cfg");
  EXPECT_EQ(c.name, "lower");
  EXPECT_EQ(c.slices.rows, 8u);
  EXPECT_EQ(c.slices.cols, 4u);
  EXPECT_TRUE(c.ideal_memory);  // CALC; the SRAM sum (6 KiB) gives way to unbounded memory
  EXPECT_EQ(c.lram_bytes, std::uint64_t{1} << 40);
  EXPECT_EQ(c.slices.dataflow, Dataflow::kInputStationary);
}

TEST(ScaleSimCfg, SetOverridesApplyOnTop) {
  const HwConfig c = parse_scalesim_cfg(
      kScaleCfg, "scale.cfg", {"slices.count=4", "ideal_memory=false", "dma.bytes_per_cycle=16"});
  EXPECT_EQ(c.slices.count, 4u);
  EXPECT_FALSE(c.ideal_memory);
  EXPECT_EQ(c.dma.bytes_per_cycle, 16u);
  EXPECT_EQ(c.slices.rows, 32u);  // still from the file
  EXPECT_EQ(c.name, "scale_example_run_32x32_os");
  EXPECT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(cfg_error_of(kScaleCfg, {"slices.rows=0"}),
              HasSubstr("scale.cfg (with --set): /slices/rows: value 0 out of range [1, 4096]"));
  EXPECT_THAT(cfg_error_of(kScaleCfg, {"slices.rowz=1"}),
              HasSubstr("scale.cfg (with --set): /slices/rowz: unknown key"));
  // A value the overrides leave alone is still reported where the file has it.
  EXPECT_THAT(
      cfg_error_of(scale_cfg_with("ArrayHeight:    32", "ArrayHeight: 0"), {"slices.count=4"}),
      HasSubstr("scale.cfg (with --set): [architecture_presets] ArrayHeight: value 0 out of "
                "range [1, 4096]"));
}

TEST(ScaleSimCfg, OutOfRangeValuesNameTheirKey) {
  EXPECT_THAT(cfg_error_of(scale_cfg_with("ArrayWidth:     32", "ArrayWidth: 5000")),
              HasSubstr("scale.cfg: [architecture_presets] ArrayWidth: value 5000 out of range "
                        "[1, 4096]"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("Dataflow : os", "Dataflow : rs")),
              HasSubstr("scale.cfg: [architecture_presets] Dataflow: unknown dataflow 'rs' "
                        "(expected os, ws or is)"));
  std::string no_sram = scale_cfg_with("IfmapSramSzkB:   64 ", "IfmapSramSzkB: 0");
  no_sram = scale_cfg_with("FilterSramSzkB:  64 ", "FilterSramSzkB: 0", no_sram);
  no_sram = scale_cfg_with("OfmapSramSzkB:   64 ", "OfmapSramSzkB: 0", no_sram);
  EXPECT_THAT(cfg_error_of(no_sram),
              HasSubstr("scale.cfg: [architecture_presets] IfmapSramSzkB + FilterSramSzkB + "
                        "OfmapSramSzkB: value 0 out of range [1, 1073741824]"));
  const std::string no_bandwidth = scale_cfg_with("Bandwidth : 10", "Bandwidth : 0");
  EXPECT_EQ(cfg_error_of(no_bandwidth), "no error");  // CALC does not read Bandwidth
  EXPECT_THAT(cfg_error_of(user_bandwidth(no_bandwidth)),
              HasSubstr("scale.cfg: [architecture_presets] Bandwidth: value 0 out of range "
                        "[1, 1048576]"));
  EXPECT_THAT(cfg_error_of(user_bandwidth(scale_cfg_with("Bandwidth : 10", "Bandwidth : 10, x"))),
              HasSubstr("scale.cfg: [architecture_presets] Bandwidth: expected a non-negative "
                        "integer, found 'x'"));
}

TEST(ScaleSimCfg, MalformedFilesNameTheFileAndTheKey) {
  EXPECT_THAT(
      cfg_error_of(scale_cfg_with("[general]", "[general")),
      HasSubstr("scale.cfg: line 1: malformed section header '[general' (expected [name])"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("[general]", "")),
              HasSubstr("scale.cfg: line 1: 'run_name = scale_example_run_32x32_os' before the "
                        "first [section] header"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("MemoryBanks:   1", "MemoryBanks")),
              HasSubstr("scale.cfg: line 15: expected 'key = value' or 'key: value', found "
                        "'MemoryBanks'"));
  EXPECT_THAT(
      cfg_error_of(scale_cfg_with("ArrayWidth:     32", "ArrayWidth: 32\nArrayWidth: 64")),
      HasSubstr("scale.cfg: [architecture_presets] ArrayWidth: appears twice (lines 6 and 7)"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("ArrayHeight:    32", "")),
              HasSubstr("scale.cfg: [architecture_presets] ArrayHeight: missing required key"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("[run_presets]", "[run]")),
              HasSubstr("scale.cfg: [run_presets]: missing section"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("IfmapSramSzkB:   64 ", "IfmapSramSzkB: 64kB")),
              HasSubstr("scale.cfg: [architecture_presets] IfmapSramSzkB: expected a non-negative "
                        "integer, found '64kB'"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("ArrayHeight:    32", "ArrayHeight: 2.5")),
              HasSubstr("scale.cfg: [architecture_presets] ArrayHeight: expected a non-negative "
                        "integer, found '2.5'"));
  EXPECT_THAT(cfg_error_of(scale_cfg_with("FilterOffset:   10000000", "FilterOffset: ten")),
              HasSubstr("scale.cfg: [architecture_presets] FilterOffset: expected an integer, "
                        "found 'ten'"));
  EXPECT_THAT(
      cfg_error_of(scale_cfg_with("InterfaceBandwidth: CALC ", "InterfaceBandwidth: calc")),
      HasSubstr("scale.cfg: [run_presets] InterfaceBandwidth: unknown mode 'calc' (expected "
                "USER or CALC)"));
  EXPECT_THAT(cfg_error_of(user_bandwidth(scale_cfg_with("Bandwidth : 10", ""))),
              HasSubstr("scale.cfg: [architecture_presets] Bandwidth: missing required key"));
  EXPECT_THAT(cfg_error_of(std::string(kScaleCfg) + "[general]\n"),
              HasSubstr("scale.cfg: line 19: section [general] appears twice (first on line 1)"));
  // Every problem at once.
  const std::string e = cfg_error_of(
      scale_cfg_with("Dataflow : os", "", scale_cfg_with("ArrayHeight:    32", "ArrayHeight: x")));
  EXPECT_THAT(e, HasSubstr("[architecture_presets] ArrayHeight: expected a non-negative integer"));
  EXPECT_THAT(e, HasSubstr("[architecture_presets] Dataflow: missing required key"));
}

TEST(ScaleSimCfg, LoadDetectsCfgByExtension) {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("npusim_cfg_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "scale.cfg").string();
  std::ofstream(path) << kScaleCfg;
  const HwConfig c = load_hw_config(path, {"slices.cols=16"});
  EXPECT_EQ(c.slices.rows, 32u);
  EXPECT_EQ(c.slices.cols, 16u);
  EXPECT_EQ(c.source, path);
  const auto bad = (dir / "bad.cfg").string();
  std::ofstream(bad) << scale_cfg_with("Dataflow : os", "");
  try {
    load_hw_config(bad);
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr(bad + ": [architecture_presets] Dataflow: missing required key"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace npusim
