#include "seedance/cost/analyze.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"
#include "seedance/sched/topology.h"

namespace seedance::cost {
namespace {

using telemetry::IsMissing;
using telemetry::NodeProfile;
using telemetry::PodInfo;
using telemetry::Profile;

// Capacity given to a node whose CPU or memory size the profile does not know: large enough
// never to constrain, small enough never to overflow sums.
constexpr int64_t kUnknownCapacity = int64_t{1} << 40;

// The mean of the measured values, or Missing() (NaN) when none was measured: no data is not 0%.
double Mean(const std::vector<double>& s) {
  double sum = 0;
  int n = 0;
  for (double v : s) {
    if (!IsMissing(v)) {
      sum += v;
      ++n;
    }
  }
  return n ? sum / n : telemetry::Missing();
}

// Options a caller could get wrong (the CLI checks them too): NaN fails every comparison, so each
// is checked for being inside its range rather than outside it.
absl::Status CheckOptions(const AnalyzeOptions& o) {
  const std::pair<const char*, double> pcts[] = {
      {"idle_gpu_util_pct", o.idle_gpu_util_pct},
      {"underused_gpu_util_pct", o.underused_gpu_util_pct},
      {"drain_max_gpu_util_pct", o.drain_max_gpu_util_pct},
      {"target_gpu_util_cap_pct", o.target_gpu_util_cap_pct}};
  for (const auto& [name, v] : pcts) {
    if (!(v >= 0 && v <= 100)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": expected 0..100, got ", v));
    }
  }
  if (!(o.idle_window_s >= 0 && o.idle_window_s <= 1e11)) {
    return absl::InvalidArgumentError(
        absl::StrCat("idle_window_s: expected a finite number >= 0, got ", o.idle_window_s));
  }
  return absl::OkStatus();
}

// Per-node analysis state shared by the plan's plugins.
struct PlanContext {
  const Profile* profile = nullptr;
  const AnalyzeOptions* options = nullptr;
  std::vector<char> excluded;                 // drained (or being drained) nodes
  std::vector<std::vector<double>> gpu_util;  // projected mean utilisation per node, GPU
  // Requirements of the pod being placed (set before each Schedule).
  double pod_util_per_gpu = 0;
  bool need_one_numa = false;
  bool need_nvlink = false;
};

// Chooses GPUs on node n for the pod: capacity from the ClusterState, projected utilisation
// below the cap, and (for multi-GPU pods that had it) one NUMA node and NVLink peers. Whole GPUs
// come from the one topology-aware chooser (sched::ChooseGpuSet) on the GPUs under the cap; a
// sharing pod takes the GPU under the cap with the least room that holds it.
// With out == nullptr it only says whether GPUs could be chosen (the Filter's question).
bool ChooseGpus(const PlanContext& ctx, const core::ClusterState& s, const core::PodShape& pod,
                int n, core::Placement* out) {
  core::Placement unused;
  if (out == nullptr) out = &unused;
  out->node = n;
  out->num_gpus = 0;
  if (pod.num_gpu == 0) return true;
  const auto left = s.gpu_left(n);
  const double cap = ctx.options->target_gpu_util_cap_pct;
  auto util_ok = [&](int g) { return ctx.gpu_util[n][g] + ctx.pod_util_per_gpu <= cap; };
  if (pod.gpu_milli < core::kMilliGpu) {
    int best = -1;
    for (int g = 0; g < static_cast<int>(left.size()); ++g) {
      if (left[g] >= pod.gpu_milli && util_ok(g) && (best < 0 || left[g] < left[best])) best = g;
    }
    if (best < 0) return false;
    out->num_gpus = 1;
    out->gpus[0] = static_cast<int8_t>(best);
    return true;
  }
  sched::GpuSetNeeds needs;
  needs.usable = 0;
  for (int g = 0; g < static_cast<int>(left.size()); ++g) {
    if (util_ok(g)) needs.usable |= 1u << g;
  }
  needs.nvlink = ctx.need_nvlink;
  needs.one_numa = ctx.need_one_numa;
  if (out == &unused) return sched::GpuSetFits(s, n, pod.num_gpu, needs);
  return sched::ChooseGpuSet(s, n, pod.num_gpu, needs, out);
}

// The profile's GPU attachment as the chooser reads it: each GPU's NUMA node, and NVLink groups
// as the connected parts of the peer lists where every two GPUs of a part are peers (NVSwitch
// systems, NVLink bridge pairs). A part that is not (a hybrid cube mesh) gets no group: the
// chooser cannot then keep a pod's NVLink there, so such a pod is not moved onto it. The NUMA
// nodes get no CPU or memory share, so no pod is pinned (the profile does not say how the
// node's CPU divides).
core::NodeTopology TopologyOf(const NodeProfile& node) {
  core::NodeTopology t;
  const int gpus = static_cast<int>(node.gpus.size());
  std::vector<int> part(gpus);
  std::iota(part.begin(), part.end(), 0);
  auto root = [&](int g) {
    while (part[g] != g) g = part[g] = part[part[g]];
    return g;
  };
  for (int g = 0; g < gpus; ++g) {
    for (int peer : node.gpus[g].nvlink_peers) {
      if (peer >= 0 && peer < gpus) part[root(peer)] = root(g);
    }
  }
  auto peers = [&](int a, int b) {
    const std::vector<int>& p = node.gpus[a].nvlink_peers;
    return std::find(p.begin(), p.end(), b) != p.end();
  };
  std::vector<char> clique(gpus, 1);  // by root
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a != b && root(a) == root(b) && !peers(a, b)) clique[root(a)] = 0;
    }
  }
  for (int g = 0; g < gpus; ++g) {
    core::GpuTopology gt;
    gt.numa_node = node.gpus[g].numa_node;
    if (!node.gpus[g].nvlink_peers.empty() && clique[root(g)]) {
      gt.nvlink_group = absl::StrCat("nvlink-", root(g));
    }
    if (gt.numa_node >= 0 &&
        std::none_of(t.numa.begin(), t.numa.end(),
                     [&](const core::NumaInfo& i) { return i.id == gt.numa_node; })) {
      t.numa.push_back({gt.numa_node, 0, 0});
    }
    t.gpus.push_back(std::move(gt));
  }
  return t;
}

class PlanFilter : public sched::FilterPlugin {
 public:
  explicit PlanFilter(const PlanContext* ctx) : ctx_(ctx) {}
  std::string_view Name() const override { return "cost-plan-filter"; }
  bool Filter(const sched::CycleState& c, const core::ClusterState& s, int n) const override {
    if (ctx_->excluded[n]) return false;
    return ChooseGpus(*ctx_, s, *c.pod, n, nullptr);
  }

 private:
  const PlanContext* ctx_;
};

class PlanReserve : public sched::ReservePlugin {
 public:
  explicit PlanReserve(const PlanContext* ctx) : ctx_(ctx) {}
  std::string_view Name() const override { return "cost-plan-reserve"; }
  bool Reserve(sched::CycleState& c, const core::ClusterState& s, core::Placement* p) override {
    return ChooseGpus(*ctx_, s, *c.pod, p->node, p);
  }

 private:
  const PlanContext* ctx_;
};

struct PlacedPod {
  const PodInfo* info = nullptr;
  core::PodShape shape;
  core::Placement placement;
  double util_per_gpu = 0;  // estimated utilisation the pod causes on each of its GPUs
  bool one_numa = false;
  bool nvlink = false;
};

// Initial GPUs of a pod without recorded gpu_ids: best fit for sharing pods, lowest free GPUs.
bool DefaultGpus(const core::ClusterState& s, const core::PodShape& pod, int n,
                 core::Placement* p) {
  p->node = n;
  p->num_gpus = 0;
  if (pod.num_gpu == 0) return true;
  const auto left = s.gpu_left(n);
  if (pod.gpu_milli < core::kMilliGpu) {
    int best = -1;
    for (int g = 0; g < static_cast<int>(left.size()); ++g) {
      if (left[g] >= pod.gpu_milli && (best < 0 || left[g] < left[best])) best = g;
    }
    if (best < 0) return false;
    p->num_gpus = 1;
    p->gpus[0] = static_cast<int8_t>(best);
    return true;
  }
  for (int g = 0; g < static_cast<int>(left.size()) && p->num_gpus < pod.num_gpu; ++g) {
    if (left[g] == core::kMilliGpu) p->gpus[p->num_gpus++] = static_cast<int8_t>(g);
  }
  return p->num_gpus == pod.num_gpu;
}

// What Analyze learns about the profile, stage by stage.
struct Analysis {
  const Profile& profile;
  const AnalyzeOptions& options;
  int num_nodes = 0;
  std::vector<double> node_usd_month = {};           // per node
  std::vector<std::vector<double>> gpu_mean = {};    // mean utilisation per node and GPU
  std::vector<char> idle = {};                       // an idle node (Report::idle_nodes)
  std::vector<char> wanted_by_pending = {};          // low use, but a pending pod could run there
  std::vector<char> pinned = {};                     // a pod could not be accounted: never drain
  std::vector<std::vector<PlacedPod>> pods = {};     // the running pods, where they run now
  std::vector<std::vector<int32_t>> allocated = {};  // GPU milli allocated per node and GPU
};

// Money per node, and a warning per GPU model without a price.
void PriceNodes(const PriceTable& prices, Analysis& a, Report& report) {
  a.node_usd_month.assign(a.num_nodes, 0);
  std::set<std::string> unpriced;
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    for (const auto& g : node.gpus) {
      auto price = prices.GpuUsdPerHour(g.model);
      if (!price) {
        unpriced.insert(g.model.empty() ? "(unknown model)" : g.model);
        continue;
      }
      a.node_usd_month[n] += *price * prices.hours_per_month;
    }
    report.spend_usd_per_month += a.node_usd_month[n];
    report.gpus += static_cast<int>(node.gpus.size());
  }
  for (const std::string& m : unpriced) {
    report.warnings.push_back(absl::StrCat("no price for GPU model '", m, "' (canonical '",
                                           CanonicalGpuModel(m),
                                           "'); counted as $0; add it with --prices"));
  }
}

// Mean utilisation per GPU, and cluster-wide.
void MeasureUtilisation(Analysis& a, Report& report) {
  a.gpu_mean.assign(a.num_nodes, {});
  double util_sum = 0;
  int util_n = 0;
  for (int n = 0; n < a.num_nodes; ++n) {
    for (const auto& g : a.profile.nodes[n].gpus) {
      a.gpu_mean[n].push_back(Mean(g.util_pct));
      if (!IsMissing(a.gpu_mean[n].back())) {
        util_sum += a.gpu_mean[n].back();
        ++util_n;
      }
    }
  }
  report.mean_gpu_util_pct = util_n ? util_sum / util_n : telemetry::Missing();
  for (int n = 0; n < a.num_nodes; ++n) {
    if (!a.profile.nodes[n].gpus.empty() && IsMissing(Mean(a.gpu_mean[n]))) {
      report.warnings.push_back(absl::StrCat("node ", a.profile.nodes[n].name,
                                             ": no GPU utilisation measured; left out of the "
                                             "idle list and the plan"));
    }
  }
}

// The node's longest run of samples with every GPU below the idle threshold: its length in
// seconds and the highest utilisation in it.
std::pair<double, double> LongestIdleRun(const Profile& profile, const NodeProfile& node,
                                         const AnalyzeOptions& options) {
  const size_t samples = profile.num_samples();
  double best_s = 0, best_max = 0;
  double run_start = -1, run_max = 0;
  for (size_t i = 0; i < samples; ++i) {
    double m = -1;
    bool any = false;
    for (const auto& g : node.gpus) {
      if (g.util_pct.size() != samples || IsMissing(g.util_pct[i])) continue;
      any = true;
      m = std::max(m, g.util_pct[i]);
    }
    if (any && m < options.idle_gpu_util_pct) {
      if (run_start < 0) {
        run_start = profile.timestamps_s[i];
        run_max = 0;
      }
      run_max = std::max(run_max, m);
      const double len = profile.timestamps_s[i] - run_start + profile.interval_s;
      if (len > best_s) {
        best_s = len;
        best_max = run_max;
      }
    } else {
      run_start = -1;
    }
  }
  return {best_s, best_max};
}

// Idle nodes: idle for the window, and no pending pod could run there.
void FindIdleNodes(Analysis& a, Report& report) {
  a.idle.assign(a.num_nodes, 0);
  a.wanted_by_pending.assign(a.num_nodes, 0);
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    if (node.gpus.empty() || a.profile.num_samples() == 0) continue;
    const auto [best_s, best_max] = LongestIdleRun(a.profile, node, a.options);
    if (best_s + 1e-9 < a.options.idle_window_s) continue;
    const std::string model = CanonicalGpuModel(node.GpuModel());
    bool wanted = false;  // a pending pod could run here
    for (const PodInfo& p : a.profile.pending_pods) {
      if (p.num_gpus == 0 || p.num_gpus > static_cast<int>(node.gpus.size())) continue;
      if (p.gpu_model.empty() || CanonicalGpuModel(p.gpu_model) == model) wanted = true;
    }
    if (wanted) {
      a.wanted_by_pending[n] = 1;
      continue;
    }
    a.idle[n] = 1;
    report.idle_nodes.push_back(
        {n, best_s, best_max, static_cast<int>(node.pods.size()), a.node_usd_month[n]});
  }
}

// The cluster as the profile saw it, nodes only.
absl::StatusOr<core::ClusterState> ClusterOf(const Analysis& a, const PriceTable& prices) {
  std::vector<core::NodeSpec> specs(a.num_nodes);
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    if (node.gpus.size() > static_cast<size_t>(core::kMaxGpusPerNode)) {
      return absl::InvalidArgumentError(absl::StrCat("node ", node.name, " has ", node.gpus.size(),
                                                     " GPUs; at most ", core::kMaxGpusPerNode));
    }
    specs[n].name = node.name;
    specs[n].cpu_milli = node.cpus > 0 ? int64_t{node.cpus} * 1000 : kUnknownCapacity;
    specs[n].memory_mib = node.memory_mib > 0 ? node.memory_mib : kUnknownCapacity;
    specs[n].num_gpus = static_cast<int32_t>(node.gpus.size());
    specs[n].gpu_model = node.gpus.empty() ? "" : CanonicalGpuModel(node.GpuModel());
    specs[n].cost_usd_per_hour = a.node_usd_month[n] / prices.hours_per_month;
    specs[n].topology = TopologyOf(node);
  }
  return core::ClusterState::Create(std::move(specs));
}

// Every running pod allocated where it runs now; a node with a pod that does not fit as
// recorded is pinned (never drained).
void PlaceRunningPods(core::ClusterState& state, Analysis& a, Report& report) {
  a.pods.assign(a.num_nodes, {});
  a.allocated.assign(a.num_nodes, {});
  a.pinned.assign(a.num_nodes, 0);
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    a.allocated[n].assign(node.gpus.size(), 0);
    for (const PodInfo& p : node.pods) {
      PlacedPod pp;
      pp.info = &p;
      pp.shape.cpu_milli = p.cpu_milli;
      pp.shape.memory_mib = p.memory_mib;
      pp.shape.num_gpu = p.num_gpus;
      pp.shape.gpu_milli = p.num_gpus > 0 ? p.gpu_milli : 0;
      if (p.num_gpus > 0) pp.shape.gpu_model_mask = state.ModelMask(state.node(n).gpu_model);
      bool ok = p.num_gpus <= core::kMaxGpusPerNode;
      if (ok && !p.gpu_ids.empty()) {
        pp.placement.node = n;
        pp.placement.num_gpus = p.num_gpus;
        for (int i = 0; i < p.num_gpus; ++i)
          pp.placement.gpus[i] = static_cast<int8_t>(p.gpu_ids[i]);
      } else if (ok) {
        ok = DefaultGpus(state, pp.shape, n, &pp.placement);
      }
      if (ok) ok = state.Allocate(pp.shape, pp.placement).ok();
      if (!ok) {
        a.pinned[n] = 1;
        report.warnings.push_back(absl::StrCat("pod ", p.name, " on ", node.name,
                                               " does not fit the node's free capacity as "
                                               "recorded; the node is left as it is"));
        continue;
      }
      for (int8_t g : pp.placement.gpu_ids()) a.allocated[n][g] += pp.shape.gpu_milli;
      a.pods[n].push_back(pp);
    }
  }
}

// Whether `ids` on `node` share one NUMA node, and whether every pair is NVLinked.
std::pair<bool, bool> Affinity(const NodeProfile& node, const std::vector<int>& ids) {
  bool one_numa = node.gpus[ids[0]].numa_node >= 0, nvlink = ids.size() > 1;
  for (int a : ids) {
    if (node.gpus[a].numa_node != node.gpus[ids[0]].numa_node) one_numa = false;
    for (int b : ids) {
      const auto& peers = node.gpus[a].nvlink_peers;
      if (a != b && std::find(peers.begin(), peers.end(), b) == peers.end()) nvlink = false;
    }
  }
  return {one_numa, nvlink};
}

// Each pod's share of its GPUs' measured utilisation, and its affinity now.
void ScorePods(Analysis& a) {
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    for (PlacedPod& pp : a.pods[n]) {
      const auto ids = pp.placement.gpu_ids();
      if (ids.empty()) continue;
      double u = 0;
      for (int8_t g : ids) {
        u += a.gpu_mean[n][g] * pp.shape.gpu_milli / std::max<int32_t>(a.allocated[n][g], 1);
      }
      pp.util_per_gpu = u / static_cast<double>(ids.size());
      if (ids.size() > 1) {
        std::tie(pp.one_numa, pp.nvlink) = Affinity(node, std::vector<int>(ids.begin(), ids.end()));
      }
    }
  }
}

// Under-used and fragmented GPUs, and pods whose CPUs are on NUMA nodes other than their GPUs'.
void FindWaste(const Analysis& a, Report& report) {
  for (int n = 0; n < a.num_nodes; ++n) {
    for (size_t g = 0; g < a.profile.nodes[n].gpus.size(); ++g) {
      const int32_t alloc = a.allocated[n][g];
      if (alloc > 0 && alloc < core::kMilliGpu) {
        report.gpu_findings.push_back(
            {n, static_cast<int>(g), GpuFinding::Kind::kFragmented, a.gpu_mean[n][g], alloc});
      }
      if (alloc > 0 && a.gpu_mean[n][g] < a.options.underused_gpu_util_pct &&
          !a.profile.nodes[n].gpus[g].util_pct.empty()) {
        report.gpu_findings.push_back(
            {n, static_cast<int>(g), GpuFinding::Kind::kUnderused, a.gpu_mean[n][g], alloc});
      }
    }
  }
  for (int n = 0; n < a.num_nodes; ++n) {
    const NodeProfile& node = a.profile.nodes[n];
    for (const PlacedPod& pp : a.pods[n]) {
      if (pp.info->cpu_numa_nodes.empty() || pp.placement.num_gpus == 0) continue;
      std::set<int> gpu_numa;
      for (int8_t g : pp.placement.gpu_ids()) {
        if (node.gpus[g].numa_node >= 0) gpu_numa.insert(node.gpus[g].numa_node);
      }
      if (gpu_numa.empty()) continue;
      const std::set<int> cpu_numa(pp.info->cpu_numa_nodes.begin(), pp.info->cpu_numa_nodes.end());
      if (cpu_numa != gpu_numa) {
        report.numa_mismatches.push_back({n, pp.info->name,
                                          std::vector<int>(cpu_numa.begin(), cpu_numa.end()),
                                          std::vector<int>(gpu_numa.begin(), gpu_numa.end())});
      }
    }
  }
}

// The nodes worth draining, most promising first: idle ones, then the least allocated, the
// fewest pods, the dearest.
std::vector<int> DrainCandidates(const Analysis& a) {
  std::vector<int> candidates;
  for (int n = 0; n < a.num_nodes; ++n) {
    if (a.profile.nodes[n].gpus.empty() || a.pinned[n] || a.wanted_by_pending[n]) continue;
    const double mean = Mean(a.gpu_mean[n]);
    if (a.idle[n] || mean < a.options.drain_max_gpu_util_pct) candidates.push_back(n);
  }
  auto alloc_total = [&](int n) {
    return std::accumulate(a.allocated[n].begin(), a.allocated[n].end(), int64_t{0});
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](int x, int y) {
    if (a.idle[x] != a.idle[y]) return a.idle[x] > a.idle[y];
    const int64_t ax = alloc_total(x), ay = alloc_total(y);
    if (ax != ay) return ax < ay;
    if (a.pods[x].size() != a.pods[y].size()) return a.pods[x].size() < a.pods[y].size();
    return a.node_usd_month[x] > a.node_usd_month[y];
  });
  return candidates;
}

// Moves every pod off node n through the framework, or changes nothing: the plan's step, or
// nullopt when some pod fits nowhere else.
absl::StatusOr<std::optional<PlanStep>> TryDrain(int n, const Analysis& a,
                                                 sched::Framework& framework,
                                                 core::ClusterState& state, PlanContext& ctx) {
  ctx.excluded[n] = 1;
  // Largest pods first: they are the hardest to fit.
  std::vector<PlacedPod> moving = a.pods[n];
  std::stable_sort(moving.begin(), moving.end(), [](const PlacedPod& x, const PlacedPod& y) {
    return x.shape.TotalGpuMilli() > y.shape.TotalGpuMilli();
  });
  for (const PlacedPod& pp : moving) {
    if (!state.Release(pp.shape, pp.placement).ok()) return absl::InternalError("release failed");
  }
  std::vector<std::pair<const PlacedPod*, core::Placement>> placed;
  bool all = true;
  for (const PlacedPod& pp : moving) {
    ctx.pod_util_per_gpu = pp.util_per_gpu;
    ctx.need_one_numa = pp.one_numa;
    ctx.need_nvlink = pp.nvlink;
    sched::Outcome out = framework.Schedule(pp.shape, state);
    if (!out.ok()) {
      all = false;
      break;
    }
    for (int8_t g : out.placement.gpu_ids()) ctx.gpu_util[out.placement.node][g] += pp.util_per_gpu;
    placed.push_back({&pp, out.placement});
  }
  if (!all) {
    for (auto& [pp, p] : placed) {
      framework.Release(pp->shape, p, state);
      for (int8_t g : p.gpu_ids()) ctx.gpu_util[p.node][g] -= pp->util_per_gpu;
    }
    for (const PlacedPod& pp : moving) {
      if (!state.Allocate(pp.shape, pp.placement).ok())
        return absl::InternalError("restore failed");
    }
    ctx.excluded[n] = 0;
    return std::optional<PlanStep>();
  }
  PlanStep step;
  step.node = n;
  step.idle = a.idle[n];
  step.usd_per_month = a.node_usd_month[n];
  for (auto& [pp, p] : placed) {
    Move m;
    m.pod = pp->info->name;
    m.from = n;
    m.to = p.node;
    for (int8_t g : p.gpu_ids()) m.gpu_ids.push_back(g);
    if (!m.gpu_ids.empty())
      std::tie(m.same_numa, m.nvlink) = Affinity(a.profile.nodes[p.node], m.gpu_ids);
    step.moves.push_back(std::move(m));
  }
  return std::optional<PlanStep>(std::move(step));
}

// The consolidation plan: drain candidates one by one, through the placement policy, onto
// nodes that keep each moved pod's GPU load and links; a node that received pods stays.
absl::Status Plan(core::ClusterState& state, const Analysis& a, Report& report) {
  PlanContext ctx;
  ctx.profile = &a.profile;
  ctx.options = &a.options;
  ctx.excluded.assign(a.num_nodes, 0);
  ctx.gpu_util = a.gpu_mean;
  const auto& registry = sched::Registry::Builtins();
  if (!registry.Contains(a.options.policy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown placement policy '", a.options.policy, "'"));
  }
  auto sched_profile = registry.Create(a.options.policy, sched::PolicyContext{});
  if (!sched_profile.ok()) return sched_profile.status();
  sched_profile->filters.push_back(std::make_shared<PlanFilter>(&ctx));
  sched_profile->reserve = std::make_shared<PlanReserve>(&ctx);
  // The plan's Reserve chooses the GPUs itself (the cap and the link level it keeps), through
  // the same chooser the framework would apply after it.
  sched::FrameworkOptions fo;
  fo.topology_gpus = false;
  sched::Framework framework(std::move(*sched_profile), std::move(fo));
  std::vector<char> locked(a.num_nodes, 0);  // received pods: stays
  for (int n : DrainCandidates(a)) {
    if (locked[n]) continue;
    absl::StatusOr<std::optional<PlanStep>> step = TryDrain(n, a, framework, state, ctx);
    if (!step.ok()) return step.status();
    if (!step->has_value()) continue;
    for (const Move& m : (*step)->moves) locked[m.to] = 1;
    report.gpus_freed += static_cast<int>(a.profile.nodes[n].gpus.size());
    report.saving_usd_per_month += (*step)->usd_per_month;
    report.plan.push_back(std::move(**step));
  }
  report.spend_after_usd_per_month = report.spend_usd_per_month - report.saving_usd_per_month;
  return absl::OkStatus();
}

}  // namespace

std::string FormatUsd(double usd) {
  if (!std::isfinite(usd) || std::fabs(usd) > 1e18) return "$?";
  const bool neg = usd < 0;
  long long v = std::llround(std::fabs(usd));
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (neg ? "-$" : "$") + out;
}

absl::StatusOr<Report> Analyze(const Profile& profile, const PriceTable& prices,
                               const AnalyzeOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (profile.num_samples() == 0) {
    // No plan from no data: with nothing measured every node would look idle.
    return absl::InvalidArgumentError(
        "the profile has no samples (timestamps_s is empty), so there is nothing to analyse; "
        "profile for longer (was it interrupted before the first sample?)");
  }
  if (profile.nodes.empty()) {
    return absl::InvalidArgumentError(
        "the profile has no nodes (/nodes is empty), so there is nothing to analyse");
  }
  Report report;
  report.options = options;
  report.hours_per_month = prices.hours_per_month;
  report.price_source = prices.source;
  Analysis a{
      .profile = profile, .options = options, .num_nodes = static_cast<int>(profile.nodes.size())};
  PriceNodes(prices, a, report);
  MeasureUtilisation(a, report);
  FindIdleNodes(a, report);
  absl::StatusOr<core::ClusterState> state = ClusterOf(a, prices);
  if (!state.ok()) return state.status();
  PlaceRunningPods(*state, a, report);
  ScorePods(a);
  FindWaste(a, report);
  if (absl::Status st = Plan(*state, a, report); !st.ok()) return st;
  return report;
}

}  // namespace seedance::cost
