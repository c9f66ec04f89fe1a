#include "seedance/base/uuid.h"

#include <regex>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(UuidTest, VersionFourInTheRfcLayoutAndNeverTwice) {
  const std::regex layout("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string u = NewUuid();
    EXPECT_TRUE(std::regex_match(u, layout)) << u;
    EXPECT_TRUE(seen.insert(u).second) << u;
  }
}

}  // namespace
}  // namespace seedance::base
