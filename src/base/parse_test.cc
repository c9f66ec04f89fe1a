// The strict flag-value parsers: table-driven {input, want} rows.
#include "seedance/base/parse.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(ParseDoubleTest, RefusesNonFiniteAndGarbage) {
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e400", "", " 1", "1 ", "1x", "0x10",
                          "--1", "1e", "."}) {
    auto v = ParseDouble(bad, "--tune", Closed(0.01, 100));
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("--tune"), std::string::npos) << v.status();
  }
}

TEST(ParseDoubleTest, RangeIsEnforcedAndPrintedReadably) {
  auto v = ParseDouble("1e300", "--warmup", Closed(0, 1e6));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "--warmup: must be in [0, 1000000], got '1e300'");
  auto w = ParseDouble("0", "--interval", Positive());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "--interval: must be > 0, got '0'");
  EXPECT_EQ(*ParseDouble("1.5", "--x", Closed(0, 2)), 1.5);
  EXPECT_EQ(DescribeRange(Closed(0, 1.7976931348623157e308)), ">= 0");
  EXPECT_EQ(DescribeRange(Closed(0, 1e300)), "in [0, 1e+300]");
}

TEST(ParseIntTest, OverflowSignAndFractionsAreErrors) {
  EXPECT_FALSE(ParseUint64("-1", "--seed", 0, UINT64_MAX).ok());
  EXPECT_FALSE(ParseUint64("18446744073709551616", "--seed", 0, UINT64_MAX).ok());
  EXPECT_EQ(*ParseUint64("18446744073709551615", "--seed", 0, UINT64_MAX), UINT64_MAX);
  EXPECT_FALSE(ParseInt64("1.5", "--jobs", 0, 10).ok());
  EXPECT_FALSE(ParseInt64("11", "--jobs", 0, 10).ok());
  EXPECT_EQ(*ParseInt64("-3", "--n", -5, 5), -3);
}

TEST(ParseDurationTest, SuffixesAndBareUnits) {
  struct Row {
    const char* text;
    double bare_unit_s;
    double want_s;
  } rows[] = {{"300", 1, 300},   {"300s", 3600, 300}, {"5m", 1, 300},     {"72h", 1, 259200},
              {"2", 3600, 7200}, {"1h30m", 1, 5400},  {"250ms", 1, 0.25}, {"1d", 1, 86400}};
  for (const Row& r : rows) {
    auto v = ParseDuration(r.text, "--duration", r.bare_unit_s, NonNegative());
    ASSERT_TRUE(v.ok()) << r.text << ": " << v.status();
    EXPECT_DOUBLE_EQ(*v, r.want_s) << r.text;
  }
  for (const char* bad : {"inf", "nan", "5x", "h", "-5s", "1e309", "5 m", ""}) {
    EXPECT_FALSE(ParseDuration(bad, "--duration", 1, NonNegative()).ok()) << bad;
  }
  EXPECT_FALSE(ParseDuration("0", "--duration", 1, Positive()).ok());
}

TEST(ParseSeedListTest, RangesCommaListsAndOverflow) {
  EXPECT_EQ(ParseSeedList("42-44,7", "--seeds")->size(), 4u);
  auto top = ParseSeedList("18446744073709551614-18446744073709551615", "--seeds");
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(top->back(), UINT64_MAX);
  for (const char* bad : {"", "9-1", "1,", ",1", "a", "1-2-3", "-1", "0-18446744073709551615",
                          "1--2", "18446744073709551616"}) {
    EXPECT_FALSE(ParseSeedList(bad, "--seeds").ok()) << bad;
  }
}

TEST(ParseByteSizeTest, Suffixes) {
  EXPECT_EQ(*ParseByteSize("64M", "--max-input-size", 1, INT64_MAX), 64 << 20);
  EXPECT_EQ(*ParseByteSize("2GiB", "--max-input-size", 1, INT64_MAX), int64_t{2} << 30);
  EXPECT_FALSE(ParseByteSize("99999999999T", "--max-input-size", 1, INT64_MAX).ok());
  EXPECT_FALSE(ParseByteSize("-1", "--max-input-size", 1, INT64_MAX).ok());
}

TEST(ClosestMatchTest, SuggestsTyposOnly) {
  const std::vector<std::string> cmds = {"simulate", "profile", "analyze", "serve-sim"};
  EXPECT_EQ(ClosestMatch("simulat", cmds), "simulate");
  EXPECT_EQ(ClosestMatch("analyse", cmds), "analyze");
  EXPECT_EQ(ClosestMatch("foo", cmds), "");
  EXPECT_EQ(ClosestMatch("--roofline-exp", {"--roofline-exponent", "--profile"}),
            "--roofline-exponent");
  EXPECT_EQ(ClosestMatch("--pro", {"--profile", "--prometheus"}), "");
}

}  // namespace
}  // namespace seedance::base
