#include "seedance/sched/scheduler.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

namespace seedance::sched {

namespace {

constexpr std::string_view kChangeNames[] = {"NodeAdded",  "NodeUpdated", "NodeDeleted",
                                             "PodAdded",   "PodBound",    "PodAssumed",
                                             "PodUnbound", "PodDeleted",  "PodUpdated"};

std::string Str(std::string_view s) { return std::string(s); }
// Debian's Abseil has its own string_view: the hash maps' heterogeneous lookups need it.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string_view ChangeKindName(Change::Kind kind) { return kChangeNames[kind]; }

SchedulerOptions SimulationOptions() {
  SchedulerOptions o;
  o.queue.initial_backoff_s = 0;
  o.queue.max_backoff_s = 0;
  o.queue.max_unschedulable_s = std::numeric_limits<double>::infinity();
  o.equivalence_groups = true;
  o.room_freed = RoomFreedWake::kBestFirst;
  o.record_failures = false;
  return o;
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options) {
  if (!Registry::Builtins().Contains(options.default_profile.policy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown placement policy '", options.default_profile.policy, "'"));
  }
  absl::StatusOr<core::ClusterState> state = core::ClusterState::Create({});
  if (!state.ok()) return state.status();
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(options), std::move(*state)));
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options,
                                                             core::ClusterState cluster) {
  if (cluster.gpu_allocated_milli() != 0 || cluster.cpu_allocated_milli() != 0) {
    return absl::InvalidArgumentError("a scheduler starts from a cluster that holds no pods");
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> s = Create(std::move(options));
  if (!s.ok()) return s.status();
  (*s)->state_ = std::move(cluster);
  return s;
}

absl::Status Scheduler::BuildDefaultProfile() {
  PodInfo none;
  const ProfileSelector selector = std::exchange(selector_, nullptr);
  absl::Status st = FrameworkFor(none).status();
  selector_ = selector;
  return st;
}

Scheduler::Scheduler(SchedulerOptions options, core::ClusterState state)
    : options_(std::move(options)), state_(std::move(state)), queue_(options_.queue) {}

void Scheduler::SetProfileSelector(ProfileSelector selector) { selector_ = std::move(selector); }

std::vector<Change> Scheduler::TakeChanges() {
  std::vector<Change> out;
  out.swap(changes_);
  return out;
}

absl::Status Scheduler::UpdateAnnotations(std::string_view uid,
                                          const std::map<std::string, std::string>& patch) {
  if (ledger_.Find(uid) == nullptr) {
    return absl::NotFoundError(absl::StrCat("pod '", Sv(uid), "' not found"));
  }
  for (const auto& [key, value] : patch) {
    if (absl::Status st = ledger_.SetAnnotation(uid, key, value); !st.ok()) return st;
  }
  Record(Change::kPodUpdated, Str(uid));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------- nodes

absl::Status Scheduler::PutNode(core::NodeSpec spec, bool* created) {
  const int n = state_.FindNode(spec.name);
  std::string name = spec.name;
  if (n < 0) {
    absl::StatusOr<int> added = state_.AddNode(std::move(spec));
    if (!added.ok()) return added.status();
    if (created) *created = true;
    Record(Change::kNodeAdded, name);
    queue_.OnEvent(QueueEvent::kNodeAdded, 0);
    return absl::OkStatus();
  }
  if (absl::Status st = state_.UpdateNode(n, std::move(spec)); !st.ok()) return st;
  if (created) *created = false;
  Record(Change::kNodeUpdated, name);
  queue_.OnEvent(QueueEvent::kNodeUpdated, 0);
  return absl::OkStatus();
}

absl::Status Scheduler::CordonNode(std::string_view name, bool cordoned) {
  const int n = state_.FindNode(name);
  if (n < 0) return absl::NotFoundError(absl::StrCat("node '", Str(name), "' not found"));
  if (state_.cordoned(n) == cordoned) return absl::OkStatus();
  state_.SetCordoned(n, cordoned);
  Record(Change::kNodeUpdated, Str(name));
  if (!cordoned) queue_.OnEvent(QueueEvent::kNodeUpdated, 0);
  return absl::OkStatus();
}

absl::Status Scheduler::DeleteNode(std::string_view name, bool drain,
                                   std::vector<std::string>* evicted, bool requeue) {
  const int n = state_.FindNode(name);
  if (n < 0) return absl::NotFoundError(absl::StrCat("node '", Str(name), "' not found"));
  std::vector<const PodInfo*> pods = ledger_.PodsOnNode(n);
  if (!pods.empty() && !drain) {
    return absl::FailedPreconditionError(
        absl::StrCat("node '", Str(name), "' has ", pods.size(),
                     " pods bound; delete them first or pass ?drain=true"));
  }
  std::vector<std::string> uids;
  for (const PodInfo* p : pods) uids.push_back(p->uid);
  std::set<std::string> gangs_hit;
  for (const std::string& uid : uids) {
    const PodInfo* p = ledger_.Find(uid);
    if (p != nullptr && (requeue || !p->gang.empty())) {
      // Requeued, not ended; a gang member's gang is placed again, whole.
      if (!p->gang.empty()) gangs_hit.insert(GangKey(*p));
      if (absl::Status st = Evict(uid, 0); !st.ok()) return st;
      last_eviction_[uid] = absl::StrCat("node ", Str(name), " drained");
    } else if (absl::Status st = DeletePod(uid, 0); !st.ok()) {
      return st;
    }
    if (evicted) evicted->push_back(uid);
  }
  for (const std::string& key : gangs_hit) {
    auto it = gangs_.find(key);
    if (it == gangs_.end() || it->second.empty()) continue;
    const PodInfo* any = ledger_.Find(*it->second.begin());
    int placed = 0;
    for (const std::string& m : it->second) {
      placed += ledger_.Find(m)->phase != PodPhase::kPending ? 1 : 0;
    }
    if (any != nullptr && placed > 0 && placed < any->gang_min) EvictGang(*any, 0);
  }
  if (absl::Status st = state_.RemoveNode(n); !st.ok()) return st;
  Record(Change::kNodeDeleted, Str(name));
  return absl::OkStatus();
}

// ----------------------------------------------------------------------------------------- pods

absl::Status Scheduler::SubmitPod(PodInfo pod, double now_s) {
  pod.phase = PodPhase::kPending;
  pod.placement = core::Placement{};
  const std::string uid = pod.uid;
  if (absl::Status st = ledger_.Add(std::move(pod)); !st.ok()) return st;
  Record(Change::kPodAdded, uid);
  const PodInfo* added = ledger_.Find(uid);
  Account(*added, false, +1);
  JoinGang(*added);
  LearnArrival(*added);
  queue_.Add(NewQueued(*added, now_s), now_s);
  return absl::OkStatus();
}

absl::Status Scheduler::RestorePod(PodInfo pod, double now_s) {
  if (pod.phase == PodPhase::kPending) return SubmitPod(std::move(pod), now_s);
  const core::PodShape shape = ResolvedShape(pod);
  if (absl::Status st = state_.Allocate(shape, pod.placement); !st.ok()) {
    return absl::DataLossError(absl::StrCat("pod ", pod.uid, " cannot be restored onto node ",
                                            pod.placement.node, ": ", st.message()));
  }
  const std::string uid = pod.uid;
  const core::Placement placement = pod.placement;
  const PodPhase phase = pod.phase;
  pod.phase = PodPhase::kPending;
  if (absl::Status st = ledger_.Add(std::move(pod)); !st.ok()) {
    (void)state_.Release(shape, placement);
    return st;
  }
  const double deadline = now_s + options_.assume_timeout_s;
  if (absl::Status st = ledger_.Assume(uid, placement, static_cast<int64_t>(deadline * 1e9), now_s);
      !st.ok()) {
    return st;
  }
  const PodInfo* restored = ledger_.Find(uid);
  Account(*restored, true, +1);
  JoinGang(*restored);
  // A policy that learns the workload from arrivals (cas) learns the running pods too, as a
  // pending pod is learnt in SubmitPod: after a restart or a leader change the workload is the
  // pods on the nodes, not the few that arrive next.
  LearnArrival(*restored);
  if (phase == PodPhase::kBound) return ledger_.Bind(uid);
  return absl::OkStatus();
}

absl::Status Scheduler::DeletePod(std::string_view uid, double now_s) {
  const PodInfo* pod = ledger_.Find(uid);
  if (!pod) return absl::NotFoundError(absl::StrCat("pod '", Str(uid), "' not found"));
  const bool placed = pod->phase != PodPhase::kPending;
  const int node = pod->placement.node;
  Account(*pod, placed, -1);
  LeaveGang(*pod);
  if (placed) ReleaseResources(*pod);
  Dequeue(uid);
  last_failure_.erase(Sv(uid));
  last_eviction_.erase(Sv(uid));
  placed_by_.erase(Sv(uid));
  bind_failures_.erase(Sv(uid));
  absl::StatusOr<PodInfo> removed = ledger_.Remove(uid);
  if (!removed.ok()) return removed.status();
  Record(Change::kPodDeleted, Str(uid));
  if (placed) RequeueAfterRoomFreed(node, now_s);
  return absl::OkStatus();
}

void Scheduler::ReleaseResources(const PodInfo& pod) {
  const core::PodShape shape = ResolvedShape(pod);
  auto by = placed_by_.find(pod.uid);
  if (by != placed_by_.end()) {
    if (auto it = placers_.find(by->second); it != placers_.end()) {
      it->second.framework->Release(shape, pod.placement, state_);
      return;
    }
  }
  const absl::Status st = state_.Release(shape, pod.placement);
  SEEDANCE_CHECK(st.ok()) << "pod " << pod.uid << " recorded on node " << pod.placement.node
                          << " cannot be released: " << st.message();
}

QueuedPod Scheduler::NewQueued(const PodInfo& pod, double now_s) {
  return {.id = ledger_.HandleOf(pod.uid),
          .priority = pod.priority,
          .seq = next_seq_++,
          .attempts = 0,
          .group = GroupOf(pod),
          .arrived_s = now_s};
}

uint64_t Scheduler::GroupOf(const PodInfo& pod) {
  if (!options_.equivalence_groups || !pod.gang.empty()) return 0;
  // Everything a decision reads of a pod outside a gang: the profile selector, the queue
  // (namespace), preemption (priority), the fit (GPU spec and shape). '\x1f' cannot occur in a
  // namespace, label or GPU spec the API accepts; a caller's odd string only splits a group.
  std::string key =
      absl::StrCat(pod.ns, "\x1f", pod.priority, "\x1f", pod.gpu_spec, "\x1f", pod.shape.cpu_milli,
                   ",", pod.shape.memory_mib, ",", pod.shape.num_gpu, ",", pod.shape.gpu_milli, ",",
                   static_cast<int>(pod.device.type), ",", pod.device.memory_mib);
  for (const auto& [k, v] : pod.labels) absl::StrAppend(&key, "\x1f", k, "\x1f", v);
  auto [it, added] = group_ids_.try_emplace(std::move(key), group_ids_.size() + 1);
  if (added) {
    group_requests_.push_back({pod.gpu_spec, pod.device, ResolvedShape(pod), models_seen()});
  }
  return it->second;
}

const core::PodShape* Scheduler::QueuedShape(const QueuedPod& q, core::PodShape* own) const {
  if (q.group != 0) {
    GroupRequest& g = group_requests_[q.group - 1];
    if (g.models_seen != models_seen()) {
      g.shape.gpu_model_mask = state_.PodModelMask(g.gpu_spec, g.device, g.shape.num_gpu > 0);
      g.models_seen = models_seen();
    }
    return &g.shape;
  }
  const PodInfo* p = ByQueueId(q.id);
  if (p == nullptr) return nullptr;
  *own = ResolvedShape(*p);
  return own;
}

void Scheduler::RequeueAfterRoomFreed(int node, double now_s) {
  if (options_.room_freed == RoomFreedWake::kBestFirst) {
    if (std::find(freed_nodes_.begin(), freed_nodes_.end(), node) == freed_nodes_.end()) {
      freed_nodes_.push_back(node);
    }
    return WakeBestForFreedRoom(now_s);
  }
  // Only the freed node gained room: wake the pods that would fit there now.
  queue_.OnEvent(QueueEvent::kPodDeleted, now_s, [this, node](const QueuedPod& q) {
    core::PodShape own;
    const core::PodShape* shape = QueuedShape(q, &own);
    return shape != nullptr && state_.alive(node) && state_.Fits(node, *shape);
  });
}

void Scheduler::WakeBestForFreedRoom(double now_s) {
  auto hint = [this](const QueuedPod& q) {
    const std::pair<uint64_t, uint64_t> key =
        q.group != 0 ? std::pair<uint64_t, uint64_t>{q.group, 0} : std::pair{uint64_t{0}, q.id};
    for (const auto& failed : failed_since_freed_) {
      if (failed == key) return false;
    }
    core::PodShape own;
    const core::PodShape* shape = QueuedShape(q, &own);
    if (shape == nullptr) return false;
    for (int node : freed_nodes_) {
      if (state_.alive(node) && state_.Fits(node, *shape)) return true;
    }
    return false;
  };
  queue_.OnEvent(QueueEvent::kPodDeleted, now_s, hint, 1);
}

const PodInfo* Scheduler::ByQueueId(uint64_t id) const {
  // A queued pod is Pending; a record that is not is a broken invariant, which the attempt's
  // ledger transition (Assume) catches rather than this lookup hiding it.
  return ledger_.FindByHandle(id);
}

absl::Status Scheduler::Bind(std::string_view uid) {
  if (absl::Status st = ledger_.Bind(uid); !st.ok()) return st;
  if (auto it = bind_failures_.find(Sv(uid)); it != bind_failures_.end()) bind_failures_.erase(it);
  Record(Change::kPodBound, Str(uid));
  return absl::OkStatus();
}

absl::Status Scheduler::Forget(std::string_view uid, double now_s, std::string_view reason) {
  const PodInfo* pod = ledger_.Find(uid);
  if (!pod) return absl::NotFoundError(absl::StrCat("pod '", Str(uid), "' not found"));
  if (pod->phase != PodPhase::kAssumed) {
    return absl::FailedPreconditionError(
        absl::StrCat("pod '", Str(uid), "' is ", Str(PodPhaseName(pod->phase)), ", not Assumed"));
  }
  const int node = pod->placement.node;
  ReleaseResources(*pod);
  placed_by_.erase(Str(uid));
  if (absl::Status st = ledger_.Forget(uid); !st.ok()) return st;
  AccountMove(*pod, /*to_placed=*/false);
  Record(Change::kPodUnbound, Str(uid));
  QueuedPod q = NewQueued(*pod, now_s);
  if (reason.empty()) {
    queue_.Add(q, now_s);
  } else {
    last_failure_[Str(uid)] = Str(reason);
    q.attempts = bind_failures_[Str(uid)]++;
    q.popped_at_event = 0;  // as if something changed since: to backoff, not unschedulable
    q.hold_backoff = true;
    queue_.AddUnschedulable(q, now_s);
  }
  RequeueAfterRoomFreed(node, now_s);
  return absl::OkStatus();
}

absl::Status Scheduler::Evict(std::string_view uid, double now_s) {
  const PodInfo* pod = ledger_.Find(uid);
  if (!pod) return absl::NotFoundError(absl::StrCat("pod '", Str(uid), "' not found"));
  if (pod->phase == PodPhase::kPending) return absl::OkStatus();
  if (pod->phase == PodPhase::kBound) {
    // Bound -> Assumed is not a ledger transition; remove and re-add it as Pending instead.
    PodInfo copy = *pod;
    ReleaseResources(copy);
    placed_by_.erase(copy.uid);
    absl::StatusOr<PodInfo> removed = ledger_.Remove(uid);
    if (!removed.ok()) return removed.status();
    const int node = copy.placement.node;
    copy.phase = PodPhase::kPending;
    copy.placement = core::Placement{};
    if (absl::Status st = ledger_.Add(copy); !st.ok()) return st;
    AccountMove(copy, /*to_placed=*/false);
    Record(Change::kPodUnbound, copy.uid);
    queue_.Add(NewQueued(*ledger_.Find(copy.uid), now_s), now_s);
    RequeueAfterRoomFreed(node, now_s);
    return absl::OkStatus();
  }
  return Forget(uid, now_s);
}

absl::Status Scheduler::MoveTo(std::string_view uid_view, std::string_view node, double now_s) {
  const std::string uid(uid_view);  // a view into the record this replaces would dangle
  const PodInfo* pod = ledger_.Find(uid);
  if (!pod) return absl::NotFoundError(absl::StrCat("pod '", Str(uid), "' not found"));
  const int to = state_.FindNode(node);
  if (to < 0) return absl::NotFoundError(absl::StrCat("node '", Str(node), "' not found"));
  if (pod->phase != PodPhase::kBound || !pod->gang.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pod '", Str(uid), "' is ",
        pod->gang.empty() ? Sv(PodPhaseName(pod->phase)) : absl::string_view("in a gang"),
        ": only a bound pod outside a gang moves"));
  }
  const core::PodShape shape = ResolvedShape(*pod);
  if (to == pod->placement.node || state_.cordoned(to) || !state_.Fits(to, shape)) {
    return absl::FailedPreconditionError(
        absl::StrCat("pod '", Str(uid), "' does not fit on node '", Str(node), "'"));
  }
  absl::StatusOr<Framework*> fw = FrameworkFor(*pod);
  if (!fw.ok()) return fw.status();
  PodInfo moved = *pod;
  ReleaseResources(moved);
  Outcome out = (*fw)->PlaceOn(shape, state_, to);
  if (!out.ok()) {
    // A filter beyond the fit refused it: back where it was.
    if (out.code == Code::kWait) (*fw)->RejectWaiting(shape, out.placement, state_);
    const Outcome back = (*fw)->PlaceOn(shape, state_, moved.placement.node);
    if (!back.ok()) {
      return absl::InternalError(
          absl::StrCat("pod ", moved.uid, " cannot go back to the node it left: ", back.reason));
    }
    moved.placement = back.placement;
  } else {
    moved.placement = out.placement;
  }
  // Bound -> Bound elsewhere is not a ledger transition: the record is replaced.
  if (absl::StatusOr<PodInfo> removed = ledger_.Remove(uid); !removed.ok()) return removed.status();
  moved.placed_at_s = now_s;
  if (absl::Status added = ledger_.Add(moved); !added.ok()) return added;
  Record(Change::kPodBound, moved.uid);
  if (!out.ok()) return absl::FailedPreconditionError(out.reason);
  return absl::OkStatus();
}

int Scheduler::ExpireAssumptions(double now_s) {
  int n = 0;
  for (const std::string& uid : ledger_.ExpiredAssumptions(static_cast<int64_t>(now_s * 1e9))) {
    if (Forget(uid, now_s).ok()) ++n;
  }
  return n;
}

// ----------------------------------------------------------------------------------- scheduling

core::PodShape Scheduler::ResolvedShape(const PodInfo& pod) const {
  core::PodShape shape = pod.shape;
  shape.gpu_model_mask = state_.PodModelMask(pod.gpu_spec, pod.device, shape.num_gpu > 0);
  return shape;
}

void Scheduler::LearnArrival(const PodInfo& pod) {
  bool created = false;
  absl::StatusOr<Framework*> fw = FrameworkFor(pod, &created);
  if (!fw.ok() || (created && ledger_.Find(pod.uid) != nullptr)) return;
  (*fw)->NotifyArrival(ResolvedShape(pod));
}

absl::StatusOr<Framework*> Scheduler::FrameworkFor(const PodInfo& pod, bool* created) {
  // The default profile is read in place: copying its strings and maps cost every decision.
  ProfileSpec selected;
  if (selector_) selected = selector_(pod);
  const ProfileSpec& spec = selector_ ? selected : options_.default_profile;
  auto it = placers_.find(spec.name);
  if (it != placers_.end() && it->second.spec == spec) return it->second.framework.get();
  PolicyContext ctx;
  ctx.oracle_workload = options_.oracle_workload;
  ctx.params = spec.options;
  ctx.elastic = options_.elastic;
  absl::StatusOr<Profile> profile = Registry::Builtins().Create(spec.policy, ctx);
  if (!profile.ok()) return profile.status();
  for (Profile::WeightedScore& ws : profile->scores) {
    auto w = spec.weights.find(std::string(ws.plugin->Name()));
    if (w != spec.weights.end()) ws.weight = w->second;
  }
  FrameworkOptions fo;
  fo.seed = options_.seed;
  fo.score_cache = options_.score_cache;
  fo.node_order = options_.node_order;
  fo.topology_gpus = options_.topology_gpus;
  Placer placer{spec, std::make_unique<Framework>(std::move(*profile), std::move(fo))};
  Framework* fw = placer.framework.get();
  placers_.insert_or_assign(spec.name, std::move(placer));
  // Built anew (first use, or a reload changed the spec): it learns the pods already here.
  ledger_.ForEach([&](const PodInfo& p) {
    const bool served =
        selector_ ? selector_(p).name == spec.name : options_.default_profile.name == spec.name;
    if (served) fw->NotifyArrival(ResolvedShape(p));
  });
  if (created != nullptr) *created = true;
  return fw;
}

int Scheduler::RunCycles(double now_s, int max_pods) {
  int tried = 0;
  while (tried < max_pods) {
    std::optional<QueuedPod> q = queue_.Pop(now_s);
    if (!q) {
      // Dry: the room freed so far has been offered to every request that fits it.
      freed_nodes_.clear();
      failed_since_freed_.clear();
      break;
    }
    ++tried;
    const int64_t placed_before = attempts_scheduled_;
    TryOne(*q, now_s);
    if (freed_nodes_.empty()) continue;
    if (attempts_scheduled_ == placed_before) {
      failed_since_freed_.push_back(q->group != 0 ? std::pair<uint64_t, uint64_t>{q->group, 0}
                                                  : std::pair{uint64_t{0}, q->id});
    }
    WakeBestForFreedRoom(now_s);
  }
  return tried;
}

void Scheduler::TryOne(const QueuedPod& q, double now_s) {
  // A queue id maps to a pod only while that pod is queued, so Pending (checked by Assume below).
  const PodInfo* pod = ByQueueId(q.id);
  if (!pod) return;  // deleted meanwhile
  const std::string uid = pod->uid;
  if (!pod->gang.empty()) return TryGang(q, *pod, now_s);
  absl::StatusOr<Framework*> fw = FrameworkFor(*pod);
  if (!fw.ok()) {
    ++attempts_error_;
    last_failure_[uid] = std::string(fw.status().message());
    queue_.AddUnschedulable(q, now_s);
    return;
  }
  // A group's request is its pods' (the group key holds the shape and GPU spec).
  const core::PodShape shape = q.group != 0 ? *QueuedShape(q, nullptr) : ResolvedShape(*pod);
  if (const std::string over = OverLimit(*pod); !over.empty()) {
    ++attempts_unschedulable_;
    last_failure_[uid] = over;
    queue_.AddUnschedulable(q, now_s);
    return;
  }
  Outcome out = (*fw)->Schedule(shape, state_);
  // PostFilter: preemption or reclaim, then one more try.
  if (out.code == Code::kUnschedulable && Preempt(*pod, shape, now_s)) {
    pod = ledger_.Find(uid);
    out = (*fw)->Schedule(shape, state_);
  }
  if (out.code == Code::kError) {
    ++attempts_error_;
    last_failure_[uid] = out.reason;
    queue_.AddUnschedulable(q, now_s);
    return;
  }
  if (!out.ok()) {
    ++attempts_unschedulable_;
    if (options_.record_failures) {
      last_failure_[uid] = FitErrorMessage((*fw)->Explain(shape, state_));
    }
    queue_.AddUnschedulable(q, now_s);
    return;
  }
  CommitPlacement(uid, out, now_s);
}

void Scheduler::CommitPlacement(const std::string& uid, const Outcome& out, double now_s,
                                bool accounted) {
  const PodInfo* pod = ledger_.Find(uid);
  ++attempts_scheduled_;
  last_failure_.erase(uid);
  last_eviction_.erase(uid);
  placed_by_[uid] = selector_ ? selector_(*pod).name : options_.default_profile.name;
  Dequeue(uid);  // a gang member other than the popped one is still queued
  if (!accounted) AccountMove(*pod, /*to_placed=*/true);
  const double deadline = now_s + options_.assume_timeout_s;
  // The pod came off the queue, so the ledger holds it Pending and the framework checked the
  // placement: Assume (and Bind right after) cannot fail unless queue and ledger are out of step.
  absl::Status recorded =
      ledger_.Assume(uid, out.placement, static_cast<int64_t>(deadline * 1e9), now_s);
  if (recorded.ok() && options_.internal_binding) recorded = ledger_.Bind(uid);
  SEEDANCE_CHECK(recorded.ok()) << "pod " << uid
                                << " placed but not recorded in the ledger: " << recorded.message();
  Record(options_.internal_binding ? Change::kPodBound : Change::kPodAssumed, uid);
}

absl::StatusOr<Diagnosis> Scheduler::Explain(std::string_view uid) const {
  const PodInfo* pod = ledger_.Find(uid);
  if (!pod) return absl::NotFoundError(absl::StrCat("pod '", Str(uid), "' not found"));
  return Diagnose(state_, ResolvedShape(*pod));
}

std::string Scheduler::LastFailure(std::string_view uid) const {
  auto it = last_failure_.find(Sv(uid));
  return it == last_failure_.end() ? "" : it->second;
}

std::string Scheduler::LastEviction(std::string_view uid) const {
  auto it = last_eviction_.find(Sv(uid));
  return it == last_eviction_.end() ? "" : it->second;
}

}  // namespace seedance::sched
