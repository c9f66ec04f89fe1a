// Seedance's prewarm-aware cache (seedance/cache/prewarm.h): its own expert (lrfu; the others are
// the library's policies, policy_base.h's NewLruExpert ...), the meta-policy that follows the
// experts, and the decayed LRU-K history it prewarms from.
//
// The meta-policy is a "follow the leader" over shadow caches (as in ACME, Ari et al., 2002, and
// the adaptive caches that pick among experts; here with SHARDS sampling, Waldspurger et al.,
// "Cache Modeling and Optimization using Miniature Simulations", ATC '17): the shadows are
// metadata-only caches of capacity rate x C that see only the requests for objects whose hash
// falls below rate. Assumption: the expert that missed least on the recent sampled requests will
// miss least on the next ones, and the sample represents the whole.
#include "seedance_policy.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "object_list.h"
#include "seedance/base/check.h"
#include "seedance/cache/prewarm.h"
#include "seedance/trace/input_error.h"

namespace seedance::cache {
namespace internal {
namespace {

using Resident = Expert::Resident;

// The decayed LRU-K score as a replacement policy (LRFU: Lee et al., "LRFU: A Spectrum of
// Policies that Subsumes the LRU and LFU Policies", IEEE ToC 2001): an object's score is the sum
// over its references of 2^(-age / half-life), age counted in requests; the lowest score goes.
// Scores are kept as key = log2(score at t) + t / half-life, which decay does not change, so the
// order of the keys is the order of the scores at any later time. Evicted objects' keys are
// retained for as many objects as the cache holds, so a returning object resumes its score.
//
// Layout (replay speed: every expert runs on every sampled request): one record per object that
// is cached or retained, found through index_; the victim, the lowest (key, id), comes from a
// binary min-heap of one entry per cached object. A key only grows, so a hit leaves the entry as
// it is (a lower bound); an entry that surfaces with an old key goes back in with the current
// one, and the first that surfaces current is the victim. An entry whose version is not its
// record's (the object was dropped since) is skipped; the heap is rebuilt when those make half of
// it. An evicted object's record is retained while the queue of evictions (retained_, one entry
// per eviction, as many as the cache holds objects) names it.
class LrfuExpert final : public Expert {
 public:
  LrfuExpert(int64_t capacity, double half_life_requests)
      : Expert("lrfu", capacity), half_life_(std::max(1.0, half_life_requests)), recs_(1) {}
  int64_t occupied() const override { return occupied_; }
  bool Contains(uint64_t id) override {
    const uint32_t s = SlotOf(id);
    return s != 0 && recs_[s].cached;
  }
  void Drop(uint64_t id) override {
    const uint32_t s = SlotOf(id);
    if (s != 0 && recs_[s].cached) Uncache(s);
  }
  std::unique_ptr<Expert> Clone() override { return std::make_unique<LrfuExpert>(*this); }
  std::vector<Resident> Residents() override {
    std::vector<const Rec*> cached;
    for (const Rec& h : recs_) {
      if (h.cached) cached.push_back(&h);
    }
    std::sort(cached.begin(), cached.end(), [](const Rec* a, const Rec* b) {
      return a->key != b->key ? a->key < b->key : a->id < b->id;
    });
    std::vector<Resident> out;
    out.reserve(cached.size());
    for (const Rec* h : cached) out.emplace_back(h->id, h->size);
    return out;
  }
  // PolicyBase::Access with its steps called directly (no virtual call per step). A request of
  // size < 1 goes to PolicyBase::Access, whose check fails.
  bool Access(const Request& r) override {
    if (r.size < 1) return PolicyBase::Access(r);
    if (Find(r)) return true;
    if (r.size > capacity_) return false;
    while (occupied_ + r.size > capacity_) Evict(r);
    Insert(r);
    return false;
  }
  // Counts `size` more units as cached with no object behind them, breaking the invariant that
  // occupied_ is the cached objects' size (NewLrfuExpertWithPhantomResidentForTest).
  void AddPhantomResidentForTest(int64_t size) { occupied_ += size; }

 private:
  struct Rec {
    uint64_t id = 0;
    int64_t size = 0;
    double key = 0;               // cached: the key now; retained: the key when it was evicted
    uint32_t version = 0;         // of the record's heap entry; bumped when it enters or leaves
    uint32_t evictions : 30 = 0;  // entries of retained_ naming this record
    uint32_t cached : 1 = 0;
    uint32_t live : 1 = 0;  // 0: slot 0 or on the free list
  };
  struct Entry {
    double key;  // the record's key when the entry went in, or earlier
    uint64_t id;
    uint32_t slot;
    uint32_t version;
  };
  struct Later {  // the heap's order, a min-heap of (key, id) (a function object: it inlines)
    bool operator()(const Entry& a, const Entry& b) const {
      return a.key != b.key ? a.key > b.key : a.id > b.id;
    }
  };

  double Now() const { return double(clock_) / half_life_; }
  // The key after one more reference now, given the previous key.
  double Bump(double key) const { return std::log2(std::exp2(key - Now()) + 1.0) + Now(); }

  // The slot of `id`'s record, or 0.
  uint32_t SlotOf(uint64_t id) const {
    auto it = index_.find(id);
    return it == index_.end() ? 0 : it->second;
  }
  bool Find(const Request& r) override {
    ++clock_;
    found_ = 0;
    const uint32_t s = SlotOf(r.id);
    if (s == 0) return false;
    Rec& h = recs_[s];
    if (!h.cached) {
      found_ = s;  // retained
      return false;
    }
    h.key = Bump(h.key);  // its heap entry stays: a lower bound
    return true;
  }
  void Insert(const Request& r) override {
    // The record Find saw may have left the retained queue while this miss evicted.
    uint32_t s = found_;
    if (s != 0 && recs_[s].live) {
      recs_[s].key = Bump(recs_[s].key);
    } else {
      s = NewRec();
      const uint32_t version = recs_[s].version;  // a reused slot's entries stay stale
      recs_[s] = Rec{.id = r.id, .key = Now(), .version = version};
      recs_[s].live = 1;
      index_.emplace(r.id, s);
    }
    Rec& h = recs_[s];
    h.size = r.size;
    h.cached = 1;
    ++cached_;
    occupied_ += r.size;
    HeapPush(s);
  }
  void Evict(const Request&) override {
    for (;;) {
      SEEDANCE_CHECK(!heap_.empty()) << "lrfu: nothing to evict";
      Entry& top = heap_.front();
      const Rec& h = recs_[top.slot];
      if (h.version == top.version && h.key != top.key) {  // hit since it went in
        top.key = h.key;
        SiftDownFront(heap_, Later{});
        continue;
      }
      const uint32_t s = top.slot;
      const bool current = h.version == top.version;  // else dropped since it went in
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      heap_.pop_back();
      if (current) {
        Uncache(s);
        return;
      }
    }
  }
  // The object of slot s leaves the cache; its record is retained.
  void Uncache(uint32_t s) {
    Rec& h = recs_[s];
    h.cached = 0;
    ++h.version;
    occupied_ -= h.size;
    --cached_;
    ++h.evictions;
    retained_.push_back(s);
    while (retained_.size() > std::max<size_t>(1, cached_)) {
      const uint32_t old = retained_.front();
      retained_.pop_front();
      Rec& o = recs_[old];
      if (--o.evictions == 0 && !o.cached) {
        index_.erase(o.id);
        o.live = 0;
        free_.push_back(old);
      }
    }
  }
  uint32_t NewRec() {
    if (free_.empty()) {
      recs_.emplace_back();
      return static_cast<uint32_t>(recs_.size() - 1);
    }
    const uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  // The entry of a newly cached object: a version of its own, which no entry of the slot's
  // earlier objects has.
  void HeapPush(uint32_t s) {
    Rec& h = recs_[s];
    ++h.version;
    heap_.push_back({h.key, h.id, s, h.version});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    if (heap_.size() > 2 * cached_ + kHeapSlack) {
      std::erase_if(heap_, [&](const Entry& e) { return recs_[e.slot].version != e.version; });
      std::make_heap(heap_.begin(), heap_.end(), Later{});
    }
  }

  static constexpr size_t kHeapSlack = 64;
  const double half_life_;
  int64_t clock_ = 0;
  int64_t occupied_ = 0;
  size_t cached_ = 0;
  uint32_t found_ = 0;  // Find's retained record of this request, 0 if none
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // id -> slot of recs_
  std::vector<Rec> recs_;                          // slot 0 unused
  std::vector<uint32_t> free_;
  std::vector<Entry> heap_;
  std::deque<uint32_t> retained_;
};

// In the order ties are broken in: the experts with the smallest worst case on the tuning traces
// (docs/cache.md) first.
constexpr std::array<std::string_view, 7> kExperts = {"lirs",  "wtinylfu", "arc", "s3fifo",
                                                      "sieve", "lrfu",     "lru"};

}  // namespace

std::unique_ptr<Expert> NewExpert(std::string_view name, int64_t capacity,
                                  double half_life_requests) {
  if (name == "lru") return NewLruExpert(capacity);
  if (name == "sieve") return NewSieveExpert(capacity);
  if (name == "s3fifo") return NewS3FifoExpert(capacity);
  if (name == "arc") return NewArcExpert(capacity);
  if (name == "lirs") return NewLirsExpert(capacity);
  if (name == "wtinylfu") return NewWTinyLfuExpert(capacity);
  if (name == "lrfu") return std::make_unique<LrfuExpert>(capacity, half_life_requests);
  return nullptr;
}

std::unique_ptr<Expert> NewLrfuExpertWithPhantomResidentForTest(int64_t capacity,
                                                                double half_life_requests,
                                                                int64_t phantom_resident) {
  auto lrfu = std::make_unique<LrfuExpert>(capacity, half_life_requests);
  lrfu->AddPhantomResidentForTest(phantom_resident);
  return lrfu;
}

}  // namespace internal

namespace {

using internal::Expert;
using internal::kExperts;
using internal::NewExpert;

// The sampling hash (murmur3's 64-bit finalizer: independent of the sketch's splitmix64).
uint64_t SampleHash(uint64_t id) {
  id ^= id >> 33;
  id *= 0xff51afd7ed558ccdULL;
  id ^= id >> 33;
  id *= 0xc4ceb9fe1a85ec53ULL;
  id ^= id >> 33;
  return id;
}

int ExpertIndex(std::string_view name) {
  for (size_t i = 0; i < kExperts.size(); ++i) {
    if (kExperts[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// The history's table: object id -> its decayed score, at time t, and size. Open addressing with
// linear probing and the values in the entries, so that the line to prefetch for an id is known
// before the table is read (Home: the history is updated in batches, with the next ids' lines
// requested ahead). At most kMaxLoad full; an erase moves later entries of its run back
// (Knuth's algorithm R), so there are no tombstones. Entries have no order.
class HistoryTable {
 public:
  struct Hist {
    double score = 0;  // at time t
    int64_t t = 0;     // >= 0; an empty entry has t < 0
    int64_t size = 0;
  };

  size_t size() const { return size_; }
  // The address of the entry where the search for `id` starts (for a prefetch; an empty
  // table's is null, which a prefetch may name: it never faults).
  const void* Home(uint64_t id) const { return table_.data() + HomeIndex(id); }
  // The entry of `id` and whether it was added now (with `h`). REQUIRES: h.t >= 0.
  std::pair<Hist*, bool> TryEmplace(uint64_t id, const Hist& h) {
    if (double(size_ + 1) > kMaxLoad * double(table_.size())) Grow();
    size_t pos = HomeIndex(id);
    for (; table_[pos].h.t >= 0; pos = (pos + 1) & mask_) {
      if (table_[pos].id == id) return {&table_[pos].h, false};
    }
    table_[pos] = Entry{id, h};
    ++size_;
    return {&table_[pos].h, true};
  }
  void Erase(uint64_t id) {
    if (table_.empty()) return;
    size_t hole = HomeIndex(id);
    for (;; hole = (hole + 1) & mask_) {
      if (table_[hole].h.t < 0) return;
      if (table_[hole].id == id) break;
    }
    for (size_t j = (hole + 1) & mask_; table_[j].h.t >= 0; j = (j + 1) & mask_) {
      const size_t home = HomeIndex(table_[j].id);
      // The entry at j stays if its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        table_[hole] = table_[j];
        hole = j;
      }
    }
    table_[hole] = Entry{};
    --size_;
  }
  // f(id, hist) for every entry, in no particular order.
  template <typename F>
  void ForEach(const F& f) const {
    for (const Entry& e : table_) {
      if (e.h.t >= 0) f(e.id, e.h);
    }
  }

 private:
  static constexpr double kMaxLoad = 0.7;
  struct Entry {
    uint64_t id = 0;
    Hist h{.t = -1};
  };
  size_t HomeIndex(uint64_t id) const {
    id ^= id >> 33;  // murmur3's 64-bit finalizer
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    id *= 0xc4ceb9fe1a85ec53ULL;
    id ^= id >> 33;
    return size_t(id) & mask_;
  }
  void Grow() {
    std::vector<Entry> old = std::move(table_);
    table_.assign(old.empty() ? 1024 : 2 * old.size(), Entry{});
    mask_ = table_.size() - 1;
    for (const Entry& e : old) {
      if (e.h.t < 0) continue;
      size_t pos = HomeIndex(e.id);
      while (table_[pos].h.t >= 0) pos = (pos + 1) & mask_;
      table_[pos] = e;
    }
  }

  std::vector<Entry> table_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

class SeedanceCache final : public PrewarmingCache {
 public:
  SeedanceCache(int64_t capacity, SeedanceOptions options)
      : capacity_(capacity), o_(std::move(options)), leader_(ExpertIndex(o_.initial_expert)) {
    SEEDANCE_CHECK(capacity_ >= 1)
        << "a Seedance cache of capacity " << capacity_ << ": must be >= 1";
    SEEDANCE_CHECK(leader_ >= 0) << "unknown initial expert '" << o_.initial_expert << "'";
    real_ = NewExpert(kExperts[leader_], capacity_, 1.0);
  }

  bool Access(const Request& r) override {
    MaybeStartShadows(r);
    const bool hit = real_->Access(r);
    Remember(r.id, r.size, 1.0);
    if (!recent_.empty()) {
      recent_[recent_next_] = {r.id, r.size};
      if (++recent_next_ == recent_.size()) recent_next_ = 0;
    }
    if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/true);
    ++now_;
    return hit;
  }
  int64_t occupied() const override { return real_->occupied(); }
  std::string_view name() const override { return "seedance"; }
  bool Contains(uint64_t id) const override { return real_->Contains(id); }
  const PrefetchStats& prefetch_stats() const override { return stats_; }
  std::string_view expert() const override { return kExperts[leader_]; }

  int64_t PrewarmHints(const std::vector<Request>& objects) override {
    int64_t fetched = 0;
    for (const Request& r : objects) {
      Remember(r.id, r.size, 1.0);
      if (real_->Contains(r.id)) {
        ++stats_.hint_resident;
        continue;
      }
      MaybeStartShadows(r);
      real_->Access(r);
      if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/false);
      if (!real_->Contains(r.id)) continue;
      ++fetched;
      ++stats_.hint_fetches;
      stats_.hint_bytes += r.size;
    }
    return fetched;
  }

  int64_t PrewarmFromHistory(const SavedHistory& history) override {
    ApplyRemembered();  // RealHalfLife reads the history's size
    const int from = ExpertIndex(history.expert);
    if (real_->occupied() == 0 && from >= 0 && from != leader_) {
      leader_ = from;
      real_ = NewExpert(kExperts[leader_], capacity_, RealHalfLife());
    }
    std::vector<const HistoryEntry*> chosen;
    int64_t room = capacity_ - real_->occupied();
    for (const HistoryEntry& e : history.entries) {
      if (e.size > room || real_->Contains(e.id)) continue;
      chosen.push_back(&e);
      room -= e.size;
    }
    for (const HistoryEntry& e : history.entries) Remember(e.id, e.size, e.score);
    // The best-ranked object is fetched last, so that recency-ordered experts keep it longest.
    int64_t fetched = 0;
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      const Request r{.time = now_, .id = (*it)->id, .size = (*it)->size};
      MaybeStartShadows(r);
      real_->Access(r);
      if (shadowing_ && Sampled(r.id)) ShadowAccess(r, /*count=*/false);
      if (!real_->Contains(r.id)) continue;
      ++fetched;
      ++stats_.history_fetches;
      stats_.history_bytes += r.size;
    }
    return fetched;
  }

  SavedHistory SaveHistory() const override {
    ApplyRemembered();
    SavedHistory out;
    out.expert = std::string(kExperts[leader_]);
    out.half_life_requests = HistoryHalfLife();
    history_.ForEach([&](uint64_t id, const Hist& h) {
      out.entries.push_back({.id = id, .size = h.size, .score = ScoreAt(h, now_)});
    });
    std::sort(out.entries.begin(), out.entries.end(),
              [](const HistoryEntry& a, const HistoryEntry& b) {
                return a.score != b.score ? a.score > b.score : a.id < b.id;
              });
    const double budget = o_.saved_history_capacities * double(capacity_);
    double sum = 0;
    size_t keep = 0;
    while (keep < out.entries.size() && sum < budget) sum += double(out.entries[keep++].size);
    out.entries.resize(keep);
    return out;
  }

 private:
  using Hist = HistoryTable::Hist;

  // Objects the cache holds: counted when it first filled, else the objects seen so far.
  double Objects() const {
    return double(std::max<int64_t>(1, shadowing_ ? objects_ : int64_t(history_.size())));
  }
  double HistoryHalfLife() const { return std::max(1.0, o_.history_half_life_caches * Objects()); }
  double RealHalfLife() const { return HistoryHalfLife(); }
  double ScoreAt(const Hist& h, int64_t t) const {
    return h.score * std::exp2(-double(t - h.t) / HistoryHalfLife());
  }
  // Adds `weight` to the object's score now. The history is read only by SaveHistory, by
  // PrewarmFromHistory and when the shadows start, so the calls are logged and applied in batches
  // (ApplyRemembered), each as it would have been at its own time (its now_; shadowing_ and
  // objects_ do not change within a batch): the same history, but the table's lines for the next
  // objects are fetched while the current ones are updated (replay speed: the table holds up to
  // history_objects_caches x the cached objects, much more than the processor's caches).
  void Remember(uint64_t id, int64_t size, double weight) {
    remembered_.push_back({id, size, weight, now_});
    if (remembered_.size() >= kRememberBatch) ApplyRemembered();
  }
  // Applies the logged Remember calls in order (const: SaveHistory brings the history up to date
  // first; a cache is used by one thread at a time).
  void ApplyRemembered() const {
    constexpr size_t kAhead = 8;  // prefetch distance, in calls
    const size_t n = remembered_.size();
    for (size_t k = 0; k < n; ++k) {
      // In this function, not in a HistoryTable method: GCC 12 finds such a method free of side
      // effects and drops its calls.
      __builtin_prefetch(history_.Home(remembered_[std::min(k + kAhead, n - 1)].id));
      const Remembered& m = remembered_[k];
      auto [h, inserted] = history_.TryEmplace(m.id, Hist{m.weight, m.t, m.size});
      if (!inserted) {
        *h = Hist{ScoreAt(*h, m.t) + m.weight, m.t, m.size};
        continue;
      }
      const auto limit =
          std::max<size_t>(kMinHistory, size_t(o_.history_objects_caches * double(objects_)));
      if (shadowing_ && history_.size() > limit) TrimHistory(limit / 2, m.t);
    }
    remembered_.clear();
  }
  // Keeps the `keep` best-scored objects of the history, scored at time t.
  void TrimHistory(size_t keep, int64_t t) const {
    std::vector<std::pair<double, uint64_t>> all;
    all.reserve(history_.size());
    history_.ForEach([&](uint64_t id, const Hist& h) { all.emplace_back(ScoreAt(h, t), id); });
    // (score, id): a total order, so the kept objects do not depend on the table's order.
    std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(keep), all.end(), std::greater<>());
    for (size_t i = keep; i < all.size(); ++i) history_.Erase(all[i].second);
  }

  bool Sampled(uint64_t id) const { return rate_all_ || SampleHash(id) < threshold_; }

  // When a miss would first evict, the cache holds what every expert would hold: the shadows
  // start there, seeded with the sampled part of it.
  void MaybeStartShadows(const Request& r) {
    if (shadowing_ || r.size > capacity_ || real_->occupied() + r.size <= capacity_ ||
        real_->Contains(r.id)) {
      return;
    }
    ApplyRemembered();  // the calls logged so far saw the cache before its shadows
    const std::vector<std::pair<uint64_t, int64_t>> residents = real_->Residents();
    objects_ = std::max<int64_t>(1, int64_t(residents.size()));
    const double rate = std::min(1.0, double(o_.shadow_objects) / double(objects_));
    rate_all_ = rate >= 1.0;
    threshold_ = rate_all_ ? ~uint64_t{0} : uint64_t(rate * 18446744073709551616.0);
    const int64_t shadow_capacity = std::max<int64_t>(1, std::llround(double(capacity_) * rate));
    const double shadow_objects = std::max(1.0, double(objects_) * rate);
    epoch_requests_ =
        std::max<int64_t>(o_.min_epoch_requests, int64_t(o_.epoch_caches * shadow_objects));
    for (std::string_view e : kExperts) {
      shadows_.push_back(
          NewExpert(e, shadow_capacity, o_.history_half_life_caches * shadow_objects));
    }
    shadowing_ = true;
    if (!rate_all_) {
      recent_.assign(size_t(std::max(1.0, o_.replay_caches * double(objects_))), {0, 0});
    }
    for (const auto& [id, size] : residents) {
      if (Sampled(id)) ShadowAccess(Request{.id = id, .size = size}, /*count=*/false);
    }
  }

  // Feeds a sampled request to the shadows; `count`: a demand request, whose misses count. The
  // shadows are read only when an epoch ends (its counts, and the shadow a switch copies), so the
  // requests of an epoch are queued and replayed then, one shadow after the other over the whole
  // queue: the same decisions in the same order as feeding every shadow each request at once,
  // but each shadow's tables stay in the processor's caches while it runs (replay speed).
  void ShadowAccess(const Request& r, bool count) {
    pending_.push_back({r.id, r.size, count});
    if (!count) return;
    if (++epoch_n_ >= epoch_requests_) {
      ReplayPending();
      EndEpoch();
    }
  }
  // Feeds the queued requests to every shadow and adds the counted ones' outcomes to epoch_.
  void ReplayPending() {
    static_assert(kExperts.size() <= 8, "one bit per expert in pending_hits_");
    pending_hits_.assign(pending_.size(), 0);
    for (size_t i = 0; i < shadows_.size(); ++i) {
      Expert& shadow = *shadows_[i];
      for (size_t k = 0; k < pending_.size(); ++k) {
        if (shadow.Access(Request{.id = pending_[k].id, .size = pending_[k].size})) {
          pending_hits_[k] |= uint8_t(1u << i);
        }
      }
    }
    for (size_t k = 0; k < pending_.size(); ++k) {
      if (!pending_[k].count) continue;
      const unsigned hits = pending_hits_[k];
      const bool leader_hit = (hits >> leader_) & 1u;
      for (size_t i = 0; i < shadows_.size(); ++i) {
        const bool hit = (hits >> i) & 1u;
        if (!hit) epoch_[i].misses += 1;
        if (hit && !leader_hit) epoch_[i].won += 1;
        if (!hit && leader_hit) epoch_[i].lost += 1;
      }
    }
    pending_.clear();
  }

  // Decays the old counts, adds the epoch's and follows a clearly better expert. The test is
  // McNemar's on the requests where exactly one of the two hit (the experts see the same
  // requests, so their misses are far from independent).
  void EndEpoch() {
    const double keep = 1.0 - 1.0 / std::max(1.0, o_.window_epochs);
    int best = leader_;
    for (size_t i = 0; i < shadows_.size(); ++i) {
      score_[i].misses = keep * score_[i].misses + epoch_[i].misses;
      score_[i].won = keep * score_[i].won + epoch_[i].won;
      score_[i].lost = keep * score_[i].lost + epoch_[i].lost;
      epoch_[i] = Score{};
      if (score_[i].won - score_[i].lost > score_[best].won - score_[best].lost) best = int(i);
    }
    epoch_n_ = 0;
    if (best == leader_) return;
    const Score& b = score_[best];
    const double lead = b.won - b.lost;
    if (lead > o_.switch_margin * score_[leader_].misses &&
        lead > o_.switch_sigmas * std::sqrt(b.won + b.lost)) {
      SwitchTo(best);
      for (Score& sc : score_) sc.won = sc.lost = 0;
    }
  }

  // The new expert's state, with no fetch: shadowed in full, a copy of its shadow; sampled, a
  // new expert that replays the recent requests (a simulation, as the shadows are: it learns
  // their history). Either is then cut to what the real cache holds: what the real cache does
  // not hold is dropped as the expert evicts (its history stays), and what only the real cache
  // holds enters as new arrivals, least valuable first.
  void SwitchTo(int expert) {
    std::unique_ptr<Expert> next;
    if (rate_all_) {
      next = shadows_[expert]->Clone();
    } else {
      next = NewExpert(kExperts[expert], capacity_, RealHalfLife());
      for (size_t i = 0; i < recent_.size(); ++i) {
        const auto& [id, size] = recent_[(recent_next_ + i) % recent_.size()];
        if (size > 0) next->Access(Request{.id = id, .size = size});
      }
    }
    for (const auto& [id, size] : next->Residents()) {
      if (!real_->Contains(id)) next->Drop(id);
    }
    if (o_.keep_unshadowed) {
      for (const auto& [id, size] : real_->Residents()) {
        if (!next->Contains(id)) next->Access(Request{.id = id, .size = size});
      }
    }
    real_ = std::move(next);
    leader_ = expert;
    ++stats_.switches;
  }

  static constexpr size_t kMinHistory = 1024;
  static constexpr size_t kRememberBatch = 256;

  const int64_t capacity_;
  const SeedanceOptions o_;
  int leader_;
  std::unique_ptr<Expert> real_;
  int64_t now_ = 0;
  PrefetchStats stats_;
  // The history, up to date but for the calls logged in remembered_ (see Remember).
  mutable HistoryTable history_;
  struct Remembered {
    uint64_t id;
    int64_t size;
    double weight;
    int64_t t;  // now_ of the call
  };
  mutable std::vector<Remembered> remembered_;

  bool shadowing_ = false;
  int64_t objects_ = 0;
  bool rate_all_ = true;
  uint64_t threshold_ = 0;
  int64_t epoch_requests_ = 0;
  int64_t epoch_n_ = 0;
  std::vector<std::unique_ptr<Expert>> shadows_;
  // The sampled requests of the current epoch, not yet fed to the shadows (ShadowAccess).
  struct Pending {
    uint64_t id;
    int64_t size;
    bool count;
  };
  std::vector<Pending> pending_;
  std::vector<uint8_t> pending_hits_;  // ReplayPending's scratch: bit i = shadow i hit
  // Sampled only: the last replay_caches x objects_ requests {id, size} (size 0: none yet), a
  // ring whose oldest entry is at recent_next_.
  std::vector<std::pair<uint64_t, int64_t>> recent_;
  size_t recent_next_ = 0;
  // Per expert: misses, and the requests it hit while the followed expert missed (won) and the
  // reverse (lost).
  struct Score {
    double misses = 0;
    double won = 0;
    double lost = 0;
  };
  std::array<Score, kExperts.size()> epoch_{};
  std::array<Score, kExperts.size()> score_{};
};

}  // namespace

const std::vector<std::string>& SeedanceExperts() {
  static const std::vector<std::string>* names =
      new std::vector<std::string>(internal::kExperts.begin(), internal::kExperts.end());
  return *names;
}

std::unique_ptr<PrewarmingCache> NewSeedanceCache(int64_t capacity,
                                                  const SeedanceOptions& options) {
  return std::make_unique<SeedanceCache>(capacity, options);
}

namespace internal {
std::unique_ptr<Policy> NewSeedance(int64_t capacity) { return NewSeedanceCache(capacity); }
}  // namespace internal

namespace {

constexpr std::string_view kHistoryHeader = "seedance-history 1";

std::string Shortest(double v) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), end);
}

// "NAME VALUE" of a header line: the value, or an error naming the line and field.
absl::StatusOr<std::string_view> HeaderValue(std::string_view line, std::string_view name,
                                             std::string_view source, int64_t line_no) {
  if (line.size() <= name.size() || line.substr(0, name.size()) != name ||
      line[name.size()] != ' ') {
    return trace::FieldError(source, line_no, name,
                             absl::StrCat("expected '", trace::AbslView(name), " VALUE'"), line);
  }
  return line.substr(name.size() + 1);
}

absl::StatusOr<HistoryEntry> ParseEntry(std::string_view line, std::string_view source,
                                        int64_t line_no) {
  std::vector<absl::string_view> f = absl::StrSplit(trace::AbslView(line), ' ');
  if (f.size() != 3) {
    return trace::LineError(source, line_no, "expected 'ID SIZE SCORE' (3 fields)");
  }
  HistoryEntry e;
  if (!absl::SimpleAtoi(f[0], &e.id)) {
    return trace::FieldError(source, line_no, "id", "expected an unsigned integer",
                             std::string_view(f[0].data(), f[0].size()));
  }
  if (!absl::SimpleAtoi(f[1], &e.size) || e.size < 1) {
    return trace::FieldError(source, line_no, "size", "expected an integer >= 1",
                             std::string_view(f[1].data(), f[1].size()));
  }
  if (!absl::SimpleAtod(f[2], &e.score) || !std::isfinite(e.score) || e.score <= 0) {
    return trace::FieldError(source, line_no, "score", "expected a finite number > 0",
                             std::string_view(f[2].data(), f[2].size()));
  }
  return e;
}

}  // namespace

std::string SerializeHistory(const SavedHistory& history) {
  std::string out = absl::StrCat(trace::AbslView(kHistoryHeader), "\nexpert ",
                                 history.expert.empty() ? "-" : history.expert, "\nhalf_life ",
                                 Shortest(history.half_life_requests), "\n");
  for (const HistoryEntry& e : history.entries) {
    absl::StrAppend(&out, e.id, " ", e.size, " ", Shortest(e.score), "\n");
  }
  return out;
}

absl::StatusOr<SavedHistory> ParseHistory(std::string_view text, std::string_view source) {
  std::vector<absl::string_view> lines = absl::StrSplit(trace::AbslView(text), '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  auto line = [&](size_t i) { return std::string_view(lines[i].data(), lines[i].size()); };
  if (lines.size() < 3 || line(0) != kHistoryHeader) {
    return trace::FieldError(source, 1, "header",
                             absl::StrCat("expected '", trace::AbslView(kHistoryHeader),
                                          "' then 'expert' and 'half_life' lines"),
                             lines.empty() ? "" : line(0));
  }
  SavedHistory h;
  absl::StatusOr<std::string_view> expert = HeaderValue(line(1), "expert", source, 2);
  if (!expert.ok()) return expert.status();
  if (*expert != "-" && ExpertIndex(*expert) < 0) {
    return trace::FieldError(source, 2, "expert", "expected '-' or a Seedance expert", *expert);
  }
  h.expert = *expert == "-" ? "" : std::string(*expert);
  absl::StatusOr<std::string_view> half_life = HeaderValue(line(2), "half_life", source, 3);
  if (!half_life.ok()) return half_life.status();
  if (!absl::SimpleAtod(trace::AbslView(*half_life), &h.half_life_requests) ||
      !std::isfinite(h.half_life_requests) || h.half_life_requests < 0) {
    return trace::FieldError(source, 3, "half_life", "expected a finite number >= 0", *half_life);
  }
  for (size_t i = 3; i < lines.size(); ++i) {
    absl::StatusOr<HistoryEntry> e = ParseEntry(line(i), source, int64_t(i) + 1);
    if (!e.ok()) return e.status();
    h.entries.push_back(*e);
  }
  return h;
}

}  // namespace seedance::cache
