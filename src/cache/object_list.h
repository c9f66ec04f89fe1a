// Internal to seedance_cache: a recency list of cached (or ghost) objects with lookup by id, the
// building block of every policy. Front = most recently inserted or touched, back = the next
// victim. A list may hold one id more than once (libCacheSim's LIRS can insert an id its
// non-resident list already holds); lookups then see the newest node, as libCacheSim's hash table
// (chainedHashTableV2 prepends to a bucket) does, and removing it uncovers the older one.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <iterator>
#include <list>
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
  using Iter = typename std::list<Node>::iterator;

  // The newest node for `id`, or nullptr.
  Node* Find(uint64_t id) {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &*it->second;
  }
  // Find, and moves the node to the front.
  Node* Touch(uint64_t id) {
    auto it = index_.find(id);
    if (it == index_.end()) return nullptr;
    nodes_.splice(nodes_.begin(), nodes_, it->second);
    return &*it->second;
  }
  Node& PushFront(uint64_t id, int64_t size, Extra x = {}) {
    nodes_.push_front(Node{id, size, x});
    auto [it, inserted] = index_.try_emplace(id, nodes_.begin());
    if (!inserted) {
      shadowed_[id].push_back(it->second);
      it->second = nodes_.begin();
    }
    bytes_ += size;
    return nodes_.front();
  }
  // Removes the newest node for `id`; false if there is none.
  bool Remove(uint64_t id) {
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    Erase(it->second);
    return true;
  }
  Node& Back() { return nodes_.back(); }
  Node& Front() { return nodes_.front(); }
  void PopBack() { Erase(std::prev(nodes_.end())); }
  void MoveToFront(Iter it) { nodes_.splice(nodes_.begin(), nodes_, it); }
  Iter IterOf(uint64_t id) { return index_.find(id)->second; }

  void Erase(Iter node) {
    bytes_ -= node->size;
    const uint64_t id = node->id;
    auto it = index_.find(id);
    if (it->second == node) {
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
      std::vector<Iter>& v = sh->second;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == node) {
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      if (v.empty()) shadowed_.erase(sh);
    }
    nodes_.erase(node);
  }

  bool empty() const { return nodes_.empty(); }
  size_t count() const { return nodes_.size(); }
  int64_t bytes() const { return bytes_; }
  Iter begin() { return nodes_.begin(); }
  Iter end() { return nodes_.end(); }

 private:
  std::list<Node> nodes_;
  absl::flat_hash_map<uint64_t, Iter> index_;
  absl::flat_hash_map<uint64_t, std::vector<Iter>> shadowed_;
  int64_t bytes_ = 0;
};

}  // namespace seedance::cache::internal
