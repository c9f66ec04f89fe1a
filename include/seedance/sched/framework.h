// The placement framework, in the shape of the Kubernetes scheduler framework.
//
// A scheduling cycle for one pod runs the extension points in order:
//   PreFilter (each plugin may stop the cycle) -> Filter (the ClusterState's feasibility pass,
//   then every Filter plugin must accept the node) -> [no node left: PostFilter] -> PreScore ->
//   Score (weighted sum of plugins, each optionally normalised over the feasible nodes) ->
//   select the best node -> Reserve (choose the GPU devices on it) -> Permit (allow, wait or
//   reject) -> Bind (commit to the ClusterState).
// Outcomes are typed values, not errors: a pod that fits nowhere is kUnschedulable.
//
// The extension points for what follows (preemption, gangs). Each is a vector in Profile; an
// empty vector costs one emptiness test per cycle, so the built-in policies (which use none)
// decide exactly as before.
//   - PreFilter: runs once per cycle before Filter. A non-OK status stops the cycle:
//     kUnschedulable with reason "pre-filter plugin 'NAME': MESSAGE"; nothing is reserved.
//   - PostFilter: runs, in order, only when no node passed Filter, and gets the cycle's
//     Diagnosis (Explain). The first plugin that nominates a node (nominated_node >= 0) ends the
//     round; its node and victims (pod UIDs, the caller's ledger's) go into the Outcome, which
//     stays kUnschedulable: evicting the victims and retrying is the caller's business. The
//     default PostFilter nominates nothing.
//   - Permit: runs after Reserve, before Bind. Any kReject: Unreserve, and kUnschedulable with
//     reason "permit plugin 'NAME': MESSAGE". Otherwise, if any plugin says kWait, the placement
//     is committed to the ClusterState (the resources are held, like kube-scheduler's assumed
//     pod, and observers see OnBound) and the outcome is Code::kWait with wait_timeout_s, the
//     least timeout asked for: the pod is reserved but not bound for the caller. The caller
//     later either confirms it (nothing more to do here) or calls RejectWaiting (Unreserve +
//     Release) on rejection or timeout.
// Explain(pod, state) is the per-node account of why a pod fits nowhere (explain.h) with the
// profile's Filter plugins counted as FilterReason::kPlugin.
//
// Ties between equal total scores go to the node that comes first in the framework's node
// order, a fixed permutation of the nodes (the FGD reference simulator sorts nodes by a name
// carrying a seeded random prefix). Scores are integers, as in Kubernetes.
//
// The score cache. A plugin whose Score depends only on node n's allocation (what
// ClusterState::version(n) tracks), the pod's cpu_milli, num_gpu, gpu_milli and gpu_model_mask,
// and its own Epoch() may declare itself Cacheable(); the framework then reuses a score until
// the node's version or the plugin's epoch moves. A plugin that learns must bump its epoch
// whenever anything Score reads changes, or keep the part that reads fast-moving learned state
// in a separate, non-cacheable plugin (cas does this with its CPU-balance term). The cache must
// be invisible: FrameworkOptions::score_cache = false recomputes every score and must give the
// same decisions (score_cache_test runs every built-in policy both ways).
//
// Thread-safety: a Framework is used by one scheduling loop at a time.
#ifndef SEEDANCE_SCHED_FRAMEWORK_H_
#define SEEDANCE_SCHED_FRAMEWORK_H_

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/explain.h"

namespace seedance::sched {

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMinNodeScore = 0;

// Typed outcome of a scheduling cycle (Kubernetes framework codes).
enum class Code {
  kSuccess,
  kUnschedulable,                 // no node fits now; may fit after something leaves
  kUnschedulableAndUnresolvable,  // cannot fit even on an empty cluster
  kError,                         // a plugin failed; a bug
  kWait,  // Permit asked to wait: placement committed to the state, not yet to be bound
};
std::string_view CodeName(Code code);

struct Outcome {
  Code code = Code::kUnschedulable;
  core::Placement placement;  // kSuccess and kWait
  std::string reason;
  double wait_timeout_s = 0;  // kWait: how long the caller may hold the placement unconfirmed
  // PostFilter's nomination after a failed Filter: a node and the pods (UIDs) to evict there.
  int nominated_node = -1;
  std::vector<std::string> victims;
  bool ok() const { return code == Code::kSuccess; }
};

// Per-decision data shared by the plugins of one cycle.
struct CycleState {
  const core::PodShape* pod = nullptr;
  std::mt19937_64* rng = nullptr;
  // Set by the framework before PreScore: the feasible nodes, in index order.
  std::span<const int> feasible;
  // Scratch a plugin may fill at PreScore and read at Score (e.g. the random node).
  int chosen_node = -1;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

class FilterPlugin : public virtual Plugin {
 public:
  // True if the pod may run on node n.
  virtual bool Filter(const CycleState& cycle, const core::ClusterState& state, int n) const = 0;
};

class PreFilterPlugin : public virtual Plugin {
 public:
  // Runs once per cycle before Filter (cycle.pod is set, cycle.feasible is not yet). A non-OK
  // status ends the cycle as kUnschedulable with the status's message.
  virtual absl::Status PreFilter(CycleState& cycle, const core::ClusterState& state) = 0;
};

// What a PostFilter plugin proposes after a failed Filter (preemption).
struct PostFilterResult {
  int nominated_node = -1;           // -1: no proposal
  std::vector<std::string> victims;  // UIDs of pods to evict from nominated_node
};

class PostFilterPlugin : public virtual Plugin {
 public:
  // Runs when no node passed Filter. `why` is the cycle's Diagnosis. Default: no proposal.
  virtual PostFilterResult PostFilter(CycleState& /*cycle*/, const core::ClusterState& /*state*/,
                                      const Diagnosis& /*why*/) {
    return {};
  }
};

// A Permit plugin's answer.
struct PermitResult {
  enum Kind { kAllow, kWait, kReject };
  Kind kind = kAllow;
  double timeout_s = 0;  // kWait: how long to wait (> 0)
  std::string message;   // kReject: why
};

class PermitPlugin : public virtual Plugin {
 public:
  // Runs after Reserve chose `placement` (GPUs included), before Bind.
  virtual PermitResult Permit(CycleState& cycle, const core::ClusterState& state,
                              const core::Placement& placement) = 0;
};

class ScorePlugin : public virtual Plugin {
 public:
  virtual void PreScore(CycleState& /*cycle*/, const core::ClusterState& /*state*/) {}
  // Score of a feasible node; higher is better.
  virtual int64_t Score(const CycleState& cycle, const core::ClusterState& state, int n) = 0;
  // If true, NormalizeScore maps the feasible nodes' scores into [0, 100].
  virtual bool HasNormalize() const { return false; }
  virtual void NormalizeScore(std::span<int64_t> /*scores*/) const {}
  // True if NormalizeScore gives its highest value exactly to the nodes whose raw score is the
  // highest (to all of them when all tie), as min-max normalisation does. A profile whose only
  // scorer says so (with a weight >= 0) selects on raw scores, skipping the normalising pass: the
  // chosen node is the same.
  virtual bool NormalizeKeepsTop() const { return false; }
  // True if Score depends only on node n's allocation, the pod's cpu/GPU request and model
  // mask, and Epoch() (see the score cache above).
  virtual bool Cacheable() const { return false; }
  virtual uint64_t Epoch() const { return 0; }
  // Scores nodes[i] into out[i] (same size), as Score would one by one; a plugin may override it
  // with a tighter loop. The framework uses it where it scores many nodes with an uncached plugin.
  virtual void ScoreBatch(const CycleState& cycle, const core::ClusterState& state,
                          std::span<const int> nodes, std::span<int64_t> out) {
    for (size_t i = 0; i < nodes.size(); ++i) out[i] = Score(cycle, state, nodes[i]);
  }
  // If > 0, every Score lies in [0, ScoreBound()). Lets the framework skip scoring, with an
  // uncached plugin, the nodes whose other (cached) scores already rule them out; the decision
  // is the same. Score must then have no side effects that matter. 0: no bound.
  virtual int64_t ScoreBound() const { return 0; }
  // If > 0, near-equal nodes tie on this scorer: every feasible node whose score lies within
  // TieTolerance() of the best feasible node's counts as scoring the best (before weighting and
  // normalising), so that the other scorers, then the node order, decide among them. Called
  // after PreScore; constant over a cycle.
  virtual int64_t TieTolerance() const { return 0; }
};

class ReservePlugin : public virtual Plugin {
 public:
  // Chooses the GPU devices on placement->node (placement->num_gpus == pod.num_gpu on
  // success). Returns false if it cannot.
  virtual bool Reserve(CycleState& cycle, const core::ClusterState& state,
                       core::Placement* placement) = 0;
  virtual void Unreserve(CycleState& /*cycle*/, const core::Placement& /*placement*/) {}
};

// Sees the pod stream: arrivals (whether or not they fit), bindings and departures. A policy
// that learns the workload online implements this.
class ObserverPlugin : public virtual Plugin {
 public:
  virtual void OnArrival(const core::PodShape& /*pod*/) {}
  virtual void OnBound(const core::PodShape& /*pod*/, const core::Placement& /*p*/,
                       const core::ClusterState& /*state*/) {}
  virtual void OnReleased(const core::PodShape& /*pod*/, const core::Placement& /*p*/,
                          const core::ClusterState& /*state*/) {}
};

// The plugins of one policy. One object may serve several extension points.
struct Profile {
  std::string name;
  std::vector<std::shared_ptr<PreFilterPlugin>> pre_filters;
  std::vector<std::shared_ptr<FilterPlugin>> filters;
  std::vector<std::shared_ptr<PostFilterPlugin>> post_filters;
  struct WeightedScore {
    std::shared_ptr<ScorePlugin> plugin;
    int64_t weight = 1;
  };
  std::vector<WeightedScore> scores;
  std::shared_ptr<ReservePlugin> reserve;
  std::vector<std::shared_ptr<PermitPlugin>> permits;
  std::vector<std::shared_ptr<ObserverPlugin>> observers;
};

struct FrameworkOptions {
  uint64_t seed = 42;
  // Tie-break order: node_order[i] is the i-th node to consider. Empty = index order. Nodes
  // added to the ClusterState later (AddNode) come after these, in index order.
  std::vector<int> node_order;
  // Reuse the scores of Cacheable() plugins (the default). false: every score is recomputed
  // every cycle; decisions are the same, only slower (a check that the cache is invisible).
  bool score_cache = true;
  // Whole-GPU pods (and a sharing pod Reserve put on a whole free GPU) get their GPUs from the
  // topology chooser (ChooseGpuSet, topology.h) on nodes that describe their GPU topology;
  // false: the Reserve plugin's (the reference simulator's lowest free indices), for
  // side-by-side comparisons. Node choices are the same either way.
  bool topology_gpus = true;
};

class Framework {
 public:
  Framework(Profile profile, FrameworkOptions options);

  const std::string& name() const { return profile_.name; }

  // Tells observers a pod arrived (call once per pod, before its first Schedule).
  void NotifyArrival(const core::PodShape& pod);
  // Runs one scheduling cycle and, on success, binds the pod into `state`. Cached scores belong
  // to the ClusterState object last scheduled on: passing a different object drops them.
  // REQUIRES: `state` changes only through Allocate/Release between calls (so versions move).
  Outcome Schedule(const core::PodShape& pod, core::ClusterState& state);
  // The parts of Schedule an external scheduler drives (the Kubernetes extender's prioritize
  // and bind). Rank: the node Schedule would choose among `candidates` (node indices; those the
  // pod does not fit on or the Filter plugins reject are left out) or -1, and in *totals each
  // remaining candidate with the total it was ranked by, in index order. Nothing is bound.
  int Rank(const core::PodShape& pod, core::ClusterState& state, const std::vector<int>& candidates,
           std::vector<std::pair<int, int64_t>>* totals);
  // Schedule with the node given: Filter on that node alone, PreScore, then Reserve, Permit and
  // Bind as Schedule does (kUnschedulable when the pod does not fit there).
  Outcome PlaceOn(const core::PodShape& pod, core::ClusterState& state, int node);
  // Releases a bound pod from `state` and tells observers. REQUIRES: it was bound.
  void Release(const core::PodShape& pod, const core::Placement& placement,
               core::ClusterState& state);
  // Undoes a kWait outcome the caller will not confirm (rejected, timed out): Unreserve, then
  // Release. REQUIRES: `placement` is that outcome's placement, still committed.
  void RejectWaiting(const core::PodShape& pod, const core::Placement& placement,
                     core::ClusterState& state);

  // Why the pod fits where it does not: Diagnose(state, pod), then the profile's Filter plugins
  // over the nodes that passed it, each rejection counted as kPlugin (Diagnosis::plugin names
  // the first plugin that rejected). PreFilter plugins are not run. O(live nodes x filters).
  Diagnosis Explain(const core::PodShape& pod, const core::ClusterState& state) const;

  // Seeded random node order for tie-breaks (the reference's random name prefixes).
  static std::vector<int> RandomNodeOrder(int num_nodes, uint64_t seed);

 private:
  struct CacheEntry {
    uint64_t stamp = 0;
    int64_t score = 0;
  };
  struct ShapeKey {
    int64_t cpu_milli;
    int32_t num_gpu;
    int32_t gpu_milli;
    uint64_t mask;
    bool operator==(const ShapeKey&) const = default;
  };
  struct ShapeKeyHash {
    size_t operator()(const ShapeKey& k) const;
  };
  int ShapeId(const core::PodShape& pod);
  // The cache entries of one scorer for one request shape, indexed by node.
  CacheEntry* CacheFor(size_t scorer, int shape_id);
  // The entry's score if its stamp (cache generation | node version) matches, else a new one.
  static int64_t Cached(CacheEntry& e, uint64_t stamp, ScorePlugin& plugin, const CycleState& cycle,
                        const core::ClusterState& state, int n);
  // Drops every cached score if the cluster (object or size) is not the one they were made for.
  void SyncCacheTo(const core::ClusterState& state);
  // Calls each scorer's PreScore and prepares its cache: entries for this pod's shape (nullptr
  // when the scorer is not cached) and the stamp's generation bits.
  void PrepareScorers(CycleState& cycle, const core::ClusterState& state, int shape_id);
  // The selections for profiles without normalisation; each returns the node with the best
  // weighted total, the first in node order on ties, or -1. SelectUnnormalized dispatches: one
  // scorer (SelectOneScorer), uncached scorers that are all bounded (SelectBounded: cached sums
  // first, the rest only on the nodes they do not rule out), else one pass over every scorer.
  int SelectOneScorer(const CycleState& cycle, const core::ClusterState& state);
  int SelectBounded(const CycleState& cycle, const core::ClusterState& state, int64_t slack);
  int SelectUnnormalized(const CycleState& cycle, const core::ClusterState& state);
  // False when the raw scores select the same node as the normalised ones (NormalizeKeepsTop).
  bool NeedsNormalizing() const;
  // Scores, normalises and sums per scorer, then selects. Returns the best node.
  int SelectNormalized(const CycleState& cycle, const core::ClusterState& state);
  // Sizes rank_ for the state's node count (node_order, extended for nodes added since).
  void SyncRanks(int num_nodes);
  // Filter plugins' verdict for node n (all must accept); the first rejecting plugin's name
  // into *rejected_by when it is empty.
  bool PassesFilterPlugins(const CycleState& cycle, const core::ClusterState& state, int n,
                           std::string* rejected_by) const;
  // PostFilter round after a failed Filter.
  void RunPostFilters(CycleState& cycle, const core::ClusterState& state, Outcome* out);
  // Permit round: false (out filled, unreserved) on a rejection; *wait_s > 0 if one waits.
  // Schedule's steps: PreFilter (false: *out says why), Filter into feasible_ (candidates or
  // every node), PreScore and select (-1: none), the unschedulable outcome, and Reserve to Bind.
  bool StartCycle(const core::PodShape& pod, core::ClusterState& state, CycleState* cycle,
                  Outcome* out);
  void FilterNodes(const CycleState& cycle, const core::ClusterState& state,
                   const std::vector<int>* candidates);
  int SelectBest(CycleState& cycle, const core::ClusterState& state);
  void NoNode(CycleState& cycle, const core::ClusterState& state, Outcome* out);
  void Commit(CycleState& cycle, core::ClusterState& state, int node, Outcome* out);
  void ChooseTopologyGpus(const core::PodShape& pod, const core::ClusterState& state, int node,
                          core::Placement* placement) const;
  bool RunPermits(CycleState& cycle, const core::ClusterState& state, bool reserved, Outcome* out,
                  double* wait_s);

  Profile profile_;
  FrameworkOptions options_;
  std::mt19937_64 rng_;
  std::unordered_map<ShapeKey, int, ShapeKeyHash> shape_ids_;
  // Per cacheable scorer: entries indexed by shape_id * num_nodes + node.
  std::vector<std::vector<CacheEntry>> cache_;
  std::vector<uint64_t> cache_epoch_;
  std::vector<uint32_t> cache_gen_;
  int cache_nodes_ = 0;
  const core::ClusterState* cache_state_ = nullptr;
  // Per scorer, for the current cycle (PrepareScorers).
  std::vector<CacheEntry*> cycle_entries_;
  std::vector<uint64_t> cycle_gen_;
  std::vector<int64_t> partial_;  // per feasible node: the weighted sum of the cached scores
  std::vector<int> contenders_;   // the feasible nodes the cached scores do not rule out
  std::vector<int64_t> contender_totals_, contender_scores_;
  std::vector<int> rank_;         // rank_[node] = position in options_.node_order
  std::vector<int> feasible_;
  std::vector<int64_t> scores_;
  std::vector<int64_t> totals_;
};

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_FRAMEWORK_H_
