// The figures of npusim report, diff and convert on hand-computed schedules, and the CSV readers'
// accept and reject cases with their exact messages. No SystemC, no files: pure functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/csv_readers.h"
#include "profiler/perfetto/perfetto_trace.pb.h"
#include "profiler/report.h"
#include "profiler/trace_import.h"

namespace npusim::profiler {
namespace {

using Json = nlohmann::json;
namespace pb = perfetto::protos;

// ---- interval arithmetic and exact text ---------------------------------------------------

TEST(ReportIntervals, UnionMergesOverlappingAndTouchingAndDropsEmpty) {
  const auto u = interval_union({{50, 60}, {0, 10}, {10, 20}, {5, 15}, {30, 30}, {55, 70}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].start, 0u);
  EXPECT_EQ(u[0].end, 20u);
  EXPECT_EQ(u[1].start, 50u);
  EXPECT_EQ(u[1].end, 70u);
  EXPECT_EQ(union_length({{50, 60}, {0, 10}, {10, 20}, {5, 15}, {30, 30}, {55, 70}}), 40u);
  EXPECT_EQ(union_length({}), 0u);
}

TEST(ReportIntervals, IntersectionOfTwoUnions) {
  const auto a = interval_union({{0, 100}, {200, 300}});
  const auto b = interval_union({{50, 250}, {290, 400}});
  EXPECT_EQ(intersection_length(a, b), 50u + 50u + 10u);
  EXPECT_EQ(intersection_length(a, {}), 0u);
}

TEST(ReportText, PercentIsExactWithHalvesUp) {
  EXPECT_EQ(percent_text(1, 3), "33.33");
  EXPECT_EQ(percent_text(2, 3), "66.67");
  EXPECT_EQ(percent_text(1, 8, 1), "12.5");
  EXPECT_EQ(percent_text(1, 16, 1), "6.3");  // 6.25 -> 6.3
  EXPECT_EQ(percent_text(1, 0), "0.00");
  EXPECT_EQ(percent_text(5, 5), "100.00");
  EXPECT_EQ(percent_text(1, 200000, 2), "0.00");  // 0.0005 % rounds to 0.00
  EXPECT_EQ(percent_text(1, 20000, 2), "0.01");   // 0.005 % rounds half up
}

TEST(ReportText, MicrosecondsRoundToTheNearestNanosecondHalvesUp) {
  EXPECT_EQ(us_text(1001, 800000), "1.251");  // 1251.25 ns
  EXPECT_EQ(us_text(450, 800000), "0.563");   // 562.5 ns
  EXPECT_EQ(us_text(81456, 800000), "101.820");
  EXPECT_EQ(us_text(0, 800000), "0.000");
  EXPECT_EQ(us_text(1, 3000), "0.333");  // 333.33 ns at 3 MHz
}

TEST(ReportText, EngineClasses) {
  EXPECT_EQ(engine_kind_of_name("SLICE0.ARRAY"), EngineKind::kArray);
  EXPECT_EQ(engine_kind_of_name("SLICE12.VECTOR"), EngineKind::kVector);
  EXPECT_EQ(engine_kind_of_name("DMA_IN"), EngineKind::kDmaIn);
  EXPECT_EQ(engine_kind_of_name("DMA_OUT"), EngineKind::kDmaOut);
  EXPECT_EQ(engine_kind_of_name("HOST"), EngineKind::kHost);
  EXPECT_EQ(engine_kind_of_name("SLICE.ARRAY"), std::nullopt);
  EXPECT_EQ(engine_kind_of_name("SLICEX.ARRAY"), std::nullopt);
}

// ---- npusim report --------------------------------------------------------------------------

struct Op {
  const char* id;
  const char* op;
  const char* layer;
  const char* engine;
  Cycles start, end;
};

// A run of 1000 cycles at 800 MHz whose figures are worked out by hand in the tests below.
const std::vector<Op> kOps = {
    {"DI0", "DMA_IN", "L1", "DMA_IN", 0, 100},      {"DI1", "DMA_IN", "L1", "DMA_IN", 50, 200},
    {"S0", "Conv", "L1", "SLICE0.ARRAY", 100, 400}, {"S1", "Conv", "L1", "SLICE1.ARRAY", 150, 350},
    {"DO0", "DMA_OUT", "L1", "DMA_OUT", 400, 450},  {"S2", "Relu", "L2", "SLICE0.VECTOR", 450, 600},
    {"DI2", "DMA_IN", "L2", "DMA_IN", 500, 550},    {"H0", "Host", "L2", "HOST", 600, 700},
    {"DO1", "DMA_OUT", "L2", "DMA_OUT", 700, 1000}, {"S3", "Relu", "", "SLICE1.VECTOR", 800, 800},
};

Json section(const std::vector<Op>& ops, Cycles total) {
  Json list = Json::array();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& o = ops[i];
    list.push_back({{"index", i},
                    {"id", o.id},
                    {"name", "x"},
                    {"op", o.op},
                    {"layer", o.layer},
                    {"engine", o.engine},
                    {"program", 0},
                    {"start_cycle", o.start},
                    {"end_cycle", o.end},
                    {"cycles", o.end - o.start},
                    {"bytes", 0},
                    {"macs", 0},
                    {"wait_deps_cycles", 0},
                    {"wait_dram_cycles", 0}});
  }
  return {{"total_cycles", total}, {"lram_peak_bytes", 4096}, {"ops", list}};
}

Json stats_json(bool with_runtime = true) {
  Json j = {{"format", "npusim-stats"},
            {"version", 1},
            {"model", {{"name", "hand"}, {"file", "hand.json"}}},
            {"device",
             {{"config", "default"},
              {"clock_mhz", 800.0},
              {"slices", 2},
              {"array_rows", 16},
              {"array_cols", 16}}},
            {"dram_read_bytes", 3000},
            {"dram_write_bytes", 1000},
            {"stats_level", 70},
            {"estimate", section({{"S0", "Conv", "L1", "SLICE0.ARRAY", 0, 10}}, 10)}};
  if (with_runtime) j["runtime"] = section(kOps, 1000);
  return j;
}

TEST(Report, ModelFiguresByHand) {
  const ReportInput in = read_report_input(stats_json(), "s.json");
  EXPECT_EQ(in.section, "runtime");
  EXPECT_EQ(in.clock_khz, 800000u);
  const Report r = compute_report(in);
  EXPECT_EQ(r.model.invoke_cycles, 1000u);
  // NPU time (seed 004): first start to last end of the commands on the NPU (not H0): DI0 at 0
  // to DO1 at 1000.
  EXPECT_EQ(r.model.npu_cycles, 1000u);
  // Compute: [100,400) u [150,350) u [450,600) u [800,800) = 300 + 150.
  EXPECT_EQ(r.model.compute_cycles, 450u);
  // DMA: [0,200) u [400,450) u [500,550) u [700,1000) = 200 + 50 + 50 + 300.
  EXPECT_EQ(r.model.dma_cycles, 600u);
  // Both: [100,200) + [500,550).
  EXPECT_EQ(r.model.overlap_cycles, 150u);
  EXPECT_EQ(r.model.dram_bytes, 4000u);
  EXPECT_EQ(r.model.variable_buffer_bytes, 4096u);
  EXPECT_EQ(r.model.op_cycles, 1400u);
}

TEST(Report, OpTypesByHand) {
  const Report r = compute_report(read_report_input(stats_json(), "s.json"));
  ASSERT_EQ(r.op_types.size(), 5u);
  const std::vector<std::tuple<std::string, std::uint64_t, Cycles, Cycles>> expected = {
      {"Conv", 2, 500, 300},
      {"DMA_OUT", 2, 350, 350},
      {"DMA_IN", 3, 300, 250},
      {"Relu", 2, 150, 150},
      {"Host", 1, 100, 100}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.op_types[i].op, std::get<0>(expected[i]));
    EXPECT_EQ(r.op_types[i].count, std::get<1>(expected[i]));
    EXPECT_EQ(r.op_types[i].cycles, std::get<2>(expected[i]));
    EXPECT_EQ(r.op_types[i].wall, std::get<3>(expected[i]));
  }
  // Engines: Conv on SLICE0.ARRAY (300) and SLICE1.ARRAY (200); DMA_IN's union 250; Relu on
  // SLICE0.VECTOR (150) and SLICE1.VECTOR (0 cycles).
  EXPECT_EQ(r.op_types[0].engines, "2 engines");
  EXPECT_EQ(r.op_types[0].engine_count, 2u);
  EXPECT_EQ(r.op_types[0].engine_busy, 500u);
  EXPECT_EQ(r.op_types[2].engines, "DMA_IN");
  EXPECT_EQ(r.op_types[2].engine_busy, 250u);
  EXPECT_EQ(r.op_types[3].engine_busy, 150u);
  EXPECT_EQ(r.op_types[3].engine_count, 2u);
}

// By layer (model operator): L1 = DI0 100 + DI1 150 + S0 300 + S1 200 + DO0 50 = 800;
// L2 = S2 150 + DI2 50 + H0 100 + DO1 300 = 600; (none) = S3 0. Sum 1400 = all ops' cycles.
TEST(Report, LayerOpsByHand) {
  const Report r = compute_report(read_report_input(stats_json(), "s.json"));
  ASSERT_EQ(r.layer_ops.size(), 3u);
  EXPECT_EQ(r.layer_ops[0].layer, "L1");
  EXPECT_EQ(r.layer_ops[0].commands, 5u);
  EXPECT_EQ(r.layer_ops[0].cycles, 800u);
  EXPECT_EQ(r.layer_ops[1].cycles, 600u);
  EXPECT_EQ(r.layer_ops[1].first_start, 450u);
  EXPECT_EQ(r.layer_ops[1].last_end, 1000u);
  EXPECT_EQ(r.layer_ops[2].cycles, 0u);
}

TEST(Report, LayersByHand) {
  const Report r = compute_report(read_report_input(stats_json(), "s.json"));
  ASSERT_EQ(r.layers.size(), 3u);
  const LayerFigures& l1 = r.layers[0];
  EXPECT_EQ(l1.layer, "L1");
  EXPECT_EQ(l1.commands, 5u);
  EXPECT_EQ(l1.cycles, 450u);  // [0,450)
  EXPECT_EQ(l1.array, 300u);
  EXPECT_EQ(l1.vector, 0u);
  EXPECT_EQ(l1.dma_in, 200u);
  EXPECT_EQ(l1.dma_out, 50u);
  EXPECT_EQ(l1.other, 0u);
  const LayerFigures& l2 = r.layers[1];
  EXPECT_EQ(l2.layer, "L2");
  EXPECT_EQ(l2.cycles, 550u);  // [450,1000)
  EXPECT_EQ(l2.vector, 150u);
  EXPECT_EQ(l2.dma_in, 50u);
  EXPECT_EQ(l2.dma_out, 300u);
  EXPECT_EQ(l2.other, 100u);
  EXPECT_EQ(l2.first_start, 450u);
  EXPECT_EQ(l2.last_end, 1000u);
  EXPECT_EQ(r.layers[2].layer, "");
  EXPECT_EQ(r.layers[2].cycles, 0u);
}

const char* kReportHead =
    "npusim report: s.json (runtime simulation)\n"
    "model:   hand (hand.json), 10 commands\n"
    "config:  default: 800.000 MHz, 2 slice(s) of 16x16\n"
    "\n"
    "totals:\n"
    "  invoke time                      1.250 us            1000 cycles\n"
    "  NPU time                         1.250 us            1000 cycles  100.00 % of invoke time  "
    "(first to last NPU command, DMA included)\n"
    // Compute only 300 (0.375 us), DMA only 450 (562.5 ns, halves up), both 150 (187.5 ns),
    // neither 100 ([600,700), the host): 1000.
    "    compute only                   0.375 us             300 cycles  30.00 % of NPU time\n"
    "    DMA only                       0.563 us             450 cycles  45.00 % of NPU time\n"
    "    compute and DMA                0.188 us             150 cycles  15.00 % of NPU time\n"
    "    neither                        0.125 us             100 cycles  10.00 % of NPU time\n"
    "  compute time                     0.563 us             450 cycles  45.00 % of invoke time\n"
    "  DMA time                         0.750 us             600 cycles  60.00 % of invoke time\n"
    "  DRAM bytes moved                  4000 B   (read 3000 B, written 1000 B)\n"
    "  variable buffer size              4096 B   (peak local memory)\n"
    "\n";

const char* kReportLayers =
    "\n"
    "layers (cycles = union of the layer's commands; shares of those cycles, overlapping):\n"
    "  commands        cycles            us   array %  vector %  DMA load %  DMA store %   other % "
    " layer\n"
    "         5           450         0.563     66.67      0.00       44.44        11.11      0.00 "
    " L1\n"
    "         4           550         0.688      0.00     27.27        9.09        54.55     18.18 "
    " L2\n"
    "         1             0         0.000      0.00      0.00        0.00         0.00      0.00 "
    " (none)\n";

TEST(Report, TotalModeText) {
  const ReportInput in = read_report_input(stats_json(), "s.json");
  std::ostringstream out;
  write_report(out, in, compute_report(in), ReportMode::kTotal);
  EXPECT_EQ(
      out.str(),
      std::string(kReportHead) +
          "op types by cycles (share = cycles / all ops' cycles, summing to 100; wall = union / "
          "invoke time; engine busy = union on its engines / (engines x invoke time)):\n"
          "  op type                  count          cycles  share %    cdf %     wall cycles   "
          "wall %  engine         engine busy %\n"
          // Engine busy: Conv (300 + 200) / (2 x 1000); Relu (150 + 0) / (2 x 1000).
          "  Conv                         2             500    35.71    35.71             300    "
          "30.00  2 engines              25.00\n"
          "  DMA_OUT                      2             350    25.00    60.71             350    "
          "35.00  DMA_OUT                35.00\n"
          "  DMA_IN                       3             300    21.43    82.14             250    "
          "25.00  DMA_IN                 25.00\n"
          "  Relu                         2             150    10.71    92.86             150    "
          "15.00  2 engines               7.50\n"
          "  Host                         1             100     7.14   100.00             100    "
          "10.00  HOST                   10.00\n" +
          kReportLayers);
}

TEST(Report, EachModeText) {
  const ReportInput in = read_report_input(stats_json(), "s.json");
  std::ostringstream out;
  write_report(out, in, compute_report(in), ReportMode::kEach);
  EXPECT_EQ(out.str(),
            std::string(kReportHead) +
                "ops by layer, one row per model operator (share = its ops' cycles / "
                "all ops' cycles; --by command lists every command):\n"
                "  commands   first start      last end        cycles  share %  layer\n"
                "         5             0           450           800    57.14  L1\n"
                "         4           450          1000           600    42.86  L2\n"
                "         1           800           800             0     0.00  (none)\n" +
                kReportLayers);
}

TEST(Report, EachByCommandModeText) {
  const ReportInput in = read_report_input(stats_json(), "s.json");
  std::ostringstream out;
  write_report(out, in, compute_report(in), ReportMode::kEachCommand);
  EXPECT_EQ(out.str(), std::string(kReportHead) +
                           "ops by index (share = cycles / all ops' cycles):\n"
                           "    index  id        op                  engine                  start "
                           "          end      cycles  share %  layer\n"
                           "        0  DI0       DMA_IN              DMA_IN                      0 "
                           "          100         100     7.14  L1\n"
                           "        1  DI1       DMA_IN              DMA_IN                     50 "
                           "          200         150    10.71  L1\n"
                           "        2  S0        Conv                SLICE0.ARRAY              100 "
                           "          400         300    21.43  L1\n"
                           "        3  S1        Conv                SLICE1.ARRAY              150 "
                           "          350         200    14.29  L1\n"
                           "        4  DO0       DMA_OUT             DMA_OUT                   400 "
                           "          450          50     3.57  L1\n"
                           "        5  S2        Relu                SLICE0.VECTOR             450 "
                           "          600         150    10.71  L2\n"
                           "        6  DI2       DMA_IN              DMA_IN                    500 "
                           "          550          50     3.57  L2\n"
                           "        7  H0        Host                HOST                      600 "
                           "          700         100     7.14  L2\n"
                           "        8  DO1       DMA_OUT             DMA_OUT                   700 "
                           "         1000         300    21.43  L2\n"
                           "        9  S3        Relu                SLICE1.VECTOR             800 "
                           "          800           0     0.00  (none)\n" +
                           kReportLayers);
}

TEST(Report, EstimateWhenNoRuntimeOrWhenAskedFor) {
  EXPECT_EQ(read_report_input(stats_json(false), "s.json").section, "estimate");
  const ReportInput in = read_report_input(stats_json(), "s.json", true);
  EXPECT_EQ(in.section, "estimate");
  EXPECT_EQ(in.total_cycles, 10u);
  EXPECT_EQ(compute_report(in).model.npu_cycles, 10u);
}

std::string report_error(const Json& j) {
  try {
    read_report_input(j, "s.json");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Report, RejectsLowStatsLevelAndBadFieldsExactly) {
  Json low = stats_json();
  low["stats_level"] = 40;
  low["runtime"].erase("ops");
  EXPECT_EQ(
      report_error(low),
      "s.json: written at stats level 40, without per-op figures; they need stats level 70 or "
      "more (npusim run --stats-level 70)");
  Json bad = stats_json();
  bad["runtime"]["ops"][3].erase("end_cycle");
  EXPECT_EQ(report_error(bad), "s.json: /runtime/ops/3/end_cycle: missing");
  bad = stats_json();
  bad["runtime"]["ops"][2]["start_cycle"] = -1;
  EXPECT_EQ(report_error(bad),
            "s.json: /runtime/ops/2/start_cycle: expected a non-negative integer");
  bad = stats_json();
  bad["runtime"]["ops"][2]["end_cycle"] = 99;
  EXPECT_EQ(report_error(bad), "s.json: /runtime/ops/2/end_cycle: is before start_cycle");
  bad = stats_json();
  bad["format"] = "other";
  EXPECT_EQ(report_error(bad), "s.json: /format: expected \"npusim-stats\"");
  EXPECT_EQ(report_error(Json::array()), "s.json: expected a JSON object (an npusim stats.json)");
}

// ---- npusim diff ----------------------------------------------------------------------------

TEST(DiffTolerance, ParsesExactDecimals) {
  EXPECT_EQ(parse_tolerance("1")->micro_pct, 1000000u);
  EXPECT_EQ(parse_tolerance("0.5")->micro_pct, 500000u);
  EXPECT_EQ(parse_tolerance("2.000001")->micro_pct, 2000001u);
  EXPECT_EQ(parse_tolerance("0")->micro_pct, 0u);
  for (const char* bad : {"", "-1", "1e3", "0.0000001", ".5", "1.", "abc", "1 "}) {
    EXPECT_FALSE(parse_tolerance(bad).has_value()) << bad;
  }
  EXPECT_EQ(tolerance_text(*parse_tolerance("1")), "1");
  EXPECT_EQ(tolerance_text(*parse_tolerance("0.250")), "0.25");
  EXPECT_EQ(tolerance_text(*parse_tolerance("0")), "0");
}

TEST(DiffTolerance, ExactlyAtTheToleranceIsWithin) {
  const Tolerance one = *parse_tolerance("1");
  EXPECT_FALSE(past_tolerance(100, 101, one));
  EXPECT_FALSE(past_tolerance(100, 99, one));
  EXPECT_TRUE(past_tolerance(1000, 1011, one));
  EXPECT_TRUE(past_tolerance(1000, 989, one));
  EXPECT_FALSE(past_tolerance(0, 0, one));
  EXPECT_TRUE(past_tolerance(0, 1, *parse_tolerance("1000")));
  EXPECT_FALSE(past_tolerance(7, 7, *parse_tolerance("0")));
  EXPECT_TRUE(past_tolerance(7, 8, *parse_tolerance("0")));
  EXPECT_EQ(delta_percent_text(150, 130), "-13.33");
  EXPECT_EQ(delta_percent_text(350, 390), "+11.43");
  EXPECT_EQ(delta_percent_text(100000, 100001), "+0.00");
  EXPECT_EQ(delta_percent_text(0, 5), "n/a");
  EXPECT_EQ(delta_text(5, 3), "-2");
  EXPECT_EQ(delta_text(3, 3), "0");
}

TimelineRow row(const char* id, Cycles start, Cycles end) {
  TimelineRow r;
  r.id = id;
  r.start = start;
  r.end = end;
  r.op_type = "X";
  return r;
}

// A: last End 350; B: last End 390 (+11.43 %). Per layer: L1 300 -> 330, L2 200 -> 190, and Y,
// which B's stats.json does not know, in "(unknown)": 0 -> 5.
std::pair<DiffSide, DiffSide> diff_sides() {
  DiffSide a, b;
  a.label = "a.csv";
  a.rows = {row("DI0", 0, 100), row("S0", 100, 300), row("S1", 100, 250), row("DO0", 300, 350),
            row("X", 0, 10)};
  a.layer_of = std::map<std::string, std::string>{
      {"DI0", "L1"}, {"S0", "L1"}, {"S1", "L2"}, {"DO0", "L2"}, {"X", "L1"}};
  b.label = "b.csv";
  b.rows = {row("DI0", 0, 110), row("S0", 110, 330), row("S1", 110, 240), row("DO0", 330, 390),
            row("Y", 0, 5)};
  b.layer_of =
      std::map<std::string, std::string>{{"DI0", "L1"}, {"S0", "L1"}, {"S1", "L2"}, {"DO0", "L2"}};
  return {a, b};
}

TEST(Diff, CommandsAndLayersByHand) {
  const auto [a, b] = diff_sides();
  const DiffResult r = compute_diff(a, b, *parse_tolerance("1"));
  EXPECT_EQ(r.total_a, 350u);
  EXPECT_EQ(r.total_b, 390u);
  EXPECT_TRUE(r.total_past);
  EXPECT_EQ(r.matched, 4u);
  EXPECT_EQ(r.only_a, std::vector<std::string>{"X"});
  EXPECT_EQ(r.only_b, std::vector<std::string>{"Y"});
  std::vector<std::string> order;
  for (const CommandDelta& d : r.commands) order.push_back(d.id);
  EXPECT_EQ(order, (std::vector<std::string>{"S0", "S1", "DI0", "DO0", "X", "Y"}));
  ASSERT_EQ(r.layers.size(), 3u);
  EXPECT_EQ(r.layers[0].layer, "L1");
  EXPECT_EQ(r.layers[0].a, 300u);
  EXPECT_EQ(r.layers[0].b, 330u);
  EXPECT_EQ(r.layers[1].layer, "L2");
  EXPECT_EQ(r.layers[1].a, 200u);
  EXPECT_EQ(r.layers[1].b, 190u);
  EXPECT_EQ(r.layers[2].layer, "(unknown)");
  EXPECT_EQ(r.layers[2].a, 0u);
  EXPECT_EQ(r.layers[2].b, 5u);
  EXPECT_TRUE(r.any_layer_past);
}

TEST(Diff, TextAndVerdict) {
  const auto [a, b] = diff_sides();
  const Tolerance twelve = *parse_tolerance("12");
  const DiffResult r = compute_diff(a, b, twelve);
  std::ostringstream out;
  DiffPrintOptions options;
  options.top = 4;
  EXPECT_FALSE(write_diff(out, a, b, r, twelve, options));
  EXPECT_EQ(
      out.str(),
      "npusim diff (tolerance 12 %)\n"
      "  A: a.csv (5 commands, clock unknown)\n"
      "  B: b.csv (5 commands, clock unknown)\n"
      "\n"
      "total cycles (last End): A 350, B 390, delta +40 (+11.43 %)\n"
      "commands: 4 matched, 1 only in A, 1 only in B\n"
      "  only in A: X\n"
      "  only in B: Y\n"
      "\n"
      "layers by |delta| (cycles = union of the layer's commands; ! = past the tolerance), all 3:\n"
      "        A cycles      B cycles         delta   delta %  layer\n"
      "             300           330           +30    +10.00  L1\n"
      "             200           190           -10     -5.00  L2\n"
      "!              0             5            +5       n/a  (unknown)\n"
      "\n"
      "commands by |delta| (cycles = End - Start; ! = past the tolerance), top 4 of 6:\n"
      "  id                A cycles      B cycles         delta   delta %\n"
      "  S0                     200           220           +20    +10.00\n"
      "! S1                     150           130           -20    -13.33\n"
      "  DI0                    100           110           +10    +10.00\n"
      "! DO0                     50            60           +10    +20.00\n"
      "\n"
      "result: OK (total +11.43 %, tolerance 12 %)\n");
  options.fail_on_layer = true;
  std::ostringstream strict;
  EXPECT_TRUE(write_diff(strict, a, b, r, twelve, options));
  EXPECT_NE(strict.str().find("result: FAIL (total +11.43 %, 1 layer(s) past, tolerance 12 %)\n"),
            std::string::npos);
}

TEST(Diff, WithoutLayersSaysWhy) {
  auto [a, b] = diff_sides();
  b.layer_of.reset();
  b.no_layers_reason = "b/stats.json not found";
  const DiffResult r = compute_diff(a, b, Tolerance{});
  EXPECT_FALSE(r.has_layers);
  std::ostringstream out;
  EXPECT_TRUE(write_diff(out, a, b, r, Tolerance{}, {}));
  EXPECT_NE(out.str().find("\nlayers: not compared: b/stats.json not found\n"), std::string::npos);
  EXPECT_NE(out.str().find("result: FAIL (total +11.43 %, tolerance 1 %)\n"), std::string::npos);
}

// ---- CSV readers ----------------------------------------------------------------------------

std::string timeline_error(const std::string& text) {
  try {
    read_timeline_csv(text, "t.csv");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "accepted";
}

std::string runtime_error_of(const std::string& text) {
  try {
    read_runtime_csv(text, "r.csv");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "accepted";
}

const std::string kHeader = "ID,Start,End,Location,Op Type\n";

TEST(CsvReader, AcceptsNpusimAndVendorForms) {
  // LF, quoted fields with doubled quotes, commas and a line break; an empty location; a UTF-8
  // byte order mark; CRLF; no line break at the end.
  const std::string text =
      "\xEF\xBB\xBF"
      "ID,Start,End,Location,Op Type\r\n"
      "DI0,4,32900,\"loc(\"\"fc1.weight\"\")\",DMA_IN\r\n"
      "S0,10,20,\"a, b\nc\",Conv\n"
      "DO0,20,20,,\"DMA_OUT\"";
  const auto rows = read_timeline_csv(text, "t.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].row, 2u);
  EXPECT_EQ(rows[0].id, "DI0");
  EXPECT_EQ(rows[0].start, 4u);
  EXPECT_EQ(rows[0].end, 32900u);
  EXPECT_EQ(rows[0].location, "loc(\"fc1.weight\")");
  EXPECT_EQ(rows[0].op_type, "DMA_IN");
  EXPECT_EQ(rows[1].location, "a, b\nc");
  EXPECT_EQ(rows[2].row, 4u);
  EXPECT_EQ(rows[2].location, "");
  EXPECT_EQ(rows[2].op_type, "DMA_OUT");
  EXPECT_EQ(read_timeline_csv(kHeader, "t.csv").size(), 0u);
  const auto big = read_timeline_csv(kHeader + "A,0,9007199254740992,,X\n", "t.csv");
  EXPECT_EQ(big[0].end, kMaxCsvInteger);
}

TEST(CsvReader, RejectsTimelineProblemsNamingFileRowAndField) {
  EXPECT_EQ(
      timeline_error(""),
      "t.csv: empty file; a timeline.csv starts with the header 'ID,Start,End,Location,Op Type'");
  EXPECT_EQ(timeline_error("ID,Start,End\n"),
            "t.csv: row 1: expected the timeline.csv header 'ID,Start,End,Location,Op Type', found "
            "'ID,Start,End'");
  EXPECT_EQ(timeline_error("id;time_since_open;time_since_start;location\n0;1;1;\"x\"\n"),
            "t.csv: row 1: expected the timeline.csv header 'ID,Start,End,Location,Op Type', found "
            "'id;time_since_open;time_since_start;location' (that is a runtime.csv header)");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x\n"), "t.csv: row 2: expected 5 fields, found 4");
  // Location runs to the last comma, so a trailing comma leaves Op Type empty.
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,Conv,\n"), "t.csv: row 2, field 'Op Type': empty");
  EXPECT_EQ(timeline_error(kHeader + "S0,1.5,2,x,Conv\n"),
            "t.csv: row 2, field 'Start': expected a non-negative integer (cycles), found '1.5'");
  EXPECT_EQ(timeline_error(kHeader + "S0,-1,2,x,Conv\n"),
            "t.csv: row 2, field 'Start': expected a non-negative integer (cycles), found '-1'");
  EXPECT_EQ(timeline_error(kHeader + "S0,1, 2,x,Conv\n"),
            "t.csv: row 2, field 'End': expected a non-negative integer (cycles), found ' 2'");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,,x,Conv\n"),
            "t.csv: row 2, field 'End': expected a non-negative integer (cycles), found ''");
  EXPECT_EQ(timeline_error(kHeader + "S0,0,9007199254740993,x,Conv\n"),
            "t.csv: row 2, field 'End': '9007199254740993' is larger than 9007199254740992");
  EXPECT_EQ(timeline_error(kHeader + "S0,10,5,x,Conv\n"),
            "t.csv: row 2, field 'End': 5 is before Start 10");
  EXPECT_EQ(timeline_error(kHeader + ",1,2,x,Conv\n"), "t.csv: row 2, field 'ID': empty");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,\n"), "t.csv: row 2, field 'Op Type': empty");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,Conv\nS0,3,4,y,Conv\n"),
            "t.csv: row 3, field 'ID': duplicate ID 'S0' (also in row 2)");
  // Quotes in the other fields are still errors; the Location is free text (see below).
  EXPECT_EQ(timeline_error(kHeader + "S\"0,1,2,x,Conv\n"),
            "t.csv: row 2, field 'ID': a quote inside an unquoted field (quote the whole field "
            "and double the quotes in it)");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,Conv\rS1,1,2,x,Conv\n"),
            "t.csv: row 2, field 'Location': a CR not followed by LF (line breaks are CRLF or LF)");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,Conv\n\nS1,1,2,x,Conv\n"),
            "t.csv: row 3: empty line");
  EXPECT_EQ(timeline_error(kHeader + "S0,1,2,x,Conv\n\n"), "t.csv: row 3: empty line");
  // A quoted line break in row 2 puts row 3 on line 4.
  EXPECT_EQ(
      timeline_error(kHeader + "S0,1,2,\"a\nb\",Conv\nS1,1,x,y,Conv\n"),
      "t.csv: row 3 (line 4), field 'End': expected a non-negative integer (cycles), found 'x'");
}

TEST(CsvReader, RuntimeAcceptsAndRejects) {
  const auto rows = read_runtime_csv(
      "id;time_since_open;time_since_start;location\r\n"
      "0;102;102;\"loc(\"\"fc.json\"\":1:1)\"\r\n"
      "4;130;20;\"a;b\"\r\n"
      "7;130;0;\r\n",
      "r.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].id, 0u);
  EXPECT_EQ(rows[0].end_us, 102u);
  EXPECT_EQ(rows[0].duration_us, 102u);
  EXPECT_EQ(rows[0].start_us(), 0u);
  EXPECT_EQ(rows[0].location, "loc(\"fc.json\":1:1)");
  EXPECT_EQ(rows[1].id, 4u);
  EXPECT_EQ(rows[1].start_us(), 110u);
  EXPECT_EQ(rows[1].location, "a;b");
  EXPECT_EQ(rows[2].row, 4u);
  EXPECT_EQ(rows[2].location, "");

  const std::string header = "id;time_since_open;time_since_start;location\n";
  EXPECT_EQ(runtime_error_of(header + "0;20;30;x\n"),
            "r.csv: row 2, field 'time_since_start': duration 30 us exceeds time_since_open 20 us "
            "(the program's end)");
  EXPECT_EQ(runtime_error_of(header + "0;20;10;x\n0;40;10;y\n"),
            "r.csv: row 3, field 'id': duplicate id 0 (also in row 2)");
  EXPECT_EQ(
      runtime_error_of(header + "p0;20;10;x\n"),
      "r.csv: row 2, field 'id': expected a non-negative integer (program index), found 'p0'");
  EXPECT_EQ(runtime_error_of(header + "0;20.5;10;x\n"),
            "r.csv: row 2, field 'time_since_open': expected a non-negative integer "
            "(microseconds), found '20.5'");
  EXPECT_EQ(runtime_error_of(header + "0;20;10\n"), "r.csv: row 2: expected 4 fields, found 3");
  EXPECT_EQ(runtime_error_of(kHeader + "S0,1,2,\"x\",Conv\n"),
            "r.csv: row 1: expected the runtime.csv header "
            "'id;time_since_open;time_since_start;location', "
            "found 'ID,Start,End,Location,Op Type' (that is a timeline.csv header)");
}

// Vendor toolchains (Torq's compile profile) write the MLIR location unquoted, with quotes and
// commas in it; their own reader takes ID, Start, End from the left and Op Type from the right.
TEST(CsvReader, VendorRowsWithUnquotedLocationsConvert) {
  const auto rows = read_timeline_csv(
      kHeader +
          "S0,129,300,loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1)),fully_connected\n"
          "S1,300,310,loc(fused[\"a\", \"b\"]),add\r\n"
          "S2,310,320,lo\"c,Conv\n"
          "S3,320,330,\"/x\":3,Conv\n"
          "S4,330,340,\"loc,Conv\n"
          "S5,340,350,\"quoted, as npusim writes it\",Relu\n",
      "t.csv");
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].id, "S0");
  EXPECT_EQ(rows[0].start, 129u);
  EXPECT_EQ(rows[0].end, 300u);
  EXPECT_EQ(rows[0].location, "loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1))");
  EXPECT_EQ(rows[0].op_type, "fully_connected");
  EXPECT_EQ(rows[1].location, "loc(fused[\"a\", \"b\"])");  // a comma inside: still one field
  EXPECT_EQ(rows[1].op_type, "add");
  EXPECT_EQ(rows[2].location, "lo\"c");
  EXPECT_EQ(rows[3].location, "\"/x\":3");  // starts with a quote that is not a quoted field
  EXPECT_EQ(rows[4].location, "\"loc");
  EXPECT_EQ(rows[5].location, "quoted, as npusim writes it");
  EXPECT_EQ(rows[5].op_type, "Relu");

  const auto runtime = read_runtime_csv(
      "id;time_since_open;time_since_start;location\n"
      "0;102;102;loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1))\n"
      "1;130;20;loc(\"a;b\")\n",
      "r.csv");
  ASSERT_EQ(runtime.size(), 2u);
  EXPECT_EQ(runtime[0].location, "loc(callsite(\"/x/fc.mlir\":3:10 at \"/x/fc.mlir\":1:1))");
  EXPECT_EQ(runtime[1].location, "loc(\"a;b\")");
  EXPECT_EQ(runtime[1].start_us(), 110u);
}

TEST(CsvReader, ParseCsvNamesUnnamedFieldsByPosition) {
  try {
    parse_csv("a;b;\"c\"d\n", ';', "x.csv", {"first"});
    FAIL() << "accepted";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), "x.csv: row 1, field 3: unexpected 'd' after the closing quote");
    EXPECT_EQ(e.file(), "x.csv");
    EXPECT_EQ(e.row(), 1u);
    EXPECT_EQ(e.field(), "3");
    EXPECT_EQ(e.message(), "unexpected 'd' after the closing quote");
  }
  const auto records = parse_csv("\"\"\n\"a\"\"b\";\n", ';', "x.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, std::vector<std::string>{""});  // a quoted empty field is a record
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"a\"b", ""}));
}

// ---- npusim convert -------------------------------------------------------------------------

TimelineRow trow(const char* id, Cycles start, Cycles end, const char* op) {
  TimelineRow r = row(id, start, end);
  r.op_type = op;
  r.location = std::string("loc(") + id + ")";
  return r;
}

// At 800 MHz (1.25 ns per cycle, floored): DI0 [0,125) DI1 [62,187) S0 [125,375) S1 [150,250)
// DO0 [375,425) S2 [500,625) ns.
ImportedTrace import_example() {
  ImportedFile t;
  t.path = "t.csv";
  t.kind = ImportedFile::Kind::kTimeline;
  t.timeline = {trow("DI0", 0, 100, "DMA_IN"),    trow("DI1", 50, 150, "DMA_IN"),
                trow("S0", 100, 300, "Conv"),     trow("S1", 120, 200, "Gemm"),
                trow("DO0", 300, 340, "DMA_OUT"), trow("S2", 400, 500, "Relu")};
  ImportedFile r;
  r.path = "r.csv";
  r.kind = ImportedFile::Kind::kRuntime;
  r.runtime = {{2, 0, 20, 15, "loc(a)"}, {3, 1, 30, 5, "loc(b)"}};
  std::vector<ImportedFile> files;
  files.push_back(std::move(t));
  files.push_back(std::move(r));
  return ImportedTrace(std::move(files), 800000);
}

TEST(ConvertOverview, FiguresByHand) {
  const ImportedTrace trace = import_example();
  ASSERT_EQ(trace.overview().size(), 2u);
  const FileOverview& t = trace.overview()[0];
  EXPECT_EQ(t.pid, 1);
  EXPECT_EQ(t.rows, 6u);
  ASSERT_TRUE(t.cycles.has_value());
  // Cycles: DMA [0,150) u [300,340) = 190; slice [100,300) u [400,500) = 300; overlap [100,150).
  const OverviewFigures& c = *t.cycles;
  EXPECT_EQ(c.dma, 190u);
  EXPECT_EQ(c.slice, 300u);
  EXPECT_EQ(c.overlap, 50u);
  EXPECT_EQ(c.dma_only, 140u);
  EXPECT_EQ(c.slice_only, 250u);
  EXPECT_EQ(c.busy, 440u);
  EXPECT_EQ(c.overall, 500u);
  EXPECT_EQ(c.idle, 60u);
  // ns: DMA [0,187) u [375,425) = 237; slice [125,375) u [500,625) = 375; overlap [125,187) = 62.
  const OverviewFigures& n = t.ns;
  EXPECT_EQ(n.dma, 237u);
  EXPECT_EQ(n.slice, 375u);
  EXPECT_EQ(n.overlap, 62u);
  EXPECT_EQ(n.dma_only, 175u);
  EXPECT_EQ(n.slice_only, 313u);
  EXPECT_EQ(n.busy, 550u);
  EXPECT_EQ(n.overall, 625u);
  EXPECT_EQ(n.idle, 75u);
  const FileOverview& r = trace.overview()[1];
  EXPECT_EQ(r.pid, 2);
  EXPECT_FALSE(r.cycles.has_value());
  // Programs [5,20) and [25,30) us.
  EXPECT_EQ(r.ns.busy, 20000u);
  EXPECT_EQ(r.ns.first_start, 5000u);
  EXPECT_EQ(r.ns.last_end, 30000u);
  EXPECT_EQ(r.ns.overall, 25000u);
  EXPECT_EQ(r.ns.idle, 5000u);

  std::ostringstream table;
  write_overview_table(table, trace);
  EXPECT_EQ(table.str(),
            "overview (us; busy = union of all rows, idle = overall - busy, overall = last end - "
            "first start):\n"
            "   pid  kind         rows           DMA         slice      DMA only    slice only     "
            "DMA+slice          busy          idle       overall  file\n"
            "     1  timeline        6         0.237         0.375         0.175         0.313     "
            "    0.062         0.550         0.075         0.625  t.csv\n"
            "     2  runtime         2             -             -             -             -     "
            "        -        20.000         5.000        25.000  r.csv\n");
}

TEST(ConvertTrace, OneProcessPerFileLanesForOverlapsUniqueIds) {
  const ImportedTrace trace = import_example();
  std::ostringstream bytes;
  trace.write_perfetto(bytes);
  pb::Trace decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes.str()));
  std::vector<std::pair<int, std::string>> processes;
  std::vector<std::string> threads;
  std::set<std::uint64_t> uuids;
  std::set<int> tids;
  std::map<std::uint64_t, std::string> track_name;
  std::vector<std::tuple<std::string, std::string, std::uint64_t>> begins;  // track, name, ts
  for (const pb::TracePacket& p : decoded.packet()) {
    if (p.has_track_descriptor()) {
      const pb::TrackDescriptor& d = p.track_descriptor();
      EXPECT_TRUE(uuids.insert(d.uuid()).second) << "uuid " << d.uuid() << " twice";
      if (d.has_process()) processes.emplace_back(d.process().pid(), d.process().process_name());
      if (d.has_thread()) {
        threads.push_back(std::to_string(d.thread().pid()) + " " + d.thread().thread_name());
        EXPECT_TRUE(tids.insert(d.thread().tid()).second);
        EXPECT_GT(d.thread().tid(), 2);
        track_name[d.uuid()] = d.thread().thread_name();
      }
    } else if (p.has_track_event() && p.track_event().type() == pb::TrackEvent::TYPE_SLICE_BEGIN) {
      begins.emplace_back(track_name[p.track_event().track_uuid()], p.track_event().name(),
                          p.timestamp());
    }
  }
  EXPECT_EQ(processes, (std::vector<std::pair<int, std::string>>{{1, "timeline: t.csv"},
                                                                 {2, "runtime: r.csv"}}));
  EXPECT_EQ(threads, (std::vector<std::string>{"1 compute", "1 compute lane 1", "1 DMA_IN",
                                               "1 DMA_IN lane 1", "1 DMA_OUT", "2 programs"}));
  std::sort(begins.begin(), begins.end());
  EXPECT_EQ(begins, (std::vector<std::tuple<std::string, std::string, std::uint64_t>>{
                        {"DMA_IN", "0_DMA_IN_DI0", 0},
                        {"DMA_IN lane 1", "1_DMA_IN_DI1", 62},
                        {"DMA_OUT", "4_DMA_OUT_DO0", 375},
                        {"compute", "2_Conv_S0", 125},
                        {"compute", "5_Relu_S2", 500},
                        {"compute lane 1", "3_Gemm_S1", 150},
                        {"programs", "0_program_0", 5000},
                        {"programs", "1_program_1", 25000},
                    }));
}

TEST(ConvertTrace, RejectsTimesPastTheTraceRange) {
  ImportedFile t;
  t.path = "t.csv";
  t.timeline = {trow("S0", 0, kMaxCsvInteger, "Conv")};
  t.timeline[0].row = 2;
  std::vector<ImportedFile> files;
  files.push_back(std::move(t));
  try {
    ImportedTrace trace(std::move(files), 1);  // 1 kHz: 1 cycle = 1 ms
    FAIL() << "accepted";
  } catch (const ParseError& e) {
    EXPECT_STREQ(
        e.what(),
        "t.csv: row 2, field 'End': 9007199254740992 cycles is past the latest time a trace "
        "can hold (2^63-1 ns) at this clock");
  }
}

}  // namespace
}  // namespace npusim::profiler
