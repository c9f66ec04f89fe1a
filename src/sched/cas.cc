// cas: Seedance's cost-aware placement policy. docs/cas.md gives the reasoning and experiments.
//
// Three ideas on top of FGD's fragmentation gradient (Weng et al., ATC'23):
//  1. No oracle: the target workload is learned online from the pods seen arriving (FGD is
//     handed the replayed trace's shape distribution in advance), and relearned only when it
//     has moved (relearning voids every cached score).
//  2. A coarser score, sigmoid(dF / 3000) instead of sigmoid(dF / 1000), truncated to an
//     integer as in FGD: more near-equal nodes tie and fall back to the fixed node order,
//     which packs like first-fit (ties=1: ties within a tolerance instead, docs/cas.md). Inside
//     the chosen node a GPU-sharing pod takes the GPU with the best exact gradient, then the
//     least room.
//  3. CPU-aware placement: when the workload leaves CPU headroom, CPU-only pods go where CPU is
//     in surplus over what the node's idle GPUs will need, and GPU pods go where the node's CPU
//     left afterwards best matches its idle GPUs, so GPUs are not stranded without CPU; when
//     CPU is the scarce resource both are packed in node order instead.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fgd.h"
#include "policies.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::sched::internal {
namespace {

using core::ClusterState;
using core::kMilliGpu;
using core::Placement;
using core::PodShape;

// Every knob has a name here (docs/cas.md); defaults are the tuned configuration.
struct CasOptions {
  // Shapes covering this share of the pods seen form the learned target workload.
  double coverage_pct = 95.0;
  // Rebuild the learned workload after max(min_rebuild_arrivals, rebuild_fraction x seen)
  // new arrivals.
  double min_rebuild_arrivals = 16;
  double rebuild_fraction = 0.05;
  // Which nodes tie on the gradient dF (the primary): 0 = equal buckets of the bucketed score
  // below; 1 = those within tie_tolerance points of the best node's sigmoid(dF / (sigmoid_scale
  // x the GPUs the pod asks for)) x 100 (better in fill, worse in churn: docs/cas.md).
  int ties = 0;
  double tie_tolerance = 0.5;
  // ties=0's buckets: 0 = integer sigmoid(dF / sigmoid_scale) x 100 (FGD's form), 1 = dF
  // itself in units of delta_quantum milli-GPU (for experiments: it does worse).
  int raw_delta = 0;
  double sigmoid_scale = 3000.0;
  double delta_quantum = 1.0;
  // GPU of a sharing pod among equal scores: 0 = lowest index (FGD), 1 = least room,
  // 2 = best exact gradient, then least room.
  int gpu_choice = 2;
  // CPU-only pods among equal scores: 0 = node order (FGD), 1 = most CPU surplus over the
  // idle GPUs' needs, 2 = 1 while the workload's CPU per GPU is below cpu_headroom_ratio x
  // the cluster's, else 0.
  int cpu_pods = 2;
  double cpu_headroom_ratio = 0.85;
  // GPU pods among equal scores: 0 = node order (FGD); 1 = while CPU pods are spread, the node
  // whose CPU left afterwards best matches its idle GPUs (smallest |surplus|); 2 = always.
  int balance_gpu_pods = 1;
  // GPU pods that accept any model, once pods bound to a GPU model have been seen: 1 = not
  // balanced (node order decides among equal primaries), 0 = balanced like the others. The
  // balance steers pods by each node's CPU per GPU, so it moves unbound pods onto the models
  // whose nodes match the learned ratio, which bound pods then find full (docs/cas.md).
  int bound_aware = 1;
  // A scheduled rebuild is skipped while the newly learned workload lies within this
  // total-variation distance of the one in use (0: always rebuild). Negative: derived from the
  // score's resolution, MinDrift() (docs/cas.md).
  double min_drift = -1;
  // Among tied nodes, rank last those where the pod would take a k-GPU slot (a node's whole
  // free GPUs in groups of k) while the cluster holds no more k-GPU slots than the learned
  // workload's k-GPU pods need of the GPUs still free: 1 = on, 0 = off.
  int reserve_slots = 0;
};

// The drift below which relearning is skipped: min_drift, or where it is negative, the distance
// at which a pod's gradient moves by about the score's resolution. A distance d moves each
// gradient by about d x the GPU the pod takes. With buckets the resolution is half a step, one
// step of int(sigmoid(x / scale) x 100) at its centre being 4 x scale / 100 milli-GPU (120 at
// 3,000), or one delta_quantum of the raw score; with tolerance ties it is the tolerance at the
// centre, tie_tolerance x 4 x scale / 100 milli-GPU per GPU asked for (60 at 0.5 and 3,000).
double MinDrift(const CasOptions& o) {
  if (o.min_drift >= 0) return o.min_drift;
  const double step = o.raw_delta   ? o.delta_quantum
                      : o.ties == 1 ? 2.0 * o.tie_tolerance * 4.0 * o.sigmoid_scale / 100.0
                                    : 4.0 * o.sigmoid_scale / 100.0;
  return step / 2.0 / static_cast<double>(kMilliGpu);
}

// One knob: its name, the accepted range, and where it goes. Integer choices take 0..choice_max.
struct Knob {
  const char* name;
  base::NumRange range;
  int choice_max;  // -1: a real number
  double CasOptions::*real;
  int CasOptions::*choice;
};

const std::vector<Knob>& Knobs() {
  static const std::vector<Knob>* knobs = new std::vector<Knob>{
      {"coverage_pct", {0, 100, true, false}, -1, &CasOptions::coverage_pct, nullptr},
      {"min_rebuild_arrivals", base::Positive(), -1, &CasOptions::min_rebuild_arrivals, nullptr},
      {"rebuild_fraction", base::NonNegative(), -1, &CasOptions::rebuild_fraction, nullptr},
      {"ties", {}, 1, nullptr, &CasOptions::ties},
      {"tie_tolerance", base::Closed(0, 100), -1, &CasOptions::tie_tolerance, nullptr},
      {"raw_delta", {}, 1, nullptr, &CasOptions::raw_delta},
      {"sigmoid_scale", base::Positive(), -1, &CasOptions::sigmoid_scale, nullptr},
      {"delta_quantum", base::Positive(), -1, &CasOptions::delta_quantum, nullptr},
      {"gpu_choice", {}, 2, nullptr, &CasOptions::gpu_choice},
      {"cpu_pods", {}, 2, nullptr, &CasOptions::cpu_pods},
      {"cpu_headroom_ratio", base::Positive(), -1, &CasOptions::cpu_headroom_ratio, nullptr},
      {"balance_gpu_pods", {}, 2, nullptr, &CasOptions::balance_gpu_pods},
      {"bound_aware", {}, 1, nullptr, &CasOptions::bound_aware},
      {"min_drift", base::Closed(0, 1), -1, &CasOptions::min_drift, nullptr},
      {"reserve_slots", {}, 1, nullptr, &CasOptions::reserve_slots},
  };
  return *knobs;
}

std::vector<std::string> KnobNames() {
  std::vector<std::string> names;
  for (const Knob& k : Knobs()) names.push_back(k.name);
  return names;
}

// Every value is checked strictly (no NaN, infinities, trailing text or out-of-range values):
// kInvalidArgument naming the option, the accepted range and the value.
absl::Status ParseOptions(const std::map<std::string, std::string>& params, CasOptions* o) {
  for (const auto& kv : params) {
    // Named references rather than structured bindings: clang 14 (the fuzz build) cannot capture
    // structured bindings in lambdas.
    const std::string& key = kv.first;
    const std::string& value = kv.second;
    const std::string flag = absl::StrCat("--policy-opt ", base::ForTerminal(base::Clip(key, 40)));
    auto knob =
        std::find_if(Knobs().begin(), Knobs().end(), [&](const Knob& k) { return key == k.name; });
    if (knob == Knobs().end()) {
      const std::string guess = base::ClosestMatch(key, KnobNames());
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": unknown cas option '", base::ForTerminal(base::Clip(key, 40)), "'",
                       guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)"),
                       "; known: ", absl::StrJoin(KnobNames(), ", ")));
    }
    if (knob->choice_max >= 0) {
      absl::StatusOr<int64_t> v = base::ParseInt64(value, flag, 0, knob->choice_max);
      if (!v.ok()) return absl::InvalidArgumentError(v.status().message());
      o->*(knob->choice) = static_cast<int>(*v);
    } else {
      absl::StatusOr<double> v = base::ParseDouble(value, flag, knob->range);
      if (!v.ok()) return absl::InvalidArgumentError(v.status().message());
      o->*(knob->real) = *v;
    }
  }
  return absl::OkStatus();
}

// The score is primary x kSecondaryRange + secondary, split over two score plugins so that the
// cache contract holds: CasPlugin scores primary x kSecondaryRange, which depends only on the
// node, the pod and the learned target workload (its epoch moves on every rebuild), and is
// cached; with tolerance ties (ties=1) it declares the tolerance (TieTolerance), and the
// framework raises every primary within it of the best to the best. CasBalanceScore scores the
// CPU-balance secondary, which also reads the learned CPU per GPU (it moves on every GPU-pod
// arrival) and the CPU regime, and is recomputed every cycle. The secondary is the same for
// every GPU of a node, so the best sharing GPU's total is the best primary plus the node's
// secondary: the sum equals the one-plugin score exactly.
class CasPlugin : public ScorePlugin, public ReservePlugin, public ObserverPlugin {
 public:
  explicit CasPlugin(CasOptions o) : opt_(o) { eval_.set_memoize(false); }
  std::string_view Name() const override { return "CostAwareScore"; }
  bool Cacheable() const override { return true; }
  // Moves whenever the learned target workload (all the cached primary reads) is rebuilt.
  uint64_t Epoch() const override { return epoch_; }

  void OnArrival(const PodShape& pod) override {
    counts_[std::make_tuple(pod.cpu_milli, pod.gpu_milli, pod.num_gpu, pod.gpu_model_mask)] += 1;
    all_cpu_milli_ += static_cast<double>(pod.cpu_milli);
    all_gpu_milli_ += static_cast<double>(pod.TotalGpuMilli());
    if (pod.num_gpu > 0) {
      gpu_pods_cpu_milli_ += static_cast<double>(pod.cpu_milli);
      gpu_pods_gpu_milli_ += static_cast<double>(pod.TotalGpuMilli());
      seen_bound_gpu_pods_ = seen_bound_gpu_pods_ || pod.gpu_model_mask != 0;
      if (pod.num_gpu >= 2 && pod.gpu_milli >= kMilliGpu) {
        multi_gpu_milli_[std::min(pod.num_gpu, core::kMaxGpusPerNode)] +=
            static_cast<double>(pod.TotalGpuMilli());
      }
    }
    ++seen_;
    ++since_rebuild_;
    UpdateCpuRegime();
    if (since_rebuild_ >= std::max(opt_.min_rebuild_arrivals, opt_.rebuild_fraction * seen_)) {
      Rebuild();
    }
  }

  void PreScore(CycleState& c, const ClusterState& s) override {
    if (cluster_cpu_per_gpu_ < 0 && s.gpu_capacity_milli() > 0) {
      cluster_cpu_per_gpu_ =
          static_cast<double>(s.cpu_capacity_milli()) / static_cast<double>(s.gpu_capacity_milli());
      UpdateCpuRegime();
    }
    states_.StartCycle(s, *c.pod, epoch_);
    scarce_ = opt_.reserve_slots == 1 && c.pod->num_gpu > 0 ? ScarceSlots(s) : 0;
  }

  // primary x kSecondaryRange (the best sharing GPU's for a sharing pod). A pure function of
  // the node's state, the pod and the learned workload: computed once per distinct state.
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    return states_.Get(s, n, pod, [&] {
      if (!pod.IsGpuSharing()) return Primary(eval_.Delta(s, n, pod), pod);
      // Primary is non-decreasing in the gradient: the best GPU's primary is the primary of
      // the best gradient, one sigmoid per node state instead of one per GPU room.
      double best = 0;
      bool any = false;
      BestSharingGpuScore(s, n, pod, [&](int i) {
        const double delta = eval_.Delta(s, n, pod, i);
        best = any ? std::max(best, delta) : delta;
        any = true;
        return int64_t{0};
      });
      return any ? Primary(best, pod) : 0;
    });
  }

  // The tolerance of tolerance ties, in Score's units; 0 with buckets.
  int64_t TieTolerance() const override {
    return opt_.ties == 1 ? static_cast<int64_t>(opt_.tie_tolerance * 1e4) * kSecondaryRange : 0;
  }

  // The CPU-balance secondary in [0, kSecondaryRange): CasBalanceScore's score.
  int64_t Secondary(const ClusterState& s, int n, const PodShape& pod) const {
    const SecondaryTerms t = TermsFor(pod);
    return t.Kept(s, n, t.Of(s, n));
  }
  // The secondaries of many nodes for one pod (the same values, one set-up).
  void SecondaryBatch(const ClusterState& s, const PodShape& pod, std::span<const int> nodes,
                      std::span<int64_t> out) const {
    const SecondaryTerms t = TermsFor(pod);
    if (t.kind == SecondaryTerms::kNone) {
      std::fill(out.begin(), out.end(), 0);
    } else if (t.kind == SecondaryTerms::kBalance) {
      // SecondaryTerms::Of's balance branch, without the per-node kind tests.
      for (size_t i = 0; i < nodes.size(); ++i) out[i] = t.Balance(s, nodes[i]);
    } else {
      for (size_t i = 0; i < nodes.size(); ++i) out[i] = t.Of(s, nodes[i]);
    }
    if (t.scarce != 0) {
      for (size_t i = 0; i < nodes.size(); ++i) out[i] = t.Kept(s, nodes[i], out[i]);
    }
  }
  // Secondaries lie in [0, kSecondaryRange).
  static constexpr int64_t kSecondaryRange = int64_t{1} << 21;

  // What the secondary reads of the pod and of the learned workload, set up once per pod.
  struct SecondaryTerms {
    enum Kind { kNone, kBalance, kSpread } kind = kNone;
    int64_t pod_cpu = 0, pod_gpu = 0;
    double cpu_per_gpu = 0;
    uint32_t scarce = 0;  // slot sizes to keep (bit k)
    int whole = 0;        // whole GPUs the pod takes (0 for a sharing pod)
    int32_t share = 0;    // milli-GPU of a sharing pod
    // True if the pod would take a scarce slot on node n (a sharing pod takes a free GPU where
    // no partly used GPU's room, summed, holds it).
    bool TakesScarceSlot(const ClusterState& s, int n) const {
      if (scarce == 0) return false;
      const int f = s.free_gpus(n);
      const int used =
          share == 0 ? whole : (s.gpu_milli_left(n) - int64_t{f} * kMilliGpu >= share ? 0 : 1);
      for (int k = 2; k <= f && used > 0; ++k) {
        if (((scarce >> k) & 1u) != 0 && (f - used) / k < f / k) return true;
      }
      return false;
    }
    // The secondary with slot keeping: slot takers in the lower half.
    int64_t Kept(const ClusterState& s, int n, int64_t secondary) const {
      if (scarce == 0) return secondary;
      return secondary / 2 + (TakesScarceSlot(s, n) ? 0 : kSecondaryRange / 2);
    }
    int64_t Of(const ClusterState& s, int n) const;
    // Of for kind == kBalance.
    int64_t Balance(const ClusterState& s, int n) const {
      const double surplus = Surplus(s, n);
      const int64_t units = static_cast<int64_t>(std::abs(surplus) / 100.0);
      return std::max<int64_t>(0, kSecondaryRange - 1 - units);
    }
    // CPU surplus after placement: CPU left minus what the idle GPUs left will need.
    double Surplus(const ClusterState& s, int n) const {
      const int64_t gpu_left = s.gpu_milli_left(n) - pod_gpu;
      return static_cast<double>(s.cpu_left(n) - pod_cpu) -
             static_cast<double>(gpu_left) * cpu_per_gpu;
    }
  };
  SecondaryTerms TermsFor(const PodShape& pod) const;

  bool Reserve(CycleState& c, const ClusterState& s, Placement* p) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return ChooseExclusiveGpus(s, pod, p);
    int64_t best = 0;
    int chosen = -1;
    auto gl = s.gpu_left(p->node);
    for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
      if (gl[i] < pod.gpu_milli) continue;
      const double delta = eval_.Delta(s, p->node, pod, i);
      const int64_t v = opt_.gpu_choice == 2 ? static_cast<int64_t>(std::floor(delta * 64.0))
                                             : Combine(s, p->node, pod, delta);
      if (chosen < 0 || v > best || (v == best && opt_.gpu_choice >= 1 && gl[i] < gl[chosen])) {
        best = v;
        chosen = i;
      }
    }
    if (chosen < 0) return false;
    p->num_gpus = 1;
    p->gpus[0] = static_cast<int8_t>(chosen);
    return true;
  }

 private:
  void Rebuild() {
    std::vector<ShapeCount> counts;
    counts.reserve(counts_.size());
    for (const auto& [key, count] : counts_) {
      ShapeCount sc;
      std::tie(sc.shape.cpu_milli, sc.shape.gpu_milli, sc.shape.num_gpu, sc.shape.gpu_model_mask) =
          key;
      sc.shape.gpu_spec = std::to_string(sc.shape.gpu_model_mask);  // identity for tie order
      sc.count = count;
      counts.push_back(std::move(sc));
    }
    TargetWorkload learned = TypicalShapes(std::move(counts), opt_.coverage_pct);
    since_rebuild_ = 0;
    // Relearning voids every cached score: not worth it while the workload has barely moved,
    // but the one in use is never learned from fewer than half the pods seen, so that a
    // settled estimate keeps sharpening (a long churn run) instead of freezing.
    if (epoch_ > 0 && seen_ < 2 * learned_from_ &&
        WorkloadDistance(learned, eval_.workload()) < MinDrift(opt_)) {
      return;
    }
    learned_from_ = seen_;
    eval_.SetWorkload(std::move(learned));
    ++epoch_;
  }

  // Bit k set: the cluster's k-GPU slots (sum over schedulable nodes of free GPUs / k) are no
  // more than the learned k-GPU pods' share of the GPU demand would fill of the free GPUs.
  uint32_t ScarceSlots(const ClusterState& s) const {
    if (gpu_pods_gpu_milli_ <= 0) return 0;
    const std::span<const int32_t> by_free = s.schedulable_by_free_gpus();
    const double free_milli = static_cast<double>(s.gpu_capacity_milli() - s.gpu_allocated_milli());
    uint32_t mask = 0;
    for (int k = 2; k <= core::kMaxGpusPerNode; ++k) {
      if (multi_gpu_milli_[k] <= 0) continue;
      const double need = free_milli * multi_gpu_milli_[k] / gpu_pods_gpu_milli_ /
                          (static_cast<double>(k) * kMilliGpu);
      double slots = 0;
      for (size_t f = static_cast<size_t>(k); f < by_free.size(); ++f) {
        slots += static_cast<double>(by_free[f]) * static_cast<double>(f / static_cast<size_t>(k));
      }
      if (slots <= need) mask |= 1u << k;
    }
    return mask;
  }

  void UpdateCpuRegime() {
    if (opt_.cpu_pods != 2) {
      spread_cpu_pods_ = opt_.cpu_pods == 1;
      return;
    }
    if (cluster_cpu_per_gpu_ <= 0 || all_gpu_milli_ <= 0) {
      spread_cpu_pods_ = true;
      return;
    }
    spread_cpu_pods_ =
        all_cpu_milli_ / all_gpu_milli_ < opt_.cpu_headroom_ratio * cluster_cpu_per_gpu_;
  }

  // Primary x kSecondaryRange. The primary is sigmoid(dF / (sigmoid_scale x g)) x 100, g the
  // GPUs the pod asks for (1 for a CPU-only pod): with tolerance ties (ties=1) in units of 1e-4
  // point and the scale per GPU asked for, so that a pod's gradients, which grow with what it
  // takes, tie within the same share of it; with buckets (ties=0) truncated to whole points
  // (FGD's form) or, with raw_delta, dF in units of delta_quantum milli-GPU.
  int64_t Primary(double delta, const PodShape& pod) const {
    if (opt_.ties == 0 && opt_.raw_delta) {
      return static_cast<int64_t>(std::floor(std::clamp(delta / opt_.delta_quantum, -1e9, 1e9))) *
             kSecondaryRange;
    }
    const double g = opt_.ties == 1 && pod.num_gpu > 0
                         ? static_cast<double>(pod.TotalGpuMilli()) / kMilliGpu
                         : 1.0;
    const double sigmoid = 1.0 / (1.0 + std::exp(-delta / (opt_.sigmoid_scale * g)));
    return static_cast<int64_t>(sigmoid * (opt_.ties == 1 ? 1e6 : 100.0)) * kSecondaryRange;
  }
  // A sharing GPU's whole score, for comparing the GPUs of one node.
  int64_t Combine(const ClusterState& s, int n, const PodShape& pod, double delta) const {
    return Primary(delta, pod) + Secondary(s, n, pod);
  }

  CasOptions opt_;
  FragEvaluator eval_;
  StateScoreMemo states_;
  // Iteration order does not matter: TypicalShapes orders shapes totally.
  absl::flat_hash_map<std::tuple<int64_t, int32_t, int32_t, uint64_t>, double> counts_;
  double seen_ = 0;
  double since_rebuild_ = 0;
  double learned_from_ = 0;  // pods seen when the workload in use was learned
  uint64_t epoch_ = 0;
  // Learned CPU demand: all pods, and GPU pods only (milli-CPU per milli-GPU).
  double all_cpu_milli_ = 0, all_gpu_milli_ = 0;
  double gpu_pods_cpu_milli_ = 0, gpu_pods_gpu_milli_ = 0;
  double cluster_cpu_per_gpu_ = -1;  // set at the first PreScore
  bool seen_bound_gpu_pods_ = false;  // a GPU pod bound to a model has arrived
  bool spread_cpu_pods_ = true;
  // Learned GPU demand of pods with k whole GPUs (k >= 2), and this cycle's scarce slot sizes.
  std::array<double, core::kMaxGpusPerNode + 1> multi_gpu_milli_{};
  uint32_t scarce_ = 0;
};

CasPlugin::SecondaryTerms CasPlugin::TermsFor(const PodShape& pod) const {
  SecondaryTerms t;
  const bool unbound_among_bound =
      opt_.bound_aware == 1 && seen_bound_gpu_pods_ && pod.gpu_model_mask == 0;
  const bool balance_gpu_pod =
      pod.num_gpu > 0 && !unbound_among_bound &&
      (opt_.balance_gpu_pods == 2 || (opt_.balance_gpu_pods == 1 && spread_cpu_pods_));
  const bool spread_cpu_pod = pod.num_gpu == 0 && spread_cpu_pods_;
  t.kind = balance_gpu_pod  ? SecondaryTerms::kBalance
           : spread_cpu_pod ? SecondaryTerms::kSpread
                            : SecondaryTerms::kNone;
  t.pod_cpu = pod.cpu_milli;
  t.pod_gpu = pod.TotalGpuMilli();
  t.scarce = pod.num_gpu > 0 ? scarce_ : 0;
  t.whole = pod.gpu_milli >= kMilliGpu ? pod.num_gpu : 0;
  t.share = pod.gpu_milli < kMilliGpu ? pod.gpu_milli : 0;
  t.cpu_per_gpu = gpu_pods_gpu_milli_ > 0 ? gpu_pods_cpu_milli_ / gpu_pods_gpu_milli_ : 0.0;
  return t;
}

// Secondary (GPU pods while balancing, CPU-only pods while spreading): CPU surplus.
int64_t CasPlugin::SecondaryTerms::Of(const ClusterState& s, int n) const {
  if (kind == kNone) return 0;
  // Keep CPU in proportion to idle GPU: smallest |surplus| first.
  if (kind == kBalance) return Balance(s, n);
  const double surplus = Surplus(s, n);
  const int64_t gpu_left = s.gpu_milli_left(n) - pod_gpu;
  if (surplus >= 0) {
    // Most surplus first: keeps every node's CPU in proportion to its idle GPUs.
    return kSecondaryRange / 2 +
           std::min<int64_t>(static_cast<int64_t>(surplus / 100.0), kSecondaryRange / 2 - 1);
  }
  // No node can spare CPU: hurt the node with the fewest idle GPUs.
  return std::max<int64_t>(0, kSecondaryRange / 2 - 1 - gpu_left / 10);
}

// Not cacheable: reads what CasPlugin learns on every arrival. Scored after CasPlugin, whose
// PreScore sets the CPU regime it reads.
class CasBalanceScore : public ScorePlugin {
 public:
  explicit CasBalanceScore(std::shared_ptr<const CasPlugin> cas) : cas_(std::move(cas)) {}
  std::string_view Name() const override { return "CostAwareCpuBalance"; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    return cas_->Secondary(s, n, *c.pod);
  }
  void ScoreBatch(const CycleState& c, const ClusterState& s, std::span<const int> nodes,
                  std::span<int64_t> out) override {
    cas_->SecondaryBatch(s, *c.pod, nodes, out);
  }
  int64_t ScoreBound() const override { return CasPlugin::kSecondaryRange; }

 private:
  std::shared_ptr<const CasPlugin> cas_;
};

}  // namespace

std::vector<std::string> CasOptionNames() { return KnobNames(); }

absl::Status CheckCasOptions(const std::map<std::string, std::string>& params) {
  CasOptions unused;
  return ParseOptions(params, &unused);
}

absl::StatusOr<Profile> MakeCas(const PolicyContext& ctx) {
  CasOptions o;
  if (ctx.elastic) {  // pack in node order; explicit --policy-opt values still win
    o.cpu_pods = 0;
    o.balance_gpu_pods = 0;
  }
  if (absl::Status st = ParseOptions(ctx.params, &o); !st.ok()) return st;
  auto plugin = std::make_shared<CasPlugin>(o);
  Profile p;
  p.name = "cas";
  p.scores.push_back({plugin, 1});
  p.scores.push_back({std::make_shared<CasBalanceScore>(plugin), 1});
  p.reserve = plugin;
  p.observers.push_back(plugin);
  return p;
}

}  // namespace seedance::sched::internal
