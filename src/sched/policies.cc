// The FGD paper's baselines and FGD, as defined by the authors' simulator
// (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*.go). Each scores with a
// single plugin, as in the paper's experiments (weight 1000, percentageOfNodesToScore 100).
#include "policies.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fgd.h"
#include "seedance/base/text.h"

namespace seedance::sched::internal {
namespace {

using core::ClusterState;
using core::kMilliGpu;
using core::Placement;
using core::PodShape;

// Normalisation constants of the reference (open-gpu-share utils: MaxSpecCpu, MaxSpecGpu).
constexpr double kMaxSpecCpu = 128000;
constexpr double kMaxSpecGpu = 8000;
constexpr int64_t kMaxSpecGpuInt = 8000;

// Min-max normalisation into [0, 100] (reference: plugin_utils.go NormalizeScore).
// Maps scores onto 0..100. Only the highest raw score maps to 100: for v < hi, (v - lo) x 100
// < range x 100, so the truncated quotient is at most 99 (the argmax is kept: NormalizeKeepsTop).
void MinMaxNormalize(std::span<int64_t> scores) {
  int64_t hi = std::numeric_limits<int64_t>::min(), lo = std::numeric_limits<int64_t>::max();
  for (int64_t v : scores) {
    hi = std::max(hi, v);
    lo = std::min(lo, v);
  }
  const int64_t range = hi - lo;
  for (int64_t& v : scores) {
    v = range == 0 ? kMinNodeScore : (v - lo) * (kMaxNodeScore - kMinNodeScore) / range;
  }
}

class BestFitGpuReserve : public ReservePlugin {
 public:
  std::string_view Name() const override { return "BestFitGpu"; }
  bool Reserve(CycleState& c, const ClusterState& s, Placement* p) override {
    return ChooseBestFitGpus(s, *c.pod, p);
  }
};

// ---- random: one feasible node drawn uniformly; a random GPU among those with room.
class RandomPlugin : public ScorePlugin, public ReservePlugin {
 public:
  std::string_view Name() const override { return "RandomScore"; }
  void PreScore(CycleState& c, const ClusterState&) override {
    std::uniform_int_distribution<size_t> d(0, c.feasible.size() - 1);
    c.chosen_node = c.feasible[d(*c.rng)];
  }
  int64_t Score(const CycleState& c, const ClusterState&, int n) override {
    return n == c.chosen_node ? kMaxNodeScore : kMinNodeScore;
  }
  bool Reserve(CycleState& c, const ClusterState& s, Placement* p) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return ChooseExclusiveGpus(s, pod, p);
    int count = 0, chosen = -1;
    auto gl = s.gpu_left(p->node);
    for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
      if (gl[i] >= pod.gpu_milli) {
        ++count;
        std::uniform_int_distribution<int> d(0, count - 1);
        if (d(*c.rng) == 0) chosen = i;
      }
    }
    if (chosen < 0) return false;
    p->num_gpus = 1;
    p->gpus[0] = static_cast<int8_t>(chosen);
    return true;
  }
};

// ---- dotprod (Tetris): 1 - <node free, pod request>/2 over (cpu, total GPU) scaled by the
// maximum node spec; "merge" GPU dimension, "max" normalisation.
class DotProdPlugin : public ScorePlugin {
 public:
  std::string_view Name() const override { return "DotProductScore"; }
  bool Cacheable() const override { return true; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (s.cpu_left(n) < pod.cpu_milli) return kMinNodeScore;
    const double node_cpu = static_cast<double>(s.cpu_left(n)) / kMaxSpecCpu;
    const double node_gpu = static_cast<double>(s.gpu_milli_left(n)) / kMaxSpecGpu;
    const double pod_cpu = static_cast<double>(pod.cpu_milli) / kMaxSpecCpu;
    const double pod_gpu = static_cast<double>(pod.TotalGpuMilli()) / kMaxSpecGpu;
    double score = (node_cpu * pod_cpu + node_gpu * pod_gpu) / 2.0;
    score = 1.0 - score;
    return static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * score);
  }
};

// ---- clustering: prefer nodes already running pods of the same GPU class.
class ClusteringPlugin : public ScorePlugin {
 public:
  std::string_view Name() const override { return "GpuClusteringScore"; }
  bool Cacheable() const override { return true; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (pod.num_gpu == 0) return kMinNodeScore;
    const int cls = pod.IsGpuSharing() ? 0 : pod.num_gpu;
    auto counts = s.gpu_class_counts(n);
    int distinct = 0;
    for (int16_t v : counts) distinct += v > 0;
    const int64_t base =
        kMaxNodeScore / 4 * (kMaxSpecGpuInt - s.gpu_milli_left(n)) / kMaxSpecGpuInt;
    const bool same = cls < static_cast<int>(counts.size()) && counts[cls] > 0;
    if (same) return base + (distinct == 1 ? kMaxNodeScore * 3 / 4 : kMaxNodeScore * 2 / 4);
    return base + (distinct == 0 ? kMaxNodeScore / 4 : 0);
  }
};

// ---- packing: shared GPUs first, then free GPUs on used nodes, then empty nodes.
class PackingPlugin : public ScorePlugin {
 public:
  std::string_view Name() const override { return "GpuPackingScore"; }
  bool Cacheable() const override { return true; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (pod.TotalGpuMilli() <= 0) return kMinNodeScore;
    auto gl = s.gpu_left(n);
    const int ngpu = static_cast<int>(gl.size());
    int fully_free = 0;
    for (int32_t v : gl) fully_free += v == kMilliGpu;
    if (fully_free == ngpu) {
      return std::max<int64_t>(kMaxNodeScore / 3 - fully_free, fully_free);
    }
    std::array<int, core::kMaxGpusPerNode> idx;
    std::iota(idx.begin(), idx.begin() + ngpu, 0);
    std::stable_sort(idx.begin(), idx.begin() + ngpu, [&](int a, int b) { return gl[a] < gl[b]; });
    int req = pod.num_gpu, free_to_use = 0;
    int64_t free_ratio_on_used = 0;
    std::array<int, core::kMaxGpusPerNode> use;
    int nuse = 0;
    for (int k = 0; k < ngpu && req > 0; ++k) {
      if (pod.gpu_milli <= gl[idx[k]]) {
        --req;
        use[nuse++] = idx[k];
        free_to_use += gl[idx[k]] == kMilliGpu;
      }
    }
    if (req != 0) return kMinNodeScore;
    if (free_to_use > 0) {
      return std::max<int64_t>(kMaxNodeScore / 2 - free_to_use, kMaxNodeScore / 3);
    }
    for (int k = 0; k < nuse; ++k) free_ratio_on_used += int64_t{gl[use[k]]} * 100 / kMilliGpu;
    return std::max<int64_t>(kMaxNodeScore - free_ratio_on_used / 10, kMaxNodeScore / 2);
  }
};

// ---- bestfit: least (cpu, GPU) left after placement, min-max normalised.
class BestFitPlugin : public ScorePlugin {
 public:
  std::string_view Name() const override { return "BestFitScore"; }
  bool Cacheable() const override { return true; }
  bool HasNormalize() const override { return true; }
  void NormalizeScore(std::span<int64_t> scores) const override { MinMaxNormalize(scores); }
  bool NormalizeKeepsTop() const override { return true; }  // MinMaxNormalize: see there
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    const double free_cpu = static_cast<double>(s.cpu_left(n));
    const double free_gpu = static_cast<double>(s.gpu_milli_left(n));
    const double req_cpu = static_cast<double>(pod.cpu_milli);
    const double req_gpu = static_cast<double>(pod.TotalGpuMilli());
    if (free_cpu < req_cpu || free_gpu < req_gpu) return kMinNodeScore;
    double score =
        (free_cpu - req_cpu) / kMaxSpecCpu * 0.5 + (free_gpu - req_gpu) / kMaxSpecGpu * 0.5;
    score = (1.0 - score) * static_cast<double>(kMaxNodeScore);
    return static_cast<int64_t>(score);
  }
};

// ---- fgd: fragmentation gradient descent against the oracle workload.
class FgdPlugin : public ScorePlugin, public ReservePlugin {
 public:
  explicit FgdPlugin(TargetWorkload w) { eval_.SetWorkload(std::move(w)); }
  std::string_view Name() const override { return "FGDScore"; }
  bool Cacheable() const override { return true; }
  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return FgdScoreFromDelta(eval_.Delta(s, n, pod));
    return BestSharingGpuScore(s, n, pod,
                               [&](int i) { return FgdScoreFromDelta(eval_.Delta(s, n, pod, i)); });
  }
  bool Reserve(CycleState& c, const ClusterState& s, Placement* p) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return ChooseExclusiveGpus(s, pod, p);
    int64_t best = 0;
    int chosen = -1;
    auto gl = s.gpu_left(p->node);
    for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
      if (gl[i] < pod.gpu_milli) continue;
      const int64_t v = FgdScoreFromDelta(eval_.Delta(s, p->node, pod, i));
      if (chosen < 0 || v > best) {
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
  FragEvaluator eval_;
};

template <typename P>
Profile SingleScore(std::string name, std::shared_ptr<P> plugin,
                    std::shared_ptr<ReservePlugin> reserve) {
  Profile p;
  p.name = std::move(name);
  p.scores.push_back({plugin, 1000});
  p.reserve = reserve ? std::move(reserve) : NewBestFitGpuReserve();
  return p;
}

}  // namespace

std::shared_ptr<ReservePlugin> NewBestFitGpuReserve() {
  return std::make_shared<BestFitGpuReserve>();
}

bool ChooseExclusiveGpus(const ClusterState& s, const PodShape& pod, Placement* p) {
  auto gl = s.gpu_left(p->node);
  int got = 0;
  for (int i = 0; i < static_cast<int>(gl.size()) && got < pod.num_gpu; ++i) {
    // gpu_milli is kMilliGpu for whole-GPU pods: only fully free GPUs have that room.
    if (gl[i] >= pod.gpu_milli) p->gpus[got++] = static_cast<int8_t>(i);
  }
  p->num_gpus = got;
  return got == pod.num_gpu;
}

bool ChooseBestFitGpus(const ClusterState& s, const PodShape& pod, Placement* p) {
  if (!pod.IsGpuSharing()) return ChooseExclusiveGpus(s, pod, p);
  auto gl = s.gpu_left(p->node);
  int chosen = -1;
  for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
    if (gl[i] >= pod.gpu_milli && (chosen < 0 || gl[i] < gl[chosen])) chosen = i;
  }
  if (chosen < 0) return false;
  p->num_gpus = 1;
  p->gpus[0] = static_cast<int8_t>(chosen);
  return true;
}

absl::Status CheckReferencePolicyOptions(const PolicyContext& ctx, const std::string& policy) {
  const std::vector<std::string> cas = CasOptionNames();
  for (const auto& kv : ctx.params) {
    if (std::find(cas.begin(), cas.end(), kv.first) == cas.end()) {
      const std::string key = base::ForTerminal(base::Clip(kv.first, 40));
      return absl::InvalidArgumentError(
          absl::StrCat("--policy-opt ", key, ": unknown option '", key, "' (", policy,
                       " takes no options; cas takes ", absl::StrJoin(cas, ", "), ")"));
    }
  }
  return CheckCasOptions(ctx.params);
}

absl::StatusOr<Profile> MakeRandom(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "random"); !st.ok()) return st;
  auto plugin = std::make_shared<RandomPlugin>();
  return SingleScore("random", plugin, plugin);
}
absl::StatusOr<Profile> MakeDotProd(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "dotprod"); !st.ok()) return st;
  return SingleScore("dotprod", std::make_shared<DotProdPlugin>(), nullptr);
}
absl::StatusOr<Profile> MakeClustering(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "clustering"); !st.ok()) return st;
  return SingleScore("clustering", std::make_shared<ClusteringPlugin>(), nullptr);
}
absl::StatusOr<Profile> MakePacking(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "packing"); !st.ok()) return st;
  return SingleScore("packing", std::make_shared<PackingPlugin>(), nullptr);
}
absl::StatusOr<Profile> MakeBestFit(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "bestfit"); !st.ok()) return st;
  return SingleScore("bestfit", std::make_shared<BestFitPlugin>(), nullptr);
}
absl::StatusOr<Profile> MakeFgd(const PolicyContext& ctx) {
  if (absl::Status st = CheckReferencePolicyOptions(ctx, "fgd"); !st.ok()) return st;
  if (ctx.oracle_workload.empty()) {
    return absl::InvalidArgumentError("fgd needs the target workload (typical task shapes)");
  }
  auto plugin = std::make_shared<FgdPlugin>(ctx.oracle_workload);
  return SingleScore("fgd", plugin, plugin);
}

}  // namespace seedance::sched::internal
