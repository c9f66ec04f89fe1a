// Hierarchical timing wheel; see include/seedance/engine/timer_wheel.h and docs/engine.md.
#include "seedance/engine/timer_wheel.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>

#include "seedance/base/check.h"
#include "seedance/engine/timer_clock.h"

namespace seedance::engine {

TimerClock* RealTimerClock() {
  struct Real final : TimerClock {
    int64_t NowNs() const override { return SteadyNowNs(); }
  };
  static Real* const clock = new Real();
  return clock;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
constexpr uint32_t kNone = TimerHandle::kNone;
constexpr int kBits = 6;  // 64 buckets per level
constexpr uint64_t kMask = 63;
constexpr size_t kPrefetch = 8;  // nodes ahead to prefetch while walking a bucket
enum : uint8_t { kFree = 0, kPending = 1, kFiring = 2 };

// The tick length, once the options are known to be valid (the other members divide by it).
int64_t CheckedTick(const TimerWheelOptions& options) {
  SEEDANCE_CHECK(options.tick_ns > 0 && options.levels >= 1 && options.levels <= 10)
      << "TimerWheel needs tick_ns > 0 and 1 <= levels <= 10, got tick_ns " << options.tick_ns
      << ", levels " << options.levels;
  return options.tick_ns;
}

// Failure reports of the hot-path checks, out of line and cold, so that inline each check is a
// compare and a branch. Each reports through SEEDANCE_CHECK: what broke, the values, abort.
[[noreturn, gnu::cold, gnu::noinline]] void DieFreeWithNonePending(uint32_t index) {
  const bool a_timer_is_pending = false;
  SEEDANCE_CHECK(a_timer_is_pending) << "timer " << index << " freed while no timer is pending";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieMisplaced(uint32_t index, uint32_t bucket,
                                                         uint32_t pos) {
  const bool timer_is_where_it_says = false;
  SEEDANCE_CHECK(timer_is_where_it_says)
      << "pending timer " << index << " is not where it says it is (bucket " << bucket
      << ", position " << pos << ")";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieBehind(uint32_t index, uint64_t expiry_tick,
                                                      uint64_t cur_tick) {
  const bool expiry_tick_not_behind_the_wheel = false;
  SEEDANCE_CHECK(expiry_tick_not_behind_the_wheel)
      << "timer " << index << " due at tick " << expiry_tick << " inserted behind the wheel (tick "
      << cur_tick << "): it would never fire";
}

[[noreturn, gnu::cold, gnu::noinline]] void DieEarly(uint32_t index, int64_t deadline_ns,
                                                     int64_t now_ns, uint32_t bucket,
                                                     uint64_t cur_tick) {
  const bool deadline_reached = false;
  SEEDANCE_CHECK(deadline_reached)
      << "timer " << index << " due at " << deadline_ns << " ns fires early, at " << now_ns
      << " ns (bucket " << bucket << ", tick " << cur_tick << ")";
}
}  // namespace

struct TimerWheel::Node {
  int64_t deadline_ns = 0;
  int64_t period_ns = 0;  // 0: one-shot
  uint64_t expiry_tick = 0;
  uint64_t seq = 0;
  uint32_t pos = 0;       // index in its bucket's array
  uint32_t next = kNone;  // the free-list link
  uint32_t generation = 1;
  uint32_t bucket = kNone;
  uint8_t state = kFree;
  TimerCallback cb;
};

struct TimerWheel::FireKey {
  int64_t deadline_ns;
  uint64_t seq;
  uint32_t index;
  uint32_t generation;
};

// Nodes in fixed-size chunks: indices stay valid and nodes never move while the slab grows (a
// callback may schedule while its own node is being fired).
struct TimerWheel::Slab {
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunk = 1u << kChunkBits;
  std::vector<std::unique_ptr<Node[]>> chunks;
  uint32_t count = 0;
  uint32_t free_head = kNone;
};

TimerWheel::TimerWheel(const TimerWheelOptions& options)
    : tick_ns_(CheckedTick(options)),
      levels_(options.levels),
      cur_tick_(static_cast<uint64_t>(std::max<int64_t>(options.start_ns, 0) / tick_ns_)),
      now_ns_(std::max<int64_t>(options.start_ns, 0)),
      buckets_(static_cast<size_t>(options.levels) * 64 + 2),
      pending_(static_cast<size_t>(options.levels), 0),
      slab_(std::make_unique<Slab>()) {
  while (static_cast<size_t>(slab_->chunks.size()) * Slab::kChunk < options.reserve) {
    slab_->chunks.push_back(std::make_unique<Node[]>(Slab::kChunk));
  }
}

TimerWheel::~TimerWheel() = default;

inline TimerWheel::Node& TimerWheel::At(uint32_t index) const {
  return slab_->chunks[index >> Slab::kChunkBits][index & (Slab::kChunk - 1)];
}

inline uint32_t TimerWheel::Allocate() {
  Slab& s = *slab_;
  if (s.free_head != kNone) {
    const uint32_t index = s.free_head;
    s.free_head = At(index).next;
    return index;
  }
  if ((s.count >> Slab::kChunkBits) >= s.chunks.size()) {
    s.chunks.push_back(std::make_unique<Node[]>(Slab::kChunk));
  }
  return s.count++;
}

inline void TimerWheel::Free(uint32_t index) {
  if (size_ == 0) [[unlikely]] {
    DieFreeWithNonePending(index);
  }
  Node& n = At(index);
  n.cb = nullptr;
  n.state = kFree;
  n.bucket = kNone;
  ++n.generation;
  n.next = slab_->free_head;
  slab_->free_head = index;
  --size_;
}

inline uint64_t TimerWheel::TickOf(int64_t deadline_ns) const {
  if (deadline_ns <= 0) return 0;
  if (deadline_ns > std::numeric_limits<int64_t>::max() - tick_ns_) {
    return static_cast<uint64_t>(deadline_ns / tick_ns_) + 1;
  }
  return static_cast<uint64_t>((deadline_ns + tick_ns_ - 1) / tick_ns_);
}

inline void TimerWheel::Link(uint32_t index, uint32_t bucket) {
  Node& n = At(index);
  std::vector<uint32_t>& b = buckets_[bucket];
  n.bucket = bucket;
  n.pos = static_cast<uint32_t>(b.size());
  b.push_back(index);
  const uint32_t wheel_buckets = static_cast<uint32_t>(levels_) * 64;
  if (bucket < wheel_buckets) pending_[bucket >> kBits] |= uint64_t{1} << (bucket & kMask);
}

inline void TimerWheel::Unlink(uint32_t index) {
  Node& n = At(index);
  const uint32_t bucket = n.bucket;
  if (bucket >= buckets_.size() || n.pos >= buckets_[bucket].size() ||
      buckets_[bucket][n.pos] != index) [[unlikely]] {
    DieMisplaced(index, bucket, n.pos);
  }
  std::vector<uint32_t>& b = buckets_[bucket];
  const uint32_t last = b.back();  // swap-remove: O(1)
  b[n.pos] = last;
  At(last).pos = n.pos;
  b.pop_back();
  n.bucket = kNone;
  const uint32_t wheel_buckets = static_cast<uint32_t>(levels_) * 64;
  if (b.empty() && bucket < wheel_buckets) {
    pending_[bucket >> kBits] &= ~(uint64_t{1} << (bucket & kMask));
  }
}

// Places a node whose expiry tick is >= cur_tick_ (== only while cur_tick_ is being processed:
// it lands in the level-0 bucket about to fire). Level L is the highest 6-bit group in which the
// expiry tick differs from the current tick.
inline void TimerWheel::Insert(uint32_t index, uint64_t expiry_tick) {
  if (expiry_tick < cur_tick_) [[unlikely]] {
    DieBehind(index, expiry_tick, cur_tick_);
  }
  At(index).expiry_tick = expiry_tick;
  const uint64_t x = expiry_tick ^ cur_tick_;
  const int level = x < 64 ? 0 : (63 - std::countl_zero(x)) / kBits;
  if (level >= levels_) {
    Link(index, static_cast<uint32_t>(levels_) * 64 + 1);  // overflow
    return;
  }
  const uint32_t slot = static_cast<uint32_t>((expiry_tick >> (kBits * level)) & kMask);
  Link(index, static_cast<uint32_t>(level) * 64 + slot);
}

TimerHandle TimerWheel::Schedule(int64_t deadline_ns, TimerCallback cb) {
  return ScheduleImpl(deadline_ns, 0, cb);
}

TimerHandle TimerWheel::SchedulePeriodic(int64_t first_deadline_ns, int64_t period_ns,
                                         TimerCallback cb) {
  SEEDANCE_CHECK(period_ns > 0) << "periodic timer with period " << period_ns << " ns";
  return ScheduleImpl(first_deadline_ns, period_ns, cb);
}

inline TimerHandle TimerWheel::ScheduleImpl(int64_t first_deadline_ns, int64_t period_ns,
                                            TimerCallback& cb) {
  const uint32_t index = Allocate();
  Node& n = At(index);
  n.deadline_ns = first_deadline_ns;
  n.period_ns = period_ns;
  n.seq = seq_++;
  n.cb.swap(cb);  // the node's callback is empty: a swap is the cheapest move
  n.state = kPending;
  ++size_;
  const uint64_t tick = TickOf(first_deadline_ns);
  if (tick <= cur_tick_) {
    n.expiry_tick = tick;
    Link(index, static_cast<uint32_t>(levels_) * 64);  // due: fires on the next Advance()
  } else {
    Insert(index, tick);
  }
  return TimerHandle{index, n.generation};
}

bool TimerWheel::IsPending(TimerHandle handle) const {
  if (handle.index >= slab_->count) return false;
  const Node& n = At(handle.index);
  return n.generation == handle.generation && n.state != kFree;
}

bool TimerWheel::Cancel(TimerHandle handle) {
  if (handle.index >= slab_->count) return false;
  Node& n = At(handle.index);
  if (n.generation != handle.generation || n.state == kFree) return false;
  if (n.state == kPending) Unlink(handle.index);
  Free(handle.index);
  return true;
}

void TimerWheel::CascadeBucket(uint32_t bucket) {
  std::vector<uint32_t>& ids = scratch_ids_;
  ids.clear();
  ids.swap(buckets_[bucket]);
  const uint32_t wheel_buckets = static_cast<uint32_t>(levels_) * 64;
  if (bucket < wheel_buckets) pending_[bucket >> kBits] &= ~(uint64_t{1} << (bucket & kMask));
  const size_t count = ids.size();
  for (size_t i = 0; i < count; ++i) {
    // The array lets the loads of the next nodes overlap (a linked list would serialise them).
    if (i + kPrefetch < count) __builtin_prefetch(&At(ids[i + kPrefetch]), 1);
    const uint32_t index = ids[i];
    Insert(index, At(index).expiry_tick);
  }
  ids.clear();
}

size_t TimerWheel::FireList(uint32_t bucket, int64_t up_to_ns) {
  using Key = FireKey;
  // Detach the due nodes (the whole bucket unless up_to_ns says otherwise); callbacks may then
  // schedule and cancel freely.
  std::vector<Key>& keys = fire_scratch_;
  keys.clear();
  std::vector<uint32_t>& ids = scratch_ids_;
  ids.clear();
  ids.swap(buckets_[bucket]);
  const size_t count = ids.size();
  keys.reserve(count);
  const bool whole = up_to_ns == std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetch < count) __builtin_prefetch(&At(ids[i + kPrefetch]), 1);
    const uint32_t index = ids[i];
    Node& n = At(index);
    if (whole || n.deadline_ns <= up_to_ns) {
      if (n.deadline_ns > now_ns_) [[unlikely]] {
        DieEarly(index, n.deadline_ns, now_ns_, bucket, cur_tick_);
      }
      keys.push_back(Key{n.deadline_ns, n.seq, index, n.generation});
      n.state = kFiring;
      n.bucket = kNone;
    } else {
      Link(index, bucket);  // not yet due (partial tick): stays
    }
  }
  ids.clear();
  const uint32_t wheel_buckets = static_cast<uint32_t>(levels_) * 64;
  if (buckets_[bucket].empty() && bucket < wheel_buckets) {
    pending_[bucket >> kBits] &= ~(uint64_t{1} << (bucket & kMask));
  }
  if (keys.size() > 1) {
    std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      return a.deadline_ns != b.deadline_ns ? a.deadline_ns < b.deadline_ns : a.seq < b.seq;
    });
  }
  size_t fired = 0;
  for (const Key& k : keys) {
    Node& n = At(k.index);
    if (n.generation != k.generation || n.state != kFiring) continue;  // cancelled meanwhile
    ++fired;
    if (n.period_ns == 0) {
      TimerCallback cb = std::move(n.cb);
      Free(k.index);
      cb();
      continue;
    }
    TimerCallback cb = std::move(n.cb);
    cb();
    Node& again = At(k.index);
    if (again.generation != k.generation || again.state != kFiring) continue;  // cancelled itself
    again.cb = std::move(cb);
    again.state = kPending;
    again.deadline_ns += again.period_ns;
    again.seq = seq_++;
    Insert(k.index, std::max(TickOf(again.deadline_ns), cur_tick_ + 1));
  }
  return fired;
}

// The next tick > cur_tick_ at which a bucket must be fired (level 0) or cascaded (levels >= 1,
// the first tick of the bucket's range). A lower level's candidate always comes before a higher
// one's, so the first non-empty level decides.
uint64_t TimerWheel::NextInterestingTick() const {
  for (int level = 0; level < levels_; ++level) {
    const int shift = kBits * level;
    const uint64_t pos = (cur_tick_ >> shift) & kMask;
    const uint64_t bits = pos == kMask ? 0 : pending_[level] & (~uint64_t{0} << (pos + 1));
    if (bits != 0) {
      const uint64_t block = (cur_tick_ >> (shift + kBits)) << (shift + kBits);
      return block | (static_cast<uint64_t>(std::countr_zero(bits)) << shift);
    }
  }
  if (!buckets_[static_cast<size_t>(levels_) * 64 + 1].empty()) {
    const int shift = kBits * levels_;
    return ((cur_tick_ >> shift) + 1) << shift;
  }
  return std::numeric_limits<uint64_t>::max();
}

std::optional<int64_t> TimerWheel::NextWorkNs() const {
  if (size_ == 0) return std::nullopt;
  if (!buckets_[static_cast<size_t>(levels_) * 64].empty()) return now_ns_;
  const uint64_t tick = NextInterestingTick();
  if (tick == std::numeric_limits<uint64_t>::max()) return std::nullopt;  // only firing timers
  int64_t next_ns = std::numeric_limits<int64_t>::max();
  if (tick <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / tick_ns_)) {
    next_ns = static_cast<int64_t>(tick) * tick_ns_;
  }
  // Advance() fires a tick's timers at their exact deadlines once time is inside that tick (the
  // partial tick), so the exact earliest deadline of the bucket holding them is the bound.
  const uint32_t bucket = BucketOfTick(tick);
  if (bucket != kNone) {
    int64_t earliest = std::numeric_limits<int64_t>::max();
    for (const uint32_t i : buckets_[bucket]) earliest = std::min(earliest, At(i).deadline_ns);
    next_ns = std::min(next_ns, std::max(earliest, now_ns_));
  }
  return next_ns;
}

// The non-empty bucket holding the timers of tick `t` (> cur_tick_): the level-0 bucket when t is
// in the current 64-tick block, or, when t starts a 64-tick block inside the current 4096-tick
// block, that block's level-1 bucket (its 64 ticks; only timers already past their deadline in
// it can belong to tick t). kNone otherwise: at a 4096-tick boundary the timers are in level 2
// or above and wait for the tick's end.
uint32_t TimerWheel::BucketOfTick(uint64_t t) const {
  uint32_t bucket = kNone;
  if ((t & kMask) != 0) {
    if ((t >> kBits) == (cur_tick_ >> kBits)) bucket = static_cast<uint32_t>(t & kMask);
  } else if (levels_ >= 2 && (t & 4095) != 0 && (t >> 12) == (cur_tick_ >> 12)) {
    bucket = 64 + static_cast<uint32_t>((t >> kBits) & kMask);
  }
  if (bucket == kNone || (pending_[bucket >> kBits] & (uint64_t{1} << (bucket & kMask))) == 0) {
    return kNone;
  }
  return bucket;
}

void TimerWheel::CheckInvariants() const {
  SEEDANCE_CHECK(!in_advance_) << "CheckInvariants() called from inside a timer callback";
  const uint32_t wheel_buckets = static_cast<uint32_t>(levels_) * 64;
  const uint32_t due = wheel_buckets;
  const uint32_t overflow = wheel_buckets + 1;
  size_t pending = 0;
  for (uint32_t bucket = 0; bucket < buckets_.size(); ++bucket) {
    const std::vector<uint32_t>& ids = buckets_[bucket];
    if (bucket < wheel_buckets) {
      const bool bit = ((pending_[bucket >> kBits] >> (bucket & kMask)) & 1) != 0;
      SEEDANCE_CHECK(bit == !ids.empty()) << "bucket " << bucket << " holds " << ids.size()
                                          << " timers but its pending bit is " << bit;
    }
    for (uint32_t pos = 0; pos < ids.size(); ++pos) {
      const uint32_t index = ids[pos];
      SEEDANCE_CHECK(index < slab_->count)
          << "bucket " << bucket << " holds timer " << index << ", beyond the slab";
      const Node& n = At(index);
      SEEDANCE_CHECK(n.state == kPending && n.bucket == bucket && n.pos == pos)
          << "timer " << index << " in bucket " << bucket << " at " << pos << " says state "
          << int{n.state} << ", bucket " << n.bucket << ", position " << n.pos;
      ++pending;
      if (bucket == due) continue;  // already due: fires on the next Advance()
      SEEDANCE_CHECK(n.expiry_tick > cur_tick_)
          << "timer " << index << " expired at tick " << n.expiry_tick << " but is still in bucket "
          << bucket << " at tick " << cur_tick_ << ": it would never fire";
      const int level = bucket == overflow ? levels_ : static_cast<int>(bucket >> kBits);
      const int shift = kBits * level;
      // Its level's group of the expiry tick is still ahead, the groups above it are now's.
      SEEDANCE_CHECK((n.expiry_tick >> shift) > (cur_tick_ >> shift) &&
                     (bucket == overflow ||
                      (n.expiry_tick >> (shift + kBits)) == (cur_tick_ >> (shift + kBits))))
          << "timer " << index << " due at tick " << n.expiry_tick << " is at level " << level
          << " at tick " << cur_tick_ << ": it would not be cascaded in time";
      if (bucket != overflow) {
        SEEDANCE_CHECK(((n.expiry_tick >> shift) & kMask) == (bucket & kMask))
            << "timer " << index << " due at tick " << n.expiry_tick << " sits in level " << level
            << " slot " << (bucket & kMask) << ", not slot " << ((n.expiry_tick >> shift) & kMask);
      }
    }
  }
  SEEDANCE_CHECK(pending == size_) << pending << " timers in buckets, size() says " << size_;
  size_t free = 0;
  for (uint32_t i = slab_->free_head; i != kNone && free <= slab_->count; i = At(i).next) {
    SEEDANCE_CHECK(i < slab_->count && At(i).state == kFree)
        << "timer slot " << i << " on the free list is not free";
    ++free;
  }
  SEEDANCE_CHECK(free + size_ == slab_->count)
      << free << " free + " << size_ << " pending timer slots, " << slab_->count << " in use";
}

void TimerWheel::CorruptForTesting(TimerHandle handle, TestCorruption field, int64_t value) {
  SEEDANCE_CHECK(IsPending(handle)) << "CorruptForTesting needs a pending timer";
  Node& n = At(handle.index);
  switch (field) {
    case TestCorruption::kDeadlineNs:
      n.deadline_ns = value;
      return;
    case TestCorruption::kExpiryTick:
      n.expiry_tick = static_cast<uint64_t>(value);
      return;
    case TestCorruption::kPosition:
      n.pos = static_cast<uint32_t>(value);
      return;
    case TestCorruption::kPendingBit:
      if (n.bucket < static_cast<uint32_t>(levels_) * 64) {
        pending_[n.bucket >> kBits] &= ~(uint64_t{1} << (n.bucket & kMask));
      }
      return;
    case TestCorruption::kSize:
      size_ += static_cast<size_t>(value);
      return;
    case TestCorruption::kBucketEntry:
      buckets_[n.bucket][n.pos] = static_cast<uint32_t>(value);
      return;
    case TestCorruption::kFreeListHead:
      slab_->free_head = static_cast<uint32_t>(value);
      return;
  }
}

size_t TimerWheel::Advance(int64_t now_ns) {
  if (now_ns < now_ns_ || in_advance_) return 0;
  in_advance_ = true;
  now_ns_ = now_ns;
  const uint64_t target = static_cast<uint64_t>(now_ns / tick_ns_);
  const uint32_t due = static_cast<uint32_t>(levels_) * 64;
  size_t fired = 0;
  if (!buckets_[due].empty()) fired += FireList(due);
  while (cur_tick_ < target) {
    const uint64_t next = NextInterestingTick();
    if (next > target) {
      cur_tick_ = target;
      break;
    }
    cur_tick_ = next;
    // Cascade from the top so timers moving down several levels arrive in time.
    if (!buckets_[due + 1].empty() && (cur_tick_ & ((uint64_t{1} << (kBits * levels_)) - 1)) == 0) {
      CascadeBucket(due + 1);
    }
    for (int level = levels_ - 1; level >= 1; --level) {
      const int shift = kBits * level;
      if ((cur_tick_ & ((uint64_t{1} << shift) - 1)) != 0) continue;
      const uint32_t slot = static_cast<uint32_t>((cur_tick_ >> shift) & kMask);
      if (pending_[level] & (uint64_t{1} << slot)) CascadeBucket(level * 64 + slot);
    }
    const uint32_t slot0 = static_cast<uint32_t>(cur_tick_ & kMask);
    if (pending_[0] & (uint64_t{1} << slot0)) fired += FireList(slot0);
  }
  // The partial tick: timers of tick cur_tick_ + 1 already past their exact deadline fire now
  // rather than at the tick's end.
  const uint32_t partial = BucketOfTick(cur_tick_ + 1);
  if (partial != kNone) fired += FireList(partial, now_ns);
  in_advance_ = false;
  return fired;
}

}  // namespace seedance::engine
