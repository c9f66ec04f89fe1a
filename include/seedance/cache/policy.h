// Cache replacement policies behind one interface, for the cache-policy simulator (issue 40).
//
// A Policy is a cache of a fixed capacity in units of Request::size: bytes for a byte-sized cache,
// or one per object when every request's size is 1 (Simulate's CacheUnit::kObjects). Access
// returns whether the request hit; on a miss the object is admitted, evicting others, unless the
// policy declines it. Byte-sized caches follow libCacheSim's semantics (cache.c's
// cache_get_base): a miss first asks whether the object can be admitted at all (an object larger
// than the cache, or than the part of the cache a policy admits into, never is), then evicts
// until the object fits, then inserts it. Object metadata is not charged (libCacheSim's
// consider_obj_metadata = false, as in its own tests).
//
// The policies and their sources (each class names its paper in src/cache):
//   lru, fifo, clock (1-bit CLOCK, libCacheSim's Clock), sieve (Zhang et al., NSDI '24),
//   s3fifo (Yang et al., SOSP '23: 10% small FIFO, 90% ghost, move to main at 2 hits),
//   arc (Megiddo & Modha, FAST '03, byte-sized as libCacheSim's ARC), lirs (Jiang & Zhang,
//   SIGMETRICS '02; 1% resident HIR, as libCacheSim's LIRS), 2q (Johnson & Shasha, VLDB '94:
//   Kin 25%, Kout 50%), slru (libCacheSim's SLRU: 5 equal LRU segments), lru2 (LRU-K with K = 2,
//   O'Neil et al., SIGMOD '93), tinylfu and wtinylfu (Einziger et al., ToS '17: a count-min
//   sketch of 4-bit counters; W-TinyLFU with a 1% LRU window and an SLRU main of 80% protected),
//   belady (the offline optimum for unit sizes: evicts the object requested furthest in the
//   future; needs Request::next_access_vtime), caffeine-arc, caffeine-lirs, caffeine-wtinylfu
//   (ARC, LIRS and W-TinyLFU as Caffeine's simulator runs them: ArcPolicy, LirsPolicy with 99% LIR
//   and 2x non-resident blocks, WindowTinyLfuPolicy with a 1% window, 80% protected and its
//   count-min-4 sketch hashed as Caffeine hashes; byte-sized caches reuse the logic with sizes),
//   seedance (Seedance's prewarm-aware cache: follows
//   the best of shadow copies of lru, sieve, s3fifo, arc, lirs, wtinylfu and a decayed LRU-K,
//   seedance/cache/prewarm.h).
//
// Thread-compatible: a Policy is used by one thread at a time; NewPolicy is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/cache/trace.h"

namespace seedance::cache {

class Policy {
 public:
  virtual ~Policy() = default;
  // Serves one request: true on a hit. REQUIRES: req.size >= 1; for belady,
  // req.next_access_vtime != kUnknownNextAccess.
  virtual bool Access(const Request& req) = 0;
  // The sum of the sizes of the objects cached now (ghost entries excluded).
  virtual int64_t occupied() const = 0;
  virtual std::string_view name() const = 0;
};

// The policy names NewPolicy accepts, in a fixed order.
const std::vector<std::string>& PolicyNames();

// A new empty cache of `capacity` units running policy `name` (one of PolicyNames(), case
// insensitive; "s3-fifo", "twoq", "lru-k", "w-tinylfu" are accepted too). Errors:
// InvalidArgument for an unknown name or a capacity < 1.
absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(std::string_view name, int64_t capacity);

enum class CacheUnit {
  kBytes,    // capacity in bytes, each request charged its size
  kObjects,  // capacity in objects, each request charged 1
};

// One row of a simulation: the JSON row of `seedance cache simulate`.
struct SimulationRow {
  std::string policy;
  int64_t size = 0;  // the capacity, in the unit simulated
  int64_t requests = 0;
  int64_t misses = 0;
  double miss_ratio() const { return requests == 0 ? 0.0 : double(misses) / double(requests); }
};

// Replays `trace` through a new `policy` cache of `capacity` units. Requests of size 0 are
// skipped in byte mode (libCacheSim's ignore_size_zero_req) and not counted. Belady needs next
// access times: where the trace lacks them (any is kUnknownNextAccess) they are computed first.
absl::StatusOr<SimulationRow> Simulate(const std::vector<Request>& trace, std::string_view policy,
                                       int64_t capacity, CacheUnit unit);

// Every policy at every capacity, policy-major, as `seedance cache simulate --format json` prints
// them: [{"policy": ..., "size": ..., "requests": ..., "misses": ..., "miss_ratio": ...}, ...].
absl::StatusOr<std::string> SimulateJson(const std::vector<Request>& trace,
                                         const std::vector<std::string>& policies,
                                         const std::vector<int64_t>& capacities, CacheUnit unit);

}  // namespace seedance::cache
