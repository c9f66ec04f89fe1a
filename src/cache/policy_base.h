// Internal to seedance_cache: the skeleton every policy shares (libCacheSim's cache_get_base): a
// hit is served by Find; a miss is admitted only if CanInsert, after Evict has run until the
// object fits. And the factories of the policies, one .cc file per family. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

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

}  // namespace seedance::cache::internal
