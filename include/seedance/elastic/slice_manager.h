// SliceManager: how many concurrent GPU slices each container may use, grown and shrunk every
// control period from the throughput of its last few periods (seed A 2.2).
//
// A container's request handler takes a slice with TryAcquire before it runs a request on the
// GPU and gives it back by dropping the Lease. A container that is never seen holds nothing
// (lazy creation: its entry and its first slice appear with its first request). At the end of
// each period, Rebalance sizes every container from its sliding window (docs/elastic.md):
//
//   busy   = the mean number of its slices in use over the window (the time integral of slices
//            in use / window time; by Little's law, throughput x mean service time)
//   want   = ceil(busy / target_busy), at least the slices in use right now
//   if it turned a request away in the last period: want >= ceil(limit x grow_factor)
//   limit  = clamp(want, min_slices, capacity), then scaled to fit pool_slices in all
//
// A shrink never revokes a slice in use: the limit drops at once and slices come back as their
// leases end (reference-counted reclaim). A container idle for idle_periods is forgotten; its
// entry is freed when its last lease ends. The pool bound holds for the sum of limits after
// each Rebalance; between two, a new container's first slice may exceed it by one per container.
//
// Thread-safety: TryAcquire, Lease release, Limit and stats may run on any thread, concurrently
// with each other and with Rebalance; Rebalance calls are serialised internally.
#ifndef SEEDANCE_ELASTIC_SLICE_MANAGER_H_
#define SEEDANCE_ELASTIC_SLICE_MANAGER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/engine/timer_clock.h"

namespace seedance::elastic {

struct SliceOptions {
  int32_t capacity = 64;     // the most slices one container may hold (the seed's `capacity`)
  int32_t min_slices = 1;    // a container in use keeps at least this many
  int64_t pool_slices = 0;   // slices there are in all (the GPUs' capacity); 0: unbounded
  int window_periods = 3;    // the sliding window, in periods
  double target_busy = 0.7;  // sized so its slices are busy this fraction of the time
  double grow_factor = 2;    // a container that turned requests away grows at least this much
  int idle_periods = 20;     // a container with no request for this many periods is forgotten
};

// What one Rebalance did.
struct RebalanceReport {
  int64_t containers = 0;  // known after it
  int64_t grown = 0, shrunk = 0, forgotten = 0;
  int64_t slices = 0;       // the sum of limits after it
  int64_t demand = 0;       // the sum of limits wanted before the pool bound
  bool pool_bound = false;  // the pool was short and limits were scaled down to fit
};

struct SliceStats {
  int64_t containers = 0;            // known now
  int64_t slices = 0;                // the sum of limits
  int64_t in_use = 0;                // leases held
  int64_t acquired = 0, denied = 0;  // since creation
  int64_t entries_created = 0, entries_freed = 0;
};

class SliceManager {
 private:
  struct Entry;

 public:
  // One slice in use; gives it back when destroyed or Release()d. Movable, not copyable.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Release(); }

    explicit operator bool() const { return entry_ != nullptr; }
    void Release();

   private:
    friend class SliceManager;
    Lease(std::shared_ptr<Entry> entry, const engine::TimerClock* clock)
        : entry_(std::move(entry)), clock_(clock) {}
    std::shared_ptr<Entry> entry_;
    const engine::TimerClock* clock_ = nullptr;
  };

  // InvalidArgument naming the field for options out of range. `clock` must outlive the manager
  // and its leases; it times leases and periods.
  static absl::StatusOr<std::unique_ptr<SliceManager>> Create(
      const SliceOptions& options, const engine::TimerClock* clock = engine::RealTimerClock());

  // A slice of `container` (created on first use), or an empty Lease when all its slices are
  // busy; the refusal is counted and makes it grow at the next Rebalance.
  Lease TryAcquire(std::string_view container);

  // The end of a period: every container resized from its window.
  RebalanceReport Rebalance();

  // Its limit now; 0 for a container not known.
  int32_t Limit(std::string_view container) const;

  SliceStats stats() const;
  const SliceOptions& options() const { return options_; }

  ~SliceManager();

 private:
  static constexpr int kShards = 64;
  static constexpr int kMaxWindow = 16;

  // One container. Its counters change under its own mutex, so the time integral of slices in
  // use is exact: every change first adds in_use x (now - last_change_ns) to busy_ns.
  struct Entry {
    Entry(std::string_view container, int32_t first_limit, int64_t now_ns,
          std::shared_ptr<std::atomic<int64_t>> freed_counter)
        : name(container),
          limit(first_limit),
          last_change_ns(now_ns),
          freed(std::move(freed_counter)) {}
    const std::string name;
    base::Mutex mu;
    int32_t limit ABSL_GUARDED_BY(mu) = 0;
    int32_t in_use ABSL_GUARDED_BY(mu) = 0;
    int64_t last_change_ns ABSL_GUARDED_BY(mu) = 0;
    // Since the last Rebalance.
    int64_t busy_ns ABSL_GUARDED_BY(mu) = 0;
    int64_t requests ABSL_GUARDED_BY(mu) = 0;  // granted and refused
    int64_t denied ABSL_GUARDED_BY(mu) = 0;
    // Rebalance's own (under rebalance_mu_): the window's periods, newest at at_.
    std::array<int64_t, kMaxWindow> window_busy_ns{};
    std::array<int64_t, kMaxWindow> window_requests{};
    int idle = 0;
    const std::shared_ptr<std::atomic<int64_t>> freed;  // the manager's counter, bumped by ~Entry
    ~Entry();
    void Account(int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  };
  // Lookups by string_view without building a std::string (C++20 heterogeneous lookup).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable base::SharedMutex mu;
    std::unordered_map<std::string, std::shared_ptr<Entry>, NameHash, std::equal_to<>> entries
        ABSL_GUARDED_BY(mu);
  };

  SliceManager(const SliceOptions& options, const engine::TimerClock* clock);
  Shard& ShardOf(std::string_view container) const;
  std::shared_ptr<Entry> FindOrCreate(std::string_view container);
  std::vector<std::shared_ptr<Entry>> Snapshot() const;
  int32_t Want(Entry& e, int64_t now_ns, int64_t window_ns, bool* idle) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rebalance_mu_);
  static void Fit(std::vector<int32_t>* want, int64_t pool, int32_t min_slices);

  const SliceOptions options_;
  const engine::TimerClock* const clock_;
  mutable std::array<Shard, kShards> shards_;
  base::Mutex rebalance_mu_;
  std::array<int64_t, kMaxWindow> window_ns_ ABSL_GUARDED_BY(rebalance_mu_){};  // period lengths
  int at_ ABSL_GUARDED_BY(rebalance_mu_) = 0;  // the newest period's slot
  int64_t last_rebalance_ns_ ABSL_GUARDED_BY(rebalance_mu_) = 0;
  std::atomic<int64_t> acquired_{0}, denied_{0}, created_{0};
  std::shared_ptr<std::atomic<int64_t>> freed_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace seedance::elastic

#endif  // SEEDANCE_ELASTIC_SLICE_MANAGER_H_
