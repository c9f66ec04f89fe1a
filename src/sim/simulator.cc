#include "seedance/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/base/check.h"
#include "seedance/hw/catalog.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/ledger.h"
#include "seedance/sched/queue.h"
#include "seedance/sched/registry.h"
#include "seedance/sched/scheduler.h"
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

// The live scheduler on simulated time: the server's sched::Scheduler with internal binding and
// sched::SimulationOptions() (no backoff; equivalence groups, so a retry costs one fit test per
// distinct request, not per waiting pod; after a departure the best waiting request that fits
// the freed node is tried, then the next, each against the cluster as the previous one left it).
absl::StatusOr<std::unique_ptr<sched::Scheduler>> MakeScheduler(const std::string& policy,
                                                                const std::vector<PodSpec>& trace,
                                                                const SimOptions& o,
                                                                ClusterState state) {
  // The registry's own error (NotFound, naming the policy and the ones there are).
  if (!sched::Registry::Builtins().Contains(policy)) {
    return sched::Registry::Builtins().Create(policy, sched::PolicyContext{}).status();
  }
  sched::SchedulerOptions so = sched::SimulationOptions();
  so.default_profile = {"default", policy, o.policy_params, {}};
  so.seed = o.seed;
  so.score_cache = o.score_cache;
  so.oracle_workload = TypicalOf(trace, o);
  so.node_order = sched::Framework::RandomNodeOrder(state.num_nodes(), o.seed);
  so.topology_gpus = o.topology_gpus;
  absl::StatusOr<std::unique_ptr<sched::Scheduler>> s =
      sched::Scheduler::Create(std::move(so), std::move(state));
  if (!s.ok()) return s.status();
  if (absl::Status st = (*s)->BuildDefaultProfile(); !st.ok()) return st;
  return s;
}

// What RunQueued keeps of a run while the scheduler runs it: the pods running (by when they
// depart), the meters, and the event log of record_placements.
class QueuedRun {
 public:
  QueuedRun(const std::vector<PodSpec>& trace, const std::vector<Arrival>& arrivals,
            const ClusterState& state, const SimOptions& o, RunResult* r)
      : trace_(trace),
        arrivals_(arrivals),
        gpu_price_(GpuPrices(state)),
        record_(o.record_placements),
        r_(r) {
    for (int n = 0; n < state.num_nodes(); ++n) {
      idle_cost_rate_ += gpu_price_[n] * state.node(n).num_gpus;
    }
  }

  void Arrive(size_t id, double t) {
    ++r_->pods_arrived;
    if (record_) {
      r_->events.push_back(
          {SimEvent::kArrive, t, static_cast<int64_t>(id), arrivals_[id].trace_index, {}});
    }
  }
  // The next departure's time (INFINITY: none) and arrival index.
  double NextDepartureTime() const {
    return departures_.empty() ? INFINITY : departures_.top().end_s;
  }
  size_t PopDeparture(double t) {
    const size_t id = static_cast<size_t>(departures_.top().id);
    departures_.pop();
    ++departed_;
    if (record_) r_->events.push_back({SimEvent::kDepart, t, static_cast<int64_t>(id), -1, {}});
    return id;
  }
  void Departed(size_t id, const core::Placement& p) {
    idle_cost_rate_ +=
        gpu_price_[p.node] * static_cast<double>(ShapeOf(id).TotalGpuMilli()) / 1000.0;
  }
  void Started(size_t id, double t, const ClusterState& state, const core::Placement& p) {
    r_->topology.Add(state, p);
    idle_cost_rate_ -=
        gpu_price_[p.node] * static_cast<double>(ShapeOf(id).TotalGpuMilli()) / 1000.0;
    ++r_->pods_scheduled;
    if (arrivals_[id].time_s >= meter_.warmup_s) delays_.push_back(t - arrivals_[id].time_s);
    if (arrivals_[id].lifetime_s >= 0) {
      departures_.push({t + arrivals_[id].lifetime_s, static_cast<int>(id)});
    }
    if (record_) r_->events.push_back({SimEvent::kStart, t, static_cast<int64_t>(id), -1, p});
  }
  void Advance(double t, const ClusterState& state) {
    meter_.Advance(t, state, idle_cost_rate_, &r_->unalloc_series);
  }
  void StartMeter(double warmup_s, double end_s, double capacity) {
    meter_.warmup_s = warmup_s;
    meter_.end_s = end_s;
    meter_.capacity = capacity;
  }
  // A pod still waiting at the end waited from its arrival to the end.
  void StillWaiting(size_t id) {
    if (arrivals_[id].time_s >= meter_.warmup_s) {
      delays_.push_back(meter_.end_s - arrivals_[id].time_s);
    }
  }
  int64_t departed() const { return departed_; }
  void Report() {
    meter_.Report(r_);
    r_->queue_delay_p50_s = Percentile(delays_, 0.50);
    r_->queue_delay_p99_s = Percentile(delays_, 0.99);
  }

 private:
  const PodShape& ShapeOf(size_t id) const { return trace_[arrivals_[id].trace_index].shape; }
  struct Running {
    double end_s;
    int id;
    bool operator>(const Running& o) const {
      return end_s > o.end_s || (end_s == o.end_s && id > o.id);
    }
  };
  const std::vector<PodSpec>& trace_;
  const std::vector<Arrival>& arrivals_;
  const std::vector<double> gpu_price_;
  const bool record_;
  RunResult* r_;
  double idle_cost_rate_ = 0;  // USD per hour of the free GPUs
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> departures_;
  WindowMeter meter_;
  std::vector<double> delays_;
  int64_t departed_ = 0;
};

// The pods the last event placed: every PodBound change since, in order (uid = arrival index).
absl::Status CollectStarts(sched::Scheduler& s, double t, QueuedRun& run) {
  if (s.attempts_error() != 0) {
    return absl::InternalError("simulator: a scheduling attempt ended in an error (kError)");
  }
  for (const sched::Change& c : s.TakeChanges()) {
    if (c.kind != sched::Change::kPodBound) continue;
    size_t id = 0;
    const sched::PodInfo* pod = s.ledger().Find(c.key);
    if (pod == nullptr || !absl::SimpleAtoi(c.key, &id)) {
      return absl::InternalError(
          absl::StrCat("simulator: bound pod ", c.key, " is not in the run"));
    }
    run.Started(id, t, s.state(), pod->placement);
  }
  return absl::OkStatus();
}

sched::PodInfo PodOf(size_t id, const PodSpec& p) {
  sched::PodInfo info;
  info.uid = std::to_string(id);
  info.priority = p.priority;
  info.gpu_spec = p.gpu_spec;
  info.shape = p.shape;
  return info;
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
  const double end_s = plan->end_s;
  QueuedRun run(trace, arrivals, state, o, &r);
  run.StartMeter(plan->warmup_s, end_s, capacity);
  absl::StatusOr<std::unique_ptr<sched::Scheduler>> made =
      MakeScheduler(policy, trace, o, std::move(state));
  if (!made.ok()) return made.status();
  sched::Scheduler& s = **made;

  size_t next = 0;
  while (true) {
    const double ta = next < arrivals.size() ? arrivals[next].time_s : INFINITY;
    const double td = run.NextDepartureTime();
    const double t = std::min(ta, td);
    if (!(t < end_s)) break;
    run.Advance(t, s.state());
    if (td <= ta) {
      const size_t id = run.PopDeparture(t);
      const sched::PodInfo* pod = s.ledger().Find(std::to_string(id));
      if (pod == nullptr) return absl::InternalError("simulator: a departing pod is not running");
      run.Departed(id, pod->placement);
      if (absl::Status st = s.DeletePod(std::to_string(id), t); !st.ok()) {
        return absl::InternalError(st.message());
      }
    } else {
      const size_t id = next++;
      run.Arrive(id, t);
      if (absl::Status st = s.SubmitPod(PodOf(id, trace[arrivals[id].trace_index]), t); !st.ok()) {
        return absl::InternalError(st.message());
      }
    }
    s.RunCycles(t);
    if (absl::Status st = CollectStarts(s, t, run); !st.ok()) return st;
  }
  run.Advance(end_s, s.state());
  // Every arrival is queued, running or gone; anything else is a bug in the loop above, which
  // fails the run (exit 1) rather than reporting figures that lost pods.
  const sched::SchedulingQueue& queue = s.queue();
  const int64_t running = r.pods_scheduled - run.departed();
  if (queue.active_size() != 0 ||
      static_cast<int64_t>(s.ledger().size()) != static_cast<int64_t>(queue.size()) + running ||
      static_cast<int64_t>(queue.size()) + running + run.departed() != r.pods_arrived) {
    return absl::InternalError(absl::StrCat(
        "simulator: queue and ledger out of step at the end: ", queue.active_size(), " active, ",
        queue.size(), " queued + ", running, " running + ", run.departed(),
        " departed != ", r.pods_arrived, " arrived (ledger ", s.ledger().size(), ")"));
  }
  s.ledger().ForEach([&](const sched::PodInfo& p) {
    size_t id = 0;
    if (p.phase == sched::PodPhase::kPending && absl::SimpleAtoi(p.uid, &id)) run.StillWaiting(id);
  });
  r.pods_waiting_at_end = static_cast<int64_t>(queue.size());
  run.Report();
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
