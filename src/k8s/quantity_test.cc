#include "seedance/k8s/quantity.h"

#include "gtest/gtest.h"

namespace seedance::k8s {
namespace {

int64_t Q(std::string_view text, Unit unit, Round round = Round::kUp) {
  absl::StatusOr<int64_t> v = ParseQuantity(text, unit, round);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.value_or(-1);
}

TEST(QuantityTest, CpuInMilli) {
  EXPECT_EQ(Q("2", kMilli), 2000);
  EXPECT_EQ(Q("500m", kMilli), 500);
  EXPECT_EQ(Q("0.1", kMilli), 100);
  EXPECT_EQ(Q("1.5", kMilli), 1500);
  EXPECT_EQ(Q(".5", kMilli), 500);
  EXPECT_EQ(Q("1.", kMilli), 1000);
  EXPECT_EQ(Q("+3", kMilli), 3000);
  EXPECT_EQ(Q("1e3", kMilli), 1000000);
  EXPECT_EQ(Q("1E-3", kMilli), 1);
  EXPECT_EQ(Q("0", kMilli), 0);
  EXPECT_EQ(Q("0.000", kMilli), 0);
  EXPECT_EQ(Q("1.5000", kMilli), 1500);
}

TEST(QuantityTest, RoundsUpRequestsAndDownCapacities) {
  EXPECT_EQ(Q("100u", kMilli, Round::kUp), 1);  // 0.1 milli-CPU is still a request
  EXPECT_EQ(Q("100u", kMilli, Round::kDown), 0);
  EXPECT_EQ(Q("250n", kMilli, Round::kUp), 1);
  EXPECT_EQ(Q("1500500u", kMilli, Round::kDown), 1500);
  EXPECT_EQ(Q("1500500u", kMilli, Round::kUp), 1501);
}

TEST(QuantityTest, MemoryInMib) {
  EXPECT_EQ(Q("16Gi", kMib), 16384);
  EXPECT_EQ(Q("512Mi", kMib), 512);
  EXPECT_EQ(Q("1Ki", kMib, Round::kUp), 1);
  EXPECT_EQ(Q("1Ki", kMib, Round::kDown), 0);
  EXPECT_EQ(Q("100M", kMib, Round::kUp), 96);  // 100e6 bytes = 95.37 MiB
  EXPECT_EQ(Q("100M", kMib, Round::kDown), 95);
  EXPECT_EQ(Q("1048576", kMib), 1);
  EXPECT_EQ(Q("65821148Ki", kMib, Round::kDown), 64278);  // a kubelet's allocatable memory
  EXPECT_EQ(Q("1.5Gi", kMib), 1536);
  EXPECT_EQ(Q("2Ti", kMib), 2097152);
  EXPECT_EQ(Q("1Ei", kMib), int64_t{1} << 40);
}

TEST(QuantityTest, Counts) {
  EXPECT_EQ(Q("8", kCount), 8);
  EXPECT_EQ(Q("3k", kCount), 3000);
  EXPECT_EQ(Q("1500m", kCount, Round::kUp), 2);
}

TEST(QuantityTest, RefusesWhatIsNotAQuantity) {
  for (std::string_view bad : {"", "abc", "1.2.3", "1x", "--1", "1 Gi", "Gi", ".", "1e", "1e+",
                               "1ki", "1mi", "1e1000", "0x10"}) {
    absl::StatusOr<int64_t> v = ParseQuantity(bad, kMilli, Round::kUp);
    EXPECT_FALSE(v.ok()) << "'" << bad << "' parsed as " << *v;
    if (!v.ok()) {
      EXPECT_NE(v.status().message().find("quantity"), std::string::npos) << v.status();
    }
  }
}

TEST(QuantityTest, RefusesNegativeAndHugeValues) {
  absl::StatusOr<int64_t> neg = ParseQuantity("-1", kMilli, Round::kUp);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos);
  absl::StatusOr<int64_t> big = ParseQuantity("10E", kMilli, Round::kUp);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("too large"), std::string::npos);
  EXPECT_FALSE(ParseQuantity("9223372036854775807", kMilli, Round::kUp).ok());
  EXPECT_FALSE(ParseQuantity("1234567890123456789", kCount, Round::kUp).ok());  // 19 digits
  EXPECT_EQ(ParseQuantity("9223372036854775", kMilli, Round::kUp).value_or(-1),
            int64_t{9223372036854775000});
}

}  // namespace
}  // namespace seedance::k8s
