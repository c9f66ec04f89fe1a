// The live scheduler's core: cluster state, pod ledger, scheduling queue and placement
// frameworks, driven one event at a time.
//
// A Scheduler is what `seedance server` runs and what a test can run without a server: nodes
// come and go (PutNode, CordonNode, DeleteNode), pods are submitted and deleted (SubmitPod,
// DeletePod), and RunCycles takes pods off the queue in QueueSort order and places each with the
// framework of its placement profile - the same sched::Framework, the same policies and the same
// ClusterState the simulator proves. Every change is reported as a Change, in order, so that the
// caller can make it durable and publish it (the server turns each into a revision).
//
// Binding: a placement is assumed in the ledger (its resources held in the ClusterState) and, with
// internal binding (the default, no external binder), bound at once. An external binder (the
// Kubernetes backend) confirms with Bind or gives up with Forget; an assumption that is neither
// confirmed nor forgotten within assume_timeout_s is forgotten by ExpireAssumptions, as
// kube-scheduler's cache does.
//
// Thread-safety: none. One loop owns a Scheduler.
#ifndef SEEDANCE_SCHED_SCHEDULER_H_
#define SEEDANCE_SCHED_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/explain.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/ledger.h"
#include "seedance/sched/queue.h"
#include "seedance/sched/registry.h"
#include "seedance/sched/tenancy.h"

namespace seedance::sched {

// A placement profile: a registered policy with its options (policy.h's PlacementProfile
// without the dependency on the policy library).
struct ProfileSpec {
  std::string name;    // e.g. "default", "training"
  std::string policy;  // a name in Registry::Builtins()
  std::map<std::string, std::string> options;
  std::map<std::string, int64_t> weights;  // score plugin name -> weight (absent: as built)
  bool operator==(const ProfileSpec&) const = default;
};

// What room freed on a node (a pod deleted, forgotten or evicted) wakes in the queue.
enum class RoomFreedWake {
  // Every waiting pod that fits the freed node now (kube-scheduler's queueing hint); the next
  // cycles try them best first.
  kAllThatFit,
  // The best waiting pod that fits a node freed since the queue last ran dry, and after each
  // attempt the next best that fits such a node as that attempt left it, until none does; a
  // request (equivalence group, or pod outside one) whose attempt failed is not woken again
  // until then. When nothing else happens between the event and the cycles that follow it (the
  // simulator's case) the placements are kAllThatFit's: a waiting pod fits no node but a freed
  // one, so a pod that no longer fits the freed node fails wherever it is tried (the churn
  // same-decisions test checks it). The gain is cost: one fit test instead of one scheduling
  // attempt for each woken request the earlier placements left no room for.
  kBestFirst,
};

struct SchedulerOptions {
  ProfileSpec default_profile{"default", "cas", {}, {}};
  uint64_t seed = 42;
  QueueOptions queue;
  // false: placements wait in kAssumed for an external Bind (or Forget / expiry).
  bool internal_binding = true;
  double assume_timeout_s = 30;
  bool score_cache = true;
  // fgd's oracle (the workload's typical shapes); empty: fgd cannot be built (every pod it
  // would place is an error attempt; BuildDefaultProfile says so up front). Other policies
  // ignore it.
  TargetWorkload oracle_workload;
  // A cluster autoscaler grows and shrinks the cluster (PolicyContext::elastic).
  bool elastic = false;
  // The frameworks' tie-break node order and GPU chooser (FrameworkOptions::node_order and
  // topology_gpus): the simulator's seeded order; empty = index order, as the server uses.
  std::vector<int> node_order;
  bool topology_gpus = true;
  // Pods with the same request (namespace, priority, labels, GPU spec and shape, and no gang)
  // share an equivalence group in the queue (queue.h): an event asks one hint per group, and a
  // failed attempt sends the group's other woken pods back with it without their own attempt
  // (their LastFailure stays as it was). Lets the simulator keep 100,000 waiting pods; the
  // group table grows with the distinct requests seen.
  bool equivalence_groups = false;
  RoomFreedWake room_freed = RoomFreedWake::kAllThatFit;
  // Keep each failed attempt's diagnosis (LastFailure, the API's last failure: a pass over
  // every node); false skips it for a caller that never reads it (the simulator).
  bool record_failures = true;
};

// The options a simulator runs the scheduler with (sim::Run's churn and replay, the cluster
// autoscaler's churn), over the defaults: a queue without backoff whose waiting pods wait for an
// event however long it takes (the simulator's clock jumps), equivalence groups, the best-first
// wake after a departure, and no failure diagnoses. The same decisions as the defaults'
// (churn_decisions_test); the caller sets the profile, seed, oracle and node order.
SchedulerOptions SimulationOptions();

struct Change {
  enum Kind {
    kNodeAdded,
    kNodeUpdated,
    kNodeDeleted,
    kPodAdded,
    kPodBound,
    kPodAssumed,
    kPodUnbound,
    kPodDeleted,
    kPodUpdated  // annotations only (UpdateAnnotations): no change of phase or placement
  };
  Kind kind;
  std::string key;  // node name or pod uid
};
std::string_view ChangeKindName(Change::Kind kind);  // "NodeAdded", "PodBound", ...

// Tenancy (docs/tenancy.md): the queue tree, and which leaf queue each namespace's pods are in.
// Pods of a namespace no queue names are in no queue: never limited, never reclaiming, and
// always fair game for a reclaim.
struct QueueConfig {
  std::vector<QueueSpec> queues;
  std::map<std::string, std::string> namespace_queue;  // namespace -> leaf queue name
  // Priority preemption: a pod that fits nowhere may evict pods of strictly lower priority (of
  // its own queue, when there are queues). Off by default, so that the server decides as the
  // simulator does; reclaim between queues is always on.
  bool preemption = false;
  bool operator==(const QueueConfig&) const = default;
};

// Picks the placement profile of a pod (the policy file's class rules); unset: the default.
using ProfileSelector = std::function<ProfileSpec(const PodInfo& pod)>;

class Scheduler {
 public:
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerOptions options);
  // A scheduler over `cluster`'s nodes, model table and topology as they are (the simulator's
  // cluster, node indices kept). InvalidArgument when the cluster holds any pod.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerOptions options,
                                                           core::ClusterState cluster);
  // Builds the default profile's framework now (otherwise it is built for the first pod), so
  // that a bad policy option is an error here rather than every pod's failed attempt.
  absl::Status BuildDefaultProfile();

  // Adds the node, or updates it when one of that name exists (capacity, labels, taints,
  // topology; FailedPrecondition when the update would strand bound pods). *created says which.
  absl::Status PutNode(core::NodeSpec spec, bool* created = nullptr);
  absl::Status CordonNode(std::string_view name, bool cordoned);
  // FailedPrecondition while pods are bound, unless drain: then the node's pods leave it first
  // (their uids appended to *evicted). With `requeue` (an operator's drain) each goes back to
  // Pending and is placed elsewhere when it fits; without (the node vanished under a backend:
  // Kubernetes, Slurm) a pod outside a gang is deleted, as far as Seedance knows it ended. A gang
  // member is always requeued, and its gang placed again whole.
  absl::Status DeleteNode(std::string_view name, bool drain,
                          std::vector<std::string>* evicted = nullptr, bool requeue = false);

  // Adds a pending pod (uid, name, namespace, shape and gpu_spec set by the caller; AlreadyExists
  // when the uid or namespace/name is taken) and queues it.
  absl::Status SubmitPod(PodInfo pod, double now_s);
  // The pod ended or was withdrawn: its resources are freed and pods waiting for room requeued.
  absl::Status DeletePod(std::string_view uid, double now_s);
  // Drain: a placed pod goes back to Pending and is queued again (its node is cordoned by the
  // caller first, so it lands elsewhere).
  absl::Status Evict(std::string_view uid, double now_s);
  // A drain's move: the bound pod leaves its node and is placed on `node` as a cycle that chose
  // that node would (its GPUs chosen there), without a scheduling attempt or a new arrival for
  // its policy; recorded as kPodBound. The room it left wakes no one: the caller drains the node
  // and removes it. NotFound (no such pod or node), FailedPrecondition (not Bound, in a gang, or
  // it does not fit there: then nothing changed).
  absl::Status MoveTo(std::string_view uid, std::string_view node, double now_s);
  // Recovery: re-adds a pod as it was acknowledged, bound pods on their recorded GPUs.
  absl::Status RestorePod(PodInfo pod, double now_s);

  // External binding (internal_binding = false).
  absl::Status Bind(std::string_view uid);
  // Back to Pending and queued again. Without a reason it is tried at once (the assumption
  // expired); with one (the binder failed: "slurm: Invalid partition name specified") that is
  // its last failure (LastFailure, explain) and it waits out a backoff that grows with each
  // failed bind, as a failed scheduling attempt does.
  absl::Status Forget(std::string_view uid, double now_s, std::string_view reason = {});
  // Sets an annotation of a pod in the ledger (empty value: removes it). It is made durable with
  // the pod's next change (Bind, Forget, Evict); NotFound for an unknown uid.
  absl::Status SetAnnotation(std::string_view uid, const std::string& key, std::string value) {
    return ledger_.SetAnnotation(uid, key, std::move(value));
  }
  // Sets (an empty value: removes) each of `patch`'s annotations of the pod and records
  // kPodUpdated, so the change is made durable and published with the batch whatever the pod's
  // phase. NotFound for an unknown uid (nothing changed). The caller validates keys and size.
  absl::Status UpdateAnnotations(std::string_view uid,
                                 const std::map<std::string, std::string>& patch);
  // Forgets every assumption past its deadline; returns how many.
  int ExpireAssumptions(double now_s);

  // Runs scheduling cycles until the active queue is empty or max_pods pods were tried.
  // Returns the number tried.
  int RunCycles(double now_s, int max_pods = 1 << 30);
  // When RunCycles next has work because a backoff ends (nullopt: only an event can bring any).
  std::optional<double> NextWakeup() const { return queue_.NextWakeup(); }

  // ---- Decisions for an external scheduler that owns the queue (the Kubernetes extender,
  // k8s/extender.h): the pod is not in the ledger until PlaceOn. scheduler_extender.cc.
  // Tells the pod's policy it arrived, once per uid (learning policies count arrivals, as
  // SubmitPod does); a uid seen before (among the last 65,536) changes nothing.
  void NoteArrival(const PodInfo& pod);
  // Per name: why that node rejects the pod (kNodeRemoved for a name Seedance does not know),
  // or nullopt where it fits. The profile's Filter plugins are not run.
  std::vector<std::optional<FilterReason>> FilterNodes(const PodInfo& pod,
                                                       const std::vector<std::string>& names) const;
  // The index in `names` of the node the pod's policy would choose now (-1: it fits on none),
  // and in *totals, aligned with names, the total each fitting node was ranked by (nullopt
  // where it does not fit). Errors: the pod's profile cannot be built.
  absl::StatusOr<int> RankNodes(const PodInfo& pod, const std::vector<std::string>& names,
                                std::vector<std::optional<int64_t>>* totals);
  // Adds the pod and places it on `node` as a cycle that chose that node would (Reserve, the
  // GPU chooser, NUMA, Permit, Bind into the cluster state), then Assumes it in the ledger (and
  // Binds with internal_binding). AlreadyExists (uid or namespace/name taken), NotFound (no such
  // node), FailedPrecondition (over its queue's limit, or it does not fit there: the message
  // says why); the ledger is unchanged on error.
  absl::Status PlaceOn(PodInfo pod, std::string_view node, double now_s);
  // A pod another scheduler bound (seen on the Kubernetes API): recorded on `node` on the GPUs
  // given (indices), or, when none are given, on those the pod's policy would choose there.
  // FailedPrecondition when Seedance's accounting has no room for it (the other scheduler
  // over-committed, as Seedance counts); NotFound for an unknown node; AlreadyExists as SubmitPod.
  absl::Status AdoptPod(PodInfo pod, std::string_view node, const std::vector<int>& gpus,
                        double now_s);
  // Whether the pod would fit on `node` once the placed pods `victims` (uids; others are
  // ignored: Seedance does not account for them) were gone. Changes nothing.
  bool FitsWithout(const PodInfo& pod, std::string_view node,
                   const std::vector<std::string>& victims);

  // "" when the pod's queue (and every ancestor) stays within its limit with the pod placed;
  // else which queue is at its limit, and in what (tenancy off: always "").
  std::string OverLimit(const PodInfo& pod) const;
  // Why a pending pod does not fit now (NotFound for an unknown uid).
  absl::StatusOr<Diagnosis> Explain(std::string_view uid) const;
  // The message of the pod's last failed attempt ("" if none yet).
  std::string LastFailure(std::string_view uid) const;
  // Why a pending pod was last evicted since it was last placed ("preempted for pod NS/NAME
  // (reclaim)", "node N drained"); "" if it was not. Kept while the pod waits, so that later
  // failed attempts do not hide it; cleared when it is placed again or deleted.
  std::string LastEviction(std::string_view uid) const;

  void SetProfileSelector(ProfileSelector selector);

  // Replaces the queues (an empty config turns tenancy off). Usage and demand are recounted from
  // the ledger and every waiting pod is tried again under the new quotas: lowering a queue's
  // share lets the others reclaim from it. InvalidArgument for a bad tree or an unknown queue.
  absl::Status SetQueues(QueueConfig config, double now_s);
  // The queues with their usage and demand (capacity refreshed from the cluster); nullptr when
  // tenancy is off.
  const QueueTree* queue_tree();
  // Preemptions so far: pods evicted to make room for a higher-priority pod or a reclaim.
  int64_t preemptions() const { return preemptions_; }
  // Records the revision under which the pod's last change was made durable.
  absl::Status SetPodRevision(std::string_view uid, int64_t revision) {
    return ledger_.SetRevision(uid, revision);
  }

  // Changes since the last call, in order; the caller makes them durable and publishes them.
  std::vector<Change> TakeChanges();

  const core::ClusterState& state() const { return state_; }
  const PodLedger& ledger() const { return ledger_; }
  const SchedulingQueue& queue() const { return queue_; }
  // Test-only: the ledger, for death tests that corrupt it (PodLedger::CorruptForTesting).
  PodLedger& ledger_for_testing() { return ledger_; }
  // Scheduling attempts so far by outcome.
  int64_t attempts_scheduled() const { return attempts_scheduled_; }
  int64_t attempts_unschedulable() const { return attempts_unschedulable_; }
  int64_t attempts_error() const { return attempts_error_; }

 private:
  explicit Scheduler(SchedulerOptions options, core::ClusterState state);
  // The framework of the pod's profile, built on first use and again when the profile's spec
  // changes; a framework built anew learns, as arrivals, every pod in the ledger whose profile it
  // serves (a reload does not make cas forget the workload). *created: built by this call.
  absl::StatusOr<Framework*> FrameworkFor(const PodInfo& pod, bool* created = nullptr);
  // Tells the pod's policy that the pod arrived, once (a framework built just now has learnt it
  // already if the ledger holds it).
  void LearnArrival(const PodInfo& pod);
  // The pod's shape with its GPU model mask resolved against today's model table.
  core::PodShape ResolvedShape(const PodInfo& pod) const;
  // Size of the cluster's GPU model table (it only grows): what a cached model mask was
  // resolved against.
  size_t models_seen() const { return state_.gpu_models().size(); }
  void TryOne(const QueuedPod& q, double now_s);
  void Record(Change::Kind kind, std::string key) { changes_.push_back({kind, std::move(key)}); }
  // Releases a placed pod's resources (ledger unchanged).
  void ReleaseResources(const PodInfo& pod);
  void RequeueAfterRoomFreed(int node, double now_s);
  // kBestFirst: wakes the best waiting request that fits a node in freed_nodes_ and has not
  // failed since (at most one group).
  void WakeBestForFreedRoom(double now_s);
  // The pod's queue entry (its equivalence group set). A queue id is the pod's ledger handle
  // (PodLedger::HandleOf): no map from queue ids to uids, and a stale id finds no pod.
  QueuedPod NewQueued(const PodInfo& pod, double now_s);
  // Takes the pod's entry out of the queue, if it has one.
  void Dequeue(std::string_view uid) { queue_.Remove(ledger_.HandleOf(uid)); }
  // The pod's equivalence group (equivalence_groups; 0: none).
  uint64_t GroupOf(const PodInfo& pod);
  // A queued pod's shape, its GPU model mask resolved: its group's request (kept, the mask
  // refreshed when the model table grew), or for a pod outside a group its record's, written
  // to *own. nullptr when the pod is gone.
  const core::PodShape* QueuedShape(const QueuedPod& q, core::PodShape* own) const;
  const PodInfo* ByQueueId(uint64_t id) const;
  // Tenancy (scheduler_tenancy.cc).
  int LeafOf(const PodInfo& pod) const;
  // Adds (sign +1) or removes (-1) the pod's demand to its queue's usage or pending demand.
  void Account(const PodInfo& pod, bool placed, double sign);
  // Moves the pod's demand from pending to placed (or back) in its queue.
  void AccountMove(const PodInfo& pod, bool to_placed) {
    Account(pod, !to_placed, -1);
    Account(pod, to_placed, +1);
  }
  void RefreshCapacity();
  // Evicts the cheapest allowed victim set that makes room for the pod (PostFilter); true if
  // it did. A victim in a gang takes its whole gang with it.
  bool Preempt(const PodInfo& pod, const core::PodShape& shape, double now_s);
  // Which placed pods a preemptor may evict, by queue (index 0: pods in no queue; q + 1: leaf
  // queue q): those of lower priority, any, and none while the queue's budget is spent.
  struct VictimRule {
    bool lower_priority = false;
    bool any_priority = false;
    bool protect = false;
  };
  std::vector<VictimRule> VictimRules(const PodInfo& pod, bool reclaim,
                                      const std::vector<Resources>& shares, double now_s);
  // The cheapest victim set for the pod under those rules (VictimSearch over every node).
  VictimSet SearchVictims(const PodInfo& pod, const core::PodShape& shape,
                          const std::vector<VictimRule>& rules, double now_s);
  // True while the leaf queue's disruption budget allows one more eviction now.
  bool MayDisrupt(int leaf, double now_s);
  // Gangs (scheduler_gang.cc): "namespace/gang" of a pod ("" for none), the members' uids.
  static std::string GangKey(const PodInfo& pod);
  void JoinGang(const PodInfo& pod);
  void LeaveGang(const PodInfo& pod);
  // Places the popped member's gang all at once (at least gang_min members) or not at all.
  void TryGang(const QueuedPod& q, const PodInfo& pod, double now_s);
  // Records a placement the framework made for `uid` (ledger, queue maps and, unless the caller
  // has already moved it, the queue accounting).
  void CommitPlacement(const std::string& uid, const Outcome& out, double now_s,
                       bool accounted = false);
  // Requeues every placed member of the pod's gang (a gang is evicted as a unit).
  void EvictGang(const PodInfo& pod, double now_s);

  SchedulerOptions options_;
  core::ClusterState state_;
  PodLedger ledger_;
  SchedulingQueue queue_;
  ProfileSelector selector_;
  // One framework per profile name, with the spec it was made from (a changed spec makes anew).
  struct Placer {
    ProfileSpec spec;
    std::unique_ptr<Framework> framework;
  };
  std::map<std::string, Placer, std::less<>> placers_;
  absl::flat_hash_map<std::string, std::string> last_failure_;
  absl::flat_hash_map<std::string, std::string> last_eviction_;  // LastEviction()
  absl::flat_hash_map<std::string, std::string> placed_by_;      // uid -> profile that placed it
  absl::flat_hash_map<std::string, int> bind_failures_;          // uid -> Forgets with a reason
  uint64_t next_seq_ = 0;
  std::vector<Change> changes_;
  int64_t attempts_scheduled_ = 0;
  int64_t attempts_unschedulable_ = 0;
  int64_t attempts_error_ = 0;
  std::optional<QueueTree> queues_;
  std::map<std::string, int, std::less<>> ns_leaf_;
  bool preemption_ = false;
  int64_t preemptions_ = 0;
  // NoteArrival's memory: uids whose arrival the policies were told, oldest first.
  std::set<std::string, std::less<>> noted_;
  std::deque<std::string> noted_order_;
  std::map<std::string, std::set<std::string>, std::less<>> gangs_;  // key -> member uids
  std::map<std::string, uint64_t, std::less<>> gang_failed_at_;      // key -> queue event count
  // Equivalence groups: request key -> group, and each group's request (index group - 1), so
  // that a hint reads a group's shape without a ledger lookup.
  absl::flat_hash_map<std::string, uint64_t> group_ids_;
  // `shape.gpu_model_mask` is resolved against the model table as it was when it had
  // `models_seen` models: the table only grows (ids are never reused), so a mask is current
  // while the table's size is unchanged.
  struct GroupRequest {
    std::string gpu_spec;
    core::DeviceAsk device;
    core::PodShape shape;
    size_t models_seen = 0;
  };
  mutable std::vector<GroupRequest> group_requests_;
  // kBestFirst: nodes that gained room since the queue last ran dry, and the requests (queue
  // group keys: (group, 0), or (0, queue id) for a pod outside a group) that failed since.
  std::vector<int> freed_nodes_;
  std::vector<std::pair<uint64_t, uint64_t>> failed_since_freed_;
  // Leaf queue name -> times of its pods' evictions (kept across reloads, by name).
  std::map<std::string, std::deque<double>, std::less<>> disruptions_;
};

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_SCHEDULER_H_
