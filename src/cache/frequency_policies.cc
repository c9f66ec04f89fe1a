// The policies that rank objects by more than recency: Belady (the offline optimum), LRU-K,
// TinyLFU and W-TinyLFU.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
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
  explicit LruK(int64_t capacity) : PolicyBase("lru2", capacity) {}
  int64_t occupied() const override { return occupied_; }

 private:
  // Every reference has its own clock value, so backward-distance keys never tie. Objects seen
  // once are keyed by that reference, which is always the newest clock when they enter: they
  // form a FIFO (once_, back = oldest). Objects seen twice or more are keyed by their second-to-
  // last reference in a binary min-heap (twice_). A cached object's history lives in a slot of
  // hists_ (cached_ maps its id there), which also records its place in the heap.
  struct Hist {
    int64_t last = -1;
    int64_t prev = -1;  // the reference before `last`, -1 if none
    int64_t size = 0;
    uint64_t id = 0;
    size_t pos = 0;  // in twice_, when prev >= 0
  };
  struct Entry {
    int64_t key;
    uint32_t slot;
  };

  bool Find(const Request& r) override {
    ++clock_;
    auto it = cached_.find(r.id);
    if (it == cached_.end()) return false;
    Hist& h = hists_[it->second];
    if (h.prev < 0) {
      once_.Remove(r.id);
      h.prev = h.last;
      h.last = clock_;
      HeapPush(it->second);
    } else {
      h.prev = h.last;
      h.last = clock_;
      twice_[h.pos].key = h.prev;  // a later key: it can only sink
      Down(h.pos);
    }
    return true;
  }
  void Insert(const Request& r) override {
    uint32_t slot = 0;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(hists_.size());
      hists_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    Hist& h = hists_[slot];
    h = Hist{.last = clock_, .prev = -1, .size = r.size, .id = r.id};
    if (auto g = retained_.find(r.id); g != retained_.end()) {
      h.prev = g->second;
      retained_.erase(g);
    }
    cached_[r.id] = slot;
    if (h.prev < 0) {
      once_.PushFront(r.id, 1);
    } else {
      HeapPush(slot);
    }
    occupied_ += r.size;
  }
  void Evict(const Request&) override {
    uint32_t slot = 0;
    if (!once_.empty()) {
      slot = cached_.find(once_.Back().id)->second;
      once_.PopBack();
    } else {
      slot = twice_.front().slot;
      twice_.front() = twice_.back();
      twice_.pop_back();
      if (!twice_.empty()) Down(0);
    }
    const Hist& h = hists_[slot];
    occupied_ -= h.size;
    retained_[h.id] = h.last;
    retained_order_.PushFront(h.id, 1);
    cached_.erase(h.id);
    free_.push_back(slot);
    while (retained_order_.count() > std::max<size_t>(1, cached_.size())) {
      const uint64_t old = retained_order_.Back().id;
      retained_order_.PopBack();
      if (retained_order_.Find(old) == nullptr) retained_.erase(old);
    }
  }

  void HeapPush(uint32_t slot) {
    hists_[slot].pos = twice_.size();
    twice_.push_back({hists_[slot].prev, slot});
    Up(twice_.size() - 1);
  }
  void Place(size_t i, const Entry& e) {
    twice_[i] = e;
    hists_[e.slot].pos = i;
  }
  void Up(size_t i) {
    const Entry moving = twice_[i];
    for (; i > 0 && moving.key < twice_[(i - 1) / 2].key; i = (i - 1) / 2) {
      Place(i, twice_[(i - 1) / 2]);
    }
    Place(i, moving);
  }
  void Down(size_t i) {
    const Entry moving = twice_[i];
    for (;;) {
      size_t child = 2 * i + 1;
      if (child >= twice_.size()) break;
      if (child + 1 < twice_.size() && twice_[child + 1].key < twice_[child].key) ++child;
      if (!(twice_[child].key < moving.key)) break;
      Place(i, twice_[child]);
      i = child;
    }
    Place(i, moving);
  }

  int64_t clock_ = 0;
  int64_t occupied_ = 0;
  absl::flat_hash_map<uint64_t, uint32_t> cached_;  // id -> slot of hists_
  std::vector<Hist> hists_;
  std::vector<uint32_t> free_;  // unused slots of hists_
  ObjectList<> once_;
  std::vector<Entry> twice_;
  absl::flat_hash_map<uint64_t, int64_t> retained_;
  ObjectList<> retained_order_;
};

// The TinyLFU frequency sketch (Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy", ACM ToS 2017; Caffeine's FrequencySketch): a count-min sketch of 4-bit
// counters, depth 4, 16 counters per expected entry (Caffeine's table of ceil_pow2(entries) 64-bit
// words of 16 counters), whose counters all halve after 10 x (entries) increments (the reset
// that ages old popularity away).
class FrequencySketch {
 public:
  static constexpr int64_t kSampleFactor = 10;
  static constexpr uint64_t kCountersPerEntry = 16;
  explicit FrequencySketch(int64_t entries)
      : width_(kCountersPerEntry *
               std::bit_ceil(static_cast<uint64_t>(std::clamp<int64_t>(entries, 1, 1 << 22)))),
        counters_(width_, 0),
        sample_size_(kSampleFactor * std::clamp<int64_t>(entries, 1, 1 << 24)) {}

  int Frequency(uint64_t id) const {
    int f = 15;
    for (int i = 0; i < 4; ++i) f = std::min<int>(f, counters_[Index(id, i)]);
    return f;
  }
  void Increment(uint64_t id) {
    bool added = false;
    for (int i = 0; i < 4; ++i) {
      uint8_t& c = counters_[Index(id, i)];
      if (c < 15) {
        ++c;
        added = true;
      }
    }
    if (added && ++additions_ >= sample_size_) Reset();
  }

 private:
  size_t Index(uint64_t id, int i) const {
    uint64_t h = id + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i + 1);  // splitmix64
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return static_cast<size_t>(h & (width_ - 1));
  }
  void Reset() {
    for (uint8_t& c : counters_) c >>= 1;
    additions_ /= 2;
  }
  uint64_t width_;
  std::vector<uint8_t> counters_;
  int64_t sample_size_;
  int64_t additions_ = 0;
};

// TinyLFU over LRU: an LRU cache that admits a missed object only if the sketch estimates it
// more popular than the LRU victim it would displace. Every request is counted in the sketch.
class TinyLfu final : public PolicyBase {
 public:
  explicit TinyLfu(int64_t capacity) : PolicyBase("tinylfu", capacity), sketch_(capacity) {}
  int64_t occupied() const override { return q_.bytes(); }

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
    return window_.bytes() + probation_.bytes() + protected_.bytes();
  }
  bool Contains(uint64_t id) override {
    return window_.Find(id) != nullptr || probation_.Find(id) != nullptr ||
           protected_.Find(id) != nullptr;
  }
  // The sketch keeps counting the object.
  void Drop(uint64_t id) override {
    if (!window_.Remove(id) && !probation_.Remove(id)) protected_.Remove(id);
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<WTinyLfu>(capacity_);
    CopyList(window_, &c->window_);
    CopyList(probation_, &c->probation_);
    CopyList(protected_, &c->protected_);
    c->sketch_ = sketch_;
    return c;
  }
  // Probation, protected, then the window, each back first.
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(probation_, &out);
    AppendBackToFront(protected_, &out);
    AppendBackToFront(window_, &out);
    return out;
  }

 private:
  bool Find(const Request& r) override {
    sketch_.Increment(r.id);
    if (window_.Touch(r.id) != nullptr) return true;
    if (protected_.Touch(r.id) != nullptr) return true;
    if (!probation_.Remove(r.id)) return false;
    protected_.PushFront(r.id, r.size);
    while (protected_.bytes() > protected_cap_) {
      const auto demoted = protected_.Back();
      protected_.PopBack();
      probation_.PushFront(demoted.id, demoted.size);
    }
    return true;
  }
  // Every miss enters the window; the window's overflow competes for the main cache here.
  void Evict(const Request&) override {}
  bool CanInsert(const Request& r) override {
    if (r.size > capacity_) return false;
    window_.PushFront(r.id, r.size);
    while (window_.bytes() > window_cap_) {
      const auto candidate = window_.Back();
      window_.PopBack();
      Admit(candidate.id, candidate.size);
    }
    return false;  // inserted already
  }
  void Admit(uint64_t id, int64_t size) {
    if (size > main_cap_) return;
    if (MainBytes() + size <= main_cap_) {
      probation_.PushFront(id, size);
      return;
    }
    const int freq = sketch_.Frequency(id);
    std::vector<ObjectList<>::Node>& victims = victims_;  // reused: no allocation per miss
    victims.clear();
    int64_t freed = 0;
    for (auto it = probation_.end(); MainBytes() - freed + size > main_cap_;) {
      if (it == probation_.begin()) break;
      --it;
      victims.push_back(*it);
      freed += it->size;
    }
    if (MainBytes() - freed + size > main_cap_) {
      // Probation alone cannot make room: the protected segment's back is the victim too.
      for (auto it = protected_.end();
           it != protected_.begin() && MainBytes() - freed + size > main_cap_;) {
        --it;
        victims.push_back(*it);
        freed += it->size;
      }
    }
    for (const auto& v : victims) {
      if (freq <= sketch_.Frequency(v.id)) return;  // the candidate loses
    }
    for (const auto& v : victims) {
      if (!probation_.Remove(v.id)) protected_.Remove(v.id);
    }
    probation_.PushFront(id, size);
  }
  void Insert(const Request&) override {}
  int64_t MainBytes() const { return probation_.bytes() + protected_.bytes(); }

  const int64_t window_cap_;
  const int64_t main_cap_;
  const int64_t protected_cap_;
  ObjectList<> window_, probation_, protected_;
  std::vector<ObjectList<>::Node> victims_;  // Admit's scratch
  FrequencySketch sketch_;
};

}  // namespace

std::unique_ptr<Policy> NewBelady(int64_t c) { return std::make_unique<Belady>(c); }
std::unique_ptr<Policy> NewLruK(int64_t c) { return std::make_unique<LruK>(c); }
std::unique_ptr<Policy> NewTinyLfu(int64_t c) { return std::make_unique<TinyLfu>(c); }
std::unique_ptr<Policy> NewWTinyLfu(int64_t c) { return std::make_unique<WTinyLfu>(c); }
std::unique_ptr<Expert> NewWTinyLfuExpert(int64_t c) { return std::make_unique<WTinyLfu>(c); }

}  // namespace seedance::cache::internal
