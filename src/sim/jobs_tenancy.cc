// Seedance's tenancy policies (quota-fifo, quota-las) on one shared pool (docs/jobs.md).
//
// At every arrival, end, priority-level change and aging deadline the engine makes one pass:
//  1. Each active job gets a class. Walking a tenant's jobs in its own order (quota-fifo: submit
//     time; quota-las: attained-service level, then submit time), a job whose GPUs still fit
//     the tenant's guaranteed quota is "guaranteed"; the others are "borrowing".
//  2. Pending jobs are placed without preemption: guaranteed first (own order), then borrowing
//     ones by level and by their tenant's borrowed GPUs over its weight (weighted fair share),
//     skipping a job that does not fit, until a job that has waited past the aging deadline
//     fails: nothing behind it may overtake it.
//  3. A job still pending may preempt borrowing jobs: any of them for a guaranteed job
//     (reclaim), those of a higher level for a borrowing one (least attained service). The victim
//     set is the one that loses the least work (checkpoint overhead x GPUs), then the fewest
//     jobs (sched::VictimSearch under VictimRule::kLeastLostWork, on each node; a job wider
//     than a node empties the nodes that are cheapest to empty); victims resume later with the
//     overhead added to their remaining time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "job_accounting.h"
#include "job_nodes.h"
#include "jobs_internal.h"
#include "seedance/sched/tenancy.h"

namespace seedance::sim {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

enum class Phase { kFuture, kPending, kRunning, kDone };

struct JobState {
  Phase phase = Phase::kFuture;
  int64_t remain = 0;       // seconds of work left (overheads included)
  double attained = 0;      // GPU-seconds run so far
  int64_t run_start = 0;    // running: start of this stretch
  int64_t pend_since = 0;   // pending: since when
  int level = 0;
  bool borrowing = false;
  JobAlloc alloc;
};

class TenancyEngine {
 public:
  TenancyEngine(const JobWorkload& w, const JobSimOptions& o, JobRun* run, JobAccounting* acc)
      : w_(w), opt_(o.tenancy), las_(o.policy == "quota-las"), run_(run), acc_(acc),
        nodes_(PoolNodes(w), kGpusPerJobNode), state_(w.jobs.size()) {}

  void Run() {
    int64_t now = 0;
    while (done_ < w_.jobs.size()) {
      const int64_t t = NextEvent();
      if (t == kNever) return;  // cannot happen: every job fits the empty pool
      acc_->Advance(now, t);
      now = t;
      ++run_->scheduling_passes;
      EndJobs(t);
      Arrive(t);
      Pass(t);
    }
  }

 private:
  static int32_t PoolNodes(const JobWorkload& w) {
    int32_t n = 0;
    for (const JobTenant& t : w.tenants) n += t.nodes;
    return n;
  }

  double Attained(int32_t j, int64_t t) const {
    const JobState& s = state_[j];
    if (s.phase != Phase::kRunning) return s.attained;
    return s.attained + static_cast<double>(w_.jobs[j].gpus) * static_cast<double>(t - s.run_start);
  }

  double Threshold(int level) const {
    return opt_.las_first_threshold_gpu_s * std::pow(opt_.las_threshold_factor, level);
  }

  int Level(int32_t j, int64_t t) const {
    if (!las_) return 0;
    const JobState& s = state_[j];
    if (s.phase == Phase::kPending && opt_.aging_s > 0 && t - s.pend_since >= opt_.aging_s) {
      return 0;
    }
    const double a = Attained(j, t);
    int level = 0;
    while (level + 1 < opt_.las_levels && a >= Threshold(level)) ++level;
    return level;
  }

  int64_t NextEvent() const {
    int64_t t = next_ < w_.jobs.size() ? w_.jobs[next_].submit_s : kNever;
    const bool waiting = !pending_.empty();
    for (int32_t j : running_) {
      const JobState& s = state_[j];
      t = std::min(t, s.run_start + s.remain);
      if (!waiting || !las_ || s.level + 1 >= opt_.las_levels) continue;
      const double need = Threshold(s.level) - s.attained;
      const int64_t dt = static_cast<int64_t>(std::ceil(need / w_.jobs[j].gpus));
      t = std::min(t, s.run_start + std::max<int64_t>(dt, 1));
    }
    if (opt_.aging_s > 0 && las_) {
      for (int32_t j : pending_) {
        if (state_[j].level > 0) t = std::min(t, state_[j].pend_since + opt_.aging_s);
      }
    }
    return t;
  }

  void EndJobs(int64_t t) {
    std::vector<int32_t> kept;
    for (int32_t j : running_) {
      JobState& s = state_[j];
      if (s.run_start + s.remain != t) {
        kept.push_back(j);
        continue;
      }
      s.phase = Phase::kDone;
      run_->jobs[j].end_s = t;
      nodes_.Release(s.alloc);
      acc_->Stop(w_.jobs[j], t - s.run_start);
      ++done_;
    }
    running_ = std::move(kept);
  }

  void Arrive(int64_t t) {
    for (; next_ < w_.jobs.size() && w_.jobs[next_].submit_s == t; ++next_) {
      const int32_t j = static_cast<int32_t>(next_);
      state_[j].phase = Phase::kPending;
      state_[j].remain = w_.jobs[j].duration_s;
      state_[j].pend_since = t;
      pending_.push_back(j);
      acc_->Pend(w_.jobs[j]);
    }
  }

  // Step 1: levels and classes of every active job.
  void Classify(int64_t t) {
    std::vector<int32_t> active = pending_;
    active.insert(active.end(), running_.begin(), running_.end());
    for (int32_t j : active) state_[j].level = Level(j, t);
    std::sort(active.begin(), active.end(), [&](int32_t a, int32_t b) {
      return std::tuple(state_[a].level, w_.jobs[a].submit_s, a) <
             std::tuple(state_[b].level, w_.jobs[b].submit_s, b);
    });
    std::vector<int64_t> cum(w_.tenants.size(), 0);
    borrowed_.assign(w_.tenants.size(), 0);
    for (int32_t j : active) {
      const JobSpec& job = w_.jobs[j];
      const bool fits = cum[job.tenant] + job.gpus <= acc_->quota(job.tenant);
      state_[j].borrowing = !fits;
      if (fits) cum[job.tenant] += job.gpus;
      if (!fits && state_[j].phase == Phase::kRunning) borrowed_[job.tenant] += job.gpus;
    }
  }

  // Pending jobs in placement order.
  std::vector<int32_t> PendingOrder() const {
    std::vector<int32_t> order = pending_;
    auto key = [&](int32_t j) {
      const JobSpec& job = w_.jobs[j];
      const double share = state_[j].borrowing
                               ? static_cast<double>(borrowed_[job.tenant]) /
                                     w_.tenants[job.tenant].weight
                               : 0.0;
      return std::tuple(state_[j].borrowing, state_[j].level, share, job.submit_s, j);
    };
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key(a) < key(b); });
    return order;
  }

  void Pass(int64_t t) {
    Classify(t);
    const std::vector<int32_t> order = PendingOrder();
    std::vector<int32_t> unplaced;
    bool blocked = false;
    for (int32_t j : order) {
      JobAlloc alloc;
      // An aged job holds back only borrowing jobs: a guarantee is never made to wait.
      const bool held = blocked && state_[j].borrowing;
      if (!held && nodes_.Find(w_.jobs[j].gpus, &alloc)) {
        Start(j, t, alloc);
        continue;
      }
      unplaced.push_back(j);
      if (opt_.aging_s > 0 && t - state_[j].pend_since >= opt_.aging_s) blocked = true;
    }
    if (unplaced.empty()) return;
    // GPUs that each kind of preemptor could evict: a guaranteed job any borrowing job's, a
    // borrowing job of level L those of levels above L. Jobs that could not make room even with
    // all of them skip the search.
    std::vector<int64_t> above;
    int64_t borrowed_total = 0;
    auto count = [&] {
      above.assign(static_cast<size_t>(opt_.las_levels) + 1, 0);
      borrowed_total = 0;
      for (int32_t r : running_) {
        if (!state_[r].borrowing) continue;
        borrowed_total += w_.jobs[r].gpus;
        for (int l = 0; l < state_[r].level; ++l) above[l] += w_.jobs[r].gpus;
      }
    };
    count();
    for (int32_t j : unplaced) {
      const int64_t evictable = state_[j].borrowing ? above[state_[j].level] : borrowed_total;
      if (nodes_.free_gpus() + evictable < w_.jobs[j].gpus) continue;
      if (TryPreempt(j, t)) count();  // the evictions changed what is left to evict
    }
  }

  bool CanEvict(int32_t preemptor, int32_t victim) const {
    const JobState& v = state_[victim];
    if (v.phase != Phase::kRunning || !v.borrowing) return false;
    const JobState& p = state_[preemptor];
    return !p.borrowing || v.level > p.level;
  }

  // Step 3 for one pending job: the cheapest eviction that makes room, applied; true if it was.
  // Which jobs a node gives up is sched/tenancy's VictimSearch under kLeastLostWork.
  bool TryPreempt(int32_t j, int64_t t) {
    const int32_t gpus = w_.jobs[j].gpus;
    const int32_t per_node = kGpusPerJobNode;
    // Per node: its single-node evictable jobs, and the GPUs held by jobs that stay.
    std::vector<std::vector<sched::VictimCandidate>> victims(nodes_.num_nodes());
    std::vector<int32_t> stuck(nodes_.num_nodes(), 0);
    for (int32_t r : running_) {
      const JobAlloc& a = state_[r].alloc;
      const bool evictable = a.size() == 1 && CanEvict(j, r);
      for (const auto& [node, g] : a) {
        if (!evictable) {
          stuck[node] += g;
          continue;
        }
        const int64_t lost = CheckpointOverheadS(w_.jobs[r].gpus, per_node) * w_.jobs[r].gpus;
        victims[node].push_back({.id = static_cast<uint64_t>(r),
                                 .node = node,
                                 .priority = 0,
                                 .gpus = w_.jobs[r].gpus,
                                 .lost_gpu_s = static_cast<double>(lost),
                                 .protected_pod = false,
                                 .placed_at_s = static_cast<double>(state_[r].run_start)});
      }
    }
    // The cheapest victims that free `need` GPUs on `node` (node -1: none does; no victims:
    // the node has the room already).
    auto plan_node = [&](int32_t node, int32_t need) {
      sched::VictimSearch search(need, sched::VictimRule::kLeastLostWork);
      search.Node(node, nodes_.free_on(node), victims[node]);
      sched::VictimSet set = search.TakeBest();
      if (set.node < 0 && nodes_.free_on(node) >= need) set.node = node;
      return set;
    };
    JobAlloc alloc;
    std::vector<uint64_t> evict;
    if (gpus <= per_node) {
      sched::VictimSearch search(gpus, sched::VictimRule::kLeastLostWork);
      for (int32_t n = 0; n < nodes_.num_nodes(); ++n) {
        search.Node(n, nodes_.free_on(n), victims[n]);
      }
      const sched::VictimSet& best = search.best();
      if (best.node >= 0) {
        evict = best.victims;
        alloc = {{best.node, gpus}};
      }
    } else {
      // Whole nodes (and one node for the remainder), the cheapest to empty first.
      std::vector<std::pair<double, int32_t>> empty_cost;
      for (int32_t n = 0; n < nodes_.num_nodes(); ++n) {
        if (stuck[n] > 0) continue;
        const sched::VictimSet set = plan_node(n, per_node);
        if (set.node >= 0) empty_cost.push_back({set.lost_gpu_s, n});
      }
      std::sort(empty_cost.begin(), empty_cost.end());
      const size_t whole = static_cast<size_t>(gpus / per_node);
      const int32_t rest = gpus % per_node;
      const size_t needed = whole + (rest > 0 ? 1 : 0);
      if (empty_cost.size() < needed) return false;
      for (size_t i = 0; i < needed; ++i) {
        const int32_t n = empty_cost[i].second;
        const int32_t take = i < whole ? per_node : rest;
        const sched::VictimSet set = plan_node(n, take);
        evict.insert(evict.end(), set.victims.begin(), set.victims.end());
        alloc.push_back({n, take});
      }
    }
    // No eviction needed means step 2 left the job out on purpose (aging): leave it.
    if (evict.empty()) return false;
    for (uint64_t r : evict) Preempt(static_cast<int32_t>(r), t);
    Start(j, t, alloc);
    return true;
  }

  void Start(int32_t j, int64_t t, const JobAlloc& alloc) {
    JobState& s = state_[j];
    JobOutcome& o = run_->jobs[j];
    if (o.start_s < 0) o.start_s = t;
    o.queue_s += t - s.pend_since;
    s.phase = Phase::kRunning;
    s.run_start = t;
    s.alloc = alloc;
    nodes_.Take(alloc);
    acc_->Unpend(w_.jobs[j]);
    acc_->Start(w_.jobs[j]);
    pending_.erase(std::find(pending_.begin(), pending_.end(), j));
    running_.push_back(j);
  }

  void Preempt(int32_t j, int64_t t) {
    JobState& s = state_[j];
    JobOutcome& o = run_->jobs[j];
    const int64_t overhead = CheckpointOverheadS(w_.jobs[j].gpus, kGpusPerJobNode);
    s.attained = Attained(j, t);
    s.remain = s.remain - (t - s.run_start) + overhead;
    s.phase = Phase::kPending;
    s.pend_since = t;
    ++o.preemptions;
    o.lost_gpu_s += overhead * w_.jobs[j].gpus;
    nodes_.Release(s.alloc);
    acc_->Stop(w_.jobs[j], t - s.run_start);
    acc_->Pend(w_.jobs[j]);
    running_.erase(std::find(running_.begin(), running_.end(), j));
    pending_.push_back(j);
  }

  const JobWorkload& w_;
  const TenancyOptions opt_;
  const bool las_;
  JobRun* run_;
  JobAccounting* acc_;
  JobNodes nodes_;
  std::vector<JobState> state_;
  std::vector<int32_t> pending_, running_;
  std::vector<int64_t> borrowed_;
  size_t next_ = 0;
  size_t done_ = 0;
};

}  // namespace

void RunTenancy(const JobWorkload& w, const JobSimOptions& options, JobRun* run,
                JobAccounting* acc) {
  TenancyEngine(w, options, run, acc).Run();
}

}  // namespace seedance::sim
