// Internal to seedance_cache: a recency list of cached (or ghost) objects with lookup by id, the
// building block of every policy. Front = most recently inserted or touched, back = the next
// victim. A list may hold one id more than once (libCacheSim's LIRS can insert an id its
// non-resident list already holds); lookups then see the newest node, as libCacheSim's hash table
// (chainedHashTableV2 prepends to a bucket) does, and removing it uncovers the older one.
//
// Layout (for replay speed: the simulator's inner loop is a lookup and a splice per request): the
// nodes live in a pool of slots linked by 32-bit indices (slot 0 is the sentinel that end() names,
// the list is circular through it), freed slots are reused, and the index maps an id to its slot.
// Slots sit in a std::deque, so a Node& or Node* stays valid while its node is in the list, as
// with std::list; an Iter stays valid until its node is erased.
// Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace seedance::cache::internal {

struct NoExtra {};

template <typename Extra = NoExtra>
class ObjectList {
 public:
  struct Node {
    uint64_t id = 0;
    int64_t size = 0;
    Extra x{};
  };

 private:
  struct Slot {
    Node node;
    uint32_t prev = 0;
    uint32_t next = 0;
  };

 public:
  // A bidirectional iterator over the list, front to back; end() is the sentinel.
  class Iter {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = Node*;
    using reference = Node&;

    Iter() = default;
    Node& operator*() const { return (*slots_)[i_].node; }
    Node* operator->() const { return &(*slots_)[i_].node; }
    Iter& operator++() {
      i_ = (*slots_)[i_].next;
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++*this;
      return old;
    }
    Iter& operator--() {
      i_ = (*slots_)[i_].prev;
      return *this;
    }
    Iter operator--(int) {
      Iter old = *this;
      --*this;
      return old;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }

   private:
    friend class ObjectList;
    Iter(std::deque<Slot>* slots, uint32_t i) : slots_(slots), i_(i) {}
    std::deque<Slot>* slots_ = nullptr;
    uint32_t i_ = 0;
  };

  ObjectList() : slots_(1) {}
  // Slots refer to each other by index and iterators to the pool: a list is not copied.
  ObjectList(const ObjectList&) = delete;
  ObjectList& operator=(const ObjectList&) = delete;

  // The newest node for `id`, or nullptr.
  Node* Find(uint64_t id) {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &slots_[it->second].node;
  }
  // Find, and moves the node to the front.
  Node* Touch(uint64_t id) {
    auto it = index_.find(id);
    if (it == index_.end()) return nullptr;
    Splice(it->second);
    return &slots_[it->second].node;
  }
  Node& PushFront(uint64_t id, int64_t size, Extra x = {}) {
    const uint32_t i = Allocate();
    slots_[i].node = Node{id, size, x};
    Link(i);
    auto [it, inserted] = index_.try_emplace(id, i);
    if (!inserted) {
      shadowed_[id].push_back(it->second);
      it->second = i;
    }
    bytes_ += size;
    ++count_;
    return slots_[i].node;
  }
  // Removes the newest node for `id`; false if there is none.
  bool Remove(uint64_t id) {
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    EraseSlot(it->second, it);
    return true;
  }
  Node& Back() { return slots_[slots_[0].prev].node; }
  Node& Front() { return slots_[slots_[0].next].node; }
  void PopBack() { EraseSlot(slots_[0].prev); }
  void MoveToFront(Iter it) { Splice(it.i_); }
  Iter IterOf(uint64_t id) { return Iter(&slots_, index_.find(id)->second); }
  void Erase(Iter node) { EraseSlot(node.i_); }

  bool empty() const { return count_ == 0; }
  size_t count() const { return count_; }
  int64_t bytes() const { return bytes_; }
  Iter begin() { return Iter(&slots_, slots_[0].next); }
  Iter end() { return Iter(&slots_, 0); }

 private:
  using Index = absl::flat_hash_map<uint64_t, uint32_t>;

  uint32_t Allocate() {
    if (!free_.empty()) {
      const uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    slots_.emplace_back();
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  // Links slot i at the front.
  void Link(uint32_t i) {
    Slot& s = slots_[i];
    s.prev = 0;
    s.next = slots_[0].next;
    slots_[s.next].prev = i;
    slots_[0].next = i;
  }
  void Unlink(uint32_t i) {
    Slot& s = slots_[i];
    slots_[s.prev].next = s.next;
    slots_[s.next].prev = s.prev;
  }
  void Splice(uint32_t i) {
    if (slots_[0].next == i) return;
    Unlink(i);
    Link(i);
  }
  void EraseSlot(uint32_t i) {
    auto it = index_.find(slots_[i].node.id);
    EraseSlot(i, it);
  }
  // `it` is the index entry of slot i's id.
  void EraseSlot(uint32_t i, typename Index::iterator it) {
    const uint64_t id = slots_[i].node.id;
    bytes_ -= slots_[i].node.size;
    --count_;
    if (shadowed_.empty()) {
      index_.erase(it);
    } else if (it->second == i) {
      auto sh = shadowed_.find(id);
      if (sh == shadowed_.end()) {
        index_.erase(it);
      } else {
        it->second = sh->second.back();
        sh->second.pop_back();
        if (sh->second.empty()) shadowed_.erase(sh);
      }
    } else {
      auto sh = shadowed_.find(id);
      std::vector<uint32_t>& v = sh->second;
      for (size_t k = 0; k < v.size(); ++k) {
        if (v[k] == i) {
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(k));
          break;
        }
      }
      if (v.empty()) shadowed_.erase(sh);
    }
    Unlink(i);
    free_.push_back(i);
  }

  std::deque<Slot> slots_;  // slot 0: the sentinel
  std::vector<uint32_t> free_;
  Index index_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> shadowed_;
  int64_t bytes_ = 0;
  size_t count_ = 0;
};

}  // namespace seedance::cache::internal
