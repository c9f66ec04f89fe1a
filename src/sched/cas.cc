// cas: Seedance's cost-aware placement policy. docs/cas.md gives the reasoning and experiments.
//
// Three ideas on top of FGD's fragmentation gradient (Weng et al., ATC'23):
//  1. No oracle: the target workload is learned online from the pods seen arriving (FGD is
//     handed the replayed trace's shape distribution in advance).
//  2. A coarser score, sigmoid(dF / 3000) instead of sigmoid(dF / 1000), truncated to an
//     integer as in FGD: more near-equal nodes tie and fall back to the fixed node order,
//     which packs like first-fit. Inside the chosen node a GPU-sharing pod takes the GPU with
//     the best exact gradient, then the least room.
//  3. CPU-aware placement: when the workload leaves CPU headroom, CPU-only pods go where CPU is
//     in surplus over what the node's idle GPUs will need, and GPU pods go where the node's CPU
//     left afterwards best matches its idle GPUs, so GPUs are not stranded without CPU; when
//     CPU is the scarce resource both are packed in node order instead.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fgd.h"
#include "policies.h"

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
  // Primary score: 0 = integer sigmoid(dF / sigmoid_scale) x 100 (FGD's form), 1 = dF itself
  // in units of delta_quantum milli-GPU (for experiments: it does worse).
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
};

absl::Status ParseOptions(const std::map<std::string, std::string>& params, CasOptions* o) {
  for (const auto& kv : params) {
    // Named references rather than structured bindings: clang 14 (the fuzz build) cannot capture
    // structured bindings in the lambdas below.
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    double d = 0;
    if (!absl::SimpleAtod(v, &d) || !std::isfinite(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cas option ", k, ": not a number: '", v, "'"));
    }
    auto positive = [&]() -> absl::Status {
      if (d > 0) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat("cas option ", k, ": must be > 0, got ", v));
    };
    auto choice = [&](int hi) -> absl::Status {
      if (d == std::floor(d) && d >= 0 && d <= hi) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("cas option ", k, ": must be an integer 0..", hi, ", got ", v));
    };
    absl::Status st;
    if (k == "coverage_pct") {
      st = d > 0 && d <= 100
               ? absl::OkStatus()
               : absl::InvalidArgumentError("cas option coverage_pct: must be in (0, 100]");
      o->coverage_pct = d;
    } else if (k == "min_rebuild_arrivals") {
      st = positive();
      o->min_rebuild_arrivals = d;
    } else if (k == "rebuild_fraction") {
      st = d >= 0 ? absl::OkStatus()
                  : absl::InvalidArgumentError("cas option rebuild_fraction: must be >= 0");
      o->rebuild_fraction = d;
    } else if (k == "raw_delta") {
      st = choice(1);
      o->raw_delta = static_cast<int>(d);
    } else if (k == "sigmoid_scale") {
      st = positive();
      o->sigmoid_scale = d;
    } else if (k == "delta_quantum") {
      st = positive();
      o->delta_quantum = d;
    } else if (k == "gpu_choice") {
      st = choice(2);
      o->gpu_choice = static_cast<int>(d);
    } else if (k == "cpu_pods") {
      st = choice(2);
      o->cpu_pods = static_cast<int>(d);
    } else if (k == "balance_gpu_pods") {
      st = choice(2);
      o->balance_gpu_pods = static_cast<int>(d);
    } else if (k == "cpu_headroom_ratio") {
      st = positive();
      o->cpu_headroom_ratio = d;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown cas option '", k,
                       "' (known: coverage_pct, min_rebuild_arrivals, rebuild_fraction, raw_delta, "
                       "sigmoid_scale, delta_quantum, gpu_choice, cpu_pods, cpu_headroom_ratio, "
                       "balance_gpu_pods)"));
    }
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

class CasPlugin : public ScorePlugin, public ReservePlugin, public ObserverPlugin {
 public:
  explicit CasPlugin(CasOptions o) : opt_(o) {}
  std::string_view Name() const override { return "CostAwareScore"; }
  bool Cacheable() const override { return true; }
  uint64_t Epoch() const override { return epoch_; }

  void OnArrival(const PodShape& pod) override {
    const bool spread_before = spread_cpu_pods_;
    counts_[std::make_tuple(pod.cpu_milli, pod.gpu_milli, pod.num_gpu, pod.gpu_model_mask)] += 1;
    all_cpu_milli_ += static_cast<double>(pod.cpu_milli);
    all_gpu_milli_ += static_cast<double>(pod.TotalGpuMilli());
    if (pod.num_gpu > 0) {
      gpu_pods_cpu_milli_ += static_cast<double>(pod.cpu_milli);
      gpu_pods_gpu_milli_ += static_cast<double>(pod.TotalGpuMilli());
    }
    ++seen_;
    ++since_rebuild_;
    UpdateCpuRegime();
    if (spread_cpu_pods_ != spread_before) ++epoch_;  // cached scores depend on the regime
    if (since_rebuild_ >= std::max(opt_.min_rebuild_arrivals, opt_.rebuild_fraction * seen_)) {
      Rebuild();
    }
  }

  void PreScore(CycleState&, const ClusterState& s) override {
    if (cluster_cpu_per_gpu_ < 0 && s.gpu_capacity_milli() > 0) {
      cluster_cpu_per_gpu_ =
          static_cast<double>(s.cpu_capacity_milli()) / static_cast<double>(s.gpu_capacity_milli());
      const bool before = spread_cpu_pods_;
      UpdateCpuRegime();
      if (spread_cpu_pods_ != before) ++epoch_;
    }
  }

  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return Combine(s, n, pod, eval_.Delta(s, n, pod));
    return BestSharingGpuScore(
        s, n, pod, [&](int i) { return Combine(s, n, pod, eval_.Delta(s, n, pod, i)); });
  }

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
  static constexpr int64_t kSecondaryRange = int64_t{1} << 21;

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
    eval_.SetWorkload(TypicalShapes(std::move(counts), opt_.coverage_pct));
    since_rebuild_ = 0;
    ++epoch_;
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

  // Primary: the fragmentation gradient; secondary (for CPU-only pods when spreading): CPU
  // surplus. Returned as primary x kSecondaryRange + secondary.
  int64_t Combine(const ClusterState& s, int n, const PodShape& pod, double delta) const {
    const int64_t primary =
        opt_.raw_delta
            ? static_cast<int64_t>(std::floor(std::clamp(delta / opt_.delta_quantum, -1e9, 1e9)))
            : static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / opt_.sigmoid_scale)) * 100.0);
    int64_t secondary = 0;
    const bool balance_gpu_pod =
        pod.num_gpu > 0 &&
        (opt_.balance_gpu_pods == 2 || (opt_.balance_gpu_pods == 1 && spread_cpu_pods_));
    const bool spread_cpu_pod = pod.num_gpu == 0 && spread_cpu_pods_;
    if (balance_gpu_pod || spread_cpu_pod) {
      // CPU surplus after placement: CPU left minus what the idle GPUs left will need.
      int64_t gpu_left = -pod.TotalGpuMilli();
      for (int32_t v : s.gpu_left(n)) gpu_left += v;
      const double cpu_per_gpu =
          gpu_pods_gpu_milli_ > 0 ? gpu_pods_cpu_milli_ / gpu_pods_gpu_milli_ : 0.0;
      const double surplus = static_cast<double>(s.cpu_left(n) - pod.cpu_milli) -
                             static_cast<double>(gpu_left) * cpu_per_gpu;
      if (balance_gpu_pod) {
        // Keep CPU in proportion to idle GPU: smallest |surplus| first.
        const int64_t units = static_cast<int64_t>(std::abs(surplus) / 100.0);
        secondary = std::max<int64_t>(0, kSecondaryRange - 1 - units);
      } else if (surplus >= 0) {
        // Most surplus first: keeps every node's CPU in proportion to its idle GPUs.
        secondary = kSecondaryRange / 2 + std::min<int64_t>(static_cast<int64_t>(surplus / 100.0),
                                                            kSecondaryRange / 2 - 1);
      } else {
        // No node can spare CPU: hurt the node with the fewest idle GPUs.
        secondary = std::max<int64_t>(0, kSecondaryRange / 2 - 1 - gpu_left / 10);
      }
    }
    return primary * kSecondaryRange + secondary;
  }

  CasOptions opt_;
  FragEvaluator eval_;
  std::map<std::tuple<int64_t, int32_t, int32_t, uint64_t>, double> counts_;
  double seen_ = 0;
  double since_rebuild_ = 0;
  uint64_t epoch_ = 0;
  // Learned CPU demand: all pods, and GPU pods only (milli-CPU per milli-GPU).
  double all_cpu_milli_ = 0, all_gpu_milli_ = 0;
  double gpu_pods_cpu_milli_ = 0, gpu_pods_gpu_milli_ = 0;
  double cluster_cpu_per_gpu_ = -1;  // set at the first PreScore
  bool spread_cpu_pods_ = true;
};

}  // namespace

absl::StatusOr<Profile> MakeCas(const PolicyContext& ctx) {
  CasOptions o;
  if (absl::Status st = ParseOptions(ctx.params, &o); !st.ok()) return st;
  auto plugin = std::make_shared<CasPlugin>(o);
  Profile p;
  p.name = "cas";
  p.scores.push_back({plugin, 1});
  p.reserve = plugin;
  p.observers.push_back(plugin);
  return p;
}

}  // namespace seedance::sched::internal
