// The policies that rank objects by more than recency: Belady (the offline optimum), LRU-K,
// TinyLFU and W-TinyLFU.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "object_list.h"
#include "policy_base.h"
#include "seedance/base/check.h"

namespace seedance::cache::internal {
namespace {

// Belady's MIN (Belady, IBM Systems Journal 1966): evicts the cached object whose next request is
// furthest in the future. Optimal for unit sizes; with byte sizes it is libCacheSim's "Belady",
// not the size-aware optimum. The victim comes from a binary max-heap on next_access_vtime whose
// sift-up and sift-down (ties never move) are those of libCacheSim's pqueue, so that ties between
// objects never requested again break as libCacheSim's do.
class Belady final : public PolicyBase {
 public:
  explicit Belady(int64_t capacity) : PolicyBase("belady", capacity) { heap_.push_back(nullptr); }
  int64_t occupied() const override { return occupied_; }

 private:
  struct Node {
    uint64_t id = 0;
    int64_t size = 0;
    int64_t next = 0;
    size_t pos = 0;
  };
  static int64_t Next(const Request& r) {
    SEEDANCE_CHECK(r.next_access_vtime != kUnknownNextAccess)
        << "belady needs next access times: request for object " << r.id << " has none";
    return r.next_access_vtime;
  }
  bool Find(const Request& r) override {
    auto it = nodes_.find(r.id);
    if (it == nodes_.end()) return false;
    Node* n = it->second.get();
    const int64_t old = n->next;
    n->next = Next(r);
    if (old < n->next) {
      Up(n->pos);
    } else {
      Down(n->pos);
    }
    return true;
  }
  void Insert(const Request& r) override {
    auto node = std::make_unique<Node>(Node{r.id, r.size, Next(r), heap_.size()});
    heap_.push_back(node.get());
    Up(heap_.size() - 1);
    nodes_[r.id] = std::move(node);
    occupied_ += r.size;
  }
  void Evict(const Request&) override {
    Node* top = heap_[1];
    heap_[1] = heap_.back();
    heap_.pop_back();
    if (heap_.size() > 1) Down(1);
    occupied_ -= top->size;
    nodes_.erase(top->id);
  }
  void Place(size_t i, Node* n) {
    heap_[i] = n;
    n->pos = i;
  }
  void Up(size_t i) {
    Node* moving = heap_[i];
    for (; i > 1 && heap_[i / 2]->next < moving->next; i /= 2) Place(i, heap_[i / 2]);
    Place(i, moving);
  }
  void Down(size_t i) {
    Node* moving = heap_[i];
    for (;;) {
      size_t child = 2 * i;
      if (child >= heap_.size()) break;
      if (child + 1 < heap_.size() && heap_[child]->next < heap_[child + 1]->next) ++child;
      if (!(moving->next < heap_[child]->next)) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, moving);
  }

  std::vector<Node*> heap_;  // 1-based
  absl::flat_hash_map<uint64_t, std::unique_ptr<Node>> nodes_;
  int64_t occupied_ = 0;
};

// LRU-K with K = 2 (O'Neil, O'Neil & Weikum, "The LRU-K Page Replacement Algorithm for Database
// Disk Buffering", SIGMOD '93): evicts the object whose second-to-last reference is oldest;
// objects referenced once have an infinite backward 2-distance and go first, least recent first.
// The history of evicted objects (their last reference) is retained for as many objects as the
// cache holds (the paper's Retained Information Period, bounded by count).
class LruK final : public PolicyBase {
 public:
  explicit LruK(int64_t capacity) : PolicyBase("lru2", capacity), recs_(1) {}
  int64_t occupied() const override { return occupied_; }
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
  // occupied_ is the cached objects' size (NewLruKWithPhantomResidentForTest).
  void AddPhantomResidentForTest(int64_t size) { occupied_ += size; }

 private:
  // Every reference has its own clock value, so backward-distance keys never tie. Objects seen
  // once are keyed by that reference, which is always the newest clock when they enter: they
  // form a FIFO (linked through their records, slot 0 the sentinel). Objects seen twice or more
  // are keyed by their second-to-last reference in a binary min-heap (twice_), one entry each. A
  // key only grows, so a hit leaves the entry as it is (a lower bound of the key); an entry that
  // surfaces with an old key goes back in with the current one, and the first that surfaces
  // current is the oldest. One record per object that is cached or retained, found through
  // index_; an evicted object's record is retained while the queue of evictions (retained_, one
  // entry per eviction, as many as the cache holds objects) names it.
  struct Rec {
    uint64_t id = 0;
    int64_t size = 0;
    int64_t last = -1;
    int64_t prev = -1;     // the reference before `last`, -1 if none
    uint32_t to_back = 0;  // FIFO links while cached and seen once
    uint32_t to_front = 0;
    uint32_t evictions = 0;  // entries of retained_ naming this record
    bool cached = false;
    bool live = false;  // false: on the free list
  };
  struct Entry {
    int64_t key;  // the record's prev when the entry went in, or earlier
    uint32_t slot;
  };
  struct Later {  // the heap's order (a function object, so that the heap's code inlines it)
    bool operator()(const Entry& a, const Entry& b) const { return a.key > b.key; }
  };

  bool Find(const Request& r) override {
    ++clock_;
    found_ = 0;
    auto it = index_.find(r.id);
    if (it == index_.end()) return false;
    const uint32_t s = it->second;
    Rec& h = recs_[s];
    if (!h.cached) {
      found_ = s;  // retained
      return false;
    }
    const bool first_hit = h.prev < 0;
    h.prev = h.last;
    h.last = clock_;
    if (first_hit) {  // it leaves the FIFO for the heap
      Unlink(s);
      HeapPush(s);
    }
    return true;
  }
  void Insert(const Request& r) override {
    // The record Find saw may have left the retained queue while this miss evicted.
    uint32_t s = found_;
    if (s != 0 && recs_[s].live) {
      Rec& h = recs_[s];
      h.prev = h.last;
      h.last = clock_;
      h.size = r.size;
      h.cached = true;
      HeapPush(s);
    } else {
      s = NewRec();
      recs_[s] = Rec{.id = r.id, .size = r.size, .last = clock_};
      recs_[s].cached = recs_[s].live = true;
      index_.emplace(r.id, s);
      LinkFront(s);
    }
    ++cached_;
    occupied_ += r.size;
  }
  void Evict(const Request&) override {
    uint32_t s = recs_[0].to_front;  // the oldest object seen once
    if (s != 0) {
      Unlink(s);
    } else {
      s = PopMin();
    }
    Rec& h = recs_[s];
    occupied_ -= h.size;
    h.cached = false;
    --cached_;
    ++h.evictions;
    retained_.push_back(s);
    while (retained_.size() > std::max<size_t>(1, cached_)) {
      const uint32_t old = retained_.front();
      retained_.pop_front();
      Rec& o = recs_[old];
      if (--o.evictions == 0 && !o.cached) FreeRec(old);
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
  void FreeRec(uint32_t s) {
    index_.erase(recs_[s].id);
    recs_[s].live = false;
    free_.push_back(s);
  }
  // The FIFO is circular through slot 0: recs_[0].to_back is the newest, .to_front the oldest.
  void LinkFront(uint32_t s) {
    Rec& h = recs_[s];
    h.to_front = 0;
    h.to_back = recs_[0].to_back;
    recs_[h.to_back].to_front = s;
    recs_[0].to_back = s;
  }
  void Unlink(uint32_t s) {
    const Rec& h = recs_[s];
    recs_[h.to_front].to_back = h.to_back;
    recs_[h.to_back].to_front = h.to_front;
  }
  void HeapPush(uint32_t s) {
    twice_.push_back({recs_[s].prev, s});
    std::push_heap(twice_.begin(), twice_.end(), Later{});
  }
  // The slot of the cached object with the oldest second-to-last reference, out of the heap.
  uint32_t PopMin() {
    SEEDANCE_CHECK(!twice_.empty()) << "lru2: nothing to evict";
    for (;;) {
      Entry& top = twice_.front();
      const int64_t key = recs_[top.slot].prev;
      if (key == top.key) break;
      top.key = key;  // hit since it went in: down to its place with its key now
      SiftDownFront(twice_, Later{});
    }
    const uint32_t s = twice_.front().slot;
    std::pop_heap(twice_.begin(), twice_.end(), Later{});
    twice_.pop_back();
    return s;
  }

  int64_t clock_ = 0;
  int64_t occupied_ = 0;
  size_t cached_ = 0;
  uint32_t found_ = 0;  // Find's retained record of this request, 0 if none
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // id -> slot of recs_
  std::vector<Rec> recs_;                          // slot 0: the FIFO's sentinel
  std::vector<uint32_t> free_;
  std::vector<Entry> twice_;
  std::deque<uint32_t> retained_;
};

// The TinyLFU frequency sketch (Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy", ACM ToS 2017; Caffeine's FrequencySketch): a count-min sketch of 4-bit
// counters, depth 4, 16 counters per expected entry (Caffeine's table of ceil_pow2(entries) 64-bit
// words of 16 counters), whose counters all halve after 10 x (entries) increments (the reset
// that ages old popularity away).
//
// Storage, for replay speed only (every estimate is the same either way): a sketch of up to
// kDenseCounters counters is an array of them, two to a byte. A larger one (a byte-sized cache's:
// up to 2^26 counters, of which a trace of n requests touches at most 4n) starts as a table of its
// non-zero counters and becomes the array when that table would be about as large: no 64 MiB to
// clear per cache, and the counters a trace touches stay in a few MiB.
class FrequencySketch {
 public:
  static constexpr int64_t kSampleFactor = 10;
  static constexpr uint64_t kCountersPerEntry = 16;
  static constexpr uint64_t kDenseCounters = uint64_t{1} << 22;
  explicit FrequencySketch(int64_t entries)
      : width_(kCountersPerEntry *
               std::bit_ceil(static_cast<uint64_t>(std::clamp<int64_t>(entries, 1, 1 << 22)))),
        sample_size_(kSampleFactor * std::clamp<int64_t>(entries, 1, 1 << 24)) {
    if (width_ <= kDenseCounters) counters_.assign(width_ / 2, 0);
  }

  int Frequency(uint64_t id) const {
    int f = 15;
    if (dense()) {
      for (int i = 0; i < 4; ++i) f = std::min<int>(f, DenseGet(Index(id, i)));
    } else {
      for (int i = 0; i < 4; ++i) f = std::min<int>(f, sparse_.Get(uint32_t(Index(id, i))));
    }
    return f;
  }
  void Increment(uint64_t id) {
    bool added = false;
    if (dense()) {
      for (int i = 0; i < 4; ++i) {
        const size_t index = Index(id, i);
        if (DenseGet(index) < 15) {
          counters_[index / 2] += uint8_t(1u << Shift(index));
          added = true;
        }
      }
    } else {
      for (int i = 0; i < 4; ++i) added |= sparse_.Increment(uint32_t(Index(id, i)));
      if (sparse_.size() > width_ / kSparseDivisor) Densify();
    }
    if (added && ++additions_ >= sample_size_) Reset();
  }

 private:
  // The sparse form: an open-addressing table (linear probing, at most half full) of the
  // non-zero counters, each entry index << 4 | count (count >= 1, so 0 marks an empty entry).
  // An index is already a hash, so its low bits pick the entry.
  class SparseCounters {
   public:
    static constexpr size_t kInitialEntries = size_t{1} << 16;
    size_t size() const { return size_; }
    int Get(uint32_t index) const {
      if (table_.empty()) return 0;
      for (size_t pos = index & mask_;; pos = (pos + 1) & mask_) {
        const uint32_t e = table_[pos];
        if (e == 0) return 0;
        if (e >> 4 == index) return int(e & 15);
      }
    }
    // Adds 1 to the counter unless it is 15; whether it did.
    bool Increment(uint32_t index) {
      if (2 * (size_ + 1) > table_.size()) {
        Rebuild(table_.empty() ? kInitialEntries : 2 * table_.size(), 0);
      }
      size_t pos = index & mask_;
      for (;; pos = (pos + 1) & mask_) {
        const uint32_t e = table_[pos];
        if (e == 0) break;
        if (e >> 4 != index) continue;
        if ((e & 15) == 15) return false;
        ++table_[pos];
        return true;
      }
      table_[pos] = index << 4 | 1;
      ++size_;
      return true;
    }
    // Every counter shifted right by `shift` (0: unchanged), into a table of `capacity` entries.
    void Rebuild(size_t capacity, int shift) {
      std::vector<uint32_t> old = std::move(table_);
      table_.assign(capacity, 0);
      mask_ = capacity - 1;
      size_ = 0;
      for (uint32_t e : old) {
        const uint32_t count = (e & 15) >> shift;
        if (count == 0) continue;
        size_t pos = (e >> 4) & mask_;
        while (table_[pos] != 0) pos = (pos + 1) & mask_;
        table_[pos] = (e >> 4) << 4 | count;
        ++size_;
      }
    }
    template <typename F>
    void ForEach(const F& f) const {
      for (uint32_t e : table_) {
        if (e != 0) f(e >> 4, uint8_t(e & 15));
      }
    }

   private:
    std::vector<uint32_t> table_;
    size_t mask_ = 0;
    size_t size_ = 0;
  };
  // The sparse form turns dense when it holds more than width_ / kSparseDivisor counters (its
  // table, at least 8 bytes per counter, is then at least the array's width_ / 2 bytes).
  static constexpr uint64_t kSparseDivisor = 16;

  bool dense() const { return !counters_.empty(); }
  // The dense form packs two counters in a byte: counter i is byte i / 2's low nibble (i even)
  // or high nibble (i odd).
  static int Shift(size_t index) { return int(index & 1) * 4; }
  int DenseGet(size_t index) const { return (counters_[index / 2] >> Shift(index)) & 15; }
  size_t Index(uint64_t id, int i) const {
    uint64_t h = id + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i + 1);  // splitmix64
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return static_cast<size_t>(h & (width_ - 1));
  }
  void Densify() {
    counters_.assign(width_ / 2, 0);
    sparse_.ForEach([&](uint32_t index, uint8_t count) {
      counters_[index / 2] |= uint8_t(count << Shift(index));
    });
    sparse_ = SparseCounters();
  }
  void Reset() {
    if (dense()) {
      for (uint8_t& c : counters_) c = (c >> 1) & 0x77;  // both nibbles halved
    } else {
      sparse_.Rebuild(
          std::max(SparseCounters::kInitialEntries, std::bit_ceil(2 * sparse_.size() + 2)), 1);
    }
    additions_ /= 2;
  }
  uint64_t width_;
  std::vector<uint8_t> counters_;  // dense: every counter, two per byte; empty while sparse
  SparseCounters sparse_;
  int64_t sample_size_;
  int64_t additions_ = 0;
};

// TinyLFU over LRU: an LRU cache that admits a missed object only if the sketch estimates it
// more popular than the LRU victim it would displace. Every request is counted in the sketch.
class TinyLfu final : public PolicyBase {
 public:
  explicit TinyLfu(int64_t capacity) : PolicyBase("tinylfu", capacity), sketch_(capacity) {}
  int64_t occupied() const override { return q_.bytes(); }
  // PolicyBase::Access with its steps called directly (no virtual call per step). A request of
  // size < 1 goes to PolicyBase::Access, whose check fails.
  bool Access(const Request& r) override {
    if (r.size < 1) return PolicyBase::Access(r);
    if (Find(r)) return true;
    if (!CanInsert(r)) return false;
    while (q_.bytes() + r.size > capacity_) q_.PopBack();
    q_.PushFront(r.id, r.size);
    return false;
  }

 private:
  bool Find(const Request& r) override {
    sketch_.Increment(r.id);
    return q_.Touch(r.id) != nullptr;
  }
  bool CanInsert(const Request& r) override {
    if (r.size > capacity_) return false;
    if (q_.bytes() + r.size <= capacity_ || q_.empty()) return true;
    return sketch_.Frequency(r.id) > sketch_.Frequency(q_.Back().id);
  }
  void Evict(const Request&) override { q_.PopBack(); }
  void Insert(const Request& r) override { q_.PushFront(r.id, r.size); }
  ObjectList<> q_;
  FrequencySketch sketch_;
};

// W-TinyLFU (the same paper, section 4; Caffeine's policy): a window LRU of 1% of the cache takes
// every new object; the window's victim competes with the main cache's victim for a place there,
// admitted only if the sketch rates it more popular. The main cache is an SLRU: probation, and a
// protected segment of 80% that a probation hit promotes to.
class WTinyLfu final : public Expert {
 public:
  static constexpr double kWindowRatio = 0.01;
  static constexpr double kProtectedRatio = 0.80;
  explicit WTinyLfu(int64_t capacity)
      : Expert("wtinylfu", capacity),
        window_cap_(std::max<int64_t>(1, static_cast<int64_t>(double(capacity) * kWindowRatio))),
        main_cap_(capacity - window_cap_),
        protected_cap_(static_cast<int64_t>(double(main_cap_) * kProtectedRatio)),
        sketch_(capacity) {}
  int64_t occupied() const override {
    return lists_.bytes(kWindow) + lists_.bytes(kProbation) + lists_.bytes(kProtected);
  }
  bool Contains(uint64_t id) override { return lists_.Find(id) != Lists::kNone; }
  // The sketch keeps counting the object.
  void Drop(uint64_t id) override {
    if (const Lists::Handle h = lists_.Find(id); h != Lists::kNone) lists_.Erase(h);
  }
  std::unique_ptr<Expert> Clone() override { return std::make_unique<WTinyLfu>(*this); }
  // Probation, protected, then the window, each back first.
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    for (size_t k : {kProbation, kProtected, kWindow}) {
      for (Lists::Handle h = lists_.Back(k); !lists_.IsSentinel(h); h = lists_.TowardFront(h)) {
        out.emplace_back(lists_.node(h).id, lists_.node(h).size);
      }
    }
    return out;
  }
  // PolicyBase::Access with its steps called directly; CanInsert admits (and declines) itself.
  bool Access(const Request& r) override {
    if (r.size < 1) return PolicyBase::Access(r);
    if (Find(r)) return true;
    CanInsert(r);
    return false;
  }

 private:
  // The segments: three lists over one index (an object is in at most one of them).
  using Lists = MultiList<3>;
  static constexpr size_t kWindow = 0;
  static constexpr size_t kProbation = 1;
  static constexpr size_t kProtected = 2;

  bool Find(const Request& r) override {
    sketch_.Increment(r.id);
    const Lists::Handle h = lists_.Find(r.id);
    if (h == Lists::kNone) return false;
    if (lists_.ListOf(h) != kProbation) {
      lists_.MoveToFront(h, lists_.ListOf(h));
      return true;
    }
    // A probation hit is promoted (with the request's size); protected's overflow is demoted.
    lists_.MoveToFront(h, kProtected, r.size);
    while (lists_.bytes(kProtected) > protected_cap_) {
      lists_.MoveToFront(lists_.Back(kProtected), kProbation);
    }
    return true;
  }
  // Every miss enters the window; the window's overflow competes for the main cache here.
  void Evict(const Request&) override {}
  bool CanInsert(const Request& r) override {
    if (r.size > capacity_) return false;
    lists_.PushFront(kWindow, r.id, r.size);
    while (lists_.bytes(kWindow) > window_cap_) Admit(lists_.Back(kWindow));
    return false;  // inserted already
  }
  // The window's back `candidate` enters probation or leaves the cache.
  void Admit(Lists::Handle candidate) {
    const int64_t size = lists_.node(candidate).size;
    if (size > main_cap_) {
      lists_.Erase(candidate);
      return;
    }
    if (MainBytes() + size <= main_cap_) {
      lists_.MoveToFront(candidate, kProbation);
      return;
    }
    // The victims are probation's back objects, then (if probation alone cannot make room)
    // protected's, as many as free the space; the candidate is admitted only if the sketch rates
    // it above every one of them, checked in that order.
    const int freq = sketch_.Frequency(lists_.node(candidate).id);
    const int64_t need = MainBytes() + size - main_cap_;
    int64_t freed = 0;
    std::array<size_t, 2> victims{};  // from probation, from protected
    for (size_t k : {kProbation, kProtected}) {
      for (Lists::Handle h = lists_.Back(k); freed < need && !lists_.IsSentinel(h);
           h = lists_.TowardFront(h)) {
        if (freq <= sketch_.Frequency(lists_.node(h).id)) {  // the candidate loses
          lists_.Erase(candidate);
          return;
        }
        freed += lists_.node(h).size;
        ++victims[k - kProbation];
      }
    }
    for (size_t k : {kProbation, kProtected}) {
      for (size_t n = victims[k - kProbation]; n > 0; --n) lists_.Erase(lists_.Back(k));
    }
    lists_.MoveToFront(candidate, kProbation);
  }
  void Insert(const Request&) override {}
  int64_t MainBytes() const { return lists_.bytes(kProbation) + lists_.bytes(kProtected); }

  const int64_t window_cap_;
  const int64_t main_cap_;
  const int64_t protected_cap_;
  Lists lists_;
  FrequencySketch sketch_;
};

}  // namespace

std::unique_ptr<Policy> NewBelady(int64_t c) { return std::make_unique<Belady>(c); }
std::unique_ptr<Policy> NewLruK(int64_t c) { return std::make_unique<LruK>(c); }
std::unique_ptr<Policy> NewTinyLfu(int64_t c) { return std::make_unique<TinyLfu>(c); }
std::unique_ptr<Policy> NewWTinyLfu(int64_t c) { return std::make_unique<WTinyLfu>(c); }
std::unique_ptr<Expert> NewWTinyLfuExpert(int64_t c) { return std::make_unique<WTinyLfu>(c); }

std::unique_ptr<Policy> NewLruKWithPhantomResidentForTest(int64_t capacity,
                                                          int64_t phantom_resident) {
  auto lru2 = std::make_unique<LruK>(capacity);
  lru2->AddPhantomResidentForTest(phantom_resident);
  return lru2;
}

}  // namespace seedance::cache::internal
