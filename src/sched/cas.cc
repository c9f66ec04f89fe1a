// cas: Seedance's cost-aware placement policy. See docs/cas.md for the design and experiments.
//
// It descends FGD's fragmentation gradient against a workload it learns online from the pods it
// has seen arrive (FGD is handed the replayed trace's distribution in advance), and refines the
// choice where FGD's integer sigmoid score leaves many nodes tied.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>

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

struct CasOptions {
  // Shapes covering this share of seen pods form the learned target workload.
  double coverage_pct = 95.0;
  // Rebuild the learned workload after this many new arrivals, or this fraction of all
  // arrivals seen so far, whichever is larger.
  double min_rebuild_arrivals = 16;
  double rebuild_fraction = 0.05;
  // Primary score: 0 = FGD's integer sigmoid(dF/1000)*100, 1 = dF itself in milli-GPU.
  int raw_delta = 1;
  // Resolution of the raw gradient in milli-GPU: gradients within this are equal.
  double delta_quantum = 1.0;
  // Secondary key among equal primaries: 0 = none (node order), 1 = best fit (least GPU then
  // CPU left after placement), 2 = prefer nodes already in use.
  int tie_break = 1;
};

absl::Status ParseOptions(const std::map<std::string, std::string>& params, CasOptions* o) {
  for (const auto& [k, v] : params) {
    double d = 0;
    if (!absl::SimpleAtod(v, &d)) {
      return absl::InvalidArgumentError(absl::StrCat("cas option ", k, ": not a number: '", v, "'"));
    }
    if (k == "coverage_pct") o->coverage_pct = d;
    else if (k == "min_rebuild_arrivals") o->min_rebuild_arrivals = d;
    else if (k == "rebuild_fraction") o->rebuild_fraction = d;
    else if (k == "raw_delta") o->raw_delta = static_cast<int>(d);
    else if (k == "delta_quantum") o->delta_quantum = d;
    else if (k == "tie_break") o->tie_break = static_cast<int>(d);
    else return absl::InvalidArgumentError(absl::StrCat("unknown cas option '", k, "'"));
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
    auto key = std::make_tuple(pod.cpu_milli, pod.gpu_milli, pod.num_gpu, pod.gpu_model_mask);
    counts_[key] += 1;
    ++seen_;
    ++since_rebuild_;
    if (since_rebuild_ >= std::max(opt_.min_rebuild_arrivals, opt_.rebuild_fraction * seen_)) {
      Rebuild();
    }
  }

  int64_t Score(const CycleState& c, const ClusterState& s, int n) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return Combine(s, n, pod, eval_.Delta(s, n, pod));
    int64_t best = 0;
    bool any = false;
    auto gl = s.gpu_left(n);
    for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
      if (gl[i] < pod.gpu_milli) continue;
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j) seen = gl[j] == gl[i];
      if (seen) continue;
      const int64_t v = Combine(s, n, pod, eval_.Delta(s, n, pod, i), gl[i]);
      if (!any || v > best) best = v;
      any = true;
    }
    return best;
  }

  bool Reserve(CycleState& c, const ClusterState& s, Placement* p) override {
    const PodShape& pod = *c.pod;
    if (!pod.IsGpuSharing()) return ChooseExclusiveGpus(s, pod, p);
    int64_t best = 0;
    int chosen = -1;
    auto gl = s.gpu_left(p->node);
    for (int i = 0; i < static_cast<int>(gl.size()); ++i) {
      if (gl[i] < pod.gpu_milli) continue;
      const int64_t v = Combine(s, p->node, pod, eval_.Delta(s, p->node, pod, i), gl[i]);
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
  static constexpr int64_t kSecondaryRange = 1 << 20;

  void Rebuild() {
    std::vector<ShapeCount> counts;
    counts.reserve(counts_.size());
    for (const auto& [key, count] : counts_) {
      ShapeCount sc;
      std::tie(sc.shape.cpu_milli, sc.shape.gpu_milli, sc.shape.num_gpu, sc.shape.gpu_model_mask) =
          key;
      sc.shape.gpu_spec = std::to_string(sc.shape.gpu_model_mask);
      sc.count = count;
      counts.push_back(std::move(sc));
    }
    eval_.SetWorkload(TypicalShapes(std::move(counts), opt_.coverage_pct));
    since_rebuild_ = 0;
    ++epoch_;
  }

  // Primary: fragmentation gradient; secondary: tie-break key in [0, kSecondaryRange).
  int64_t Combine(const ClusterState& s, int n, const PodShape& pod, double delta,
                  int32_t gpu_room = -1) const {
    int64_t primary;
    if (opt_.raw_delta) {
      primary = static_cast<int64_t>(std::floor(delta / opt_.delta_quantum));
    } else {
      primary = FgdScoreFromDelta(delta);
    }
    int64_t secondary = 0;
    if (opt_.tie_break == 1) {
      int64_t gpu_left = 0;
      for (int32_t v : s.gpu_left(n)) gpu_left += v;
      gpu_left -= pod.TotalGpuMilli();
      const int64_t cpu_left = s.cpu_left(n) - pod.cpu_milli;
      // Less room left is better; on a shared GPU, less room on that GPU first.
      int64_t key = gpu_left * 4096 / 16000 * 64 + std::min<int64_t>(cpu_left / 4000, 63);
      if (gpu_room >= 0) key = key * 2 + (gpu_room == kMilliGpu);
      secondary = kSecondaryRange - 1 - std::clamp<int64_t>(key, 0, kSecondaryRange - 1);
    } else if (opt_.tie_break == 2) {
      secondary = s.num_pods(n) > 0 ? 1 : 0;
    }
    return primary * kSecondaryRange + secondary;
  }

  CasOptions opt_;
  FragEvaluator eval_;
  std::map<std::tuple<int64_t, int32_t, int32_t, uint64_t>, double> counts_;
  double seen_ = 0;
  double since_rebuild_ = 0;
  uint64_t epoch_ = 0;
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
