#include "seedance/cache/simulate.h"

#include <atomic>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::cache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr WorkingSet kSet{.objects = 1000, .bytes = int64_t{1} << 30};

struct SizeCase {
  const char* name;
  const char* list;
  CacheUnit unit;
  std::vector<int64_t> want;
};

TEST(ParseCacheSizesTest, ReadsCountsBytesAndFractions) {
  const std::vector<SizeCase> cases = {
      {"object counts", "1000, 1,250", CacheUnit::kObjects, {1000, 1, 250}},
      {"fractions of the distinct objects",
       "0.01,5%,100%,1.0",
       CacheUnit::kObjects,
       {10, 50, 1000, 1000}},
      {"plain bytes", "4096", CacheUnit::kBytes, {4096}},
      {"binary units, any case",
       "128MiB,1GB,512kib,2K,1.5G,3b",
       CacheUnit::kBytes,
       {128 << 20, 1 << 30, 512 << 10, 2048, 3 << 29, 3}},
      {"fractions of the distinct bytes", "0.5,25%", CacheUnit::kBytes, {1 << 29, 1 << 28}},
  };
  for (const SizeCase& c : cases) {
    auto got = ParseCacheSizes(c.list, c.unit, kSet);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

TEST(ParseCacheSizesTest, ErrorsNameTheItem) {
  const std::vector<std::tuple<const char*, CacheUnit, const char*>> cases = {
      {"1,2,12XB", CacheUnit::kBytes, "item 3 '12XB': unknown unit 'XB'"},
      {"0", CacheUnit::kObjects, "item 1 '0': a cache size must be >= 1"},
      {"-5", CacheUnit::kObjects, "item 1 '-5': expected a non-negative number"},
      {"nan", CacheUnit::kObjects, "item 1 'nan': expected a non-negative number"},
      {"1e3", CacheUnit::kObjects, "item 1 '1e3': unknown unit 'e3'"},
      {"1..2", CacheUnit::kObjects, "item 1 '1..2': expected a non-negative number"},
      {"1,,2", CacheUnit::kObjects, "item 2 '': empty size"},
      {"", CacheUnit::kObjects, "item 1 '': empty size"},
      {"1.5", CacheUnit::kObjects, "item 1 '1.5': a fraction of the working set must be in (0, 1]"},
      {"0%", CacheUnit::kObjects, "item 1 '0%': a percentage must be in (0, 100]"},
      {"101%", CacheUnit::kBytes, "item 1 '101%': a percentage must be in (0, 100]"},
      {"0.0001", CacheUnit::kObjects, "item 1 '0.0001': is under 1 of the working set's 1000"},
      {"128MiB", CacheUnit::kObjects, "item 1 '128MiB': a size in bytes needs object sizes"},
      {"99999999999999999999", CacheUnit::kObjects, "item 1 '99999999999999999999': too large"},
      {"99999999T", CacheUnit::kBytes, "item 1 '99999999T': too large"},
  };
  for (const auto& [list, unit, want] : cases) {
    auto got = ParseCacheSizes(list, unit, kSet);
    ASSERT_FALSE(got.ok()) << list;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(want)) << list;
  }
}

TEST(MeasureWorkingSetTest, CountsEachObjectOnceAtItsFirstSize) {
  const std::vector<Request> t = {
      {.id = 1, .size = 10}, {.id = 2, .size = 5}, {.id = 1, .size = 99}, {.id = 3, .size = 0}};
  const WorkingSet ws = MeasureWorkingSet(t);
  EXPECT_EQ(ws.objects, 2);
  EXPECT_EQ(ws.bytes, 15);
}

TEST(ParsePolicyListTest, ReadsNamesAliasesAndAll) {
  EXPECT_THAT(*ParsePolicyList("LRU, s3-fifo,optimal"), ElementsAre("lru", "s3fifo", "belady"));
  EXPECT_EQ(*ParsePolicyList("all"), PolicyNames());
  auto bad = ParsePolicyList("lru,lfu9");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("item 2 'lfu9': unknown cache policy 'lfu9'"));
}

TEST(SimulateGridTest, MatchesSimulateJsonPolicyMajor) {
  std::vector<Request> t;
  for (uint64_t i = 0; i < 300; ++i) t.push_back({.id = (i * 7) % 23 + (i % 5 == 0 ? i : 0)});
  const std::vector<std::string> policies = {"lru", "arc", "belady"};
  const std::vector<int64_t> sizes = {2, 8};
  std::atomic<size_t> calls = 0;
  GridOptions options;
  options.jobs = 3;
  options.progress = [&](size_t done, size_t total) {
    EXPECT_EQ(total, 6u);
    EXPECT_LE(done, total);
    ++calls;
  };
  auto rows = SimulateGrid(t, policies, sizes, CacheUnit::kObjects, options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(calls, 6u);
  ASSERT_EQ(rows->size(), 6u);
  EXPECT_EQ((*rows)[1].policy, "lru");
  EXPECT_EQ((*rows)[1].size, 8);
  EXPECT_EQ((*rows)[2].policy, "arc");
  auto json = SimulateJson(t, policies, sizes, CacheUnit::kObjects);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(RowsToJson(*rows), *json);
}

TEST(SimulateGridTest, WritesCsvAndAnAlignedTable) {
  const std::vector<SimulationRow> rows = {
      {.policy = "lru", .size = 2, .requests = 3, .misses = 2},
      {.policy = "wtinylfu", .size = 1000, .requests = 3, .misses = 3}};
  EXPECT_EQ(RowsToCsv(rows),
            "policy,size,requests,misses,miss_ratio\n"
            "lru,2,3,2,0.6666666666666666\n"
            "wtinylfu,1000,3,3,1.0\n");
  EXPECT_EQ(RowsToTable(rows),
            "policy    size  requests  misses  miss_ratio\n"
            "lru          2         3       2    0.666667\n"
            "wtinylfu  1000         3       3    1.000000\n");
}

TEST(SimulateGridTest, AnUnknownPolicyIsAnError) {
  auto rows = SimulateGrid({{.id = 1}}, {"lru", "nope"}, {1}, CacheUnit::kObjects);
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(std::string(rows.status().message()), HasSubstr("nope"));
}

}  // namespace
}  // namespace seedance::cache
