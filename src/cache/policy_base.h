// Internal to seedance_cache: the skeleton every policy shares (libCacheSim's cache_get_base): a
// hit is served by Find; a miss is admitted only if CanInsert, after Evict has run until the
// object fits. Expert: a policy that can also look up, drop, copy and list what it holds (the
// Seedance cache, seedance/cache/prewarm.h, follows experts and seeds one from another's
// contents). And the factories of the policies, one .cc file per family. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "object_list.h"
#include "seedance/cache/policy.h"

namespace seedance::cache::internal {

class PolicyBase : public Policy {
 public:
  PolicyBase(std::string_view name, int64_t capacity) : name_(name), capacity_(capacity) {}
  bool Access(const Request& req) override;
  std::string_view name() const override { return name_; }

 protected:
  // Looks the object up; on a hit updates the policy's state and returns true.
  virtual bool Find(const Request& req) = 0;
  // Whether a missed object may be cached at all (default: it fits in the whole cache).
  virtual bool CanInsert(const Request& req) { return req.size <= capacity_; }
  // Frees space: evicts one object (or moves objects between a policy's queues).
  virtual void Evict(const Request& req) = 0;
  virtual void Insert(const Request& req) = 0;
  // Called after every request (LIRS bounds its stack there).
  virtual void AfterAccess() {}

  std::string_view name_;
  int64_t capacity_;
};

// A policy whose contents can be inspected and edited. Access decides exactly as the policy does
// through NewPolicy (the same class); the methods below never count as requests.
class Expert : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;
  // {id, size} of a cached object.
  using Resident = std::pair<uint64_t, int64_t>;
  // Whether `id` is cached now.
  virtual bool Contains(uint64_t id) = 0;
  // Makes `id` non-resident as the policy's own eviction would, keeping what it remembers of it
  // (ghost entries, scores); nothing if it is not cached.
  virtual void Drop(uint64_t id) = 0;
  // A deep copy, state and history.
  virtual std::unique_ptr<Expert> Clone() = 0;
  // The cached objects, roughly least valuable (next to go) first.
  virtual std::vector<Resident> Residents() = 0;
};

// Copies `from` into the empty `to`, same order and extras (for Expert::Clone).
template <typename X>
void CopyList(ObjectList<X>& from, ObjectList<X>* to) {
  for (auto it = from.end(); it != from.begin();) {
    --it;
    to->PushFront(it->id, it->size, it->x);
  }
}

// Appends `list`'s objects to `out`, back (next victim) first (for Expert::Residents).
template <typename X>
void AppendBackToFront(ObjectList<X>& list, std::vector<Expert::Resident>* out) {
  for (auto it = list.end(); it != list.begin();) {
    --it;
    out->emplace_back(it->id, it->size);
  }
}

std::unique_ptr<Policy> NewLru(int64_t capacity);
std::unique_ptr<Policy> NewFifo(int64_t capacity);
std::unique_ptr<Policy> NewClock(int64_t capacity);
std::unique_ptr<Policy> NewSieve(int64_t capacity);
std::unique_ptr<Policy> NewS3Fifo(int64_t capacity);
std::unique_ptr<Policy> NewArc(int64_t capacity);
std::unique_ptr<Policy> NewLirs(int64_t capacity);
std::unique_ptr<Policy> NewTwoQ(int64_t capacity);
std::unique_ptr<Policy> NewSlru(int64_t capacity);
std::unique_ptr<Policy> NewLruK(int64_t capacity);
std::unique_ptr<Policy> NewTinyLfu(int64_t capacity);
std::unique_ptr<Policy> NewWTinyLfu(int64_t capacity);
std::unique_ptr<Policy> NewBelady(int64_t capacity);
// ARC, LIRS and W-TinyLFU as Caffeine's simulator runs them (caffeine_policies.cc).
std::unique_ptr<Policy> NewCaffeineArc(int64_t capacity);
std::unique_ptr<Policy> NewCaffeineLirs(int64_t capacity);
std::unique_ptr<Policy> NewCaffeineWTinyLfu(int64_t capacity);
// Test only, for the death test of the check it reaches: NewCaffeineLirs with `phantom_resident`
// units counted as cached that no block holds, a broken invariant no request sequence produces.
// The first miss that must evict finds nothing to evict. Nothing but tests calls this.
std::unique_ptr<Policy> NewCaffeineLirsWithPhantomResidentForTest(int64_t capacity,
                                                                  int64_t phantom_resident);
// Test only, likewise: NewLruK (lru2) with `phantom_resident` units counted as cached that no
// object holds; the first miss that must evict finds neither a once-seen object nor a heap entry.
std::unique_ptr<Policy> NewLruKWithPhantomResidentForTest(int64_t capacity,
                                                          int64_t phantom_resident);

// The same policies as NewLru, NewSieve, ... (the same classes), as experts.
std::unique_ptr<Expert> NewLruExpert(int64_t capacity);
std::unique_ptr<Expert> NewSieveExpert(int64_t capacity);
std::unique_ptr<Expert> NewS3FifoExpert(int64_t capacity);
std::unique_ptr<Expert> NewArcExpert(int64_t capacity);
std::unique_ptr<Expert> NewLirsExpert(int64_t capacity);
std::unique_ptr<Expert> NewWTinyLfuExpert(int64_t capacity);

}  // namespace seedance::cache::internal
