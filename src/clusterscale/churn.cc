// The churn simulation of an autoscaled cluster (RunChurn in the header; the rules are in
// docs/cluster-autoscaler.md).
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "arrival_window.h"
#include "node_room.h"
#include "policy_placer.h"
#include "seedance/base/check.h"
#include "seedance/clusterscale/cluster_autoscaler.h"

namespace seedance::clusterscale {

absl::Status Validate(const ChurnOptions& o) {
  if (absl::Status s = Validate(o.scale_up); !s.ok()) return s;
  auto bad = [](const char* field, double v, const char* want) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", v, " ", want));
  };
  if (!(o.load > 0 && o.load <= 100)) return bad("load", o.load, "is outside (0, 100]");
  if (!(o.duration_h > 0 && o.duration_h <= 87600))
    return bad("duration_h", o.duration_h, "is outside (0, 87600]");
  if (!(o.warmup_h >= 0 && o.warmup_h <= 87600))
    return bad("warmup_h", o.warmup_h, "is outside [0, 87600]");
  if (!(o.scan_interval_s > 0 && o.scan_interval_s <= 3600))
    return bad("scan_interval_s", o.scan_interval_s, "is outside (0, 3600]");
  if (!(o.provision_min_s >= 0 && o.provision_min_s <= 86400))
    return bad("provision_min_s", o.provision_min_s, "is outside [0, 86400]");
  if (!(o.provision_max_s >= o.provision_min_s && o.provision_max_s <= 86400))
    return bad("provision_max_s", o.provision_max_s, "must be in [provision_min_s, 86400]");
  if (!(o.idle_s >= 0 && o.idle_s <= 86400 * 7))
    return bad("idle_s", o.idle_s, "is outside [0, 604800]");
  if (!(o.drain_below_utilization >= 0 && o.drain_below_utilization <= 1))
    return bad("drain_below_utilization", o.drain_below_utilization, "is outside [0, 1]");
  if (!(o.max_drains_per_scan >= 1 && o.max_drains_per_scan <= 1000000))
    return bad("max_drains_per_scan", o.max_drains_per_scan, "is outside [1, 1000000]");
  return absl::OkStatus();
}

namespace {

enum class NodeState { kProvisioning, kReady, kRemoved };

struct SimNode {
  int group;
  NodeRoom room;
  NodeState state;
  int running = 0;
  double idle_since_s = 0;
  double underused_since_s = -1;  // < 0: not below the drain threshold
  std::vector<int64_t> pods;      // ids of the pods running here
};

struct TracePod {
  double replay_at_s = 0;  // replay: when it arrives
  PendingPod pod;
  int32_t priority;
  double lifetime_s;
  std::string gpu_spec = {};  // the trace's, "A|B" (the policy's scheduler reads it)
};

struct Waiting {
  int64_t id;
  double arrival_s;
  const TracePod* pod;
};

struct RunningPod {
  int node;
  std::vector<int> gpus;
  const TracePod* pod;
  core::Placement placement;  // the policy's, when ChurnOptions::policy is set
};

class Churn {
 public:
  // `policy`: where pods go (null: the built-in best fit over the nodes' rooms).
  Churn(const std::vector<NodeGroup>& groups, const ChurnOptions& o,
        std::unique_ptr<internal::PolicyPlacer> policy)
      : groups_(groups), o_(o), policy_(std::move(policy)) {}

  // The run's report, or the first error of the policy placing its pods (Internal).
  absl::StatusOr<ChurnReport> Run(const std::vector<TracePod>& pods, double rate_per_s) {
    // Arrivals and provisioning delays draw from separate streams, so both expanders see the
    // same arrivals for a seed (common random numbers).
    std::mt19937_64 rng(o_.seed);
    std::mt19937_64 delay_rng(o_.seed ^ 0x9e3779b97f4a7c15ULL);
    std::exponential_distribution<double> gap(rate_per_s);
    std::uniform_int_distribution<size_t> pick(0, pods.size() - 1);
    std::uniform_real_distribution<double> delay(o_.provision_min_s, o_.provision_max_s);
    window_start_s_ = o_.warmup_h * 3600;
    end_s_ = window_start_s_ + o_.duration_h * 3600;
    size_.assign(groups_.size(), 0);
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int i = 0; i < groups_[g].min_size; ++i) {
        Join(Request(static_cast<int>(g)), 0);
      }
    }
    // Replay: pods in creation order at their creation times; otherwise Poisson copies.
    size_t replayed = 0;
    auto replay_time = [&] { return replayed < pods.size() ? pods[replayed].replay_at_s : kInf; };
    double next_arrival = o_.replay ? replay_time() : gap(rng);
    double next_scan = o_.scan_interval_s;
    int64_t next_id = 0;
    while (error_.ok()) {
      const double dep = departures_.empty() ? kInf : departures_.top().first;
      const double join = joins_.empty() ? kInf : joins_.top().first;
      const double t = std::min({next_arrival, next_scan, dep, join});
      if (t > end_s_) break;
      Advance(t);
      if (t == dep) {
        Depart(departures_.top().second);
        departures_.pop();
      } else if (t == join) {
        const int n = joins_.top().second;
        joins_.pop();
        Join(n, t);
      } else if (t == next_arrival) {
        if (o_.replay) {
          Arrive(next_id++, &pods[replayed++], t);
          next_arrival = replay_time();
        } else {
          Arrive(next_id++, &pods[pick(rng)], t);
          next_arrival = t + gap(rng);
        }
      } else {
        Scan(t, [&] { return t + delay(delay_rng); });
        next_scan = t + o_.scan_interval_s;
      }
    }
    Advance(end_s_);
    for (const auto& [key, w] : waiting_) {
      if (w.arrival_s >= window_start_s_) delays_.push_back(end_s_ - w.arrival_s);
    }
    report_.pods_waiting_at_end = static_cast<int64_t>(waiting_.size());
    std::sort(delays_.begin(), delays_.end());
    report_.pending_p50_s = Percentile(0.50);
    report_.pending_p99_s = Percentile(0.99);
    // delays_ is sorted: the waits are its positive tail.
    const auto first_wait = std::upper_bound(delays_.begin(), delays_.end(), 0.0);
    report_.pods_waited = delays_.end() - first_wait;
    if (report_.pods_waited > 0) report_.waited_p50_s = first_wait[(report_.pods_waited - 1) / 2];
    if (!error_.ok()) return error_;
    return report_;
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  using Key = std::pair<int32_t, int64_t>;  // (-priority, arrival id)

  double Percentile(double q) const {
    if (delays_.empty()) return 0;
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(delays_.size())));
    return delays_[std::max<size_t>(rank, 1) - 1];
  }

  // Integrates paid and idle GPU capacity and cost up to `t`, inside the window only.
  void Advance(double t) {
    const double from = std::max(now_, window_start_s_);
    const double to = std::min(t, end_s_);
    if (to > from) {
      const double h = (to - from) / 3600;
      report_.gpu_hours_paid += paid_gpus_ * h;
      report_.idle_gpu_hours += static_cast<double>(ready_free_gpu_milli_) / core::kMilliGpu * h;
      report_.cost_usd += cost_rate_ * h;
    }
    now_ = t;
  }

  int Request(int g) {
    nodes_.push_back(SimNode{g, NodeRoom(groups_[g].node), NodeState::kProvisioning, 0, 0, -1, {}});
    ++size_[g];
    paid_gpus_ += groups_[g].node.num_gpus;
    cost_rate_ += groups_[g].node.cost_usd_per_hour;
    return static_cast<int>(nodes_.size()) - 1;
  }

  void Join(int n, double t) {
    SimNode& node = nodes_[n];
    node.state = NodeState::kReady;
    node.idle_since_s = t;
    ready_.insert(n);
    ready_free_gpu_milli_ += node.room.gpu_free_milli();
    if (policy_) {
      StartWaiting(policy_->Join(n, groups_[node.group].node, t), t);
    } else {
      Retry(n, t);
    }
  }

  // The waiting pods the policy's scheduler started (a node joined or a pod ended).
  void StartWaiting(const absl::StatusOr<std::vector<internal::PolicyPlacer::Started>>& started,
                    double t) {
    if (!started.ok()) {
      if (error_.ok()) error_ = started.status();
      return;
    }
    for (const internal::PolicyPlacer::Started& s : *started) {
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [&](const auto& w) { return w.second.id == s.id; });
      if (it == waiting_.end()) {
        if (error_.ok()) error_ = absl::InternalError("policy: started a pod that was not waiting");
        return;
      }
      Start(s.id, it->second.pod, s.node, it->second.arrival_s, t, &s.placement);
      waiting_.erase(it);
    }
  }

  // Starts pod `id` on node n: on the GPUs of `placed` (the policy's) or, when null, on those
  // the node's room picks.
  void Start(int64_t id, const TracePod* pod, int n, double arrival_s, double t,
             const core::Placement* placed = nullptr) {
    SimNode& node = nodes_[n];
    const int64_t before = node.room.gpu_free_milli();
    RunningPod r{n, {}, pod, {}};
    if (placed != nullptr) {
      node.room.TakeOn(pod->pod.shape, placed->gpu_ids());
      r.gpus.assign(placed->gpu_ids().begin(), placed->gpu_ids().end());
      r.placement = *placed;
    } else {
      r.gpus = node.room.Take(pod->pod.shape);
    }
    ready_free_gpu_milli_ -= before - node.room.gpu_free_milli();
    ++node.running;
    node.pods.push_back(id);
    running_.emplace(id, std::move(r));
    departures_.emplace(t + pod->lifetime_s, id);
    if (arrival_s >= window_start_s_) delays_.push_back(t - arrival_s);
  }

  void Arrive(int64_t id, const TracePod* pod, double t) {
    if (t >= window_start_s_) ++report_.pods_arrived;
    recent_.Add(t, pod->pod);
    if (policy_) {
      absl::StatusOr<std::vector<internal::PolicyPlacer::Started>> started =
          policy_->Arrive(id, pod->pod.shape, pod->gpu_spec, pod->priority, t);
      if (started.ok() && started->size() == 1 && (*started)[0].id == id) {
        Start(id, pod, (*started)[0].node, t, t, &(*started)[0].placement);
      } else if (!started.ok() || !started->empty()) {
        if (error_.ok()) {
          error_ = started.ok() ? absl::InternalError("policy: an arrival started other pods")
                                : started.status();
        }
      } else {
        waiting_.emplace(Key{-pod->priority, id}, Waiting{id, t, pod});
      }
      return;
    }
    const int best =
        BestFit(pod->pod, -1, [&](int n) -> const NodeRoom& { return nodes_[n].room; });
    if (best >= 0) {
      Start(id, pod, best, t, t);
    } else {
      waiting_.emplace(Key{-pod->priority, id}, Waiting{id, t, pod});
    }
  }

  void Depart(int64_t id) {
    auto it = running_.find(id);
    SimNode& node = nodes_[it->second.node];
    const int64_t before = node.room.gpu_free_milli();
    node.room.Give(it->second.pod->pod.shape, it->second.gpus);
    ready_free_gpu_milli_ += node.room.gpu_free_milli() - before;
    if (--node.running == 0) node.idle_since_s = now_;
    std::erase(node.pods, id);
    const int n = it->second.node;
    running_.erase(it);
    if (policy_) {
      StartWaiting(policy_->Depart(id, now_), now_);
    } else {
      Retry(n, now_);
    }
  }

  // Built-in best fit: starts, in queue order, the waiting pods that fit on node n (the only
  // node that gained room) there. (With a policy its scheduler does this.)
  void Retry(int n, double t) {
    std::set<std::tuple<int64_t, int64_t, int32_t, int32_t, const TracePod*>> failed;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const TracePod* p = it->second.pod;
      const core::PodShape& s = p->pod.shape;
      auto shape = std::make_tuple(s.cpu_milli, s.memory_mib, s.num_gpu, s.gpu_milli,
                                   p->pod.gpu_models.empty() ? nullptr : p);
      if (failed.count(shape) || !nodes_[n].room.Fits(p->pod)) {
        failed.insert(shape);
        ++it;
        continue;
      }
      Start(it->second.id, p, n, it->second.arrival_s, t);
      it = waiting_.erase(it);
    }
  }

  template <typename Delay>
  void Scan(double t, Delay delay) {
    // Scale-down: ready nodes idle for idle_s, while their group is above its min.
    std::vector<int> remove;
    for (int n : ready_) {
      const SimNode& node = nodes_[n];
      if (node.running == 0 && t - node.idle_since_s >= o_.idle_s &&
          size_[node.group] > groups_[node.group].min_size) {
        remove.push_back(n);
        --size_[node.group];
      }
    }
    for (int n : remove) RemoveNode(n, t);
    if (o_.drain_below_utilization > 0) DrainUnderused(t);
    if (waiting_.empty() && !o_.prescale) return;
    // Pods that fit on nodes still provisioning are left to them (CA counts upcoming nodes).
    std::vector<NodeRoom> upcoming;
    for (int n : provisioning()) upcoming.push_back(nodes_[n].room);
    std::vector<PendingPod> pending;
    for (const auto& [key, w] : waiting_) {
      bool covered = false;
      for (NodeRoom& r : upcoming) {
        if (r.Fits(w.pod->pod)) {
          r.Take(w.pod->pod.shape);
          covered = true;
          break;
        }
      }
      if (!covered) pending.push_back(w.pod->pod);
    }
    if (pending.empty() && !o_.prescale) return;
    std::vector<int> room(groups_.size());
    for (size_t g = 0; g < groups_.size(); ++g) {
      room[g] = std::max(0, groups_[g].max_size - size_[g]);
    }
    ScaleUp up;
    up.add.assign(groups_.size(), 0);
    if (!pending.empty()) up = DecideScaleUp(groups_, pending, room, o_.scale_up);
    std::vector<int> add = up.add;
    if (o_.prescale) Prescale(t, upcoming, room, up, pending, &add);
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int i = 0; i < add[g]; ++i) {
        joins_.emplace(delay(), Request(static_cast<int>(g)));
        if (t >= window_start_s_) ++report_.nodes_added;
      }
    }
  }

  void RemoveNode(int n, double t) {
    SimNode& node = nodes_[n];
    node.state = NodeState::kRemoved;
    ready_.erase(n);
    ready_free_gpu_milli_ -= node.room.gpu_free_milli();
    paid_gpus_ -= groups_[node.group].node.num_gpus;
    cost_rate_ -= groups_[node.group].node.cost_usd_per_hour;
    if (policy_) policy_->Remove(n);
    if (t >= window_start_s_) ++report_.nodes_removed;
  }

  // Utilization as CA computes it: the allocated GPU share of a GPU node, else the larger of
  // the allocated CPU and memory shares.
  double Utilization(const SimNode& node) const {
    const core::NodeSpec& spec = groups_[node.group].node;
    auto used = [](int64_t free, int64_t total) {
      return total > 0 ? 1.0 - static_cast<double>(free) / static_cast<double>(total) : 0.0;
    };
    if (spec.num_gpus > 0) {
      return used(node.room.gpu_free_milli(), int64_t{spec.num_gpus} * core::kMilliGpu);
    }
    return std::max(used(node.room.cpu_free_milli(), spec.cpu_milli),
                    used(node.room.memory_free_mib(), spec.memory_mib));
  }

  // CA's scale-down of underused nodes: a non-empty node below the utilization threshold for
  // idle_s, in a group above its min, is drained when all its pods fit on the other ready nodes.
  void DrainUnderused(double t) {
    std::vector<std::pair<double, int>> due;  // (utilization, node), least used first
    for (int n : ready_) {
      SimNode& node = nodes_[n];
      const double utilization = node.running == 0 ? 0.0 : Utilization(node);
      if (node.running == 0 || utilization >= o_.drain_below_utilization) {
        node.underused_since_s = -1;
        continue;
      }
      if (node.underused_since_s < 0) node.underused_since_s = t;
      if (t - node.underused_since_s >= o_.idle_s) due.emplace_back(utilization, n);
    }
    std::sort(due.begin(), due.end());
    int drained = 0;
    for (const auto& [utilization, n] : due) {
      if (drained == o_.max_drains_per_scan) break;
      if (size_[nodes_[n].group] <= groups_[nodes_[n].group].min_size) continue;
      if (o_.drain_keeps_headroom && !HeadroomAfterDrain(n, t)) continue;
      if (!TryDrain(n, t)) {
        if (!error_.ok()) return;
        continue;
      }
      --size_[nodes_[n].group];
      RemoveNode(n, t);
      ++drained;
      if (t >= window_start_s_) ++report_.nodes_drained;
    }
  }

  // Whether the ready nodes' free GPU capacity without node n (its pods moved onto the others)
  // covers the GPU demand expected before a new node could join.
  bool HeadroomAfterDrain(int n, double t) const {
    const double capacity =
        static_cast<double>(groups_[nodes_[n].group].node.num_gpus) * core::kMilliGpu;
    const double free_after = static_cast<double>(ready_free_gpu_milli_) - capacity;
    return free_after >= ExpectedDemand(t);
  }

  // GPU milli expected to arrive before a node requested now could join: the last hour's
  // arrival rate times (provision_max_s + scan_interval_s).
  double ExpectedDemand(double t) const {
    return recent_.ExpectedMilli(t, o_.provision_max_s + o_.scan_interval_s);
  }

  // Predictive pre-scaling: the pods expected to arrive before a node requested now could join
  // (the latest arrivals, as much GPU as ExpectedDemand) are fitted, after the pending pods,
  // on what the ready nodes, the upcoming ones and this scan's scale-up leave free; nodes are
  // requested, sized by the expander, for those that do not fit.
  void Prescale(double t, const std::vector<NodeRoom>& upcoming, const std::vector<int>& room,
                const ScaleUp& up, const std::vector<PendingPod>& pending, std::vector<int>* add) {
    const double expected_milli = ExpectedDemand(t);
    if (expected_milli <= 0) return;
    std::vector<NodeRoom> added;
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int i = 0; i < up.add[g]; ++i) added.emplace_back(groups_[g].node);
    }
    std::vector<const NodeRoom*> rooms;
    for (int n : ready_) rooms.push_back(&nodes_[n].room);
    for (const NodeRoom& r : upcoming) rooms.push_back(&r);
    for (const NodeRoom& r : added) rooms.push_back(&r);
    std::vector<PendingPod> pods = pending;
    const std::vector<PendingPod> expected = recent_.Latest(expected_milli);
    pods.insert(pods.end(), expected.begin(), expected.end());
    const std::vector<PendingPod> shortfall = NotFitting(pods, rooms);
    if (shortfall.empty()) return;
    std::vector<int> left(room.size());
    for (size_t g = 0; g < room.size(); ++g) left[g] = std::max(0, room[g] - up.add[g]);
    const ScaleUp pre = DecideScaleUp(groups_, shortfall, left, o_.scale_up);
    for (size_t g = 0; g < groups_.size(); ++g) (*add)[g] += pre.add[g];
    if (t >= window_start_s_) {
      for (int a : pre.add) report_.nodes_prescaled += a;
    }
  }

  // Moves every pod of node n to the other ready nodes (best fit, largest GPU request first) if
  // all of them fit there; false (nothing moved) otherwise.
  bool TryDrain(int n, double t) {
    std::vector<int64_t> pods = nodes_[n].pods;
    std::sort(pods.begin(), pods.end(), [&](int64_t a, int64_t b) {
      return running_.at(a).pod->pod.shape.TotalGpuMilli() >
             running_.at(b).pod->pod.shape.TotalGpuMilli();
    });
    // Plan on copies of the destinations' rooms.
    std::map<int, NodeRoom> rooms;
    std::vector<int> target;
    for (int64_t id : pods) {
      const PendingPod& pod = running_.at(id).pod->pod;
      const int best = BestFit(pod, n, [&](int m) -> const NodeRoom& {
        auto it = rooms.find(m);
        return it != rooms.end() ? it->second : nodes_[m].room;
      });
      if (best < 0) return false;
      rooms.try_emplace(best, nodes_[best].room).first->second.Take(pod.shape);
      target.push_back(best);
    }
    for (size_t i = 0; i < pods.size(); ++i) {
      if (!Move(pods[i], target[i], t)) return false;
    }
    return true;
  }

  // The ready node other than `skip` where `pod` leaves the least free GPU, then CPU, each
  // node's room read through room_of(node); -1 if none fits.
  template <typename RoomOf>
  int BestFit(const PendingPod& pod, int skip, RoomOf room_of) const {
    int best = -1;
    std::pair<int64_t, int64_t> best_key;
    for (int m : ready_) {
      if (m == skip) continue;
      const NodeRoom& room = room_of(m);
      if (!room.Fits(pod)) continue;
      std::pair<int64_t, int64_t> key{room.gpu_free_milli() - pod.shape.TotalGpuMilli(),
                                      room.cpu_free_milli() - pod.shape.cpu_milli};
      if (best < 0 || key < best_key) {
        best = m;
        best_key = key;
      }
    }
    return best;
  }

  // Moves running pod `id` to node m; it keeps its departure time. False (and error_ set) if
  // the policy fails or refuses the node the plan chose (the rooms it mirrors said it fits).
  bool Move(int64_t id, int m, double t) {
    RunningPod& r = running_.at(id);
    SimNode& from = nodes_[r.node];
    int64_t before = from.room.gpu_free_milli();
    from.room.Give(r.pod->pod.shape, r.gpus);
    ready_free_gpu_milli_ += from.room.gpu_free_milli() - before;
    if (--from.running == 0) from.idle_since_s = t;
    std::erase(from.pods, id);
    SimNode& to = nodes_[m];
    before = to.room.gpu_free_milli();
    if (policy_) {
      // The plan checked the rooms, which the state mirrors: the policy takes it there.
      absl::StatusOr<bool> placed = policy_->MoveTo(id, m, t, &r.placement);
      if (!placed.ok() || !*placed) {
        error_ =
            !placed.ok()
                ? placed.status()
                : absl::InternalError("drain: the policy refused a pod on the node the plan chose");
        return false;
      }
      to.room.TakeOn(r.pod->pod.shape, r.placement.gpu_ids());
      r.gpus.assign(r.placement.gpu_ids().begin(), r.placement.gpu_ids().end());
    } else {
      r.gpus = to.room.Take(r.pod->pod.shape);
    }
    ready_free_gpu_milli_ -= before - to.room.gpu_free_milli();
    ++to.running;
    to.pods.push_back(id);
    r.node = m;
    if (t >= window_start_s_) ++report_.pods_moved;
    return true;
  }

  std::vector<int> provisioning() const {
    std::vector<int> out;
    for (size_t n = nodes_.size(); n-- > 0;) {
      if (nodes_[n].state == NodeState::kProvisioning) out.push_back(static_cast<int>(n));
    }
    return out;
  }

  const std::vector<NodeGroup>& groups_;
  const ChurnOptions& o_;
  std::unique_ptr<internal::PolicyPlacer> policy_;
  std::vector<SimNode> nodes_;
  std::set<int> ready_;
  std::vector<int> size_;  // provisioning + ready nodes per group
  std::map<Key, Waiting> waiting_;
  std::map<int64_t, RunningPod> running_;
  using Event = std::pair<double, int64_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> departures_;
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>,
                      std::greater<std::pair<double, int>>>
      joins_;
  std::vector<double> delays_;
  double now_ = 0;
  double window_start_s_ = 0;
  double end_s_ = 0;
  double paid_gpus_ = 0;
  double cost_rate_ = 0;
  int64_t ready_free_gpu_milli_ = 0;
  // The last hour's arrivals (the headroom guard's and pre-scaling's rate).
  internal::ArrivalWindow recent_{0, 3600};
  ChurnReport report_;
  absl::Status error_;  // the first policy error; it stops the run
};

}  // namespace

absl::StatusOr<ChurnReport> RunChurn(const std::vector<NodeGroup>& groups,
                                     const std::vector<core::PodSpec>& pods,
                                     const ChurnOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  if (groups.empty()) return absl::InvalidArgumentError("groups: no node group");
  std::unique_ptr<internal::PolicyPlacer> policy;
  if (!options.policy.empty()) {
    absl::StatusOr<std::unique_ptr<internal::PolicyPlacer>> created =
        internal::PolicyPlacer::Create(groups, pods, options);
    if (!created.ok()) return created.status();
    policy = std::move(*created);
  }
  std::vector<TracePod> trace;
  int64_t never_fit = 0;
  double lifetime_sum = 0, gpu_sum = 0;
  for (const core::PodSpec& p : pods) {
    if (p.deletion_s < p.creation_s || p.deletion_s < 0) continue;
    TracePod t{static_cast<double>(p.creation_s), PendingPod{p.shape, {}}, p.priority,
               std::max(1.0, static_cast<double>(p.deletion_s - p.creation_s))};
    if (!p.gpu_spec.empty()) t.pod.gpu_models = absl::StrSplit(p.gpu_spec, '|');
    t.gpu_spec = p.gpu_spec;
    if (policy) t.pod.shape.gpu_model_mask = policy->ModelMask(p.gpu_spec);
    bool fits = false;
    for (const NodeGroup& g : groups) fits = fits || FitsEmptyNode(g.node, t.pod);
    if (!fits) {
      ++never_fit;
      continue;
    }
    lifetime_sum += t.lifetime_s;
    gpu_sum += static_cast<double>(p.shape.TotalGpuMilli());
    trace.push_back(std::move(t));
  }
  if (trace.empty() || gpu_sum == 0) {
    return absl::InvalidArgumentError("pods: no pod with a deletion time and a GPU request fits");
  }
  double capacity_milli = 0;
  for (const NodeGroup& g : groups) {
    capacity_milli += static_cast<double>(g.max_size) * g.node.num_gpus * core::kMilliGpu;
  }
  const double n = static_cast<double>(trace.size());
  // Replay: the pods in creation order (stable: file order among equal times); the rate is
  // not used (1 keeps the unused Poisson draw well defined).
  const double rate =
      options.replay ? 1.0 : options.load * capacity_milli / ((lifetime_sum / n) * (gpu_sum / n));
  if (options.replay) {
    std::stable_sort(trace.begin(), trace.end(), [](const TracePod& a, const TracePod& b) {
      return a.replay_at_s < b.replay_at_s;
    });
  }
  // Bounded work, whatever the options: every run ends in reasonable time.
  const double span_s = (options.warmup_h + options.duration_h) * 3600;
  if (options.replay && n > kMaxChurnArrivals) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pods: %d to replay, more than the limit of %d", trace.size(), kMaxChurnArrivals));
  }
  if (!options.replay && !(rate * span_s <= kMaxChurnArrivals)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "load: %.4g expected arrivals over warm-up and window, more than the limit of %d "
        "(lower the load or shorten the run)",
        rate * span_s, kMaxChurnArrivals));
  }
  if (!(span_s / options.scan_interval_s <= kMaxChurnScans)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scan_interval_s: %.4g scans over warm-up and window, more than the limit of %d",
        span_s / options.scan_interval_s, kMaxChurnScans));
  }
  Churn churn(groups, options, std::move(policy));
  absl::StatusOr<ChurnReport> report = churn.Run(trace, rate);
  if (report.ok()) report->pods_never_fit = never_fit;
  return report;
}

std::vector<core::PodSpec> PodsFromJobs(const std::vector<JobArrival>& jobs, int gpus_per_node) {
  SEEDANCE_CHECK(gpus_per_node >= 1) << "jobs replayed on nodes of " << gpus_per_node << " GPUs";
  std::vector<core::PodSpec> pods;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobArrival& job = jobs[j];
    for (int32_t left = job.gpus, part = 0; left > 0; left -= gpus_per_node, ++part) {
      core::PodSpec p;
      p.name = absl::StrCat("job-", j, "-", part);
      p.shape.num_gpu = std::min(left, gpus_per_node);
      p.shape.gpu_milli = core::kMilliGpu;
      p.creation_s = job.submit_s;
      p.deletion_s = job.submit_s + job.duration_s;
      pods.push_back(std::move(p));
    }
  }
  return pods;
}

}  // namespace seedance::clusterscale
