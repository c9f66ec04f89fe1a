#include "node_pool.h"

#include <array>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::cache::internal {
namespace {

// Two link slots: slot 0 holds lists 0 and 1 (a node is on one of them), slot 1 holds list 2.
struct TestNode {
  std::array<PoolLink, 2> link;
  int value = 0;
};

constexpr PoolList kA = {0, 0};
constexpr PoolList kB = {1, 0};
constexpr PoolList kC = {2, 1};

class NodePoolTest : public testing::Test {
 protected:
  NodePool<TestNode> pool_{3};

  // A new node holding `value`.
  uint32_t Make(int value) {
    const uint32_t i = pool_.Allocate();
    pool_[i].value = value;
    return i;
  }
  // The values on l, first to last (walking Next).
  std::vector<int> Forward(PoolList l) {
    std::vector<int> out;
    for (uint32_t i = pool_.First(l); i != kNoNode; i = pool_.Next(l, i)) {
      out.push_back(pool_[i].value);
    }
    return out;
  }
  // The values on l, last to first (walking Prev).
  std::vector<int> Backward(PoolList l) {
    std::vector<int> out;
    for (uint32_t i = pool_.Last(l); i != kNoNode; i = pool_.Prev(l, i)) {
      out.push_back(pool_[i].value);
    }
    return out;
  }
};

TEST_F(NodePoolTest, AnEmptyListHasNoFirstOrLastNode) {
  EXPECT_EQ(pool_.First(kA), kNoNode);
  EXPECT_EQ(pool_.Last(kA), kNoNode);
  EXPECT_EQ(pool_.First(kC), kNoNode);
}

TEST_F(NodePoolTest, PushFrontAndPushBackOrderTheList) {
  pool_.PushBack(kA, Make(2));
  pool_.PushFront(kA, Make(1));
  pool_.PushBack(kA, Make(3));
  EXPECT_EQ(Forward(kA), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(Backward(kA), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(pool_[pool_.Front(kA)].value, 1);
  EXPECT_EQ(pool_[pool_.Back(kA)].value, 3);
  EXPECT_TRUE(Forward(kB).empty());
}

TEST_F(NodePoolTest, UnlinkTakesANodeFromAnyPlace) {
  const uint32_t one = Make(1);
  const uint32_t two = Make(2);
  const uint32_t three = Make(3);
  for (uint32_t i : {one, two, three}) pool_.PushBack(kA, i);
  pool_.Unlink(kA.slot, two);
  EXPECT_EQ(Forward(kA), (std::vector<int>{1, 3}));
  EXPECT_FALSE(pool_.Linked(kA.slot, two));
  pool_.Unlink(kA.slot, one);
  pool_.Unlink(kA.slot, three);
  EXPECT_EQ(pool_.First(kA), kNoNode);
  EXPECT_EQ(pool_.Last(kA), kNoNode);
}

TEST_F(NodePoolTest, PopFrontUnlinksAndReturnsTheFirstNode) {
  pool_.PushBack(kA, Make(1));
  pool_.PushBack(kA, Make(2));
  const uint32_t popped = pool_.PopFront(kA);
  EXPECT_EQ(pool_[popped].value, 1);
  EXPECT_FALSE(pool_.Linked(kA.slot, popped));
  EXPECT_EQ(Forward(kA), (std::vector<int>{2}));
}

TEST_F(NodePoolTest, ANodeIsOnOneListPerSlot) {
  const uint32_t i = Make(7);
  EXPECT_FALSE(pool_.Linked(0, i));
  EXPECT_FALSE(pool_.Linked(1, i));
  pool_.PushFront(kB, i);
  pool_.PushFront(kC, i);
  EXPECT_TRUE(pool_.Linked(0, i));
  EXPECT_TRUE(pool_.Linked(1, i));
  EXPECT_EQ(Forward(kB), (std::vector<int>{7}));
  EXPECT_EQ(Forward(kC), (std::vector<int>{7}));
  pool_.Unlink(kB.slot, i);
  EXPECT_TRUE(Forward(kB).empty());
  EXPECT_EQ(Forward(kC), (std::vector<int>{7}));  // the other slot's list keeps it
}

TEST_F(NodePoolTest, AReleasedIndexIsReusedAsAFreshNode) {
  const uint32_t i = Make(5);
  pool_.PushBack(kA, i);
  pool_.Unlink(kA.slot, i);
  pool_.Release(i);
  const uint32_t j = pool_.Allocate();
  EXPECT_EQ(j, i);
  EXPECT_EQ(pool_[j].value, 0);
  EXPECT_FALSE(pool_.Linked(0, j));
  EXPECT_FALSE(pool_.Linked(1, j));
}

TEST_F(NodePoolTest, IndicesStayValidAsThePoolGrows) {
  std::vector<uint32_t> nodes;
  for (int v = 0; v < 1000; ++v) {
    nodes.push_back(Make(v));
    pool_.PushFront(kC, nodes.back());
  }
  EXPECT_EQ(pool_[pool_.Back(kC)].value, 0);
  EXPECT_EQ(pool_[pool_.Front(kC)].value, 999);
  for (int v = 0; v < 1000; ++v) EXPECT_EQ(pool_[nodes[v]].value, v);
}

using NodePoolDeathTest = NodePoolTest;

TEST_F(NodePoolDeathTest, FrontOfAnEmptyListIsABug) {
  EXPECT_DEATH(pool_.Front(kB), "list 1 of slot 0 is empty where a node is required");
}

TEST_F(NodePoolDeathTest, BackOfAnEmptyListIsABug) {
  EXPECT_DEATH(pool_.Back(kC), "list 2 of slot 1 is empty where a node is required");
}

TEST_F(NodePoolDeathTest, PopFrontOfAnEmptyListIsABug) {
  pool_.PushBack(kA, Make(1));
  pool_.PopFront(kA);
  EXPECT_DEATH(pool_.PopFront(kA), "list 0 of slot 0 is empty where a node is required");
}

TEST_F(NodePoolDeathTest, UnlinkingANodeOnNoListIsABug) {
  const uint32_t i = Make(1);
  EXPECT_DEATH(pool_.Unlink(0, i), "unlinks node 3 that is on no list of slot 0");
  pool_.PushBack(kA, i);
  EXPECT_DEATH(pool_.Unlink(1, i), "unlinks node 3 that is on no list of slot 1");
  pool_.Unlink(0, i);
  EXPECT_DEATH(pool_.Unlink(0, i), "unlinks node 3 that is on no list of slot 0");
}

TEST_F(NodePoolDeathTest, LinkingANodeAlreadyOnAListOfTheSlotIsABug) {
  const uint32_t i = Make(1);
  pool_.PushBack(kA, i);
  EXPECT_DEATH(pool_.PushFront(kA, i), "links node 3 that is already on a list of slot 0");
  EXPECT_DEATH(pool_.PushBack(kB, i), "links node 3 that is already on a list of slot 0");
}

TEST_F(NodePoolDeathTest, ReleasingANodeStillOnAListIsABug) {
  const uint32_t i = Make(1);
  pool_.PushBack(kC, i);
  EXPECT_DEATH(pool_.Release(i), "releases node 3 while it is still on a list of slot 1");
  EXPECT_DEATH(pool_.Release(kA.head), "releases node 0 while it is still on a list of slot 0");
}

}  // namespace
}  // namespace seedance::cache::internal
