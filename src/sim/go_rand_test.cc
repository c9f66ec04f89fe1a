#include "seedance/sim/go_rand.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace seedance::sim {
namespace {

// Expected values were printed by Go 1.19's math/rand (rand.New(rand.NewSource(seed))) on the
// development machine; the generator must reproduce them bit for bit.

TEST(GoRandDeathTest, NonPositiveBoundIsCaught) {
  GoRand rng(1);
  EXPECT_DEATH(rng.Intn(0), "Intn\\(0\\): the bound must be positive");
  EXPECT_DEATH(rng.Int63n(-3), "Int63n\\(-3\\): the bound must be positive");
  EXPECT_DEATH(rng.Int31n(0), "Int31n\\(0\\): the bound must be positive");
}

TEST(GoRandTest, DerivedCookedTableMatchesGosConstants) {
  // First and last words of rngCooked in Go's rng.go; the table here is computed, not copied.
  EXPECT_EQ(GoRand::Cooked()[0], -4181792142133755926LL);
  EXPECT_EQ(GoRand::Cooked()[606], 4152330101494654406LL);
}

TEST(GoRandTest, Int63StreamMatchesGo) {
  GoRand r(42);
  EXPECT_EQ(r.Int63(), 3440579354231278675LL);
  EXPECT_EQ(r.Int63(), 608747136543856411LL);
  EXPECT_EQ(r.Int63(), 5571782338101878760LL);
  EXPECT_EQ(GoRand(-7).Int63(), 747107023976529931LL);
  EXPECT_EQ(GoRand(0).Int63(), 8717895732742165505LL);
  EXPECT_EQ(GoRand(int64_t{1} << 40).Int63(), 5470237361722394362LL);
  GoRand longrun(51);
  int64_t v = 0;
  for (int i = 0; i < 100000; ++i) v = longrun.Int63();
  EXPECT_EQ(v, 4575347260414433012LL);
}

TEST(GoRandTest, BoundedDrawsFloatsPermAndShuffleMatchGo) {
  GoRand r(42);
  EXPECT_EQ(r.Intn(10), 5);
  EXPECT_EQ(r.Intn(1000), 987);
  EXPECT_EQ(r.Intn(1 << 20), 193156);
  EXPECT_EQ(r.Intn(7), 1);
  EXPECT_EQ(r.Int63n((int64_t{1} << 40) + 3), 959162681732LL);
  EXPECT_EQ(r.Int31n(1 << 10), 609);
  EXPECT_DOUBLE_EQ(r.Float64(), 0.8128771359243787);
  EXPECT_DOUBLE_EQ(r.Float64(), 0.38444584994446157);
  EXPECT_EQ(r.Perm(10), (std::vector<int>{4, 9, 1, 3, 5, 7, 0, 6, 8, 2}));
  std::vector<int> a(10);
  std::iota(a.begin(), a.end(), 0);
  r.Shuffle(10, [&](int64_t i, int64_t j) { std::swap(a[i], a[j]); });
  EXPECT_EQ(a, (std::vector<int>{3, 4, 7, 6, 5, 1, 2, 0, 8, 9}));
  EXPECT_EQ(r.Int63(), 1198686371618757660LL);
}

TEST(GoRandTest, ReseedingRestartsTheStream) {
  GoRand r(42);
  const int64_t first = r.Int63();
  r.Int63();
  r.Seed(42);
  EXPECT_EQ(r.Int63(), first);
}

}  // namespace
}  // namespace seedance::sim
