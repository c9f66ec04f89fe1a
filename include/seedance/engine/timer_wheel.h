// TimerWheel: a hierarchical timing wheel for millions of pending timers (timeouts, retries,
// leases, periodic jobs) with O(1) schedule and cancel. Design and measurements: docs/engine.md.
//
// Time is divided into ticks of `tick_ns`. A timer due at `deadline_ns` belongs to tick
// ceil(deadline_ns / tick_ns); Advance(now_ns) processes every tick up to floor(now_ns / tick_ns)
// and, in the partly elapsed next tick, fires the timers whose exact deadline has passed (except
// when that tick starts a 4096-tick block: those wait for the tick's end). So a timer never fires
// before its deadline, fires at the first Advance() at or after it (1 in 4096 ticks aside), and
// at worst one tick (plus the caller's own delay in calling Advance) after it. Within one Advance
// call timers fire in deadline order (ties: in the order they were scheduled), including several
// due within the same tick.
//
// Layout (after the Linux timer wheel and Varghese & Lauck's scheme 6): `levels` levels of 64
// buckets; level L holds timers 64^L..64^(L+1) ticks away and cascades into lower levels when the
// wheel reaches them. A 64-bit pending bitmap per level finds the next non-empty bucket with one
// count-trailing-zeros, so advancing over idle time costs nothing per empty tick. Timers live in a
// slab of nodes reused through a free list (no allocation per timer once the slab and the bucket
// arrays have grown, as long as the callback fits std::function's small buffer: a pointer or two
// captured). A bucket is an array of node indices and each node knows its position, so cancel is
// a swap-remove in O(1), and walking a bucket to cascade or fire it prefetches the nodes ahead
// (a linked list would serialise those cache misses).
//
// Handles carry a generation: once a timer has fired (one-shot) or been cancelled, its handle is
// stale and Cancel() on it is a no-op returning false, even after the slot is reused.
//
// Thread-safety: none; one thread owns a TimerWheel (see TimerService for the thread-safe front
// that batches requests from other threads). Callbacks run inside Advance() on that thread and
// may call Schedule() and Cancel() on the same wheel; a timer scheduled by a callback with a
// deadline already reached fires on the next Advance() call.
#ifndef SEEDANCE_ENGINE_TIMER_WHEEL_H_
#define SEEDANCE_ENGINE_TIMER_WHEEL_H_

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace seedance::engine {

using TimerCallback = std::function<void()>;

struct TimerHandle {
  static constexpr uint32_t kNone = 0xffffffffu;
  uint32_t index = kNone;
  uint32_t generation = 0;
  bool valid() const { return index != kNone; }
  friend bool operator==(const TimerHandle&, const TimerHandle&) = default;
};

struct TimerWheelOptions {
  int64_t tick_ns = 1'000'000;  // 1 ms
  int levels = 6;               // 64^6 ticks ahead before the overflow list (795 days at 1 ms)
  int64_t start_ns = 0;         // the wheel's "now" at construction
  size_t reserve = 0;           // timer slots to preallocate
};

class TimerWheel {
 public:
  // REQUIRES: tick_ns > 0, 1 <= levels <= 10.
  explicit TimerWheel(const TimerWheelOptions& options = {});
  ~TimerWheel();
  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  // Schedules `cb` to run once at or after `deadline_ns`. A deadline at or before now() fires on
  // the next Advance().
  TimerHandle Schedule(int64_t deadline_ns, TimerCallback cb);
  // Runs `cb` at first_deadline_ns, then every period_ns after the previous deadline (no drift).
  // A periodic timer that falls behind fires once per tick until it catches up. It stays pending
  // until cancelled. REQUIRES: period_ns > 0.
  TimerHandle SchedulePeriodic(int64_t first_deadline_ns, int64_t period_ns, TimerCallback cb);
  // Removes a pending timer in O(1). Returns false (and does nothing) if the handle is stale: the
  // timer already fired (one-shot), was cancelled, or never existed. A callback may cancel itself
  // (a periodic timer then stops) or any timer due later in the same Advance().
  bool Cancel(TimerHandle handle);
  bool IsPending(TimerHandle handle) const;

  // Fires, in deadline order, every timer whose tick is <= floor(now_ns / tick_ns). Returns the
  // number of callbacks run. A now_ns earlier than now() is ignored (time never goes back), and
  // so is a call from inside a callback.
  size_t Advance(int64_t now_ns);

  // A lower bound on the time at which Advance() next has work (a bucket to fire or cascade):
  // callers may sleep until then. nullopt when no timer is pending.
  std::optional<int64_t> NextWorkNs() const;

  // Audits the whole wheel in O(timers) and dies (SEEDANCE_CHECK) on the first broken invariant:
  // each bucket's pending bit says whether it holds timers; each pending timer knows its bucket
  // and position, sits in the slot of its expiry tick at a level that cascades it before that
  // tick, and is not expired (except in the due list); the counts of pending and free timers add
  // up. Not from inside a callback. The hot paths check their O(1) share of this in every build.
  void CheckInvariants() const;
  // Test-only, for the death tests of those checks: overwrites one internal field of the pending
  // timer `handle` (kPendingBit clears the bit of its bucket; kSize adds `value` to size();
  // kBucketEntry makes its entry in its bucket's array name timer `value`; kFreeListHead makes
  // the free list start at timer `value`, -1 for none).
  enum class TestCorruption {
    kDeadlineNs,
    kExpiryTick,
    kPosition,
    kPendingBit,
    kSize,
    kBucketEntry,
    kFreeListHead
  };
  void CorruptForTesting(TimerHandle handle, TestCorruption field, int64_t value);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t now() const { return now_ns_; }
  int64_t tick_ns() const { return tick_ns_; }

 private:
  struct Node;
  struct Slab;

  TimerHandle ScheduleImpl(int64_t first_deadline_ns, int64_t period_ns, TimerCallback& cb);
  Node& At(uint32_t index) const;
  uint32_t Allocate();
  void Free(uint32_t index);
  uint64_t TickOf(int64_t deadline_ns) const;
  void Insert(uint32_t index, uint64_t expiry_tick);
  void Link(uint32_t index, uint32_t bucket);
  void Unlink(uint32_t index);
  void CascadeBucket(uint32_t bucket);
  size_t FireList(uint32_t bucket, int64_t up_to_ns = INT64_MAX);
  uint64_t NextInterestingTick() const;
  uint32_t BucketOfTick(uint64_t t) const;

  const int64_t tick_ns_;
  const int levels_;
  uint64_t cur_tick_;  // every tick <= cur_tick_ has been processed
  int64_t now_ns_;     // the last Advance() time (or start_ns)
  size_t size_ = 0;
  uint64_t seq_ = 0;  // insertion order, the tie-break within equal deadlines
  // Per bucket, the indices of its nodes (levels*64 wheel buckets, then due, then overflow).
  std::vector<std::vector<uint32_t>> buckets_;
  std::vector<uint32_t> scratch_ids_;  // the bucket being cascaded or fired
  std::vector<uint64_t> pending_;      // per level, bit b set when bucket b is non-empty
  std::unique_ptr<Slab> slab_;
  struct FireKey;
  std::vector<FireKey> fire_scratch_;  // the bucket being fired, sorted by (deadline, seq)
  bool in_advance_ = false;
};

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_TIMER_WHEEL_H_
