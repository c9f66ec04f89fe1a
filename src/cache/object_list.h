// Internal to seedance_cache: a recency list of cached (or ghost) objects with lookup by id, the
// building block of every policy (and MultiList, at the end: several lists over one index).
// Front = most recently inserted or touched, back = the next victim. A list may hold one id more
// than once (libCacheSim's LIRS can insert an id its non-resident list already holds); lookups
// then see the newest node, as libCacheSim's hash table (chainedHashTableV2 prepends to a bucket)
// does, and removing it uncovers the older one.
//
// Layout (for replay speed: the simulator's inner loop is a lookup and a splice per request): the
// nodes live in a pool of slots linked by 32-bit indices (slot 0 is the sentinel that end() names,
// the list is circular through it), freed slots are reused, and the index maps an id to its slot.
// Slots sit in a std::deque, so a Node& or Node* stays valid while its node is in the list, as
// with std::list; an Iter stays valid until its node is erased.
// Thread-compatible.
#pragma once

#include <array>
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

// Restores a heap made by std::make_heap / std::push_heap with `comp` after its front element
// moved down in the order (a min-heap's smallest key grew): one sift-down, where pop_heap and
// push_heap would take two.
template <typename T, typename Compare>
void SiftDownFront(std::vector<T>& heap, Compare comp) {
  const size_t n = heap.size();
  if (n == 0) return;
  const T moving = heap[0];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && comp(heap[child], heap[child + 1])) ++child;
    if (!comp(moving, heap[child])) break;
    heap[i] = heap[child];
    i = child;
  }
  heap[i] = moving;
}

// K recency lists (front = most recently inserted or moved, back = next victim) over one pool of
// nodes and one index, for a policy whose lists hold each id at most once between them (as
// W-TinyLFU's window, probation and protected segments): one lookup finds an object in whichever
// list holds it, and moving it to another list touches no index. A node is named by a Handle,
// valid until the node is erased; a Node& only until the next PushFront (the pool is a vector, so
// that the structure copies as a value: an expert's Clone). Handles 0..K-1 are the lists'
// sentinels: walking off either end of list k gives k. Thread-compatible.
template <size_t K>
class MultiList {
 public:
  struct Node {
    uint64_t id = 0;
    int64_t size = 0;
  };
  using Handle = uint32_t;
  static constexpr Handle kNone = ~Handle{0};

  MultiList() : slots_(K) {
    for (Handle k = 0; k < K; ++k) slots_[k].prev = slots_[k].next = k;
  }

  // The node of `id`, or kNone.
  Handle Find(uint64_t id) const {
    auto it = index_.find(id);
    return it == index_.end() ? kNone : it->second;
  }
  Node& node(Handle h) { return slots_[h].node; }
  const Node& node(Handle h) const { return slots_[h].node; }
  // The list that holds node h.
  size_t ListOf(Handle h) const { return slots_[h].list; }
  // A new node at the front of list k. REQUIRES: no list holds `id`.
  Handle PushFront(size_t k, uint64_t id, int64_t size) {
    Handle h = 0;
    if (free_.empty()) {
      h = Handle(slots_.size());
      slots_.emplace_back();
    } else {
      h = free_.back();
      free_.pop_back();
    }
    slots_[h].node = Node{id, size};
    slots_[h].list = uint32_t(k);
    Link(h, k);
    index_.emplace(id, h);
    bytes_[k] += size;
    ++count_[k];
    return h;
  }
  // Moves node h to the front of list k (its own or another), its size now `size`.
  void MoveToFront(Handle h, size_t k, int64_t size) {
    Slot& s = slots_[h];
    bytes_[s.list] -= s.node.size;
    --count_[s.list];
    Unlink(h);
    s.node.size = size;
    s.list = uint32_t(k);
    Link(h, k);
    bytes_[k] += size;
    ++count_[k];
  }
  void MoveToFront(Handle h, size_t k) { MoveToFront(h, k, slots_[h].node.size); }
  void Erase(Handle h) {
    Slot& s = slots_[h];
    bytes_[s.list] -= s.node.size;
    --count_[s.list];
    index_.erase(s.node.id);
    Unlink(h);
    free_.push_back(h);
  }
  // The back (next victim) of list k, or k if it is empty.
  Handle Back(size_t k) const { return slots_[k].prev; }
  // The node in front of h in its list (towards the front), or the list's sentinel.
  Handle TowardFront(Handle h) const { return slots_[h].prev; }
  bool IsSentinel(Handle h) const { return h < K; }
  int64_t bytes(size_t k) const { return bytes_[k]; }
  size_t count(size_t k) const { return count_[k]; }

 private:
  struct Slot {
    Node node;
    Handle prev = 0;  // towards the front
    Handle next = 0;  // towards the back
    uint32_t list = 0;
  };
  void Link(Handle h, size_t k) {
    Slot& s = slots_[h];
    s.prev = Handle(k);
    s.next = slots_[k].next;
    slots_[s.next].prev = h;
    slots_[k].next = h;
  }
  void Unlink(Handle h) {
    const Slot& s = slots_[h];
    slots_[s.prev].next = s.next;
    slots_[s.next].prev = s.prev;
  }

  std::vector<Slot> slots_;  // 0..K-1: the sentinels
  std::vector<Handle> free_;
  absl::flat_hash_map<uint64_t, Handle> index_;
  std::array<int64_t, K> bytes_{};
  std::array<size_t, K> count_{};
};

}  // namespace seedance::cache::internal
