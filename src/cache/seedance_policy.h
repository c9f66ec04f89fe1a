// Internal to seedance_cache: the experts the Seedance cache (seedance/cache/prewarm.h) follows,
// each an Expert (policy_base.h): a replacement policy that can also list and look up what it
// holds, which the real cache needs to seed the next expert from its contents on a switch. lru,
// sieve, s3fifo, arc, lirs and wtinylfu are the library's policies of the same names themselves
// (queue_policies.cc, adaptive_policies.cc, frequency_policies.cc); lrfu is the decayed LRU-K
// score, Seedance's own (seedance_policy.cc). Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "policy_base.h"

namespace seedance::cache::internal {

// A new empty expert `name` (one of SeedanceExperts()) of `capacity` units; `half_life_requests`
// is lrfu's score half-life (ignored by the others). Returns nullptr for an unknown name.
std::unique_ptr<Expert> NewExpert(std::string_view name, int64_t capacity,
                                  double half_life_requests);

// Test only, for the death test of the check it reaches: the lrfu expert with `phantom_resident`
// units counted as cached that no object holds, a broken invariant no request sequence produces.
// The first miss that must evict finds an empty heap. Nothing but tests calls this.
std::unique_ptr<Expert> NewLrfuExpertWithPhantomResidentForTest(int64_t capacity,
                                                                double half_life_requests,
                                                                int64_t phantom_resident);

// NewPolicy's factory for "seedance": NewSeedanceCache with the default options.
std::unique_ptr<Policy> NewSeedance(int64_t capacity);

}  // namespace seedance::cache::internal
