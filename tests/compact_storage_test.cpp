// The compact per-command storage (profiler/interned_string.h): interned strings compare and sort
// by their text, index lists behave as the vectors they replace, and both survive a schedule's
// write and load.
#include "profiler/interned_string.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/ir/schedule.h"
#include "sim/ir/schedule_writer.h"

namespace npusim {
namespace {

TEST(InternedString, EqualTextsShareOneCopy) {
  const InternedString a = std::string("layer.7");
  const InternedString b = "layer.7";
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_NE(a, InternedString("layer.8"));
  EXPECT_EQ(a, std::string("layer.7"));
  EXPECT_EQ(a.size(), 7u);
}

TEST(InternedString, EmptyIsTheDefault) {
  const InternedString none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none, InternedString(""));
  EXPECT_EQ(none.str(), "");
}

TEST(InternedString, SortsByTextNotByWhenItWasInterned) {
  // Interned in reverse alphabetical order: a pool-order sort would give the reverse.
  std::vector<InternedString> names = {"sort_test.zeta", "sort_test.mu", "sort_test.alpha", ""};
  std::sort(names.begin(), names.end());
  const std::vector<std::string> expected = {"", "sort_test.alpha", "sort_test.mu",
                                             "sort_test.zeta"};
  ASSERT_EQ(names.size(), expected.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i].str(), expected[i]);
  EXPECT_FALSE(names[1] < names[1]);
}

TEST(InternedString, ConcatenatesAndConvertsLikeAString) {
  const InternedString layer = "conv1";
  const std::string& text = layer;
  EXPECT_EQ(text, "conv1");
  EXPECT_EQ("fused(" + layer + ")", "fused(conv1)");
  std::ostringstream out;
  out << layer;
  EXPECT_EQ(out.str(), "conv1");
}

TEST(IndexList, GrowsPastItsInlineValues) {
  IndexList list;
  for (std::uint32_t v : {7u, 3u, 9u, 3u, 1u}) list.push_back(v);
  EXPECT_EQ(list, (std::vector<std::uint32_t>{7, 3, 9, 3, 1}));
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  EXPECT_EQ(list, (std::vector<std::uint32_t>{1, 3, 7, 9}));
  const std::vector<std::uint32_t> more = {11, 12};
  list.insert(list.end(), more.begin(), more.end());
  EXPECT_EQ(list, (std::vector<std::uint32_t>{1, 3, 7, 9, 11, 12}));
}

TEST(IndexList, CopiesAndMovesInlineAndHeapLists) {
  const IndexList small = {4, 5};
  IndexList large = {1, 2, 3, 4};
  const IndexList large_copy(large);
  EXPECT_EQ(large_copy, large);
  IndexList moved = std::move(large);
  EXPECT_EQ(moved, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  moved = small;
  EXPECT_EQ(moved, (std::vector<std::uint32_t>{4, 5}));
  moved = std::vector<std::uint32_t>{8, 9, 10};
  EXPECT_EQ(moved.size(), 3u);
  EXPECT_EQ(moved.back(), 10u);
}

TEST(CompactStorage, DependenciesAndNamesRoundTripThroughAFile) {
  // Four loads and a GEMM waiting on all of them (past the inline dependencies), then a store.
  const HwConfig config = parse_hw_config("{}", "cfg");
  Schedule s;
  s.model.name = "compact";
  s.programs.push_back({"p", ""});
  for (std::uint32_t i = 0; i < 4; ++i) {
    Command load;
    load.id = "DI" + std::to_string(i);
    load.engine = EngineKind::kDmaIn;
    load.bytes = 64;
    load.layer = "fc1";
    load.loc = "loc(\"x\")";
    s.commands.push_back(load);
  }
  Command gemm;
  gemm.id = "S0";
  gemm.engine = EngineKind::kArray;
  gemm.op = find_op("Gemm");
  gemm.shape = GemmShape{1, 4, 4, 4};
  gemm.deps = {3, 0, 2, 1};
  gemm.layer = "fc1";
  gemm.loc = "loc(\"fc1\")";
  s.commands.push_back(gemm);
  Command store;
  store.id = "DO0";
  store.engine = EngineKind::kDmaOut;
  store.bytes = 16;
  store.deps.push_back(4);
  store.layer = "fc1.out";
  s.commands.push_back(store);
  Diagnostics diag("compact");
  finalize_schedule(s, config, diag);
  ASSERT_TRUE(diag.empty());

  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("npusim_compact_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path);
    write_schedule_json(out, s);
  }
  const Schedule again = load_schedule(path.string(), config);
  std::filesystem::remove(path);
  ASSERT_EQ(again.commands.size(), 6u);
  EXPECT_EQ(again.commands[4].deps, (std::vector<std::uint32_t>{3, 0, 2, 1}));
  EXPECT_EQ(again.commands[5].deps, (std::vector<std::uint32_t>{4}));
  EXPECT_TRUE(again.commands[0].deps.empty());
  EXPECT_EQ(again.commands[4].layer, "fc1");
  EXPECT_EQ(again.commands[4].loc, "loc(\"fc1\")");
  EXPECT_EQ(again.commands[5].layer, "fc1.out");
  EXPECT_TRUE(again.commands[5].loc.empty());
  EXPECT_EQ(again.commands[0].layer, again.commands[4].layer);
}

}  // namespace
}  // namespace npusim
