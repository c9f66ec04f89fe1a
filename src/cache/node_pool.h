// Internal to seedance_cache: intrusive lists addressed by index, the building block of the
// caffeine-* policies (caffeine_policies.cc). Nodes sit in a vector and are named by 32-bit
// indices; the pool's first `lists` nodes are the sentinels of circular doubly linked lists. A
// Node type has a member `std::array<PoolLink, K> link`: a node can be on K lists at once, one per
// link slot (lists may share a slot; a node is then on at most one of them). Indices stay valid as
// the pool grows; references to nodes do not.
//
// Misuse is a bug, checked in every build type at the cost of a compare and a branch (the failure
// reports are out of line and cold, as in engine/timer_wheel.cc): asking for the first or
// last node of an empty list where the caller requires one (Front, Back, PopFront), linking a node
// that is already on a list of that slot, unlinking one that is on none, and releasing one that is
// still on a list. Which list of a shared slot a node is on is not recorded, so unlinking a node
// through the wrong list of its slot goes unnoticed. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "seedance/base/check.h"

namespace seedance::cache::internal {

// "No node": what First, Last, Next and Prev return past a list's end.
inline constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

// A node's place on the list of one slot; {kNoNode, kNoNode} while it is on no list of that slot.
struct PoolLink {
  uint32_t prev = kNoNode;
  uint32_t next = kNoNode;
};

// A list: the index of its sentinel and the link slot its nodes use.
struct PoolList {
  uint32_t head;
  size_t slot;
};

template <typename Node>
class NodePool {
 public:
  // REQUIRES: Node{} has every link at {kNoNode, kNoNode} (PoolLink's default).
  explicit NodePool(uint32_t lists) : nodes_(lists) {
    for (uint32_t h = 0; h < lists; ++h) {
      for (PoolLink& l : nodes_[h].link) l = {h, h};
    }
  }

  Node& operator[](uint32_t i) { return nodes_[i]; }
  const Node& operator[](uint32_t i) const { return nodes_[i]; }

  // A node set to Node{}, on no list (a released index is reused first).
  uint32_t Allocate() {
    if (free_.empty()) {
      nodes_.emplace_back();
      return static_cast<uint32_t>(nodes_.size() - 1);
    }
    const uint32_t i = free_.back();
    free_.pop_back();
    nodes_[i] = Node{};
    return i;
  }
  // Gives i back for reuse. REQUIRES: i is on no list (checked; a sentinel is always on its own).
  void Release(uint32_t i) {
    for (size_t slot = 0; slot < nodes_[i].link.size(); ++slot) {
      if (Linked(slot, i)) [[unlikely]] {
        DieReleasedWhileLinked(i, slot);
      }
    }
    free_.push_back(i);
  }

  // Whether i is on a list of `slot`.
  bool Linked(size_t slot, uint32_t i) const { return nodes_[i].link[slot].prev != kNoNode; }

  // l's first node (the one after the sentinel) or last node, or kNoNode when l is empty.
  uint32_t First(PoolList l) const { return Or(l, nodes_[l.head].link[l.slot].next); }
  uint32_t Last(PoolList l) const { return Or(l, nodes_[l.head].link[l.slot].prev); }
  // l's first or last node. REQUIRES: l is not empty (checked).
  uint32_t Front(PoolList l) const { return Required(l, nodes_[l.head].link[l.slot].next); }
  uint32_t Back(PoolList l) const { return Required(l, nodes_[l.head].link[l.slot].prev); }
  // Takes l's first node off l and returns it. REQUIRES: l is not empty (checked).
  uint32_t PopFront(PoolList l) {
    const uint32_t i = Front(l);
    Unlink(l.slot, i);
    return i;
  }
  // The node after (before) i on l, or kNoNode at l's end. REQUIRES: i is on l.
  uint32_t Next(PoolList l, uint32_t i) const { return Or(l, nodes_[i].link[l.slot].next); }
  uint32_t Prev(PoolList l, uint32_t i) const { return Or(l, nodes_[i].link[l.slot].prev); }

  // Links i first (last) on l. REQUIRES: i is on no list of l's slot (checked).
  void PushFront(PoolList l, uint32_t i) { LinkAfter(l.slot, l.head, i); }
  void PushBack(PoolList l, uint32_t i) { LinkAfter(l.slot, nodes_[l.head].link[l.slot].prev, i); }
  // Takes i off the list of `slot` it is on. REQUIRES: i is on a list of `slot` (checked).
  void Unlink(size_t slot, uint32_t i) {
    PoolLink& me = nodes_[i].link[slot];
    if (me.prev == kNoNode) [[unlikely]] {
      DieNotLinked(i, slot);
    }
    nodes_[me.prev].link[slot].next = me.next;
    nodes_[me.next].link[slot].prev = me.prev;
    me = PoolLink{};
  }

 private:
  static uint32_t Or(PoolList l, uint32_t i) { return i == l.head ? kNoNode : i; }
  static uint32_t Required(PoolList l, uint32_t i) {
    if (i == l.head) [[unlikely]] {
      DieEmpty(l);
    }
    return i;
  }
  void LinkAfter(size_t slot, uint32_t at, uint32_t i) {
    if (Linked(slot, i)) [[unlikely]] {
      DieAlreadyLinked(i, slot);
    }
    const uint32_t after = nodes_[at].link[slot].next;
    nodes_[i].link[slot] = PoolLink{at, after};
    nodes_[at].link[slot].next = i;
    nodes_[after].link[slot].prev = i;
  }

  // The failure reports, each through SEEDANCE_CHECK.
  [[noreturn, gnu::cold, gnu::noinline]] static void DieEmpty(PoolList l) {
    const bool list_has_a_node = false;
    SEEDANCE_CHECK(list_has_a_node) << "node pool: list " << l.head << " of slot " << l.slot
                                    << " is empty where a node is required";
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void DieNotLinked(uint32_t i, size_t slot) {
    const bool node_is_on_a_list = false;
    SEEDANCE_CHECK(node_is_on_a_list)
        << "node pool: unlinks node " << i << " that is on no list of slot " << slot;
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void DieAlreadyLinked(uint32_t i, size_t slot) {
    const bool node_is_on_no_list = false;
    SEEDANCE_CHECK(node_is_on_no_list)
        << "node pool: links node " << i << " that is already on a list of slot " << slot;
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void DieReleasedWhileLinked(uint32_t i,
                                                                            size_t slot) {
    const bool node_is_on_no_list = false;
    SEEDANCE_CHECK(node_is_on_no_list)
        << "node pool: releases node " << i << " while it is still on a list of slot " << slot;
  }

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
};

}  // namespace seedance::cache::internal
