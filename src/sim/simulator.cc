#include "seedance/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/check.h"
#include "seedance/hw/catalog.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/ledger.h"
#include "seedance/sched/queue.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/go_rand.h"

namespace seedance::sim {
namespace {

using core::ClusterState;
using core::PodShape;
using core::PodSpec;

std::string_view kModeNames[] = {"fill", "churn", "replay"};

constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

// Longest simulated span Run accepts for a window or a warm-up (10 years).
constexpr double kMaxSimulatedHours = 87600;

// Resolves each pod's gpu_spec against the cluster's model table.
std::vector<PodSpec> ResolvePods(const std::vector<PodSpec>& pods, const ClusterState& state) {
  std::vector<PodSpec> out = pods;
  for (PodSpec& p : out) p.shape.gpu_model_mask = state.ModelMask(p.gpu_spec);
  return out;
}

// The workload's nodes with the run's topology template applied.
std::vector<core::NodeSpec> NodesFor(const Workload& workload, const SimOptions& options) {
  std::vector<core::NodeSpec> nodes = workload.nodes;
  core::ApplyTopologyTemplate(options.topology, &nodes);
  return nodes;
}

// The replayed workload's typical shapes: fgd's oracle and the fragmentation yardstick.
sched::TargetWorkload TypicalOf(const std::vector<PodSpec>& replayed, const SimOptions& o) {
  return sched::TypicalShapes(sched::CountShapes(replayed), o.typical_coverage_pct);
}

// node_order empty: the seeded Seedance order.
absl::StatusOr<sched::Framework> MakeFramework(const std::string& policy,
                                               sched::TargetWorkload oracle,
                                               const ClusterState& state, const SimOptions& o,
                                               std::vector<int> node_order = {}) {
  sched::PolicyContext ctx;
  ctx.oracle_workload = std::move(oracle);
  ctx.params = o.policy_params;
  absl::StatusOr<sched::Profile> profile = sched::Registry::Builtins().Create(policy, ctx);
  if (!profile.ok()) return profile.status();
  sched::FrameworkOptions fo;
  fo.seed = o.seed;
  fo.score_cache = o.score_cache;
  fo.topology_gpus = o.topology_gpus;
  fo.node_order = node_order.empty() ? sched::Framework::RandomNodeOrder(state.num_nodes(), o.seed)
                                     : std::move(node_order);
  return sched::Framework(std::move(*profile), std::move(fo));
}

// Indices of `items` in the byte order of their names (Go's string order), ties by index.
template <typename T>
std::vector<int> ByName(const std::vector<T>& items) {
  std::vector<int> idx(items.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int a, int b) { return items[a].name < items[b].name; });
  return idx;
}

// Draws the reference consumes from Go's global source between the workload tuning and the
// node naming: the Kubernetes informers started in RunCluster take jittered backoffs from it.
// Their number is not visible in the reference's code; ten reproduces every published per-seed
// result we checked (docs/simulator.md, "Random streams").
constexpr int kReferenceInformerDraws = 10;

// Fill mode's pod order and tie-break node order exactly as the FGD authors' simulator draws
// them from Go's math/rand (pkg/simulator: core.go Simulate, SortClusterPods,
// TunePodsByNodeTotalResource, syncClusterResourceList).
struct ReferenceOrder {
  std::vector<PodSpec> pods;
  std::vector<int> node_order;
};

ReferenceOrder DrawReferenceOrder(const std::vector<PodSpec>& trace, const ClusterState& state,
                                  const SimOptions& o, double capacity) {
  ReferenceOrder out;
  GoRand rng(static_cast<int64_t>(o.seed));
  rng.Int();  // the rand.Int() in Simulate's "Random Seed" debug line
  const std::vector<int> sorted = ByName(trace);  // workloadPods and SortClusterPods sort by name
  std::vector<int> order = sorted;
  rng.Shuffle(static_cast<int64_t>(order.size()),
              [&](int64_t i, int64_t j) { std::swap(order[i], order[j]); });
  int64_t total = 0;
  for (const PodSpec& p : trace) total += p.shape.TotalGpuMilli();
  const double target = o.tune * capacity;
  if (static_cast<double>(total) < target) {
    // tuneUpPods: a do-while that stops at the first draw whose per-GPU milli would overshoot.
    for (;;) {
      const PodSpec& p = trace[sorted[rng.Intn(static_cast<int64_t>(sorted.size()))]];
      if (static_cast<double>(total + p.shape.gpu_milli) > target) break;
      total += p.shape.TotalGpuMilli();
      order.push_back(static_cast<int>(&p - trace.data()));
    }
  } else {
    // tuneDownPods: random removals until the total is within the target.
    while (static_cast<double>(total) > target && !order.empty()) {
      const int64_t idx = rng.Intn(static_cast<int64_t>(order.size()));
      total -= trace[order[idx]].shape.TotalGpuMilli();
      order.erase(order.begin() + idx);
    }
  }
  for (int i = 0; i < kReferenceInformerDraws; ++i) rng.Float64();
  // Nodes sorted by name get the prefix "%04d-" from rand.Perm; ties go to the smallest name.
  const std::vector<int> nodes_by_name = ByName(state.nodes());
  const std::vector<int> prefix = rng.Perm(state.num_nodes());
  std::vector<std::string> prefixed(state.num_nodes());
  for (int i = 0; i < state.num_nodes(); ++i) {
    const int n = nodes_by_name[i];
    prefixed[n] = absl::StrFormat("%04d-", prefix[i]) + state.node(n).name;
  }
  out.node_order.resize(state.num_nodes());
  std::iota(out.node_order.begin(), out.node_order.end(), 0);
  std::sort(out.node_order.begin(), out.node_order.end(),
            [&](int a, int b) { return prefixed[a] < prefixed[b]; });
  out.pods.reserve(order.size());
  for (int i : order) out.pods.push_back(trace[i]);
  return out;
}

// NaN (undefined) for no values.
double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return kUndefined;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// ---------------------------------------------------------------- fill
// The fill protocol's pod order and tie-break node order (empty: the seeded Seedance order),
// plus the typical shapes fragmentation is measured against.
struct FillSetup {
  FillPlan plan;
  sched::TargetWorkload measure;
};

// Fill needs GPU demand, and its resampling must stay within kMaxRunArrivals pods.
absl::Status CheckFill(const std::vector<PodSpec>& trace, double capacity, const SimOptions& o) {
  double trace_gpu = 0;
  for (const PodSpec& p : trace) trace_gpu += static_cast<double>(p.shape.TotalGpuMilli());
  if (trace_gpu <= 0) return absl::InvalidArgumentError("no pod in the trace asks for a GPU");
  // Resampling adds pods of the trace's mean GPU request until tune x capacity is reached.
  const double mean_gpu = trace_gpu / static_cast<double>(trace.size());
  const double expected =
      static_cast<double>(trace.size()) + std::max(0.0, o.tune * capacity - trace_gpu) / mean_gpu;
  if (!(expected <= static_cast<double>(kMaxRunArrivals))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fill at --tune %g needs about %.3g pods (the pods ask for %.3g GPU on average), more "
        "than the limit of %d per run; use a lower --tune",
        o.tune, expected, mean_gpu / 1000, kMaxRunArrivals));
  }

  return absl::OkStatus();
}

absl::StatusOr<FillSetup> SetUpFill(const Workload& w, const SimOptions& o,
                                    const ClusterState& state) {
  std::vector<PodSpec> trace = ResolvePods(w.pods, state);
  if (trace.empty()) return absl::InvalidArgumentError("the pod list is empty");
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  if (capacity <= 0) return absl::InvalidArgumentError("the cluster has no GPUs");

  if (absl::Status st = CheckFill(trace, capacity, o); !st.ok()) return st;

  FillSetup s;
  if (o.rng == RngKind::kReference) {
    ReferenceOrder ref = DrawReferenceOrder(trace, state, o, capacity);
    s.plan.pods = std::move(ref.pods);
    s.plan.node_order = std::move(ref.node_order);
    // The reference derives its typical pods from the trace itself, before tuning.
    s.measure = TypicalOf(trace, o);
  } else {
    // The reference's workload tuning: trace pods shuffled, then resampled ones appended until
    // the total GPU request reaches tune x capacity.
    std::mt19937_64 rng(o.seed);
    std::vector<PodSpec>& pods = s.plan.pods;
    pods = trace;
    std::shuffle(pods.begin(), pods.end(), rng);
    double total = 0;
    for (const PodSpec& p : pods) total += static_cast<double>(p.shape.TotalGpuMilli());
    std::uniform_int_distribution<size_t> pick(0, trace.size() - 1);
    while (total < o.tune * capacity) {
      const PodSpec& p = trace[pick(rng)];
      pods.push_back(p);
      total += static_cast<double>(p.shape.TotalGpuMilli());
    }
    s.measure = TypicalOf(pods, o);
  }
  return s;
}

absl::StatusOr<RunResult> RunFill(const Workload& w, const std::string& policy, const SimOptions& o,
                                  ClusterState state) {
  RunResult r;
  absl::StatusOr<FillSetup> setup = SetUpFill(w, o, state);
  if (!setup.ok()) return setup.status();
  const std::vector<PodSpec>& pods = setup->plan.pods;
  const sched::TargetWorkload& measure = setup->measure;
  const double capacity = static_cast<double>(state.gpu_capacity_milli());

  // Fragmentation is measured against the workload's typical shapes for every policy.
  absl::StatusOr<sched::Framework> fw =
      MakeFramework(policy, measure, state, o, setup->plan.node_order);
  if (!fw.ok()) return fw.status();
  std::vector<double> node_frag(state.num_nodes());
  double frag_total = 0;
  for (int n = 0; n < state.num_nodes(); ++n) {
    node_frag[n] = sched::NodeFragScore(sched::NodeResources::Of(state, n), measure);
    frag_total += node_frag[n];
  }

  const int max_pct = static_cast<int>(std::ceil(o.tune * 100)) + 1;
  std::vector<double> alloc_sum(max_pct + 1, 0), frag_sum(max_pct + 1, 0);
  std::vector<int64_t> cnt(max_pct + 1, 0);
  double arrived = 0;
  for (const PodSpec& p : pods) {
    fw->NotifyArrival(p.shape);
    sched::Outcome out = fw->Schedule(p.shape, state);
    if (out.code == sched::Code::kError) {
      return absl::InternalError(absl::StrCat(policy, ": ", out.reason));
    }
    ++r.pods_arrived;
    if (o.record_placements) r.placements.push_back(out.ok() ? out.placement : core::Placement{});
    if (out.ok()) {
      ++r.pods_scheduled;
      r.topology.Add(state, out.placement);
      const int n = out.placement.node;
      frag_total -= node_frag[n];
      node_frag[n] = sched::NodeFragScore(sched::NodeResources::Of(state, n), measure);
      frag_total += node_frag[n];
    } else {
      ++r.pods_failed;
    }
    arrived += static_cast<double>(p.shape.TotalGpuMilli());
    const double arrived_pct = 100.0 * arrived / capacity;
    const int k = static_cast<int>(std::lround(arrived_pct));
    if (k < 0 || k > max_pct) continue;
    const double alloc_pct = 100.0 * static_cast<double>(state.gpu_allocated_milli()) / capacity;
    const double idle = capacity - static_cast<double>(state.gpu_allocated_milli());
    alloc_sum[k] += alloc_pct;
    frag_sum[k] += idle > 0 ? 100.0 * frag_total / idle : 0.0;
    ++cnt[k];
  }
  for (int k = 0; k <= max_pct; ++k) {
    if (cnt[k] == 0) continue;
    r.curve.push_back(
        {k, alloc_sum[k] / static_cast<double>(cnt[k]), frag_sum[k] / static_cast<double>(cnt[k])});
  }
  // Arrived demand at the end, as the curve rounds it (the last points may lie past the curve).
  const int64_t reached_pct = std::llround(100.0 * arrived / capacity);
  auto at = [&](int k, bool frag) -> double {
    // The point itself, else the nearest recorded point below it (sparse traces: one large pod
    // may step over k). Undefined (NaN) when arrived demand never reached k.
    const CurvePoint* best = nullptr;
    for (const CurvePoint& c : r.curve) {
      if (c.arrived_pct <= k) best = &c;
    }
    if (!best || reached_pct < k) return kUndefined;
    return frag ? best->frag_ratio_pct : 100.0 - best->alloc_pct;
  };
  r.unalloc_gpu_pct_at_100 = at(100, false);
  r.unalloc_gpu_pct_at_130 = at(130, false);
  r.frag_ratio_pct_at_90 = at(90, true);
  return r;
}

// ---------------------------------------------------------------- churn and replay
struct Arrival {
  double time_s;
  double lifetime_s;  // < 0: never departs
  int trace_index;
};

std::string Hours(double seconds) { return absl::StrFormat("%.6g h", seconds / 3600); }

// Churn's arrival process: Poisson at the rate that offers `load`, over [0, end_s), of which
// [0, warmup_s) is warm-up.
struct ChurnPlan {
  std::vector<int> eligible;  // pods with a lifetime
  double mean_life_s = 0;
  double rate = 0;  // pods per second
  double offered_load_exact = 0;
  double warmup_s = 0;
  double end_s = 0;
};

absl::StatusOr<ChurnPlan> PlanChurn(const std::vector<PodSpec>& trace, double capacity,
                                    const SimOptions& o) {
  ChurnPlan c;
  double life_sum = 0, gpu_sum = 0, gpu_seconds_sum = 0;
  for (int i = 0; i < static_cast<int>(trace.size()); ++i) {
    const PodSpec& p = trace[i];
    if (p.deletion_s < 0 || p.deletion_s < p.creation_s) continue;
    c.eligible.push_back(i);
    life_sum += static_cast<double>(p.deletion_s - p.creation_s);
    gpu_sum += static_cast<double>(p.shape.TotalGpuMilli());
    gpu_seconds_sum += static_cast<double>(p.shape.TotalGpuMilli()) *
                       static_cast<double>(p.deletion_s - p.creation_s);
  }
  if (c.eligible.empty() || life_sum <= 0 || gpu_sum <= 0) {
    return absl::InvalidArgumentError(
        "churn mode needs pods with creation and deletion times and some GPU demand");
  }
  const double n = static_cast<double>(c.eligible.size());
  c.mean_life_s = life_sum / n;
  const double mean_gpu = gpu_sum / n;
  // Offered GPU load. The definition is rate x mean lifetime x mean GPU request /
  // capacity. On the trace, pods that ask for more GPU also live longer (E[L*G] = 1.18
  // E[L] E[G] on the default trace), so the GPU-time actually offered is higher than that;
  // load_basis kExact uses E[L*G] instead. Both are reported.
  const double mean_gpu_seconds = gpu_seconds_sum / n;
  const double denom =
      o.load_basis == LoadBasis::kExact ? mean_gpu_seconds : c.mean_life_s * mean_gpu;
  if (!(denom > 0)) {
    return absl::InvalidArgumentError(
        "churn mode needs GPU pods with a positive lifetime (every GPU pod ends when it starts)");
  }
  c.rate = o.load * capacity / denom;
  c.offered_load_exact = c.rate * mean_gpu_seconds / capacity;
  c.warmup_s = o.warmup_h >= 0 ? o.warmup_h * 3600 : std::min(3 * c.mean_life_s, 7 * 86400.0);
  c.end_s = c.warmup_s + o.duration_h * 3600;
  // Expected arrivals: the warm start's Poisson(rate x mean lifetime) plus rate x end_s.
  const double expected = c.rate * ((o.warm_start ? c.mean_life_s : 0) + c.end_s);
  if (!(expected <= static_cast<double>(kMaxRunArrivals))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "churn at load %g over %s (warm-up %s) needs about %.3g arrivals, more than the limit "
        "of %d per run; use a shorter --duration or --warmup, or a lower --load",
        o.load, Hours(c.end_s - c.warmup_s), Hours(c.warmup_s), expected, kMaxRunArrivals));
  }
  return c;
}

// Replay's arrivals: the trace's own times from its first creation, divided by time_scale.
struct ReplayPlan {
  std::vector<Arrival> arrivals;  // by time
  double warmup_s = 0;
  double end_s = 0;
};

absl::StatusOr<ReplayPlan> PlanReplay(const std::vector<PodSpec>& trace, const SimOptions& o) {
  ReplayPlan r;
  const double scale = o.time_scale;
  int64_t t0 = INT64_MAX;
  for (const PodSpec& p : trace) t0 = std::min(t0, p.creation_s);
  r.arrivals.reserve(trace.size());
  for (int i = 0; i < static_cast<int>(trace.size()); ++i) {
    const PodSpec& p = trace[i];
    const double life = p.deletion_s >= p.creation_s
                            ? static_cast<double>(p.deletion_s - p.creation_s) / scale
                            : -1.0;
    r.arrivals.push_back({static_cast<double>(p.creation_s - t0) / scale, life, i});
  }
  std::stable_sort(r.arrivals.begin(), r.arrivals.end(),
                   [](const Arrival& a, const Arrival& b) { return a.time_s < b.time_s; });
  const double span = r.arrivals.back().time_s;
  if (!std::isfinite(span)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replay: the trace's creation times divided by --time-scale %g "
                        "overflow; use a larger --time-scale",
                        scale));
  }
  if (!(span > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay needs pods created at different times: all ", trace.size(),
                     " pods are created at ", t0, " s, so the replayed window is empty"));
  }
  r.warmup_s = o.warmup_h >= 0 ? o.warmup_h * 3600 : 0.0;
  if (r.warmup_s >= span) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay: --warmup ", Hours(r.warmup_s),
                     " leaves nothing to measure: the last pod arrives at ", Hours(span)));
  }
  // The whole trace ends just after its last arrival, so that arrival is replayed too.
  const double whole = std::nextafter(span, INFINITY);
  r.end_s = o.duration_h > 0 ? std::min(whole, r.warmup_s + o.duration_h * 3600) : whole;
  const auto first_measured =
      std::lower_bound(r.arrivals.begin(), r.arrivals.end(), r.warmup_s,
                       [](const Arrival& a, double t) { return a.time_s < t; });
  if (first_measured == r.arrivals.end() || !(first_measured->time_s < r.end_s)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay: no pod arrives in the measured window [", Hours(r.warmup_s), ", ", Hours(r.end_s),
        "); give a longer --duration (the next arrival is at ",
        first_measured == r.arrivals.end() ? Hours(span) : Hours(first_measured->time_s), ")"));
  }
  return r;
}

// One equivalence group (1, 2, ...) per distinct request of the trace: each trace pod's group,
// and each group's request (index 0 unused).
struct RequestGroups {
  std::vector<uint64_t> of_pod;
  std::vector<PodShape> shape;
};

RequestGroups GroupRequests(const std::vector<PodSpec>& trace) {
  struct ShapeLess {
    bool operator()(const PodShape& a, const PodShape& b) const {
      return std::tie(a.cpu_milli, a.memory_mib, a.num_gpu, a.gpu_milli, a.gpu_model_mask) <
             std::tie(b.cpu_milli, b.memory_mib, b.num_gpu, b.gpu_milli, b.gpu_model_mask);
    }
  };
  std::map<PodShape, uint64_t, ShapeLess> ids;
  RequestGroups out;
  out.of_pod.reserve(trace.size());
  out.shape.emplace_back();
  for (const PodSpec& p : trace) {
    auto [it, added] = ids.emplace(p.shape, out.shape.size());
    if (added) out.shape.push_back(p.shape);
    out.of_pod.push_back(it->second);
  }
  return out;
}

// Churn's arrival stream over [0, end_s): Poisson arrivals of the trace's pods with lifetimes,
// starting in steady state when o.warm_start.
absl::StatusOr<ReplayPlan> ChurnArrivals(const std::vector<PodSpec>& trace, double capacity,
                                         const SimOptions& o, double* offered_load_exact) {
  std::mt19937_64 rng(o.seed);
  ReplayPlan out;
  absl::StatusOr<ChurnPlan> plan = PlanChurn(trace, capacity, o);
  if (!plan.ok()) return plan.status();
  const std::vector<int>& eligible = plan->eligible;
  *offered_load_exact = plan->offered_load_exact;
  out.warmup_s = plan->warmup_s;
  out.end_s = plan->end_s;
  const double rate = plan->rate;
  // Start in steady state: an M/G/inf system holds Poisson(rate x mean lifetime) pods, each
  // drawn length-biased (a long-lived pod is more likely to be present) with a uniformly
  // distributed age. Without this, heavy-tailed lifetimes (trace: median 9 min, mean 7 h)
  // would take months of simulated time to reach steady state.
  if (o.warm_start) {
    std::vector<double> lifetimes;
    for (int i : eligible) {
      lifetimes.push_back(static_cast<double>(trace[i].deletion_s - trace[i].creation_s));
    }
    std::discrete_distribution<size_t> biased(lifetimes.begin(), lifetimes.end());
    std::poisson_distribution<int64_t> count(rate * plan->mean_life_s);
    std::uniform_real_distribution<double> unit(0, 1);
    const int64_t n0 = std::min<int64_t>(count(rng), kMaxRunArrivals);
    for (int64_t k = 0; k < n0; ++k) {
      const size_t j = biased(rng);
      out.arrivals.push_back({0.0, lifetimes[j] * unit(rng), eligible[j]});
    }
  }
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<size_t> pick(0, eligible.size() - 1);
  // PlanChurn bounds the expected count well below the hard stop.
  for (double t = gap(rng); t < out.end_s; t += gap(rng)) {
    if (static_cast<int64_t>(out.arrivals.size()) >= 2 * kMaxRunArrivals) {
      return absl::InternalError("churn: arrival stream ran past twice its expected size");
    }
    const int i = eligible[pick(rng)];
    out.arrivals.push_back({t, static_cast<double>(trace[i].deletion_s - trace[i].creation_s), i});
  }
  return out;
}

// The free price of each node's GPUs, USD per GPU-hour: the node's own price over its GPUs, or
// the model's default.
std::vector<double> GpuPrices(const ClusterState& state) {
  std::vector<double> gpu_price(state.num_nodes());
  for (int n = 0; n < state.num_nodes(); ++n) {
    const core::NodeSpec& node = state.node(n);
    gpu_price[n] = node.num_gpus > 0 && node.cost_usd_per_hour > 0
                       ? node.cost_usd_per_hour / node.num_gpus
                       : DefaultGpuPriceUsdPerHour(node.gpu_model);
  }
  return gpu_price;
}

// The measured window [warmup_s, end_s] of a queued run: the integrals of unallocated GPU milli
// and of the idle cost rate, and the unallocated share sampled at kSamples + 1 evenly spaced
// points (counted by index, so that no rounding can keep the sampling from advancing).
struct WindowMeter {
  static constexpr int kSamples = 240;
  // end_s > warmup_s: PlanChurn and PlanReplay refuse an empty window.
  double warmup_s = 0, end_s = 0, capacity = 0;
  double last_t = 0, unalloc_integral = 0, cost_integral = 0;
  int next_sample_index = 0;

  double SampleTime(int k) const {
    return k == kSamples ? end_s : warmup_s + (end_s - warmup_s) * k / kSamples;
  }
  // Accounts for the time from the last event to t (capped at end_s) with the state as it is.
  void Advance(double t, const ClusterState& state, double idle_cost_rate,
               std::vector<std::pair<double, double>>* series) {
    t = std::min(t, end_s);
    if (t <= last_t) return;
    const double lo = std::max(last_t, warmup_s);
    if (t > lo) {
      const double unalloc = capacity - static_cast<double>(state.gpu_allocated_milli());
      unalloc_integral += unalloc * (t - lo);
      cost_integral += idle_cost_rate * (t - lo) / 3600.0;
    }
    while (next_sample_index <= kSamples && SampleTime(next_sample_index) <= t) {
      series->push_back(
          {(SampleTime(next_sample_index) - warmup_s) / 3600.0,
           100.0 * (capacity - static_cast<double>(state.gpu_allocated_milli())) / capacity});
      ++next_sample_index;
    }
    last_t = t;
  }
  void Report(RunResult* r) const {
    const double window = end_s - warmup_s;
    r->measured_hours = window / 3600.0;
    r->unalloc_gpu_pct_steady = 100.0 * unalloc_integral / (capacity * window);
    r->idle_gpu_hours = unalloc_integral / 1000.0 / 3600.0;
    r->idle_cost_usd = cost_integral;
  }
};

// After a departure from node `freed`, only that node gained room, so only pods that fit there
// can start now. They start best (priority, then arrival) first until none fits: the event
// wakes the best waiting request that fits the freed node, and after each placement (or
// failure) the next one, so that each is chosen against the cluster as the previous one left
// it. A request that fails is skipped for the rest of this departure; one that no longer fits
// the freed node goes back unschedulable with its whole group. `started(id, t, outcome)`
// records a placement.
template <typename Started>
absl::Status StartOnFreedNode(int freed, double t, const RequestGroups& groups, ClusterState& state,
                              sched::Framework& fw, sched::SchedulingQueue& queue,
                              Started& started) {
  std::vector<uint64_t> failed_here;
  auto wake_best = [&] {
    queue.OnEvent(
        sched::QueueEvent::kPodDeleted, t,
        [&](const sched::QueuedPod& q) {
          for (uint64_t f : failed_here) {
            if (f == q.group) return false;
          }
          return state.Fits(freed, groups.shape[q.group]);
        },
        1);
  };
  wake_best();
  while (std::optional<sched::QueuedPod> q = queue.Pop(t)) {
    const PodShape& want = groups.shape[q->group];
    if (!state.Fits(freed, want)) {
      queue.AddUnschedulable(*q, t);
      continue;
    }
    sched::Outcome out = fw.Schedule(want, state);
    if (out.code == sched::Code::kError) return absl::InternalError(out.reason);
    if (!out.ok()) {
      queue.AddUnschedulable(*q, t);
      failed_here.push_back(q->group);
    } else if (absl::Status st = started(q->id, t, out); !st.ok()) {
      return absl::InternalError(st.message());
    }
    wake_best();
  }
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunQueued(const Workload& w, const std::string& policy,
                                    const SimOptions& o, ClusterState state) {
  RunResult r;
  std::vector<PodSpec> trace = ResolvePods(w.pods, state);
  if (trace.empty()) return absl::InvalidArgumentError("the pod list is empty");
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  if (capacity <= 0) return absl::InvalidArgumentError("the cluster has no GPUs");
  double offered_load_exact = 0;
  absl::StatusOr<ReplayPlan> plan = o.mode == Mode::kChurn
                                        ? ChurnArrivals(trace, capacity, o, &offered_load_exact)
                                        : PlanReplay(trace, o);
  if (!plan.ok()) return plan.status();
  if (o.mode == Mode::kChurn) r.offered_load_exact = offered_load_exact;
  const std::vector<Arrival> arrivals = std::move(plan->arrivals);
  const double warmup_s = plan->warmup_s, end_s = plan->end_s;

  absl::StatusOr<sched::Framework> fw = MakeFramework(policy, TypicalOf(trace, o), state, o);
  if (!fw.ok()) return fw.status();

  // Idle cost rate: price of every free GPU (USD per hour).
  const std::vector<double> gpu_price = GpuPrices(state);
  double idle_cost_rate = 0;
  for (int n = 0; n < state.num_nodes(); ++n) {
    idle_cost_rate += gpu_price[n] * state.node(n).num_gpus;
  }

  struct Running {
    double end_s;
    int id;
    bool operator>(const Running& o) const {
      return end_s > o.end_s || (end_s == o.end_s && id > o.id);
    }
  };
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> departures;
  // The live scheduler's ledger and queue, on simulated time. As in kube-scheduler, waiting pods
  // live in the queue and the ledger records placements: a pod enters the ledger Bound when it
  // starts (the simulator binds at once) and leaves it when it departs. Pod uid = arrival index.
  // The queue has no backoff (a pod is retried as soon as room may have freed for it) and orders
  // by priority (high first), then arrival. Pods with the same request form one equivalence
  // group, so a retry costs one fit test per distinct request, not per waiting pod.
  sched::PodLedger ledger;
  sched::QueueOptions queue_options;
  queue_options.initial_backoff_s = 0;
  queue_options.max_backoff_s = 0;
  queue_options.max_unschedulable_s = INFINITY;
  sched::SchedulingQueue queue(queue_options);
  const RequestGroups groups = GroupRequests(trace);
  auto uid_of = [](size_t id) { return std::to_string(id); };
  auto shape_of = [&](uint64_t id) -> const PodShape& {
    return trace[arrivals[id].trace_index].shape;
  };

  WindowMeter meter{.warmup_s = warmup_s, .end_s = end_s, .capacity = capacity};
  std::vector<double> delays;
  auto advance = [&](double t) { meter.Advance(t, state, idle_cost_rate, &r.unalloc_series); };
  auto started = [&](size_t id, double t, const sched::Outcome& out) -> absl::Status {
    const PodShape& shape = shape_of(id);
    sched::PodInfo info;
    info.uid = uid_of(id);
    info.priority = trace[arrivals[id].trace_index].priority;
    info.shape = shape;
    info.phase = sched::PodPhase::kBound;
    info.placement = out.placement;
    if (absl::Status st = ledger.Add(std::move(info)); !st.ok()) return st;
    r.topology.Add(state, out.placement);
    idle_cost_rate -=
        gpu_price[out.placement.node] * static_cast<double>(shape.TotalGpuMilli()) / 1000.0;
    ++r.pods_scheduled;
    if (arrivals[id].time_s >= warmup_s) delays.push_back(t - arrivals[id].time_s);
    if (arrivals[id].lifetime_s >= 0) {
      departures.push({t + arrivals[id].lifetime_s, static_cast<int>(id)});
    }
    return absl::OkStatus();
  };

  size_t next = 0, departed = 0;
  while (true) {
    const double ta = next < arrivals.size() ? arrivals[next].time_s : INFINITY;
    const double td = departures.empty() ? INFINITY : departures.top().end_s;
    const double t = std::min(ta, td);
    if (!(t < end_s)) break;
    advance(t);
    if (td <= ta) {
      const Running d = departures.top();
      departures.pop();
      absl::StatusOr<sched::PodInfo> gone = ledger.Remove(uid_of(d.id));
      if (!gone.ok()) return absl::InternalError(gone.status().message());
      ++departed;
      const PodShape& shape = shape_of(d.id);
      fw->Release(shape, gone->placement, state);
      const int freed = gone->placement.node;
      idle_cost_rate += gpu_price[freed] * static_cast<double>(shape.TotalGpuMilli()) / 1000.0;
      if (absl::Status st = StartOnFreedNode(freed, t, groups, state, *fw, queue, started);
          !st.ok()) {
        return st;
      }
    } else {
      const size_t id = next++;
      const PodSpec& p = trace[arrivals[id].trace_index];
      ++r.pods_arrived;
      fw->NotifyArrival(p.shape);
      // Tried at once: nothing else is active between events, so Add + Pop would hand this pod
      // straight back. Only a failure enters the queue.
      sched::Outcome out = fw->Schedule(p.shape, state);
      if (out.code == sched::Code::kError) return absl::InternalError(out.reason);
      if (out.ok()) {
        if (absl::Status st = started(id, t, out); !st.ok()) {
          return absl::InternalError(st.message());
        }
      } else {
        queue.AddUnschedulable({.id = id,
                                .priority = p.priority,
                                .seq = id,
                                .attempts = 0,
                                .group = groups.of_pod[arrivals[id].trace_index],
                                .popped_at_event = queue.events()},
                               t);
      }
    }
  }
  advance(end_s);
  // Every arrival is queued, running or gone; anything else is a bug in the loop above, which
  // fails the run (exit 1) rather than reporting figures that lost pods.
  if (queue.active_size() != 0 ||
      queue.size() + ledger.size() + departed != static_cast<size_t>(r.pods_arrived)) {
    return absl::InternalError(
        absl::StrCat("simulator: queue and ledger out of step at the end: ", queue.active_size(),
                     " active, ", queue.size(), " queued + ", ledger.size(), " running + ",
                     departed, " departed != ", r.pods_arrived, " arrived"));
  }
  queue.ForEach([&](const sched::QueuedPod& q) {
    if (arrivals[q.id].time_s >= warmup_s) delays.push_back(end_s - arrivals[q.id].time_s);
  });
  r.pods_waiting_at_end = static_cast<int64_t>(queue.size());
  meter.Report(&r);
  r.queue_delay_p50_s = Percentile(delays, 0.50);
  r.queue_delay_p99_s = Percentile(delays, 0.99);
  return r;
}

// The options' own ranges, whatever the caller (the CLI checks them too, naming its flags).
absl::Status CheckOptions(const SimOptions& o) {
  auto bad = [](std::string_view what, double v, std::string_view range) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be %s (got %g)", std::string(what), std::string(range), v));
  };
  if (!(o.tune >= 0.01 && o.tune <= 100)) return bad("tune", o.tune, "in [0.01, 100]");
  if (o.mode == Mode::kChurn) {
    if (!(o.load >= 0.001 && o.load <= 100)) return bad("load", o.load, "in [0.001, 100]");
    if (!(o.duration_h > 0 && o.duration_h <= kMaxSimulatedHours)) {
      return bad("churn duration (hours)", o.duration_h, "in (0, 87600]");
    }
  }
  if (o.mode == Mode::kReplay) {
    if (!(o.time_scale >= 1e-6 && o.time_scale <= 1e9)) {
      return bad("time_scale", o.time_scale, "in [1e-06, 1e+09]");
    }
    if (!(o.duration_h <= kMaxSimulatedHours) || std::isnan(o.duration_h)) {
      return bad("replay duration (hours)", o.duration_h, "<= 87600 (<= 0: the whole trace)");
    }
  }
  if (!(o.warmup_h <= kMaxSimulatedHours) || std::isnan(o.warmup_h)) {
    return bad("warm-up (hours)", o.warmup_h, "<= 87600 (< 0: the default)");
  }
  if (!(o.typical_coverage_pct > 0 && o.typical_coverage_pct <= 100)) {
    return bad("typical_coverage_pct", o.typical_coverage_pct, "in (0, 100]");
  }
  if (o.rng == RngKind::kReference && o.mode != Mode::kFill) {
    return absl::InvalidArgumentError(
        "the reference random stream exists only for fill mode (the FGD simulator has no "
        "churn or replay)");
  }
  return absl::OkStatus();
}

// num / den, NaN when nothing was counted.
double RatioOrUndefined(double num, int64_t den) {
  return den == 0 ? kUndefined : num / static_cast<double>(den);
}

}  // namespace

absl::Status CheckRun(const Workload& workload, const SimOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<ClusterState> state = ClusterState::Create(NodesFor(workload, options));
  if (!state.ok()) return state.status();
  if (workload.nodes.empty()) return absl::InvalidArgumentError("the node list is empty");
  if (workload.pods.empty()) return absl::InvalidArgumentError("the pod list is empty");
  if (state->gpu_capacity_milli() <= 0)
    return absl::InvalidArgumentError("the cluster has no GPUs");
  const std::vector<PodSpec> trace = ResolvePods(workload.pods, *state);
  const double capacity = static_cast<double>(state->gpu_capacity_milli());
  if (options.mode == Mode::kFill) return CheckFill(trace, capacity, options);
  if (options.mode == Mode::kChurn) {
    return PlanChurn(trace, capacity, options).status();
  }
  return PlanReplay(trace, options).status();
}

std::string_view ModeName(Mode mode) { return kModeNames[static_cast<int>(mode)]; }

void TopologyStats::Add(const sched::GpuSetQuality& q) {
  if (!q.measured) return;
  ++multi_gpu_pods;
  best_bandwidth += q.best ? 1 : 0;
  slowdown_sum += q.slowdown;
  allreduce_s_sum += q.allreduce_s;
}

void TopologyStats::Add(const ClusterState& state, const core::Placement& placement) {
  Add(sched::MeasureGpuSet(state, placement));
  const int home = sched::HomeNuma(state.node(placement.node), placement);
  if (home < 0) return;
  ++gpu_pods_numa;
  numa_local += placement.numa == home ? 1 : 0;
}

double TopologyStats::numa_local_pct() const {
  return RatioOrUndefined(100.0 * static_cast<double>(numa_local), gpu_pods_numa);
}

double TopologyStats::mean_allreduce_ms() const {
  return RatioOrUndefined(1e3 * allreduce_s_sum, multi_gpu_pods);
}

double TopologyStats::best_share_pct() const {
  return RatioOrUndefined(100.0 * static_cast<double>(best_bandwidth), multi_gpu_pods);
}

double TopologyStats::mean_slowdown() const {
  return RatioOrUndefined(slowdown_sum, multi_gpu_pods);
}

absl::StatusOr<FillPlan> PlanFill(const Workload& workload, const SimOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<ClusterState> state = ClusterState::Create(NodesFor(workload, options));
  if (!state.ok()) return state.status();
  absl::StatusOr<FillSetup> setup = SetUpFill(workload, options, *state);
  if (!setup.ok()) return setup.status();
  FillPlan plan = std::move(setup->plan);
  if (plan.node_order.empty()) {
    plan.node_order = sched::Framework::RandomNodeOrder(state->num_nodes(), options.seed);
  }
  return plan;
}

absl::StatusOr<RunResult> Run(const Workload& workload, const std::string& policy,
                              const SimOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<ClusterState> state = ClusterState::Create(NodesFor(workload, options));
  if (!state.ok()) return state.status();
  absl::StatusOr<RunResult> r = options.mode == Mode::kFill
                                    ? RunFill(workload, policy, options, std::move(*state))
                                    : RunQueued(workload, policy, options, std::move(*state));
  if (!r.ok()) return r;
  r->policy = policy;
  r->best_bandwidth_pct = r->topology.best_share_pct();
  r->allreduce_slowdown = r->topology.mean_slowdown();
  r->allreduce_ms = r->topology.mean_allreduce_ms();
  r->numa_local_pct = r->topology.numa_local_pct();
  r->seed = options.seed;
  r->mode = options.mode;
  r->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

double DefaultGpuPriceUsdPerHour(const std::string& model) {
  // The hardware catalog's default price (include/seedance/hw/catalog.h); a model it does not
  // price costs 2.0 USD per GPU-hour.
  const hw::GpuModel* g = hw::Find(model);
  return g != nullptr && g->usd_per_hour ? *g->usd_per_hour : 2.0;
}

}  // namespace seedance::sim
