// The queue-based policies: LRU, FIFO, CLOCK, SIEVE, S3-FIFO, SLRU and 2Q. Each follows its
// libCacheSim eviction module's semantics (libCacheSim/cache/eviction/*.c) so that byte-sized
// runs give libCacheSim's miss counts exactly.
#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "object_list.h"
#include "policy_base.h"

namespace seedance::cache::internal {
namespace {

// Least recently used: a hit moves the object to the front; the back is evicted.
class Lru final : public Expert {
 public:
  explicit Lru(int64_t capacity) : Expert("lru", capacity) {}
  int64_t occupied() const override { return q_.bytes(); }
  bool Contains(uint64_t id) override { return q_.Find(id) != nullptr; }
  void Drop(uint64_t id) override { q_.Remove(id); }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<Lru>(capacity_);
    CopyList(q_, &c->q_);
    return c;
  }
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(q_, &out);
    return out;
  }
  // PolicyBase::Access with its steps inlined (no virtual call per step: LRU is the replay-speed
  // yardstick, issue 40). A request of size < 1 goes to PolicyBase::Access, whose check fails.
  bool Access(const Request& r) override {
    if (r.size < 1) return PolicyBase::Access(r);
    if (q_.Touch(r.id) != nullptr) return true;
    if (r.size > capacity_) return false;
    while (q_.bytes() + r.size > capacity_) q_.PopBack();
    q_.PushFront(r.id, r.size);
    return false;
  }

 private:
  bool Find(const Request& r) override { return q_.Touch(r.id) != nullptr; }
  void Evict(const Request&) override { q_.PopBack(); }
  void Insert(const Request& r) override { q_.PushFront(r.id, r.size); }
  ObjectList<> q_;
};

// First in, first out: a hit changes nothing.
class Fifo final : public PolicyBase {
 public:
  explicit Fifo(int64_t capacity) : PolicyBase("fifo", capacity) {}
  int64_t occupied() const override { return q_.bytes(); }

 private:
  bool Find(const Request& r) override { return q_.Find(r.id) != nullptr; }
  void Evict(const Request&) override { q_.PopBack(); }
  void Insert(const Request& r) override { q_.PushFront(r.id, r.size); }
  ObjectList<> q_;
};

// CLOCK with a 1-bit reference counter (Corbato 1968; libCacheSim's Clock, n-bit-counter=1):
// a hit sets the bit; the victim search clears set bits, reinserting those objects at the front.
class Clock final : public PolicyBase {
 public:
  explicit Clock(int64_t capacity) : PolicyBase("clock", capacity) {}
  int64_t occupied() const override { return q_.bytes(); }

 private:
  bool Find(const Request& r) override {
    auto* n = q_.Find(r.id);
    if (n == nullptr) return false;
    n->x = 1;
    return true;
  }
  void Evict(const Request&) override {
    while (q_.Back().x >= 1) {
      q_.Back().x -= 1;
      q_.MoveToFront(std::prev(q_.end()));
    }
    q_.PopBack();
  }
  void Insert(const Request& r) override { q_.PushFront(r.id, r.size, 0); }
  ObjectList<int> q_;
};

// SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI '24): a FIFO queue with a visited bit
// and a hand that moves from the back towards the front, clearing bits, and evicts the first
// unvisited object; the hand stays where it stopped.
class Sieve final : public Expert {
 public:
  explicit Sieve(int64_t capacity) : Expert("sieve", capacity) {}
  int64_t occupied() const override { return q_.bytes(); }
  bool Contains(uint64_t id) override { return q_.Find(id) != nullptr; }
  // The hand, if it points at the dropped object, moves on as after an eviction.
  void Drop(uint64_t id) override {
    if (q_.Find(id) == nullptr) return;
    Iter it = q_.IterOf(id);
    if (hand_valid_ && hand_ == it) {
      hand_ = Prev(it);
      hand_valid_ = hand_ != q_.end();
    }
    q_.Erase(it);
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<Sieve>(capacity_);
    CopyList(q_, &c->q_);
    c->hand_valid_ = hand_valid_;
    if (hand_valid_) c->hand_ = std::next(c->q_.begin(), std::distance(q_.begin(), hand_));
    return c;
  }
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(q_, &out);
    return out;
  }

 private:
  using Iter = ObjectList<int>::Iter;
  bool Find(const Request& r) override {
    auto* n = q_.Find(r.id);
    if (n == nullptr) return false;
    n->x = 1;
    return true;
  }
  // The node nearer the front than `it`, or end() past the front.
  Iter Prev(Iter it) { return it == q_.begin() ? q_.end() : std::prev(it); }
  void Evict(const Request&) override {
    Iter tail = std::prev(q_.end());
    Iter it = hand_valid_ ? hand_ : tail;
    while (it->x > 0) {
      it->x -= 1;
      it = Prev(it);
      if (it == q_.end()) it = std::prev(q_.end());
    }
    hand_ = Prev(it);
    hand_valid_ = hand_ != q_.end();
    q_.Erase(it);
  }
  void Insert(const Request& r) override { q_.PushFront(r.id, r.size, 0); }
  ObjectList<int> q_;
  Iter hand_{};
  bool hand_valid_ = false;
};

// S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP '23), with
// libCacheSim's defaults: a small FIFO of 10% of the cache, a ghost FIFO of 90% (of evicted
// objects' ids and sizes) and a main FIFO of the rest; an object leaves the small queue for main
// after 2 hits there, a ghost hit inserts into main; main reinserts objects hit since their
// insertion with their counter (capped at 3) less one.
class S3Fifo final : public Expert {
 public:
  static constexpr double kSmallRatio = 0.10;
  static constexpr double kGhostRatio = 0.90;
  static constexpr int64_t kMoveToMainThreshold = 2;
  static constexpr int64_t kMaxFreq = 3;

  explicit S3Fifo(int64_t capacity)
      : Expert("s3fifo", capacity),
        small_cap_(static_cast<int64_t>(static_cast<double>(capacity) * kSmallRatio)),
        main_cap_(capacity - small_cap_),
        ghost_cap_(static_cast<int64_t>(static_cast<double>(capacity) * kGhostRatio)) {}
  int64_t occupied() const override { return small_.bytes() + main_.bytes(); }
  bool Contains(uint64_t id) override { return Lookup(id).second != nullptr; }
  // From the small queue an object goes to the ghost, as EvictSmall sends it.
  void Drop(uint64_t id) override {
    auto [list, node] = Lookup(id);
    if (node == nullptr) return;
    const int64_t size = node->size;
    list->Remove(id);
    if (list == &small_) ToGhost(id, size);
  }
  std::unique_ptr<Expert> Clone() override {
    auto c = std::make_unique<S3Fifo>(capacity_);
    CopyList(small_, &c->small_);
    CopyList(main_, &c->main_);
    CopyList(ghost_, &c->ghost_);
    return c;
  }
  std::vector<Resident> Residents() override {
    std::vector<Resident> out;
    AppendBackToFront(small_, &out);
    AppendBackToFront(main_, &out);
    return out;
  }

 private:
  bool Find(const Request& r) override {
    hit_on_ghost_ = false;
    if (auto* n = small_.Find(r.id)) {
      n->x += 1;
      return true;
    }
    if (ghost_cap_ > 0 && ghost_.Remove(r.id)) hit_on_ghost_ = true;
    if (auto* n = main_.Find(r.id)) {
      n->x += 1;
      return true;
    }
    return false;
  }
  bool CanInsert(const Request& r) override { return r.size <= small_cap_; }
  void Insert(const Request& r) override {
    if (hit_on_ghost_) {
      hit_on_ghost_ = false;
      main_.PushFront(r.id, r.size, 0);
    } else if (r.size < small_cap_) {
      small_.PushFront(r.id, r.size, 0);
    }
  }
  void Evict(const Request&) override {
    if (main_.bytes() > main_cap_ || small_.bytes() == 0) {
      EvictMain();
    } else {
      EvictSmall();
    }
  }
  void EvictSmall() {
    bool evicted = false;
    while (!evicted && small_.bytes() > 0) {
      auto victim = small_.Back();
      if (victim.x >= kMoveToMainThreshold) {
        main_.PushFront(victim.id, victim.size, 0);
      } else {
        ToGhost(victim.id, victim.size);
        evicted = true;
      }
      small_.PopBack();
    }
  }
  void EvictMain() {
    bool evicted = false;
    while (!evicted && main_.bytes() > 0) {
      auto victim = main_.Back();
      main_.PopBack();
      if (victim.x >= 1) {
        main_.PushFront(victim.id, victim.size, std::min(victim.x, kMaxFreq) - 1);
      } else {
        evicted = true;
      }
    }
  }
  // The ghost is a FIFO cache of its own (libCacheSim inserts through its get()).
  void ToGhost(uint64_t id, int64_t size) {
    if (ghost_cap_ <= 0 || ghost_.Find(id) != nullptr || size > ghost_cap_) return;
    while (ghost_.bytes() + size > ghost_cap_) ghost_.PopBack();
    ghost_.PushFront(id, size);
  }

  // The queue holding `id` and its node, or nullptrs. Out of line, one call site of
  // ObjectList<int64_t>::Find: with more, GCC stopped inlining it into Find, the replay path.
  [[gnu::noinline]] std::pair<ObjectList<int64_t>*, ObjectList<int64_t>::Node*> Lookup(
      uint64_t id) {
    for (ObjectList<int64_t>* list : {&small_, &main_}) {
      if (auto* n = list->Find(id)) return {list, n};
    }
    return {nullptr, nullptr};
  }

  const int64_t small_cap_;
  const int64_t main_cap_;
  const int64_t ghost_cap_;
  ObjectList<int64_t> small_;
  ObjectList<int64_t> main_;
  ObjectList<> ghost_;
  bool hit_on_ghost_ = false;
};

// Segmented LRU as libCacheSim's SLRU with its test's n-seg=5: five LRU segments of a fifth of
// the cache each; a miss enters the lowest segment with room, a hit moves the object up one
// segment (or to the front of the top one), an overfull segment demotes its back to the front of
// the one below, and the lowest non-empty segment's back is evicted.
class Slru final : public PolicyBase {
 public:
  static constexpr int kSegments = 5;
  explicit Slru(int64_t capacity) : PolicyBase("slru", capacity), seg_cap_(capacity / kSegments) {}
  int64_t occupied() const override {
    int64_t sum = 0;
    for (const auto& s : segs_) sum += s.bytes();
    return sum;
  }

 private:
  int SegmentOf(uint64_t id) {
    for (int i = 0; i < kSegments; ++i) {
      if (segs_[i].Find(id) != nullptr) return i;
    }
    return -1;
  }
  bool Find(const Request& r) override {
    int seg = SegmentOf(r.id);
    if (seg < 0) return false;
    if (seg == kSegments - 1) {
      segs_[seg].Touch(r.id);
      return true;
    }
    segs_[seg].Remove(r.id);
    segs_[seg + 1].PushFront(r.id, r.size);
    for (seg = seg + 1; seg >= 0 && segs_[seg].bytes() > seg_cap_; seg = SegmentOf(r.id)) {
      Cool(seg);
    }
    return true;
  }
  bool CanInsert(const Request& r) override { return r.size <= capacity_ && r.size <= seg_cap_; }
  void Insert(const Request& r) override {
    for (auto& s : segs_) {
      if (s.bytes() + r.size <= seg_cap_) {
        s.PushFront(r.id, r.size);
        return;
      }
    }
    while (occupied() + r.size > capacity_) Evict(r);
    segs_[0].PushFront(r.id, r.size);
  }
  void Evict(const Request&) override {
    for (auto& s : segs_) {
      if (s.bytes() > 0) {
        s.PopBack();
        return;
      }
    }
  }
  void Cool(int seg) {
    if (seg == 0) {
      Evict(Request{});
      return;
    }
    auto victim = segs_[seg].Back();
    segs_[seg].PopBack();
    segs_[seg - 1].PushFront(victim.id, victim.size);
    while (segs_[seg - 1].bytes() > seg_cap_) Cool(seg - 1);
  }

  const int64_t seg_cap_;
  std::array<ObjectList<>, kSegments> segs_;
};

// 2Q, the full version (Johnson & Shasha, VLDB '94, section 2.2): a FIFO A1in for first
// references (Kin = 25% of the cache), a ghost A1out of ids evicted from it (Kout = 50%), and an
// LRU Am for objects referenced again after leaving A1in.
class TwoQ final : public PolicyBase {
 public:
  static constexpr double kInRatio = 0.25;
  static constexpr double kOutRatio = 0.50;
  explicit TwoQ(int64_t capacity)
      : PolicyBase("2q", capacity),
        in_cap_(std::max<int64_t>(1, static_cast<int64_t>(capacity * kInRatio))),
        out_cap_(std::max<int64_t>(1, static_cast<int64_t>(capacity * kOutRatio))) {}
  int64_t occupied() const override { return a1in_.bytes() + am_.bytes(); }

 private:
  bool Find(const Request& r) override {
    if (am_.Touch(r.id) != nullptr) return true;
    return a1in_.Find(r.id) != nullptr;
  }
  void Insert(const Request& r) override {
    if (a1out_.Remove(r.id)) {
      am_.PushFront(r.id, r.size);
    } else {
      a1in_.PushFront(r.id, r.size);
    }
  }
  void Evict(const Request&) override {
    if (a1in_.bytes() > in_cap_ || (am_.empty() && !a1in_.empty())) {
      auto victim = a1in_.Back();
      a1in_.PopBack();
      while (!a1out_.empty() && a1out_.bytes() + victim.size > out_cap_) a1out_.PopBack();
      if (victim.size <= out_cap_) a1out_.PushFront(victim.id, victim.size);
    } else {
      am_.PopBack();
    }
  }
  const int64_t in_cap_;
  const int64_t out_cap_;
  ObjectList<> a1in_;
  ObjectList<> a1out_;
  ObjectList<> am_;
};

}  // namespace

std::unique_ptr<Expert> NewLruExpert(int64_t c) { return std::make_unique<Lru>(c); }
std::unique_ptr<Expert> NewSieveExpert(int64_t c) { return std::make_unique<Sieve>(c); }
std::unique_ptr<Expert> NewS3FifoExpert(int64_t c) { return std::make_unique<S3Fifo>(c); }
std::unique_ptr<Policy> NewLru(int64_t c) { return std::make_unique<Lru>(c); }
std::unique_ptr<Policy> NewFifo(int64_t c) { return std::make_unique<Fifo>(c); }
std::unique_ptr<Policy> NewClock(int64_t c) { return std::make_unique<Clock>(c); }
std::unique_ptr<Policy> NewSieve(int64_t c) { return std::make_unique<Sieve>(c); }
std::unique_ptr<Policy> NewS3Fifo(int64_t c) { return std::make_unique<S3Fifo>(c); }
std::unique_ptr<Policy> NewSlru(int64_t c) { return std::make_unique<Slru>(c); }
std::unique_ptr<Policy> NewTwoQ(int64_t c) { return std::make_unique<TwoQ>(c); }

}  // namespace seedance::cache::internal
