// The reference protocol's queues (fifo, sjf, srtf) on isolated or pooled partitions.
//
// The reference simulator advances an integer clock one second at a time. These engines visit
// only the seconds at which its state can change and do there exactly what it does:
//   * fifo/sjf: a job ends when the clock reaches start + duration; arrivals join the queue;
//     the queue (by submit time, or by duration with ties in arrival order) is placed in order
//     until the first job that does not fit. Between arrivals and ends nothing can change.
//   * srtf: every second, running jobs first lose a second of remaining time (a job whose
//     remaining time was already 0 ends now), arrivals join, and pending-then-running jobs are
//     stably sorted by remaining time; walking that order, a job is kept while the partition's
//     GPU total still covers it; running jobs left out are preempted (checkpoint overhead added
//     to their remaining time) and kept pending jobs are placed where consolidate placement
//     allows. After a second in which nothing started or stopped, the next second can only
//     differ once an arrival comes, a job ends, or a running job's remaining time drops below
//     a pending job's (their order flips): the engine jumps to the first of those.
#include <algorithm>
#include <deque>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "job_accounting.h"
#include "job_nodes.h"
#include "jobs_internal.h"

namespace seedance::sim {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Head-of-line queue: fifo keeps arrival order, sjf orders by duration then arrival.
class HolQueue {
 public:
  explicit HolQueue(bool by_duration) : by_duration_(by_duration) {}
  void Push(const JobWorkload& w, int32_t job) {
    queue_.insert({by_duration_ ? w.jobs[job].duration_s : 0, seq_++, job});
  }
  bool empty() const { return queue_.empty(); }
  int32_t front() const { return std::get<2>(*queue_.begin()); }
  void pop() { queue_.erase(queue_.begin()); }

 private:
  bool by_duration_;
  int64_t seq_ = 0;
  std::set<std::tuple<int64_t, int64_t, int32_t>> queue_;
};

void RunHol(const JobWorkload& w, const JobPartition& part, bool sjf, JobRun* run,
            JobAccounting* acc) {
  JobNodes nodes(part.nodes, kGpusPerJobNode);
  std::vector<JobAlloc> alloc(w.jobs.size());
  using End = std::pair<int64_t, int32_t>;
  std::priority_queue<End, std::vector<End>, std::greater<>> running;
  HolQueue queue(sjf);
  size_t next = 0;
  int64_t now = 0;
  while (next < part.jobs.size() || !running.empty()) {
    int64_t t = next < part.jobs.size() ? w.jobs[part.jobs[next]].submit_s : kNever;
    if (!running.empty()) t = std::min(t, running.top().first);
    acc->Advance(now, t);
    now = t;
    ++run->scheduling_passes;
    while (!running.empty() && running.top().first == t) {
      const int32_t j = running.top().second;
      running.pop();
      nodes.Release(alloc[j]);
      acc->Stop(w.jobs[j], w.jobs[j].duration_s);
    }
    for (; next < part.jobs.size() && w.jobs[part.jobs[next]].submit_s == t; ++next) {
      queue.Push(w, part.jobs[next]);
      acc->Pend(w.jobs[part.jobs[next]]);
    }
    while (!queue.empty() && nodes.Place(w.jobs[queue.front()].gpus, &alloc[queue.front()])) {
      const int32_t j = queue.front();
      queue.pop();
      JobOutcome& o = run->jobs[j];
      o.start_s = t;
      o.end_s = t + w.jobs[j].duration_s;
      o.queue_s = t - w.jobs[j].submit_s;
      acc->Unpend(w.jobs[j]);
      acc->Start(w.jobs[j]);
      running.push({o.end_s, j});
    }
  }
}

// The reference's SRTF, second by second where it matters.
class SrtfEngine {
 public:
  SrtfEngine(const JobWorkload& w, const JobPartition& part, JobRun* run, JobAccounting* acc)
      : w_(w), part_(part), run_(run), acc_(acc), nodes_(part.nodes, kGpusPerJobNode),
        state_(w.jobs.size()), last_start_(w.jobs.size(), 0) {}

  void Run() {
    int64_t prev = -1;
    bool changed = true;
    while (ended_ < part_.jobs.size()) {
      const int64_t t = changed ? prev + 1 : NextEvent(prev);
      if (t == kNever) return;  // cannot happen: every job fits its empty partition
      acc_->Advance(std::max<int64_t>(prev, 0), t);
      ++run_->scheduling_passes;
      EndJobs(t);
      Arrive(t);
      changed = Select(t);
      prev = t;
    }
  }

 private:
  struct State {
    int64_t remain = 0;     // pending: remaining seconds
    int64_t zero_tick = 0;  // running: the second at which its remaining time reaches 0
    int64_t ckpt_tick = 0;
    bool running = false;
    JobAlloc alloc;
  };

  int64_t Remain(int32_t j, int64_t t) const {
    return state_[j].running ? state_[j].zero_tick - t : state_[j].remain;
  }

  // The first second after `prev` at which an arrival, an end or an order flip happens.
  int64_t NextEvent(int64_t prev) const {
    int64_t t = next_ < part_.jobs.size() ? w_.jobs[part_.jobs[next_]].submit_s : kNever;
    std::vector<int64_t> zeros;
    zeros.reserve(run_list_.size());
    for (int32_t j : run_list_) {
      zeros.push_back(state_[j].zero_tick);
      t = std::min(t, state_[j].zero_tick + 1);
    }
    std::sort(zeros.begin(), zeros.end());
    for (int32_t j : que_list_) {
      const int64_t p = state_[j].remain;
      auto it = std::lower_bound(zeros.begin(), zeros.end(), prev + p);
      if (it != zeros.end()) t = std::min(t, *it - p + 1);
    }
    return t;
  }

  void EndJobs(int64_t t) {
    std::vector<int32_t> kept;
    for (int32_t j : run_list_) {
      if (state_[j].zero_tick == t - 1) {
        run_->jobs[j].end_s = t;
        nodes_.Release(state_[j].alloc);
        acc_->Stop(w_.jobs[j], t - last_start_[j]);
        state_[j].running = false;
        ++ended_;
      } else {
        kept.push_back(j);
      }
    }
    run_list_ = std::move(kept);
  }

  void Arrive(int64_t t) {
    for (; next_ < part_.jobs.size() && w_.jobs[part_.jobs[next_]].submit_s == t; ++next_) {
      const int32_t j = part_.jobs[next_];
      state_[j].remain = w_.jobs[j].duration_s;
      que_list_.push_back(j);
      acc_->Pend(w_.jobs[j]);
    }
  }

  // Steps 3 to 5 of the reference's second; true when a job started or was preempted.
  bool Select(int64_t t) {
    std::vector<int32_t> order = que_list_;
    order.insert(order.end(), run_list_.begin(), run_list_.end());
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return Remain(a, t) < Remain(b, t); });
    int64_t quota = nodes_.total_gpus();
    std::vector<int32_t> start, preempt;
    for (int32_t j : order) {
      if (w_.jobs[j].gpus <= quota) {
        quota -= w_.jobs[j].gpus;
        if (!state_[j].running) start.push_back(j);
      } else if (state_[j].running) {
        preempt.push_back(j);
      }
    }
    for (int32_t j : preempt) Preempt(j, t);
    bool started = false;
    for (int32_t j : start) started = TryStart(j, t) || started;
    return started || !preempt.empty();
  }

  void Preempt(int32_t j, int64_t t) {
    State& s = state_[j];
    JobOutcome& o = run_->jobs[j];
    const int64_t overhead = CheckpointOverheadS(w_.jobs[j].gpus, kGpusPerJobNode);
    ++o.preemptions;
    o.lost_gpu_s += overhead * w_.jobs[j].gpus;
    s.ckpt_tick = t;
    s.remain = s.zero_tick - t + overhead;
    s.running = false;
    nodes_.Release(s.alloc);
    acc_->Stop(w_.jobs[j], t - last_start_[j]);
    acc_->Pend(w_.jobs[j]);
    run_list_.erase(std::find(run_list_.begin(), run_list_.end(), j));
    que_list_.push_back(j);
  }

  bool TryStart(int32_t j, int64_t t) {
    State& s = state_[j];
    if (!nodes_.Place(w_.jobs[j].gpus, &s.alloc)) return false;
    JobOutcome& o = run_->jobs[j];
    if (o.preemptions == 0) {
      o.start_s = t;
      o.queue_s = t - w_.jobs[j].submit_s;
    } else {
      o.queue_s += t - s.ckpt_tick;
    }
    s.running = true;
    s.zero_tick = t + s.remain;
    last_start_[j] = t;
    acc_->Unpend(w_.jobs[j]);
    acc_->Start(w_.jobs[j]);
    que_list_.erase(std::find(que_list_.begin(), que_list_.end(), j));
    run_list_.push_back(j);
    return true;
  }

  const JobWorkload& w_;
  const JobPartition& part_;
  JobRun* run_;
  JobAccounting* acc_;
  JobNodes nodes_;
  std::vector<State> state_;
  std::vector<int64_t> last_start_;
  std::vector<int32_t> que_list_, run_list_;
  size_t next_ = 0;
  size_t ended_ = 0;
};

}  // namespace

void RunReference(const JobWorkload& w, const std::string& policy, Partitioning partitioning,
                  JobRun* run, JobAccounting* acc) {
  for (const JobPartition& part : Partitions(w, partitioning)) {
    if (policy == "srtf") {
      SrtfEngine(w, part, run, acc).Run();
    } else {
      RunHol(w, part, policy == "sjf", run, acc);
    }
  }
}

}  // namespace seedance::sim
