#include "seedance/elastic/slice_manager.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/mutex.h"

namespace seedance::elastic {

namespace {

absl::Status Invalid(const char* field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("slice manager: ", field, ": ", why));
}

absl::Status Validate(const SliceOptions& o) {
  if (o.capacity < 1) return Invalid("capacity", "must be at least 1");
  if (o.min_slices < 0 || o.min_slices > o.capacity) {
    return Invalid("min_slices", absl::StrCat("must be in [0, capacity = ", o.capacity, "]"));
  }
  if (o.pool_slices < 0) return Invalid("pool_slices", "must be 0 (unbounded) or more");
  if (o.window_periods < 1 || o.window_periods > 16) {
    return Invalid("window_periods", "must be in [1, 16]");
  }
  if (!(o.target_busy > 0 && o.target_busy <= 1)) {
    return Invalid("target_busy", "must be in (0, 1]");
  }
  if (!(o.grow_factor >= 1 && o.grow_factor <= 16)) {
    return Invalid("grow_factor", "must be in [1, 16]");
  }
  if (o.idle_periods < 1) return Invalid("idle_periods", "must be at least 1");
  return absl::OkStatus();
}

}  // namespace

SliceManager::Entry::~Entry() {
  if (freed) freed->fetch_add(1, std::memory_order_relaxed);
}

void SliceManager::Entry::Account(int64_t now_ns) {
  busy_ns += int64_t{in_use} * std::max<int64_t>(0, now_ns - last_change_ns);
  last_change_ns = std::max(last_change_ns, now_ns);
}

SliceManager::Lease::Lease(Lease&& other) noexcept
    : entry_(std::move(other.entry_)), clock_(other.clock_) {
  other.entry_.reset();
}

SliceManager::Lease& SliceManager::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    entry_ = std::move(other.entry_);
    other.entry_.reset();
    clock_ = other.clock_;
  }
  return *this;
}

void SliceManager::Lease::Release() {
  if (entry_ == nullptr) return;
  {
    base::MutexLock lock(entry_->mu);
    entry_->Account(clock_->NowNs());
    --entry_->in_use;
  }
  entry_.reset();  // the last lease of a forgotten container frees it here
}

absl::StatusOr<std::unique_ptr<SliceManager>> SliceManager::Create(
    const SliceOptions& options, const engine::TimerClock* clock) {
  if (absl::Status st = Validate(options); !st.ok()) return st;
  if (clock == nullptr) return absl::InvalidArgumentError("slice manager: no clock");
  return std::unique_ptr<SliceManager>(new SliceManager(options, clock));
}

SliceManager::SliceManager(const SliceOptions& options, const engine::TimerClock* clock)
    : options_(options), clock_(clock), last_rebalance_ns_(clock->NowNs()) {}

SliceManager::~SliceManager() = default;

SliceManager::Shard& SliceManager::ShardOf(std::string_view container) const {
  return shards_[NameHash{}(container) % kShards];
}

std::shared_ptr<SliceManager::Entry> SliceManager::FindOrCreate(std::string_view container) {
  Shard& shard = ShardOf(container);
  {
    base::ReaderMutexLock lock(shard.mu);
    if (auto it = shard.entries.find(container); it != shard.entries.end()) {
      return it->second;
    }
  }
  base::WriterMutexLock lock(shard.mu);
  auto [it, inserted] = shard.entries.try_emplace(std::string(container));
  if (inserted) {
    it->second = std::make_shared<Entry>(container, std::max(1, options_.min_slices),
                                         clock_->NowNs(), freed_);
    created_.fetch_add(1, std::memory_order_relaxed);
  }
  return it->second;
}

SliceManager::Lease SliceManager::TryAcquire(std::string_view container) {
  std::shared_ptr<Entry> e = FindOrCreate(container);
  {
    base::MutexLock lock(e->mu);
    ++e->requests;
    if (e->in_use >= e->limit) {
      ++e->denied;
      denied_.fetch_add(1, std::memory_order_relaxed);
      return Lease();
    }
    e->Account(clock_->NowNs());
    ++e->in_use;
  }
  acquired_.fetch_add(1, std::memory_order_relaxed);
  return Lease(std::move(e), clock_);
}

std::vector<std::shared_ptr<SliceManager::Entry>> SliceManager::Snapshot() const {
  std::vector<std::shared_ptr<Entry>> out;
  for (Shard& shard : shards_) {
    base::ReaderMutexLock lock(shard.mu);
    for (const auto& [name, e] : shard.entries) out.push_back(e);
  }
  return out;
}

// The limit `e` wants from its window (the newest period's slot is at_); sets *idle when it
// has been unused long enough to be forgotten.
int32_t SliceManager::Want(Entry& e, int64_t now_ns, int64_t window_ns, bool* idle) const {
  int64_t denied = 0;
  int32_t in_use = 0, limit = 0;
  {
    base::MutexLock lock(e.mu);
    e.Account(now_ns);
    e.window_busy_ns[at_] = std::exchange(e.busy_ns, 0);
    e.window_requests[at_] = std::exchange(e.requests, 0);
    denied = std::exchange(e.denied, 0);
    in_use = e.in_use;
    limit = e.limit;
  }
  int64_t busy_ns = 0, requests = 0;
  for (int i = 0; i < options_.window_periods; ++i) {
    busy_ns += e.window_busy_ns[i];
    requests += e.window_requests[i];
  }
  e.idle = requests == 0 && in_use == 0 ? e.idle + 1 : 0;
  *idle = e.idle >= options_.idle_periods;
  if (*idle) return 0;
  const double busy = window_ns > 0 ? static_cast<double>(busy_ns) / window_ns : 0;
  double want = std::ceil(busy / options_.target_busy - 1e-9);
  want = std::max<double>(want, in_use);
  if (denied > 0) want = std::max(want, std::ceil(limit * options_.grow_factor));
  return static_cast<int32_t>(std::clamp<double>(want, options_.min_slices, options_.capacity));
}

// Scales `want` down to `pool` in all when it asks for more: every container first gets up to
// min_slices, the rest is shared in proportion to what each wants beyond that.
void SliceManager::Fit(std::vector<int32_t>* want, int64_t pool, int32_t min_slices) {
  int64_t floor_sum = 0, extra_sum = 0;
  for (int32_t w : *want) {
    floor_sum += std::min(w, min_slices);
    extra_sum += w - std::min(w, min_slices);
  }
  if (floor_sum + extra_sum <= pool) return;
  const double share =
      extra_sum > 0 ? static_cast<double>(std::max<int64_t>(0, pool - floor_sum)) / extra_sum : 0;
  for (int32_t& w : *want) {
    const int32_t base = std::min(w, min_slices);
    w = base + static_cast<int32_t>(std::floor((w - base) * share));
  }
}

RebalanceReport SliceManager::Rebalance() {
  base::MutexLock lock(rebalance_mu_);
  const int64_t now = clock_->NowNs();
  at_ = (at_ + 1) % options_.window_periods;
  window_ns_[at_] = std::max<int64_t>(0, now - last_rebalance_ns_);
  last_rebalance_ns_ = now;
  int64_t window_ns = 0;
  for (int i = 0; i < options_.window_periods; ++i) window_ns += window_ns_[i];

  RebalanceReport r;
  std::vector<std::shared_ptr<Entry>> entries = Snapshot();
  std::vector<int32_t> want(entries.size());
  std::vector<bool> forget(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    bool idle = false;
    want[i] = Want(*entries[i], now, window_ns, &idle);
    forget[i] = idle;
    r.demand += want[i];
  }
  if (options_.pool_slices > 0 && r.demand > options_.pool_slices) {
    Fit(&want, options_.pool_slices, options_.min_slices);
    r.pool_bound = true;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = *entries[i];
    if (forget[i]) {
      Shard& shard = ShardOf(e.name);
      base::WriterMutexLock shard_lock(shard.mu);
      if (auto it = shard.entries.find(e.name);
          it != shard.entries.end() && it->second.get() == &e) {
        shard.entries.erase(it);
        ++r.forgotten;
      }
      continue;
    }
    int32_t old = 0;
    {
      base::MutexLock entry_lock(e.mu);
      old = std::exchange(e.limit, want[i]);
    }
    r.grown += want[i] > old;
    r.shrunk += want[i] < old;
    r.slices += want[i];
    ++r.containers;
  }
  return r;
}

int32_t SliceManager::Limit(std::string_view container) const {
  Shard& shard = ShardOf(container);
  base::ReaderMutexLock lock(shard.mu);
  auto it = shard.entries.find(container);
  if (it == shard.entries.end()) return 0;
  base::MutexLock entry_lock(it->second->mu);
  return it->second->limit;
}

SliceStats SliceManager::stats() const {
  SliceStats s;
  for (const std::shared_ptr<Entry>& e : Snapshot()) {
    ++s.containers;
    base::MutexLock lock(e->mu);
    s.slices += e->limit;
    s.in_use += e->in_use;
  }
  s.acquired = acquired_.load(std::memory_order_relaxed);
  s.denied = denied_.load(std::memory_order_relaxed);
  s.entries_created = created_.load(std::memory_order_relaxed);
  s.entries_freed = freed_->load(std::memory_order_relaxed);
  return s;
}

}  // namespace seedance::elastic
