#include "seedance/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"
#include "seedance/sim/go_rand.h"

namespace seedance::sim {
namespace {

using core::ClusterState;
using core::PodShape;
using core::PodSpec;

std::string_view kModeNames[] = {"fill", "churn", "replay"};

// Resolves each pod's gpu_spec against the cluster's model table.
std::vector<PodSpec> ResolvePods(const std::vector<PodSpec>& pods, const ClusterState& state) {
  std::vector<PodSpec> out = pods;
  for (PodSpec& p : out) p.shape.gpu_model_mask = state.ModelMask(p.gpu_spec);
  return out;
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

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
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

absl::StatusOr<FillSetup> SetUpFill(const Workload& w, const SimOptions& o,
                                    const ClusterState& state) {
  std::vector<PodSpec> trace = ResolvePods(w.pods, state);
  if (trace.empty()) return absl::InvalidArgumentError("the pod list is empty");
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  if (capacity <= 0) return absl::InvalidArgumentError("the cluster has no GPUs");

  bool any_gpu = false;
  for (const PodSpec& p : trace) any_gpu = any_gpu || p.shape.TotalGpuMilli() > 0;
  if (!any_gpu) return absl::InvalidArgumentError("no pod in the trace asks for a GPU");

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
    if (out.ok()) {
      ++r.pods_scheduled;
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
  auto at = [&](int k, bool frag) -> double {
    // The point itself, else the nearest recorded point below it (sparse traces).
    const CurvePoint* best = nullptr;
    for (const CurvePoint& c : r.curve) {
      if (c.arrived_pct <= k) best = &c;
    }
    if (!best) return frag ? 0 : 100;
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

absl::StatusOr<RunResult> RunQueued(const Workload& w, const std::string& policy,
                                    const SimOptions& o, ClusterState state) {
  RunResult r;
  std::vector<PodSpec> trace = ResolvePods(w.pods, state);
  if (trace.empty()) return absl::InvalidArgumentError("the pod list is empty");
  const double capacity = static_cast<double>(state.gpu_capacity_milli());
  if (capacity <= 0) return absl::InvalidArgumentError("the cluster has no GPUs");
  std::mt19937_64 rng(o.seed);

  // Arrival stream.
  std::vector<Arrival> arrivals;
  double warmup_s = 0, end_s = 0;
  if (o.mode == Mode::kChurn) {
    std::vector<int> eligible;
    double life_sum = 0, gpu_sum = 0, gpu_seconds_sum = 0;
    for (int i = 0; i < static_cast<int>(trace.size()); ++i) {
      const PodSpec& p = trace[i];
      if (p.deletion_s < 0 || p.deletion_s < p.creation_s) continue;
      eligible.push_back(i);
      life_sum += static_cast<double>(p.deletion_s - p.creation_s);
      gpu_sum += static_cast<double>(p.shape.TotalGpuMilli());
      gpu_seconds_sum += static_cast<double>(p.shape.TotalGpuMilli()) *
                         static_cast<double>(p.deletion_s - p.creation_s);
    }
    if (eligible.empty() || life_sum <= 0 || gpu_sum <= 0) {
      return absl::InvalidArgumentError(
          "churn mode needs pods with creation and deletion times and some GPU demand");
    }
    const double mean_life = life_sum / static_cast<double>(eligible.size());
    const double mean_gpu = gpu_sum / static_cast<double>(eligible.size());
    // Offered GPU load. The definition is rate x mean lifetime x mean GPU request /
    // capacity. On the trace, pods that ask for more GPU also live longer (E[L*G] = 1.18
    // E[L] E[G] on the default trace), so the GPU-time actually offered is higher than that;
    // load_basis kExact uses E[L*G] instead. Both are reported.
    const double mean_gpu_seconds = gpu_seconds_sum / static_cast<double>(eligible.size());
    const double denom =
        o.load_basis == LoadBasis::kExact ? mean_gpu_seconds : mean_life * mean_gpu;
    const double rate = o.load * capacity / denom;  // pods per second
    r.offered_load_exact = rate * mean_gpu_seconds / capacity;
    warmup_s = o.warmup_h >= 0 ? o.warmup_h * 3600 : std::min(3 * mean_life, 7 * 86400.0);
    end_s = warmup_s + o.duration_h * 3600;
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
      std::poisson_distribution<int64_t> count(rate * mean_life);
      std::uniform_real_distribution<double> unit(0, 1);
      const int64_t n0 = count(rng);
      for (int64_t k = 0; k < n0; ++k) {
        const size_t j = biased(rng);
        arrivals.push_back({0.0, lifetimes[j] * unit(rng), eligible[j]});
      }
    }
    std::exponential_distribution<double> gap(rate);
    std::uniform_int_distribution<size_t> pick(0, eligible.size() - 1);
    for (double t = gap(rng); t < end_s; t += gap(rng)) {
      const int i = eligible[pick(rng)];
      arrivals.push_back({t, static_cast<double>(trace[i].deletion_s - trace[i].creation_s), i});
    }
  } else {
    const double scale = o.time_scale > 0 ? o.time_scale : 1.0;
    int64_t t0 = INT64_MAX;
    for (const PodSpec& p : trace) t0 = std::min(t0, p.creation_s);
    for (int i = 0; i < static_cast<int>(trace.size()); ++i) {
      const PodSpec& p = trace[i];
      const double life = p.deletion_s >= p.creation_s
                              ? static_cast<double>(p.deletion_s - p.creation_s) / scale
                              : -1.0;
      arrivals.push_back({static_cast<double>(p.creation_s - t0) / scale, life, i});
    }
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [](const Arrival& a, const Arrival& b) { return a.time_s < b.time_s; });
    warmup_s = o.warmup_h >= 0 ? o.warmup_h * 3600 : 0.0;
    const double span = arrivals.empty() ? 0 : arrivals.back().time_s;
    // The whole trace ends just after its last arrival, so that arrival is replayed too.
    const double whole = std::nextafter(span, INFINITY);
    end_s = o.duration_h > 0 ? std::min(whole, warmup_s + o.duration_h * 3600) : whole;
    if (end_s <= warmup_s) end_s = whole;
  }

  absl::StatusOr<sched::Framework> fw = MakeFramework(policy, TypicalOf(trace, o), state, o);
  if (!fw.ok()) return fw.status();

  // Idle cost rate: price of every free GPU.
  std::vector<double> gpu_price(state.num_nodes());
  double idle_cost_rate = 0;  // USD per hour
  for (int n = 0; n < state.num_nodes(); ++n) {
    const core::NodeSpec& node = state.node(n);
    gpu_price[n] = node.num_gpus > 0 && node.cost_usd_per_hour > 0
                       ? node.cost_usd_per_hour / node.num_gpus
                       : DefaultGpuPriceUsdPerHour(node.gpu_model);
    idle_cost_rate += gpu_price[n] * node.num_gpus;
  }

  struct Running {
    double end_s;
    int id;
    bool operator>(const Running& o) const {
      return end_s > o.end_s || (end_s == o.end_s && id > o.id);
    }
  };
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> departures;
  std::vector<core::Placement> placement(arrivals.size());
  // Waiting pods grouped by request; within a group ordered by priority (high first), then
  // arrival order. Grouping makes a retry cost one fit test per distinct request.
  struct ShapeLess {
    bool operator()(const PodShape& a, const PodShape& b) const {
      return std::tie(a.cpu_milli, a.memory_mib, a.num_gpu, a.gpu_milli, a.gpu_model_mask) <
             std::tie(b.cpu_milli, b.memory_mib, b.num_gpu, b.gpu_milli, b.gpu_model_mask);
    }
  };
  std::map<PodShape, std::set<std::pair<int, int>>, ShapeLess> queue;
  int64_t queued = 0;

  double last_t = 0, unalloc_integral = 0, cost_integral = 0;
  const double window = std::max(end_s - warmup_s, 1e-9);
  const double sample_every = window / 240;
  double next_sample = warmup_s;
  std::vector<double> delays;

  auto advance = [&](double t) {
    t = std::min(t, end_s);
    if (t <= last_t) return;
    const double lo = std::max(last_t, warmup_s);
    if (t > lo) {
      const double unalloc = capacity - static_cast<double>(state.gpu_allocated_milli());
      unalloc_integral += unalloc * (t - lo);
      cost_integral += idle_cost_rate * (t - lo) / 3600.0;
    }
    while (next_sample <= t && next_sample <= end_s) {
      r.unalloc_series.push_back(
          {(next_sample - warmup_s) / 3600.0,
           100.0 * (capacity - static_cast<double>(state.gpu_allocated_milli())) / capacity});
      next_sample += sample_every;
    }
    last_t = t;
  };
  auto started = [&](int id, double t, const sched::Outcome& out) {
    placement[id] = out.placement;
    const PodShape& shape = trace[arrivals[id].trace_index].shape;
    idle_cost_rate -=
        gpu_price[out.placement.node] * static_cast<double>(shape.TotalGpuMilli()) / 1000.0;
    ++r.pods_scheduled;
    if (arrivals[id].time_s >= warmup_s) delays.push_back(t - arrivals[id].time_s);
    if (arrivals[id].lifetime_s >= 0) departures.push({t + arrivals[id].lifetime_s, id});
  };

  size_t next = 0;
  while (true) {
    const double ta = next < arrivals.size() ? arrivals[next].time_s : INFINITY;
    const double td = departures.empty() ? INFINITY : departures.top().end_s;
    const double t = std::min(ta, td);
    if (!(t < end_s)) break;
    advance(t);
    if (td <= ta) {
      const Running d = departures.top();
      departures.pop();
      const PodShape& shape = trace[arrivals[d.id].trace_index].shape;
      fw->Release(shape, placement[d.id], state);
      const int freed = placement[d.id].node;
      idle_cost_rate += gpu_price[freed] * static_cast<double>(shape.TotalGpuMilli()) / 1000.0;
      // Only the freed node gained room, so only pods that fit there can start now. Start
      // them in priority, then arrival order until none fits.
      std::vector<const PodShape*> failed_here;
      while (queued > 0) {
        const PodShape* best_shape = nullptr;
        std::pair<int, int> best_key{0, 0};
        for (auto& [shape, group] : queue) {
          if (group.empty()) continue;
          bool bad = false;
          for (const PodShape* f : failed_here) bad = bad || f == &shape;
          if (bad || !state.Fits(freed, shape)) continue;
          if (!best_shape || *group.begin() < best_key) {
            best_shape = &shape;
            best_key = *group.begin();
          }
        }
        if (!best_shape) break;
        sched::Outcome out = fw->Schedule(*best_shape, state);
        if (out.code == sched::Code::kError) return absl::InternalError(out.reason);
        if (!out.ok()) {
          failed_here.push_back(best_shape);
          continue;
        }
        started(best_key.second, t, out);
        queue[*best_shape].erase(queue[*best_shape].begin());
        --queued;
      }
    } else {
      const int id = static_cast<int>(next++);
      const PodSpec& p = trace[arrivals[id].trace_index];
      ++r.pods_arrived;
      fw->NotifyArrival(p.shape);
      sched::Outcome out = fw->Schedule(p.shape, state);
      if (out.code == sched::Code::kError) return absl::InternalError(out.reason);
      if (out.ok()) {
        started(id, t, out);
      } else {
        queue[p.shape].insert({-p.priority, id});
        ++queued;
      }
    }
  }
  advance(end_s);
  for (const auto& [shape, group] : queue) {
    for (const auto& [prio, id] : group) {
      if (arrivals[id].time_s >= warmup_s) delays.push_back(end_s - arrivals[id].time_s);
    }
  }
  r.pods_waiting_at_end = queued;
  r.measured_hours = window / 3600.0;
  r.unalloc_gpu_pct_steady = 100.0 * unalloc_integral / (capacity * window);
  r.idle_gpu_hours = unalloc_integral / 1000.0 / 3600.0;
  r.idle_cost_usd = cost_integral;
  r.queue_delay_p50_s = Percentile(delays, 0.50);
  r.queue_delay_p99_s = Percentile(delays, 0.99);
  return r;
}

}  // namespace

std::string_view ModeName(Mode mode) { return kModeNames[static_cast<int>(mode)]; }

absl::StatusOr<FillPlan> PlanFill(const Workload& workload, const SimOptions& options) {
  absl::StatusOr<ClusterState> state = ClusterState::Create(workload.nodes);
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
  if (options.rng == RngKind::kReference && options.mode != Mode::kFill) {
    return absl::InvalidArgumentError(
        "the reference random stream exists only for fill mode (the FGD simulator has no "
        "churn or replay)");
  }
  absl::StatusOr<ClusterState> state = ClusterState::Create(workload.nodes);
  if (!state.ok()) return state.status();
  absl::StatusOr<RunResult> r = options.mode == Mode::kFill
                                    ? RunFill(workload, policy, options, std::move(*state))
                                    : RunQueued(workload, policy, options, std::move(*state));
  if (!r.ok()) return r;
  r->policy = policy;
  r->seed = options.seed;
  r->mode = options.mode;
  r->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

double DefaultGpuPriceUsdPerHour(const std::string& model) {
  // Approximate public-cloud on-demand prices per GPU-hour of comparable parts (2024); the
  // trace's G1-G3 are undisclosed and priced like their closest public parts.
  static const std::map<std::string, double> kPrice = {
      {"A100", 3.67}, {"A10", 1.10},  {"V100M32", 3.06}, {"V100M16", 2.48}, {"V100", 2.48},
      {"T4", 0.53},   {"P100", 1.46}, {"G1", 1.46},      {"G2", 2.48},      {"G3", 3.06},
      {"H100", 6.98}, {"L4", 0.81},   {"A800", 3.67},    {"H800", 6.98}};
  auto it = kPrice.find(model);
  return it == kPrice.end() ? 2.0 : it->second;
}

}  // namespace seedance::sim
