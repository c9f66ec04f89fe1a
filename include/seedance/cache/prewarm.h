// Seedance's prewarm-aware cache (issue 40 item 2; docs/cache.md, "Seedance's policy and
// prewarming"): a cache that follows whichever of several replacement experts is missing least
// on the recent requests, keeps a decayed LRU-K history of what it saw, and fetches ahead
// (prewarms) the objects that history ranks highest after a restart, and the objects a hint
// names (the data a pod just bound to this node declares).
//
// The experts are lru, sieve, s3fifo, arc, lirs, wtinylfu (each as in seedance/cache/policy.h)
// and lrfu (the decayed LRU-K score itself: a reference counts 1 and halves every
// half-life; evicts the lowest score; Lee et al., "LRFU", IEEE ToC 2001). Metadata-only shadow
// copies of every expert run on all objects, or on a spatially hashed sample of them for a large
// cache (SHARDS: Waldspurger et al., ATC '17); the real cache follows the shadow that misses
// clearly less (a margin and McNemar's test). On a switch the new expert's state (a copy of its
// shadow, or a replay of the recent requests) is cut to the real cache's contents: the real
// cache never holds an object that was not fetched on a demand miss, a hint or a history
// prefetch, and the last two are counted in PrefetchStats, apart from demand misses.
//
// Semantics are libCacheSim's as for every Policy: capacity in units of Request::size (bytes, or
// objects when every size is 1); an object larger than the cache is never cached.
//
// Thread-compatible: one thread at a time per cache. The free functions are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/cache/policy.h"
#include "seedance/cache/trace.h"

namespace seedance::cache {

// One object of a saved history: its decayed LRU-K score when the history was saved.
struct HistoryEntry {
  uint64_t id = 0;
  int64_t size = 1;
  double score = 0;  // decayed reference count, > 0
};

// What a cache saves for its successor after a restart: the objects it saw recently, highest
// score first, whose sizes add up to about twice its capacity, and the expert it followed.
struct SavedHistory {
  std::string expert;                 // one of the expert names above; "" = the default
  double half_life_requests = 0;      // the half-life the scores decayed with
  std::vector<HistoryEntry> entries;  // highest score first
};

// The text form: "seedance-history 1", "expert NAME", "half_life H", then one "ID SIZE SCORE"
// line per entry.
std::string SerializeHistory(const SavedHistory& history);
// Parses SerializeHistory's form. Errors: InvalidArgument "SOURCE:LINE: field 'F': ..." for a
// bad header, an unknown expert, a size < 1 or a score that is not a positive number.
absl::StatusOr<SavedHistory> ParseHistory(std::string_view text, std::string_view source);

// Fetches that were not demand misses, counted apart (a miss ratio counts demand misses only).
struct PrefetchStats {
  int64_t hint_fetches = 0;     // objects fetched because a hint named them
  int64_t hint_bytes = 0;       // their sizes
  int64_t hint_resident = 0;    // hinted objects that were resident already (no fetch)
  int64_t history_fetches = 0;  // objects fetched by PrewarmFromHistory
  int64_t history_bytes = 0;
  int64_t switches = 0;  // times the cache changed the expert it follows
};

// Tuning of NewSeedanceCache. The same for every trace: none is set per trace; the defaults were
// chosen among a few values on a tuning subset of the shipped traces (docs/cache.md says which,
// and why each default is what it is).
struct SeedanceOptions {
  // The shadows sample objects by hash so that they hold about this many objects; a cache that
  // holds fewer (counted when it first fills) is shadowed in full.
  int64_t shadow_objects = 8192;
  // The shadows' misses are compared once per epoch: max(min_epoch_requests, epoch_caches x the
  // objects a shadow holds) sampled requests; the counts decay by 1 - 1/window_epochs per epoch.
  int64_t min_epoch_requests = 1000;
  double epoch_caches = 1.0;
  double window_epochs = 32.0;
  // A switch needs the best shadow's decayed misses below the followed one's by this fraction
  // of the followed one's misses, and by switch_sigmas standard deviations (McNemar's test: of
  // the requests only one of the two hit).
  double switch_margin = 0.01;
  double switch_sigmas = 4.0;
  // Where the shadows are sampled, a switch replays this many times the objects the cache holds
  // of the latest requests into the new expert (its history, as a shadow would have it).
  double replay_caches = 4.0;
  // On a switch, whether what the real cache holds and the new expert does not is kept (as new
  // arrivals) rather than dropped.
  bool keep_unshadowed = true;
  // The history's half-life, in requests, is this many times the objects the cache holds.
  double history_half_life_caches = 4.0;
  // The history table keeps at most this many times the objects the cache holds.
  double history_objects_caches = 4.0;
  // SaveHistory keeps the best entries whose sizes add up to this many capacities.
  double saved_history_capacities = 2.0;
  // The expert followed until the shadows have a verdict.
  std::string initial_expert = "lirs";
};

// A Policy with prewarming. Access counts only demand requests; the prewarm calls fetch (and may
// evict) but never count as requests.
class PrewarmingCache : public Policy {
 public:
  // Fetches every named object that is not resident, as the node agent does for a pod's declared
  // data, most important last (each fetched object enters as a fresh reference). An object the
  // followed expert does not admit (larger than the cache) is not fetched. Returns the number
  // fetched. REQUIRES: every size >= 1.
  virtual int64_t PrewarmHints(const std::vector<Request>& objects) = 0;
  // Fetches the highest-scored objects of `history` that fit, up to the capacity, and adopts its
  // scores and (when the cache is still empty) its expert. Returns the number fetched.
  virtual int64_t PrewarmFromHistory(const SavedHistory& history) = 0;
  // The decayed LRU-K history as it stands now (see SavedHistory).
  virtual SavedHistory SaveHistory() const = 0;
  // Whether `id` is cached now.
  virtual bool Contains(uint64_t id) const = 0;
  virtual const PrefetchStats& prefetch_stats() const = 0;
  // The expert the cache follows now.
  virtual std::string_view expert() const = 0;
};

// The expert names, in the order the shadows run them.
const std::vector<std::string>& SeedanceExperts();

// A new empty Seedance cache. REQUIRES: capacity >= 1 and options.initial_expert is one of
// SeedanceExperts() (checked: a broken caller is a bug; NewPolicy("seedance") validates first).
std::unique_ptr<PrewarmingCache> NewSeedanceCache(int64_t capacity,
                                                  const SeedanceOptions& options = {});

}  // namespace seedance::cache
