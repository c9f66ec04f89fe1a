// ARC, LIRS and W-TinyLFU as Caffeine's simulator runs them (ben-manes/caffeine, module
// simulator: policy.adaptive.ArcPolicy, policy.irr.LirsPolicy, policy.sketch.WindowTinyLfuPolicy
// with admission.TinyLfu over admission.countmin4.PeriodicResetCountMin4, the simulator's default
// sketch), so that object-count runs reproduce the hit ratios published from that simulator
// (published_hit_ratios.csv). Written from the algorithms and their papers, not translated:
//   * ARC: Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST '03, and
//     "Outperforming LRU with an Adaptive Replacement Cache Algorithm", IEEE Computer 2004 (the
//     pseudocode Caffeine follows: the directory is trimmed by object counts, |L1| = c and
//     |L1| + |L2| = 2c, and p moves by integer ratios).
//   * LIRS: Jiang & Zhang, "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy
//     to Improve Buffer Cache Performance", SIGMETRICS '02, with Caffeine's parameters: 99% of the
//     cache for LIR blocks (lirs.percent-hot), non-resident HIR blocks bounded at 2x the cache
//     (lirs.non-resident-multiplier) on a queue of their own.
//   * W-TinyLFU: Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache Admission Policy",
//     ACM ToS 2017: a 1% LRU window (window-tiny-lfu.percent-main = 0.99), an SLRU main of 80%
//     protected (percent-main-protected), admission by a count-min sketch of 4-bit counters, four
//     rows, one counter per cache entry rounded up to a power of two (count-min-4,
//     counters-multiplier = 1.0), halved every 10 x its width additions (reset = periodic, no
//     doorkeeper). The sketch hashes a key exactly as the simulator does in Java's int and long
//     arithmetic (Long.hashCode, its spread function, its four 64-bit seeds), so the decisions are
//     the same bit for bit.
//
// Parameters are the simulator's reference.conf as of the published numbers (2022-11 for ARC and
// LIRS, 2023-05 for W-TinyLFU). Two later changes are options, off by default because the
// published numbers predate them: TinyLFU's admission jitter (2024-01: a candidate of frequency
// >= 6 that loses is admitted with probability 1/128, drawn from java.util.Random seeded with
// random-seed) and LIRS placing HIR warm-up blocks on stack S (2026-05).
//
// Object-count caches (every size 1) are Caffeine's algorithms exactly. Byte-sized caches reuse
// the same logic with sizes: ARC and LIRS count bytes where Caffeine counts entries (p, the
// directory bounds, the LIR share and the non-resident bound), each single eviction becomes
// "evict until the object fits"; W-TinyLFU follows the simulator's weighted mode (regions in
// bytes, the sketch built once the cache is half full and sized to the entries it then holds).
// A cache is weighted when its first request has a size other than 1 (or it has more than 2^24
// units, where an entry-sized sketch would be too large). As everywhere in the simulator, an
// object larger than the cache is never admitted and evicts nothing, and a hit keeps the size the
// object was admitted with.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "node_pool.h"
#include "policy_base.h"
#include "seedance/base/check.h"

namespace seedance::cache::internal {
namespace {

void CheckRequestSize(const Request& req) {
  SEEDANCE_CHECK(req.size >= 1) << "request for object " << req.id << " has size " << req.size
                                << ": a cached object has size >= 1";
}

// ---------------------------------------------------------------------------------------------
// ARC (Caffeine's ArcPolicy).

class CaffeineArc final : public Policy {
 public:
  explicit CaffeineArc(int64_t capacity) : capacity_(capacity), pool_(4) {}

  bool Access(const Request& req) override {
    CheckRequestSize(req);
    auto it = index_.find(req.id);
    if (it != index_.end()) {
      const uint32_t i = it->second;
      if (pool_[i].queue == kT1 || pool_[i].queue == kT2) {
        Move(i, kT2);  // a hit: to T2's MRU end
        return true;
      }
      if (req.size <= capacity_) OnGhostHit(i, req.size);
      return false;
    }
    if (req.size <= capacity_) OnMiss(req);
    return false;
  }
  int64_t occupied() const override { return size_[kT1] + size_[kT2]; }
  std::string_view name() const override { return "caffeine-arc"; }

 private:
  // The four lists, each the index of its sentinel; MRU at the back.
  enum Queue : uint8_t { kT1 = 0, kT2 = 1, kB1 = 2, kB2 = 3 };
  struct Node {
    std::array<PoolLink, 1> link;
    uint64_t id = 0;
    int64_t size = 0;
    Queue queue = kT1;
  };
  static PoolList List(Queue q) { return {q, 0}; }

  void Append(uint32_t i, Queue q) {
    pool_[i].queue = q;
    size_[q] += pool_[i].size;
    pool_.PushBack(List(q), i);
  }
  void Move(uint32_t i, Queue q) {
    size_[pool_[i].queue] -= pool_[i].size;
    pool_.Unlink(0, i);
    Append(i, q);
  }
  // Deletes q's LRU entry from the cache and the directory. REQUIRES: q is not empty (the
  // callers test its size; PopFront checks the list).
  void DeleteLru(Queue q) {
    const uint32_t i = pool_.PopFront(List(q));
    size_[q] -= pool_[i].size;
    index_.erase(pool_[i].id);
    pool_.Release(i);
  }

  // A ghost hit (a miss in ARC(c), a hit in DBL(2c)): p moves toward the list that was hit by
  // max(ratio of the ghost lists, 1) (integer division, as Caffeine's int arithmetic) per unit of
  // the object, room is made by REPLACE, and the object enters T2.
  void OnGhostHit(uint32_t i, int64_t size) {
    const bool in_b2 = pool_[i].queue == kB2;
    if (in_b2) {
      p_ = std::max<int64_t>(0, p_ - std::max<int64_t>(size_[kB1] / size_[kB2], 1) * size);
    } else {
      p_ = std::min(capacity_, p_ + std::max<int64_t>(size_[kB2] / size_[kB1], 1) * size);
    }
    size_[pool_[i].queue] -= pool_[i].size;
    pool_.Unlink(0, i);
    pool_[i].size = size;
    while (size_[kT1] + size_[kT2] + size > capacity_) Replace(in_b2);
    Append(i, kT2);
  }

  // A miss in both: the paper's case IV. With unit sizes, |L1| + 1 > c is |L1| = c and
  // |L1| + |L2| + 1 > 2c is |L1| + |L2| = 2c.
  void OnMiss(const Request& req) {
    const int64_t s = req.size;
    const int64_t c = capacity_;
    if (size_[kT1] + size_[kB1] + s > c) {
      // |L1| = c: B1's LRU ghost goes (then REPLACE); with B1 empty (|T1| = c), T1's LRU object
      // leaves the cache and the directory.
      while (size_[kT1] + size_[kB1] + s > c && size_[kB1] > 0) DeleteLru(kB1);
      while (size_[kT1] + size_[kB1] + s > c && size_[kT1] > 0) DeleteLru(kT1);
    } else if (size_[kT1] + size_[kB1] + size_[kT2] + size_[kB2] + s > c) {
      while (size_[kT1] + size_[kB1] + size_[kT2] + size_[kB2] + s > 2 * c && size_[kB2] > 0) {
        DeleteLru(kB2);
      }
    }
    while (size_[kT1] + size_[kT2] + s > c) Replace(false);
    const uint32_t i = pool_.Allocate();
    pool_[i].id = req.id;
    pool_[i].size = s;
    index_[req.id] = i;
    Append(i, kT1);
  }

  // REPLACE(p): T1's LRU object becomes a B1 ghost if T1 is non-empty and exceeds p (or equals it
  // on a B2 hit), else T2's LRU object becomes a B2 ghost. (With T2 empty Caffeine's list would
  // fail; T1 gives up its object instead, a case Caffeine's published runs never reach.)
  void Replace(bool hit_in_b2) {
    const int64_t t1 = size_[kT1];
    const bool from_t1 = t1 >= 1 && ((hit_in_b2 && t1 == p_) || t1 > p_);
    if (from_t1 || size_[kT2] == 0) {
      Move(pool_.Front(List(kT1)), kB1);
    } else {
      Move(pool_.Front(List(kT2)), kB2);
    }
  }

  const int64_t capacity_;
  NodePool<Node> pool_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;
  std::array<int64_t, 4> size_{};
  int64_t p_ = 0;  // T1's target size
};

// ---------------------------------------------------------------------------------------------
// LIRS (Caffeine's LirsPolicy).

struct CaffeineLirsOptions {
  double percent_hot = 0.99;             // lirs.percent-hot: the LIR share of the cache
  double non_resident_multiplier = 2.0;  // lirs.non-resident-multiplier: ghosts, x the cache
  bool hir_warmup_on_stack = false;      // since 2026-05: HIR warm-up blocks also enter S
};

class CaffeineLirs final : public Policy {
 public:
  explicit CaffeineLirs(int64_t capacity, CaffeineLirsOptions options = {})
      : capacity_(capacity),
        // Java's (int) (maximumSize * percent): a double product truncated.
        max_hot_(static_cast<int64_t>(static_cast<double>(capacity) * options.percent_hot)),
        max_non_resident_(
            static_cast<int64_t>(static_cast<double>(capacity) * options.non_resident_multiplier)),
        hir_warmup_on_stack_(options.hir_warmup_on_stack),
        pool_(3) {}

  bool Access(const Request& req) override {
    CheckRequestSize(req);
    auto it = index_.find(req.id);
    if (it != index_.end()) {
      const uint32_t i = it->second;
      switch (pool_[i].status) {
        case kLir:
          OnLir(i);
          return true;
        case kHirResident:
          OnResidentHir(i);
          return true;
        case kHirNonResident:
          if (req.size > capacity_) return false;
          RemoveFrom(kNr, i);
          OnMiss(i, req.size);
          return false;
      }
    }
    if (req.size > capacity_) return false;
    const uint32_t i = pool_.Allocate();
    pool_[i].id = req.id;
    index_[req.id] = i;
    OnMiss(i, req.size);
    return false;
  }
  int64_t occupied() const override { return resident_; }
  std::string_view name() const override { return "caffeine-lirs"; }

  // Counts `size` more units as cached with no block behind them, breaking the invariant that
  // resident_ is the resident blocks' size (NewCaffeineLirsWithPhantomResidentForTest).
  void AddPhantomResidentForTest(int64_t size) { resident_ += size; }

 private:
  enum Status : uint8_t { kLir, kHirResident, kHirNonResident };
  // The stack S (LIR blocks and HIR blocks more recent than the oldest LIR block), the queue Q
  // of resident HIR blocks and the queue NR of non-resident HIR blocks still on S; each list is
  // its own link slot, top at the front.
  enum Stack : uint8_t { kS = 0, kQ = 1, kNr = 2 };
  struct Node {
    std::array<PoolLink, 3> link;  // on S, Q, NR: pool_.Linked(list, i)
    uint64_t id = 0;
    int64_t size = 0;
    Status status = kHirNonResident;
  };
  static PoolList List(Stack s) { return {s, s}; }

  void MoveToTop(Stack s, uint32_t i) {
    const bool was_on = pool_.Linked(s, i);
    if (was_on) pool_.Unlink(s, i);
    pool_.PushFront(List(s), i);
    if (!was_on && s == kNr) non_resident_ += pool_[i].size;
  }
  // REQUIRES: i is on s (the pool checks: each list has a link slot of its own).
  void RemoveFrom(Stack s, uint32_t i) {
    pool_.Unlink(s, i);
    if (s == kNr) non_resident_ -= pool_[i].size;
  }
  void Forget(uint32_t i) {
    index_.erase(pool_[i].id);
    pool_.Release(i);
  }
  // S's bottom LIR block becomes a resident HIR block at Q's top. (Pruning keeps an LIR block at
  // S's bottom whenever there is one; a byte-sized cache, or one too small to have an LIR block,
  // may have none, and nothing is demoted.)
  void DemoteBottom() {
    const uint32_t bottom = pool_.Last(List(kS));
    if (bottom == kNoNode || pool_[bottom].status != kLir) return;
    hot_ -= pool_[bottom].size;
    pool_[bottom].status = kHirResident;
    RemoveFrom(kS, bottom);
    MoveToTop(kQ, bottom);
  }

  // An LIR block is a hit: to S's top; if it was the bottom, S is pruned.
  void OnLir(uint32_t i) {
    const bool was_bottom = pool_.Last(List(kS)) == i;
    MoveToTop(kS, i);
    if (was_bottom) Prune();
  }

  // A resident HIR block is a hit: to S's top. If it was on S (and not already its top, as
  // Caffeine tests) it becomes LIR and S's bottom LIR block turns HIR; else it goes to Q's top.
  void OnResidentHir(uint32_t i) {
    const bool in_stack = pool_.Linked(kS, i);
    const bool is_top = pool_.First(List(kS)) == i;
    MoveToTop(kS, i);
    if (in_stack && !is_top) {
      pool_[i].status = kLir;
      hot_ += pool_[i].size;
      RemoveFrom(kQ, i);
      DemoteBottom();
      Prune();
    } else {
      MoveToTop(kQ, i);
    }
  }

  // A miss (a new block or a non-resident HIR one): LIR while the LIR set has room, then
  // resident HIR while the cache has room, then the full case.
  void OnMiss(uint32_t i, int64_t size) {
    pool_[i].size = size;
    if (hot_ + size <= max_hot_ && resident_ + size <= capacity_) {
      MoveToTop(kS, i);
      pool_[i].status = kLir;
      hot_ += size;
    } else if (resident_ + size <= capacity_) {
      pool_[i].status = kHirResident;
      if (hir_warmup_on_stack_) MoveToTop(kS, i);
      MoveToTop(kQ, i);
    } else {
      OnFullMiss(i, size);
    }
    resident_ += size;
  }

  // Q's bottom block is evicted; the missed block goes to S's top and becomes LIR if it was
  // still on S (S's bottom LIR block turning HIR), else resident HIR at Q's top.
  void OnFullMiss(uint32_t i, int64_t size) {
    pool_[i].status = kHirResident;  // before evicting: pruning must not forget this block
    while (resident_ + size > capacity_) Evict();
    const bool in_stack = pool_.Linked(kS, i);
    MoveToTop(kS, i);
    if (in_stack) {
      pool_[i].status = kLir;
      hot_ += size;
      if (pool_.Last(List(kS)) != i) DemoteBottom();
      Prune();
    } else {
      MoveToTop(kQ, i);
    }
  }

  // Evicts Q's bottom block; it stays as a non-resident HIR block if it is on S. (Q is empty only
  // in byte mode, where the LIR set may outgrow its share: S's bottom LIR block is demoted first.)
  void Evict() {
    if (pool_.Last(List(kQ)) == kNoNode) {
      DemoteBottom();
      Prune();
    }
    // Evict runs only while resident_ > 0 must shrink, so a block is resident: on Q, or LIR and
    // (after pruning) at S's bottom, just demoted to Q. None means resident_ lost count.
    const uint32_t bottom = pool_.Last(List(kQ));
    SEEDANCE_CHECK(bottom != kNoNode) << "LIRS evicts with no resident HIR or LIR block, "
                                      << resident_ << " of " << capacity_ << " held";
    resident_ -= pool_[bottom].size;
    RemoveFrom(kQ, bottom);
    pool_[bottom].status = kHirNonResident;
    if (pool_.Linked(kS, bottom)) {
      MoveToTop(kNr, bottom);
    } else {
      Forget(bottom);
    }
    Prune();
  }

  // Pops HIR blocks off S's bottom until an LIR block is there (non-resident ones are forgotten),
  // then forgets the oldest non-resident blocks beyond the bound.
  void Prune() {
    for (uint32_t bottom = pool_.Last(List(kS)); bottom != kNoNode && pool_[bottom].status != kLir;
         bottom = pool_.Last(List(kS))) {
      RemoveFrom(kS, bottom);
      if (pool_[bottom].status == kHirNonResident) {
        RemoveFrom(kNr, bottom);
        Forget(bottom);
      }
    }
    uint32_t node = pool_.Last(List(kNr));
    while (non_resident_ > max_non_resident_) {
      const uint32_t removed = node;
      node = pool_.Prev(List(kNr), node);
      RemoveFrom(kNr, removed);
      RemoveFrom(kS, removed);
      Forget(removed);
    }
  }

  const int64_t capacity_;
  const int64_t max_hot_;
  const int64_t max_non_resident_;
  const bool hir_warmup_on_stack_;
  NodePool<Node> pool_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;
  int64_t hot_ = 0;           // the LIR blocks' size
  int64_t resident_ = 0;      // the cached blocks' size
  int64_t non_resident_ = 0;  // NR's size
};

// ---------------------------------------------------------------------------------------------
// W-TinyLFU (Caffeine's WindowTinyLfuPolicy, TinyLfu, CountMin4 and PeriodicResetCountMin4).

// java.util.Random: the 48-bit linear congruential generator, for the admission jitter.
class JavaRandom {
 public:
  explicit JavaRandom(int64_t seed) : seed_((static_cast<uint64_t>(seed) ^ kMultiplier) & kMask) {}
  float NextFloat() { return static_cast<float>(Next(24)) / static_cast<float>(1 << 24); }

 private:
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL;
  static constexpr uint64_t kMask = (uint64_t{1} << 48) - 1;
  uint32_t Next(int bits) {
    seed_ = (seed_ * kMultiplier + 0xBULL) & kMask;
    return static_cast<uint32_t>(seed_ >> (48 - bits));
  }
  uint64_t seed_;
};

// A count-min sketch of 4-bit counters, 16 to a 64-bit word: an element's four counters sit in
// four words chosen by four seeded hashes, at the same quarter of each word. Every 10 x width
// successful increments all counters are halved (PeriodicResetCountMin4). Java's int arithmetic
// is kept with uint32_t (wrapping) and int32_t casts.
class CountMin4 {
 public:
  explicit CountMin4(int64_t maximum_size, double counters_multiplier)
      : counters_multiplier_(counters_multiplier) {
    EnsureCapacity(maximum_size);
  }

  // Grows the table (forgetting all counts) to one counter per entry of a cache of
  // `maximum_size`, rounded up to a power of two; never shrinks.
  void EnsureCapacity(int64_t maximum_size) {
    const auto counters =
        static_cast<int64_t>(counters_multiplier_ * static_cast<double>(maximum_size));
    const int64_t maximum = std::min<int64_t>(counters, kMaxCounters);
    if (static_cast<int64_t>(table_.size()) < maximum || table_.empty()) {
      size_t length = 1;
      while (static_cast<int64_t>(length) < maximum) length <<= 1;
      table_.assign(length, 0);
      mask_ = static_cast<uint32_t>(length - 1);
    }
    // Java's int product 10 * table.length, which overflows for tables of 2^28 words and more.
    period_ = maximum_size == 0
                  ? 10
                  : static_cast<int32_t>(uint32_t{10} * static_cast<uint32_t>(table_.size()));
    if (period_ <= 0) period_ = std::numeric_limits<int32_t>::max();
  }

  int Frequency(uint64_t key) const {
    const uint32_t hash = Spread(JavaLongHash(key));
    const uint32_t start = (hash & 3) << 2;
    int frequency = 15;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint64_t word = table_[IndexOf(hash, i)];
      frequency = std::min(frequency, static_cast<int>((word >> ((start + i) << 2)) & 0xF));
    }
    return frequency;
  }

  void Increment(uint64_t key) {
    const uint32_t hash = Spread(JavaLongHash(key));
    const uint32_t start = (hash & 3) << 2;
    bool added = false;
    for (uint32_t i = 0; i < 4; ++i) added |= IncrementAt(IndexOf(hash, i), start + i);
    if (!added) return;
    additions_ = static_cast<int32_t>(static_cast<uint32_t>(additions_) + 1);
    if (additions_ == period_) Reset();
  }

 private:
  static constexpr int64_t kMaxCounters = std::numeric_limits<int32_t>::max() >> 1;
  // A mixture of seeds from FNV-1a, CityHash and Murmur3 (CountMin4.SEED).
  static constexpr std::array<uint64_t, 4> kSeed = {0xc3a5c85c97cb3127ULL, 0xb492b66fbe98f273ULL,
                                                    0x9ae16a3b2f90404fULL, 0xcbf29ce484222325ULL};
  static constexpr uint64_t kResetMask = 0x7777777777777777ULL;
  static constexpr uint64_t kOneMask = 0x1111111111111111ULL;

  // Long.hashCode: the two halves xor-ed.
  static uint32_t JavaLongHash(uint64_t key) { return static_cast<uint32_t>(key ^ (key >> 32)); }
  // CountMin4.spread: a supplemental hash against poor hashCodes.
  static uint32_t Spread(uint32_t x) {
    x = ((x >> 16) ^ x) * 0x45d9f3bU;
    x = ((x >> 16) ^ x) * 0x45d9f3bU;
    return (x >> 16) ^ x;
  }
  // CountMin4.indexOf: (item + seed) * seed in long arithmetic (the int item sign-extended), its
  // high half added to its low half, truncated to int and masked.
  uint32_t IndexOf(uint32_t item, uint32_t i) const {
    const auto widened = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(item)));
    uint64_t hash = (widened + kSeed[i]) * kSeed[i];
    hash += hash >> 32;
    return static_cast<uint32_t>(hash) & mask_;
  }
  bool IncrementAt(uint32_t index, uint32_t counter) {
    const uint32_t offset = counter << 2;
    const uint64_t mask = uint64_t{0xF} << offset;
    if ((table_[index] & mask) == mask) return false;
    table_[index] += uint64_t{1} << offset;
    return true;
  }
  // Halves every counter; the sample count is halved too, less a quarter of the odd counters
  // (the truncation error).
  void Reset() {
    int32_t odd = 0;
    for (uint64_t& word : table_) {
      odd += std::popcount(word & kOneMask);
      word = (word >> 1) & kResetMask;
    }
    additions_ = static_cast<int32_t>(
        static_cast<uint32_t>(additions_ - static_cast<int32_t>(static_cast<uint32_t>(odd) >> 2)) >>
        1);
  }

  const double counters_multiplier_;
  std::vector<uint64_t> table_;
  uint32_t mask_ = 0;
  int32_t additions_ = 0;
  int32_t period_ = 10;
};

struct CaffeineWTinyLfuOptions {
  double percent_main = 0.99;             // window-tiny-lfu.percent-main: the window is 1%
  double percent_main_protected = 0.80;   // window-tiny-lfu.percent-main-protected
  double counters_multiplier = 1.0;       // tiny-lfu.count-min-4.counters-multiplier
  bool jitter = false;                    // tiny-lfu.jitter.enabled (since 2024-01)
  int jitter_threshold = 6;               // tiny-lfu.jitter.threshold
  double jitter_probability = 0.0078125;  // tiny-lfu.jitter.probability
  int64_t random_seed = 1033096058;       // random-seed
  // Above this many units a cache whose first request has size 1 is still weighted: an
  // entry-sized sketch would take 8 bytes a unit.
  int64_t max_unweighted_capacity = int64_t{1} << 24;
};

// TinyLfu: the sketch and the admission rule.
class TinyLfuAdmitter {
 public:
  TinyLfuAdmitter(int64_t maximum_size, const CaffeineWTinyLfuOptions& o)
      : sketch_(maximum_size, o.counters_multiplier),
        random_(o.random_seed),
        threshold_(o.jitter ? o.jitter_threshold : std::numeric_limits<int>::max()),
        probability_(o.jitter ? o.jitter_probability : 1.0) {}
  void Record(uint64_t key) { sketch_.Increment(key); }
  void EnsureCapacity(int64_t maximum_size) { sketch_.EnsureCapacity(maximum_size); }
  // The candidate is admitted (the victim evicted) if it is more frequent; with jitter, a
  // frequent candidate also wins by chance.
  bool Admit(uint64_t candidate, uint64_t victim) {
    const int victim_freq = sketch_.Frequency(victim);
    const int candidate_freq = sketch_.Frequency(candidate);
    return candidate_freq > victim_freq ||
           (candidate_freq >= threshold_ && random_.NextFloat() < probability_);
  }

 private:
  CountMin4 sketch_;
  JavaRandom random_;
  const int threshold_;
  const double probability_;
};

class CaffeineWTinyLfu final : public Policy {
 public:
  explicit CaffeineWTinyLfu(int64_t capacity, CaffeineWTinyLfuOptions options = {})
      : options_(options),
        capacity_(capacity),
        max_main_(static_cast<int64_t>(static_cast<double>(capacity) * options.percent_main)),
        max_protected_(
            static_cast<int64_t>(static_cast<double>(max_main_) * options.percent_main_protected)),
        max_window_(capacity - max_main_),
        pool_(3) {}

  bool Access(const Request& req) override {
    CheckRequestSize(req);
    if (!weighted_.has_value()) {
      weighted_ = req.size != 1 || capacity_ > options_.max_unweighted_capacity;
      if (!*weighted_) admitter_.emplace(capacity_, options_);
    }
    auto it = index_.find(req.id);
    if (it == index_.end()) {
      if (req.size <= capacity_) OnMiss(req);
      return false;
    }
    const uint32_t i = it->second;
    Record(req.id);
    switch (pool_[i].region) {
      case kWindow:
        pool_.Unlink(0, i);
        pool_.PushBack(List(kWindow), i);
        break;
      case kProbation:
        OnProbationHit(i);
        break;
      case kProtected:
        pool_.Unlink(0, i);
        pool_.PushBack(List(kProtected), i);
        DemoteProtected();
        break;
    }
    Evict();
    return true;
  }
  int64_t occupied() const override { return size_; }
  std::string_view name() const override { return "caffeine-wtinylfu"; }

 private:
  // The regions, each the index of its list's sentinel; LRU at the front.
  enum Region : uint8_t { kWindow = 0, kProbation = 1, kProtected = 2 };
  struct Node {
    std::array<PoolLink, 1> link;
    uint64_t id = 0;
    int64_t size = 0;
    Region region = kWindow;
  };
  static PoolList List(Region r) { return {r, 0}; }

  void Record(uint64_t id) {
    if (admitter_.has_value()) admitter_->Record(id);
  }

  // A new object enters the window's MRU end.
  void OnMiss(const Request& req) {
    Record(req.id);
    const uint32_t i = pool_.Allocate();
    pool_[i].id = req.id;
    pool_[i].size = req.size;
    pool_[i].region = kWindow;
    pool_.PushBack(List(kWindow), i);
    index_[req.id] = i;
    window_ += req.size;
    size_ += req.size;
    Evict();
  }

  // A probation hit is promoted to protected's MRU end (one heavier than protected's maximum
  // stays at probation's MRU end).
  void OnProbationHit(uint32_t i) {
    pool_.Unlink(0, i);
    if (pool_[i].size > max_protected_) {
      pool_.PushBack(List(kProbation), i);
      return;
    }
    pool_[i].region = kProtected;
    pool_.PushBack(List(kProtected), i);
    protected_ += pool_[i].size;
    DemoteProtected();
  }

  // Protected's LRU objects go to probation's MRU end while protected is over its maximum.
  void DemoteProtected() {
    while (protected_ > max_protected_) {
      const uint32_t demote = pool_.Front(List(kProtected));
      pool_.Unlink(0, demote);
      pool_[demote].region = kProbation;
      pool_.PushBack(List(kProbation), demote);
      protected_ -= pool_[demote].size;
    }
  }

  // After every access. Weighted: the admitter starts once the cache is half full, sized to the
  // entries held then, and grows with them.
  void Evict() {
    if (*weighted_ && size_ >= (capacity_ >> 1)) {
      const auto entries = static_cast<int64_t>(index_.size());
      if (!admitter_.has_value()) admitter_.emplace(entries, options_);
      admitter_->EnsureCapacity(entries);
    }
    EvictFromMain(EvictFromWindow());
  }

  // Moves the window's LRU objects to probation's MRU end while the window is over its maximum;
  // returns the first one moved (the first admission candidate), or kNoNode.
  uint32_t EvictFromWindow() {
    uint32_t first = kNoNode;
    while (window_ > max_window_) {
      const uint32_t candidate = pool_.Front(List(kWindow));
      pool_.Unlink(0, candidate);
      pool_[candidate].region = kProbation;
      pool_.PushBack(List(kProbation), candidate);
      window_ -= pool_[candidate].size;
      if (first == kNoNode) first = candidate;
    }
    return first;
  }

  // The next node of i's region towards its MRU end, or kNoNode.
  uint32_t Successor(uint32_t i) const { return pool_.Next(List(pool_[i].region), i); }

  // While over capacity, the candidate (from the window) and the victim (probation's LRU end)
  // meet and the less frequent goes; candidates run out into the window, victims into protected
  // and then the window. Successors are taken before a node is freed.
  void EvictFromMain(uint32_t candidate) {
    bool searched_window = false;
    Region victim_region = kProbation;
    uint32_t victim = pool_.First(List(kProbation));
    while (size_ > capacity_) {
      if (candidate == kNoNode && !searched_window) {
        candidate = pool_.First(List(kWindow));
        searched_window = true;
      }
      if (candidate == kNoNode && victim == kNoNode) {
        if (victim_region == kWindow) break;
        victim_region = victim_region == kProbation ? kProtected : kWindow;
        victim = pool_.First(List(victim_region));
        continue;
      }
      uint32_t evict = candidate;  // the candidate goes unless a case below says otherwise
      if (victim == kNoNode) {
        candidate = Successor(candidate);
      } else if (candidate == kNoNode) {
        evict = victim;
        victim = Successor(victim);
      } else if (candidate == victim) {
        victim = Successor(victim);
        candidate = kNoNode;
      } else if (pool_[candidate].size > capacity_) {
        candidate = Successor(candidate);
      } else if (admitter_->Admit(pool_[candidate].id, pool_[victim].id)) {
        evict = victim;
        victim = Successor(victim);
        Remove(evict);
        candidate = Successor(candidate);
        continue;
      } else {
        candidate = Successor(candidate);
      }
      Remove(evict);
    }
  }

  void Remove(uint32_t i) {
    if (pool_[i].region == kWindow) window_ -= pool_[i].size;
    if (pool_[i].region == kProtected) protected_ -= pool_[i].size;
    size_ -= pool_[i].size;
    pool_.Unlink(0, i);
    index_.erase(pool_[i].id);
    pool_.Release(i);
  }

  const CaffeineWTinyLfuOptions options_;
  const int64_t capacity_;
  const int64_t max_main_;
  const int64_t max_protected_;
  const int64_t max_window_;
  std::optional<bool> weighted_;  // decided by the first request
  std::optional<TinyLfuAdmitter> admitter_;
  NodePool<Node> pool_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;
  int64_t size_ = 0;
  int64_t window_ = 0;
  int64_t protected_ = 0;
};

}  // namespace

std::unique_ptr<Policy> NewCaffeineArc(int64_t capacity) {
  return std::make_unique<CaffeineArc>(capacity);
}
std::unique_ptr<Policy> NewCaffeineLirs(int64_t capacity) {
  return std::make_unique<CaffeineLirs>(capacity);
}
std::unique_ptr<Policy> NewCaffeineWTinyLfu(int64_t capacity) {
  return std::make_unique<CaffeineWTinyLfu>(capacity);
}

std::unique_ptr<Policy> NewCaffeineLirsWithPhantomResidentForTest(int64_t capacity,
                                                                  int64_t phantom_resident) {
  auto lirs = std::make_unique<CaffeineLirs>(capacity);
  lirs->AddPhantomResidentForTest(phantom_resident);
  return lirs;
}

}  // namespace seedance::cache::internal
