#include "seedance/elastic/defrag.h"

#include <gtest/gtest.h>

namespace seedance::elastic {
namespace {

TypicalSizes Sizes(std::vector<int64_t> s, int64_t capacity) {
  absl::StatusOr<TypicalSizes> t = TypicalSizes::Create(std::move(s), capacity);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(DeviceMemoryTest, FirstFitHolesAndFragmentationRefusal) {
  DeviceMemory d(100);
  EXPECT_EQ(d.Allocate(1, 30), 0);
  EXPECT_EQ(d.Allocate(2, 20), 30);
  EXPECT_EQ(d.Allocate(3, 30), 50);
  EXPECT_TRUE(d.Free(2));
  EXPECT_FALSE(d.Free(2));
  ASSERT_EQ(d.Holes().size(), 2u);
  EXPECT_EQ(d.Holes()[0].offset_mib, 30);
  EXPECT_EQ(d.Holes()[1].offset_mib, 80);
  EXPECT_EQ(d.free_mib(), 40);
  EXPECT_EQ(d.largest_hole_mib(), 20);
  EXPECT_EQ(d.Allocate(4, 25), std::nullopt);  // 40 MiB free, but no 25 MiB hole
  EXPECT_EQ(d.Allocate(5, 20), 30);
}

TEST(DeviceMemoryTest, MovesOnlyIntoFreeRangesAndNeverAPinnedSlice) {
  DeviceMemory d(100);
  d.Allocate(1, 30);
  d.Allocate(2, 20, /*movable=*/false);
  EXPECT_EQ(d.Move(2, 60).code(), absl::StatusCode::kFailedPrecondition);  // pinned
  EXPECT_EQ(d.Move(1, 40).code(), absl::StatusCode::kFailedPrecondition);  // overlaps 2
  EXPECT_EQ(d.Move(1, 80).code(), absl::StatusCode::kFailedPrecondition);  // past the end
  EXPECT_EQ(d.Move(9, 0).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(d.Move(1, 70).ok());
  EXPECT_EQ(d.Find(1)->offset_mib, 70);
  EXPECT_TRUE(d.Move(1, 60).ok());  // overlapping its own old range is fine
  EXPECT_EQ(d.free_mib(), 50);
  ASSERT_EQ(d.Holes().size(), 3u);  // [0, 30), [50, 60) and [90, 100)
  EXPECT_EQ(d.Holes()[1].size_mib, 10);
}

TEST(DeviceMemoryDeathTest, BadSizesAndDuplicateIdsAreBugs) {
  EXPECT_DEATH(DeviceMemory(0), "device memory of 0 MiB");
  DeviceMemory d(100);
  d.Allocate(1, 10);
  EXPECT_DEATH(d.Allocate(1, 10), "allocate slice 1 of 10 MiB");
  EXPECT_DEATH(d.Allocate(2, 0), "allocate slice 2 of 0 MiB");
}

TEST(TypicalSizesTest, UsableIsTheBestPackingOfAHole) {
  const TypicalSizes t = Sizes({30, 20, 20}, 100);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(t.Usable(19), 0);
  EXPECT_EQ(t.Usable(45), 40);     // 20 + 20
  EXPECT_EQ(t.Usable(55), 50);     // 30 + 20
  EXPECT_EQ(t.Usable(100), 100);   // 30 + 30 + 20 + 20
  EXPECT_EQ(t.Usable(1000), 100);  // beyond the capacity: as the capacity
  EXPECT_EQ(t.LargestAtMost(29), 20);
  EXPECT_EQ(t.LargestAtMost(10), 0);
  EXPECT_FALSE(TypicalSizes::Create({}, 100).ok());
  EXPECT_FALSE(TypicalSizes::Create({0}, 100).ok());
  EXPECT_EQ(TypicalSizes::Create({101}, 100).status().message(),
            "typical sizes: 101 MiB is outside [1, 100]");
  EXPECT_FALSE(TypicalSizes::Create({10}, int64_t{1} << 23).ok());
}

// [A 0-30) [free 30-40) [C 40-70) [free 70-85) [E 85-100): 25 MiB free in holes of 10 and 15.
DeviceMemory TwoSmallHoles(bool pin_c) {
  DeviceMemory d(100);
  d.Allocate(1, 30);
  d.Allocate(2, 10);
  d.Allocate(3, 30, !pin_c);
  d.Allocate(4, 15);
  d.Allocate(5, 15);
  d.Free(2);
  d.Free(4);
  return d;
}

TEST(DefragTest, RatioCountsFreeMemoryNoTypicalSliceCanUse) {
  const TypicalSizes t = Sizes({20}, 100);
  const DeviceMemory d = TwoSmallHoles(false);
  EXPECT_EQ(FragmentationRatio(d, t), 1.0);  // 25 free would hold 20, but no hole does
  EXPECT_EQ(LargestAllocatable(d, t), 20);
  EXPECT_EQ(FragmentationRatio(DeviceMemory(100), t), 0.0);  // one hole of 100: 5 x 20
  DeviceMemory full(40);
  full.Allocate(1, 40);
  EXPECT_EQ(FragmentationRatio(full, t), 0.0);  // nothing free
  DeviceMemory sliver(100);
  sliver.Allocate(1, 85);
  EXPECT_EQ(FragmentationRatio(sliver, t), 0.0);  // 15 free: no typical slice would ever fit
  // Holes of 30 and 30 with typical 40: one hole of 60 would hold 40, these hold nothing.
  const TypicalSizes forty = Sizes({40}, 100);
  DeviceMemory two(100);
  two.Allocate(1, 30);
  two.Allocate(2, 40);
  two.Free(1);
  EXPECT_EQ(FragmentationRatio(two, forty), 1.0);
  EXPECT_EQ(FragmentationRatio(two, Sizes({10, 40}, 100)), 0.0);  // 3 + 3 slices of 10
}

TEST(DefragTest, OneMoveJoinsTheHolesAroundASlice) {
  const TypicalSizes t = Sizes({20}, 100);
  const CompactionPlan p = PlanCompaction(TwoSmallHoles(false), t);
  // Only moving C (30 MiB) to 30 (or to 55) joins 10 + 15: one hole of 25 holds 20.
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_EQ(p.moves[0].id, 3);
  EXPECT_EQ(p.moves[0].from_mib, 40);
  EXPECT_EQ(p.moves[0].size_mib, 30);
  EXPECT_TRUE(p.restored);
  EXPECT_EQ(p.target_mib, 20);
  EXPECT_EQ(p.largest_before_mib, 15);
  EXPECT_EQ(p.largest_after_mib, 25);
  EXPECT_EQ(p.ratio_before, 1.0);
  EXPECT_EQ(p.ratio_after, 0.0);  // the 20 that one hole of 25 could hold, it holds
}

TEST(DefragTest, APinnedSliceBetweenTheHolesCannotBeWorkedAround) {
  const TypicalSizes t = Sizes({20}, 100);
  const CompactionPlan p = PlanCompaction(TwoSmallHoles(true), t);
  EXPECT_FALSE(p.restored);
  EXPECT_TRUE(p.moves.empty());  // no move makes the largest hole larger
  EXPECT_EQ(p.largest_after_mib, 15);
}

// [S0 0-20) [10) [S1 30-50) [10) [S2 60-80) [10): 30 MiB free in three holes of 10.
DeviceMemory ThreeHoles() {
  DeviceMemory d(90);
  for (int i = 0; i < 3; ++i) {
    d.Allocate(i, 20);
    d.Allocate(10 + i, 10);
  }
  for (int i = 0; i < 3; ++i) d.Free(10 + i);
  return d;
}

TEST(DefragTest, ThreeHolesNeedTwoMoves) {
  const TypicalSizes t = Sizes({30}, 90);
  const CompactionPlan p = PlanCompaction(ThreeHoles(), t);
  // No 20 MiB slice fits a 10 MiB hole, so one move only slides a slice over one hole: 20 at
  // most. Two (S1 to 20, then S2 to 40) leave [60, 90).
  EXPECT_EQ(p.moves.size(), 2u);
  EXPECT_TRUE(p.restored);
  EXPECT_EQ(p.largest_after_mib, 30);
  // Applying the plan gives what it says.
  DeviceMemory d = ThreeHoles();
  for (const SliceMove& m : p.moves) ASSERT_TRUE(d.Move(m.id, m.to_mib).ok());
  EXPECT_EQ(d.largest_hole_mib(), 30);
  const CompactionPlan one = PlanCompaction(ThreeHoles(), t, /*max_moves=*/1);
  EXPECT_FALSE(one.restored);
  EXPECT_EQ(one.moves.size(), 1u);
  EXPECT_EQ(one.largest_after_mib, 20);
}

TEST(DefragTest, NothingToDoWhenTheLargestHoleAlreadyHoldsTheTarget) {
  const TypicalSizes t = Sizes({10}, 90);
  const CompactionPlan p = PlanCompaction(ThreeHoles(), t);
  EXPECT_TRUE(p.moves.empty());
  EXPECT_TRUE(p.restored);
}

}  // namespace
}  // namespace seedance::elastic
