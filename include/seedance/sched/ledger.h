// The pod ledger: every pod the scheduler knows, its identity, phase and placement.
//
// Pods have a UID (unique), a namespace/name (unique when the name is set; a pod with an empty
// name is not indexed by name, so the simulator's anonymous pods cost no name key), a priority,
// labels and room for a gang id. The ledger records each placement (node, GPU indices; milli
// per GPU is the shape's gpu_milli) and lists the pods on a node or on one GPU in time
// proportional to the number of pods on that node.
//
// Phases follow kube-scheduler's cache: a placement is first Assumed (its resources held by the
// caller in the ClusterState, the binder not yet heard from), then Bound when the binder
// confirms, or Forgotten (back to Pending) when the bind fails or its deadline passes
// (ExpiredAssumptions lists those). Assumed and Bound pods both occupy their node.
//
// The ledger does not touch the ClusterState: the caller allocates and releases resources and
// keeps the two in step. Pointers returned by Find, FindByName, PodsOnNode and PodsOnGpu stay
// valid until that pod is removed (other pods coming and going do not move it).
//
// Invariants, checked in every build (SEEDANCE_CHECK): the uid, name and node indexes agree with
// the pods; CheckInvariants() audits everything in O(pods).
//
// Thread-safety: none. One loop owns a ledger.
#ifndef SEEDANCE_SCHED_LEDGER_H_
#define SEEDANCE_SCHED_LEDGER_H_

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::sched {

enum class PodPhase { kPending, kAssumed, kBound };
inline constexpr int kNumPodPhases = 3;
std::string_view PodPhaseName(PodPhase phase);  // "Pending", "Assumed", "Bound"

struct PodInfo {
  std::string uid, name, ns;  // ns = namespace
  int32_t priority = 0;
  std::map<std::string, std::string> labels;
  // Opaque to the scheduler; kept and persisted with the pod (a backend's job script, its job
  // id, its last error).
  std::map<std::string, std::string> annotations;
  std::string gang;        // empty = none; else placed all or nothing with its namespace's
                           // other pods of this gang (docs/tenancy.md, "Gangs")
  int32_t gang_min = 1;    // the gang's minimum members
  std::string gpu_spec;    // "A100|H100"; empty = any
  core::DeviceAsk device;  // kind and least memory of its devices (core::DeviceAsk)
  core::PodShape shape;    // cpu_milli, memory_mib, num_gpu, gpu_milli (per GPU), model mask
  PodPhase phase = PodPhase::kPending;
  core::Placement placement;  // valid when Assumed or Bound; node -1 when Pending
  int64_t revision = 0;       // revision of the last change
  int64_t created_unix_ns = 0;
  int64_t assume_deadline_ns = 0;  // Assumed only
  // Assumed or Bound: the scheduler's clock when it was placed (a victim's lost work counts
  // from it). Not persisted: a restored pod counts from its restore.
  double placed_at_s = 0;
};

// A placed pod as its node's list keeps it, so that a pass over a node's pods (the preemption
// victim search) reads no PodInfo: its slot (PodAt), priority, the whole GPUs it holds (0 for
// a GPU-sharing or CPU-only pod), its namespace's id (NamespaceId) and when it was placed.
struct PlacedRef {
  uint32_t slot = 0;
  int32_t priority = 0;
  int32_t whole_gpus = 0;
  uint32_t ns_id = 0;
  double placed_at_s = 0;
};

class PodLedger {
 public:
  PodLedger() = default;
  PodLedger(const PodLedger&) = delete;
  PodLedger& operator=(const PodLedger&) = delete;
  PodLedger(PodLedger&&) = default;
  PodLedger& operator=(PodLedger&&) = default;

  // Adds a pod. InvalidArgument for an empty uid or, for an Assumed or Bound pod, a placement
  // without a node or with more than kMaxGpusPerNode GPUs (a Pending pod's placement is
  // cleared); AlreadyExists when the uid, or the namespace/name, is taken.
  absl::Status Add(PodInfo pod);
  // nullptr if absent.
  const PodInfo* Find(std::string_view uid) const;
  const PodInfo* FindByName(std::string_view ns, std::string_view name) const;

  // Pending -> Assumed on the placement, expiring at deadline_ns. NotFound, FailedPrecondition
  // (not Pending), InvalidArgument (placement without a node or with a bad GPU count).
  // placed_at_s becomes the pod's placed_at_s.
  absl::Status Assume(std::string_view uid, const core::Placement& placement, int64_t deadline_ns,
                      double placed_at_s = 0);
  // Assumed -> Bound (the binder confirmed). NotFound, FailedPrecondition (not Assumed).
  absl::Status Bind(std::string_view uid);
  // Assumed -> Pending (bind failed or timed out); the placement is dropped. NotFound,
  // FailedPrecondition (not Assumed).
  absl::Status Forget(std::string_view uid);
  absl::Status SetRevision(std::string_view uid, int64_t revision);
  // Sets an annotation (an empty value removes it). NotFound.
  absl::Status SetAnnotation(std::string_view uid, const std::string& key, std::string value);
  // Removes the pod and returns it as it was. NotFound.
  absl::StatusOr<PodInfo> Remove(std::string_view uid);

  // Assumed and Bound pods on the node (any order), in O(pods on the node).
  std::vector<const PodInfo*> PodsOnNode(int node) const;
  // Those of them that use GPU `gpu` of the node, in O(pods on the node).
  std::vector<const PodInfo*> PodsOnGpu(int node, int gpu) const;
  // Number of Assumed and Bound pods on the node, O(1).
  size_t num_pods_on_node(int node) const;
  // The node's Assumed and Bound pods as compact records (any order); empty for an unknown
  // node. Valid until the next change to the ledger.
  std::span<const PlacedRef> PlacedOnNode(int node) const;
  // Bounds over PlacedOnNode(node), kept as pods come and go, so that a search can rule a
  // node out without reading its pods: the lowest priority, the most whole GPUs one pod holds,
  // the latest placed_at_s. {INT32_MAX, 0, -inf} for a node without pods.
  struct PlacedSummary {
    int32_t min_priority = std::numeric_limits<int32_t>::max();
    int32_t max_whole_gpus = 0;
    double last_placed_at_s = -std::numeric_limits<double>::infinity();
  };
  PlacedSummary SummaryOfNode(int node) const;
  // The pod in a slot that PlacedOnNode named. REQUIRES: a live slot (dies otherwise).
  const PodInfo& PodAt(uint32_t slot) const;
  // A pod's handle: a number that names this record of the pod (from its Add to its Remove)
  // and no other, ever, so that an index kept beside the ledger (the scheduling queue's) needs
  // no uid: its slot and how many times the slot has been filled. Never 0; 0 for an absent uid.
  uint64_t HandleOf(std::string_view uid) const;
  // The pod a handle names, or nullptr once that record is removed (its slot may hold another
  // pod by then, under another handle). O(1), no hashing.
  const PodInfo* FindByHandle(uint64_t handle) const;
  // Namespaces get small ids, in first-seen order, kept for the ledger's life (a namespace
  // whose pods are all gone keeps its id). kNoNamespaceId for a namespace never seen.
  static constexpr uint32_t kNoNamespaceId = 0xFFFFFFFFu;
  uint32_t NamespaceId(std::string_view ns) const;
  size_t num_namespace_ids() const { return ns_names_.size(); }
  const std::string& NamespaceName(uint32_t id) const;
  // UIDs of the Assumed pods whose deadline is at or before now_ns, earliest deadline first,
  // in O(expired + log pods).
  std::vector<std::string> ExpiredAssumptions(int64_t now_ns) const;

  size_t size() const { return size_; }
  size_t count(PodPhase phase) const { return counts_[static_cast<int>(phase)]; }

  // Calls f(const PodInfo&) for every pod, in slot order.
  template <class F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].live) f(slots_[i].pod);
    }
  }

  // Audits every index against the pods, O(pods); aborts on a broken invariant.
  void CheckInvariants() const;

  // Test-only, for the death tests of those checks: breaks one internal record of the pod
  // `uid` the way a bug would (the public API cannot reach these states).
  //   kDropUid          its uid index entry is erased (the uid is then unknown to Find)
  //   kDropName         its name index entry is erased
  //   kNodePosition     its position in its node's list points one past its entry
  //   kPendingNode      (Pending) its placement names node 0
  //   kDropDeadline     (Assumed) it is missing from the deadline index
  //   kPhaseCount       the Pending count is one too high
  //   kGhostUid         a second uid key, "<uid>~ghost", names its slot
  //   kDuplicateOnNode  (placed) its node lists it twice
  //   kFreeList         the free list names its slot
  //   kPhase            its phase becomes Bound without any index following
  //   kPlacementGpus    (placed) every GPU index of its placement moves up by one
  //   kNodeRecord       (placed) its record in its node's list gets another priority
  //   kNodeSummary      (placed) its node's summary claims a lower priority than any pod's
  //   kSummaryCount     the node summaries lose their last entry
  enum class TestCorruption {
    kDropUid,
    kDropName,
    kNodePosition,
    kPendingNode,
    kDropDeadline,
    kPhaseCount,
    kGhostUid,
    kDuplicateOnNode,
    kFreeList,
    kPhase,
    kPlacementGpus,
    kNodeRecord,
    kNodeSummary,
    kSummaryCount
  };
  void CorruptForTesting(std::string_view uid, TestCorruption what);

 private:
  struct Slot {
    PodInfo pod;
    bool live = false;
    uint32_t pos_on_node = 0;  // index in nodes_[pod.placement.node] when placed
    uint32_t ns_id = 0;
    uint32_t fills = 0;  // times Add filled the slot: the high half of its pod's handle
  };

  // nullptr if absent; *slot (when given) receives its index.
  Slot* FindSlot(std::string_view uid, uint32_t* slot = nullptr);
  static std::string NameKey(std::string_view ns, std::string_view name);
  static absl::Status CheckPlacement(std::string_view uid, const core::Placement& p);
  void AttachToNode(uint32_t slot);
  void DetachFromNode(uint32_t slot);
  static void Widen(PlacedSummary& s, const PlacedRef& r);
  void SetPhase(Slot& s, PodPhase phase);

  // Slots in chunks of 64: stable addresses, as a deque's, without a deque's one allocation per
  // slot (libstdc++'s 512-byte blocks hold one Slot of about 380 bytes).
  class Slots {
   public:
    size_t size() const { return size_; }
    Slot& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
    const Slot& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
    void emplace_back() {
      if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<Slot[]>(kChunk));
      ++size_;
    }

   private:
    static constexpr size_t kChunk = 64;
    std::vector<std::unique_ptr<Slot[]>> chunks_;
    size_t size_ = 0;
  };
  Slots slots_;  // freed slots are reused
  std::vector<uint32_t> free_;
  absl::flat_hash_map<std::string, uint32_t> by_uid_;
  absl::flat_hash_map<std::string, uint32_t> by_name_;
  std::vector<std::vector<PlacedRef>> nodes_;  // node -> its Assumed/Bound pods
  std::vector<PlacedSummary> summaries_;       // node -> bounds over nodes_[node]
  absl::flat_hash_map<std::string, uint32_t> ns_ids_;
  std::vector<std::string> ns_names_;               // by id
  std::set<std::pair<int64_t, uint32_t>> assumed_;  // (deadline, slot)
  size_t size_ = 0;
  std::array<size_t, kNumPodPhases> counts_{};
};

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_LEDGER_H_
