// SEEDANCE_CHECK stays on in every build and reports what broke.
#include "seedance/base/check.h"

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(CheckDeathTest, FailedCheckAbortsWithConditionAndMessage) {
  const int free_blocks = 3;
  EXPECT_DEATH(SEEDANCE_CHECK(free_blocks < 2) << "free list has " << free_blocks,
               "invariant violated at .*check_test.cc:[0-9]+: free_blocks < 2: free list has 3");
}

TEST(CheckDeathTest, UnreachableAborts) {
  EXPECT_DEATH(SEEDANCE_UNREACHABLE(), "unreachable code reached");
}

TEST(CheckTest, PassingCheckEvaluatesConditionOnceAndContinues) {
  int calls = 0;
  SEEDANCE_CHECK(++calls == 1) << "never printed";
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace seedance::base
