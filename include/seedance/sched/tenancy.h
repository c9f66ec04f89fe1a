// Tenancy: a tree of queues with guaranteed quotas, limits and over-quota weights, their fair
// shares, weighted DRF order and the reclaim rule; and the minimal preemption victim set. Kept
// apart from placement (as Mesos keeps its DRF sorter apart from allocation): these functions
// decide who deserves what, placement decides where (docs/tenancy.md).
//
// Fair share, per resource and level by level from the root (whose share is the capacity):
//   1. each child gets its guarantee, capped by what its subtree asks (usage + pending); when
//      the guarantees exceed the parent's share they are scaled down in proportion;
//   2. what is left of the parent's share is water-filled among the children that still ask
//      for more, in proportion to their weights, none beyond its limit or its request;
//   3. each child divides its share among its own children the same way.
// A queue that asks for less than its guarantee leaves the rest to the others: that is what lets
// idle quota be lent. The same shares say what reclaim may take back: a queue may preempt for a
// pending request only while it stays within its fair share, and only from queues above theirs
// (so reclaim restores fair share, not only the guarantee).
//
// Thread-safety: QueueTree is a value; const methods may be called concurrently.
#ifndef SEEDANCE_SCHED_TENANCY_H_
#define SEEDANCE_SCHED_TENANCY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::sched {

// Resources a queue accounts, in this order.
enum QueueResource { kQueueGpus, kQueueGpuMilli, kQueueCpuMilli, kQueueMemoryMib };
inline constexpr size_t kQueueResources = 4;
using Resources = std::array<double, kQueueResources>;
inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();
const std::array<const char*, kQueueResources>& QueueResourceNames();

struct QueueSpec {
  std::string name;
  std::string parent;  // "" = a child of the root
  Resources guaranteed{};
  Resources limit{kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  double weight = 1.0;  // share of what the guarantees leave, among siblings
  // Most of this queue's pods that preemption may evict in any 60 s; -1 = no budget.
  int64_t disruption_budget = -1;
  bool operator==(const QueueSpec&) const = default;
};

inline constexpr size_t kMaxQueues = 10000;
inline constexpr int kMaxQueueDepth = 16;

class QueueTree {
 public:
  // Names must be unique and non-empty, parents must exist (listed in any order), weights in
  // (0, 1e6], guarantees and limits >= 0 with guarantee <= limit, no cycles, depth <= 16.
  static absl::StatusOr<QueueTree> Build(const std::vector<QueueSpec>& specs,
                                         const Resources& capacity);

  size_t size() const { return nodes_.size(); }
  // Index of a queue, or -1.
  int Find(const std::string& name) const;
  const QueueSpec& spec(int q) const { return nodes_[q].spec; }
  int parent(int q) const { return nodes_[q].parent; }  // -1 = the root
  bool is_leaf(int q) const { return nodes_[q].children.empty(); }
  const Resources& capacity() const { return capacity_; }

  // Usage and pending demand are set on leaf queues; inner queues sum their subtree.
  void SetUsage(int leaf, const Resources& used);
  void SetPending(int leaf, const Resources& pending);
  // Adds `delta` (which may be negative) to a leaf's usage or pending demand and its ancestors'.
  void Add(int leaf, const Resources& delta, bool pending) { AddUp(leaf, delta, pending); }
  void SetCapacity(const Resources& capacity) { capacity_ = capacity; }
  const Resources& usage(int q) const { return nodes_[q].used; }
  const Resources& pending(int q) const { return nodes_[q].pending; }

  // Every queue's fair share (index = queue). Recomputed from the current usage and demand.
  std::vector<Resources> FairShares() const;

  // A resource no queue guarantees or limits is not managed: fair shares still divide it, but
  // reclaim neither needs nor takes it (a tree of GPU quotas reclaims GPUs only).
  bool managed(size_t resource) const { return managed_[resource]; }

  // Weighted dominant share of a queue: max over resources of usage / capacity, over its weight.
  double DominantShare(int q) const;
  // The leaf, among `candidates`, to serve next by weighted DRF (smallest dominant share; ties
  // by index). -1 when `candidates` is empty.
  int NextByDrf(const std::vector<int>& candidates) const;

  // Reclaim: may `leaf` preempt to run `request`? Only while it and every ancestor stay within
  // their fair shares (`shares` = FairShares()) of every managed resource.
  bool MayReclaim(int leaf, const Resources& request, const std::vector<Resources>& shares) const;
  // May running work of `leaf` be taken for a reclaim? Only while it (or an ancestor) holds more
  // than its fair share of some managed resource.
  bool OverFairShare(int leaf, const std::vector<Resources>& shares) const;

 private:
  struct Node {
    QueueSpec spec;
    int parent = -1;
    std::vector<int> children;
    Resources used{}, pending{};
  };
  void Divide(const std::vector<int>& children, const Resources& share,
              std::vector<Resources>* out) const;
  void AddUp(int leaf, const Resources& delta, bool pending);

  std::vector<Node> nodes_;
  std::vector<int> roots_;
  Resources capacity_{};
  std::array<bool, kQueueResources> managed_{};
};

// A running pod that preemption may evict.
struct VictimCandidate {
  uint64_t id = 0;
  int32_t node = 0;
  int32_t priority = 0;
  int64_t gpus = 0;            // what evicting it frees on its node
  double lost_gpu_s = 0;       // work lost if evicted (GPU-seconds since its last checkpoint)
  bool protected_pod = false;  // its queue's disruption budget is spent: never a victim
  double placed_at_s = 0;      // when it started (VictimRule::kLeastLostWork's tie-break)
};

// How a victim set is chosen.
enum class VictimRule {
  // The live scheduler's (kube-scheduler's minimal set): per node the lowest priority first,
  // then the least lost work, then the lowest id, and every victim the others make room without
  // given back ("reprieve"); across nodes the fewest victims, then the lowest highest victim
  // priority, then the least lost GPU-seconds, then the lowest node.
  kFewestVictims,
  // The job simulator's, for checkpointed training jobs whose eviction costs a checkpoint
  // restore (docs/jobs.md): per node the least lost work first, then the latest started, then
  // the lowest id, taken as a prefix (no reprieve); across nodes the least lost GPU-seconds,
  // then the fewest victims, then the lowest node. Priority is not read: the caller hands only
  // the candidates its policy lets go.
  kLeastLostWork,
};

struct VictimSet {
  int32_t node = -1;  // -1 = no eviction makes room
  std::vector<uint64_t> victims;
  double lost_gpu_s = 0;
  int32_t max_priority = 0;
};

// The cheapest eviction that frees `need` GPUs on one node for a pod of `priority`: only pods of
// strictly lower priority and not protected are victims. Per node the victims are taken lowest
// priority first, then least lost work; across nodes the set with the fewest victims wins, then
// the lowest highest victim priority, then the least lost GPU-seconds, then the lowest node.
// `free` is each node's free GPUs.
VictimSet MinimalVictims(int32_t priority, int64_t need, const std::vector<int64_t>& free,
                         const std::vector<VictimCandidate>& running);

// MinimalVictims node by node, for callers that keep their pods by node: Node() is handed each
// node's free GPUs and the candidates the caller has found eligible there (already filtered by
// priority and protection), in ascending node order; best() is then MinimalVictims' answer
// (with kFewestVictims) or the cheapest set by `rule`. A node where `free` already covers the
// need, or whose candidates cannot make room, gives no set. With kFewestVictims a node whose
// lower bound on (victims, highest victim priority, lost GPU-seconds) cannot beat the best set
// so far is not searched further, so a full cluster costs about one pass over its candidates.
// Victim ids are the candidates' ids.
class VictimSearch {
 public:
  explicit VictimSearch(int64_t need, VictimRule rule = VictimRule::kFewestVictims)
      : need_(need), rule_(rule) {}
  // REQUIRES: node greater than the previous call's (dies otherwise).
  void Node(int32_t node, int64_t free, std::span<const VictimCandidate> eligible);
  // True if a node (the next to be handed to Node) whose every victim set holds at least
  // ceil((need - free) / largest) pods, each of priority >= lowest and losing >= least
  // GPU-seconds, cannot beat the best set so far. Callers that keep such bounds per node skip
  // reading its pods. Always false under kLeastLostWork (no such bound is kept).
  bool RulesOut(int64_t free, int64_t largest, int32_t lowest, double least) const;
  const VictimSet& best() const { return best_; }
  VictimSet TakeBest() { return std::move(best_); }

 private:
  // True if no set on the node being searched can beat best_ (which came from an earlier
  // node, so it wins ties).
  bool CannotWin(int64_t free, std::span<const VictimCandidate> eligible) const;

  // Orders order_ and takes the prefix that makes room into chosen_ (with the reprieve under
  // kFewestVictims).
  void Choose(int64_t free);
  // True if chosen_ (on a later node) beats best_ under rule_.
  bool Beats(const VictimSet& set) const;

  int64_t need_;
  VictimRule rule_;
  int32_t last_node_ = -1;
  VictimSet best_;
  std::vector<const VictimCandidate*> order_, chosen_;  // scratch, kept between nodes
};

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_TENANCY_H_
