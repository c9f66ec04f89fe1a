// Tenancy's speed goals (issue 13, BENCHMARKS.md "Tenants"):
//   * a scheduling decision with 100 queues at 10,000 nodes, beside the same without queues:
//     on the placement benchmark's workload (the trace's GPU nodes replicated, its pods, the
//     cluster held at 90% GPU allocation), and on a uniform stress case (8-GPU nodes, 1-GPU
//     pods, churn at half the cluster: every node is feasible and most tie);
//   * the preemption victim search at 10,000 nodes with 100,000 running pods: MinimalVictims
//     alone, and the whole cycle of a pod that must preempt (candidate scan, choice, evictions,
//     placement), with its p99 as a counter.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/scheduler.h"
#include "seedance/sched/tenancy.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::sched {
namespace {

core::NodeSpec Node(int i, int gpus) {
  core::NodeSpec n;
  n.name = "node-" + std::to_string(i);
  n.cpu_milli = 256000;
  n.memory_mib = 1 << 20;
  n.num_gpus = gpus;
  n.gpu_model = "A100";
  return n;
}

PodInfo Pod(int64_t i, const std::string& ns, int gpus, int32_t priority) {
  PodInfo p;
  p.uid = "pod-" + std::to_string(i);
  p.name = p.uid;
  p.ns = ns;
  p.priority = priority;
  p.shape.cpu_milli = 1000;
  p.shape.memory_mib = 1024;
  p.shape.num_gpu = gpus;
  p.shape.gpu_milli = 1000;
  return p;
}

std::unique_ptr<Scheduler> Cluster(const std::string& policy, int nodes, int gpus) {
  SchedulerOptions o;
  o.default_profile.policy = policy;
  auto s = *Scheduler::Create(o);
  for (int i = 0; i < nodes; ++i) (void)s->PutNode(Node(i, gpus));
  return s;
}

QueueConfig HundredQueues(int total_gpus, bool preemption) {
  QueueConfig c;
  c.preemption = preemption;
  for (int q = 0; q < 100; ++q) {
    QueueSpec s;
    s.name = "q" + std::to_string(q);
    s.parent = q < 10 ? "" : "q" + std::to_string(q % 10);  // 10 roots with 9 children each
    s.guaranteed[kQueueGpus] = total_gpus / 200.0;
    c.queues.push_back(s);
    if (q >= 10) c.namespace_queue["ns-" + std::to_string(q)] = s.name;
  }
  return c;
}

// One decision: submit a 1-GPU pod and place it; past half the cluster the oldest pod ends.
void BM_Decision(benchmark::State& state) {
  const bool queues = state.range(0) != 0;
  const std::string policy = state.range(1) == 0 ? "bestfit" : "cas";
  constexpr int kNodes = 10000, kGpus = 8;
  auto s = Cluster(policy, kNodes, kGpus);
  if (queues) (void)s->SetQueues(HundredQueues(kNodes * kGpus, false), 0);
  int64_t next = 0, oldest = 0;
  for (auto _ : state) {
    const std::string ns = "ns-" + std::to_string(10 + next % 90);
    (void)s->SubmitPod(Pod(next++, ns, 1, 0), 0);
    s->RunCycles(0);
    if (next - oldest > kNodes * kGpus / 2) (void)s->DeletePod("pod-" + std::to_string(oldest++), 0);
    benchmark::DoNotOptimize(s->attempts_scheduled());
  }
  state.counters["decisions_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Decision)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"queues", "cas"})
    ->Unit(benchmark::kMicrosecond);

// The placement benchmark's workload (bench/placement_bench.cc) through the live Scheduler: the
// trace's GPU nodes replicated to 10,000 with unique names, its pods in a seeded order spread
// over 90 namespaces, the cluster held at 90% GPU allocation by deleting random placed pods
// (part of the timed cost). A pod that does not fit is withdrawn; it still counts as a
// decision. Needs the public data (trace::DataDir()); reports an error without it.
class TraceCluster {
 public:
  static std::unique_ptr<TraceCluster> Create(const std::string& policy, bool queues,
                                              std::string* error) {
    const std::string csv = trace::DataDir() + "/alibaba-gpu-v2023/csv";
    auto nodes = trace::ReadNodeCsv(csv + "/openb_node_list_gpu_node.csv");
    auto pods = trace::ReadPodCsv(csv + "/openb_pod_list_default.csv");
    if (!nodes.ok() || !pods.ok() || nodes->empty() || pods->empty()) {
      *error = "public trace not readable under " + csv + " (set SEEDANCE_DATA_DIR)";
      return nullptr;
    }
    auto c = std::unique_ptr<TraceCluster>(new TraceCluster);
    SchedulerOptions o;
    o.default_profile.policy = policy;
    // fgd is handed the trace's typical shapes as its oracle, as in the placement benchmark.
    if (policy == "fgd") o.oracle_workload = TypicalShapes(CountShapes(*pods));
    c->s_ = *Scheduler::Create(o);
    int64_t gpus = 0;
    for (int i = 0; i < 10000; ++i) {
      core::NodeSpec n = (*nodes)[static_cast<size_t>(i) % nodes->size()];
      n.name += "-r" + std::to_string(i / static_cast<int>(nodes->size()));
      gpus += n.num_gpus;
      (void)c->s_->PutNode(std::move(n));
    }
    if (queues) (void)c->s_->SetQueues(HundredQueues(static_cast<int>(gpus), false), 0);
    c->pods_ = std::move(*pods);
    std::shuffle(c->pods_.begin(), c->pods_.end(), c->rng_);
    for (int i = 0; i < 1000000 && !c->AboveSteady(); ++i) c->Step();
    if (!c->AboveSteady()) {
      *error = policy + ": the cluster did not reach the steady allocation";
      return nullptr;
    }
    return c;
  }

  // Releases pods while above the steady level, then makes one decision.
  void Step() {
    while (AboveSteady() && !placed_.empty()) {
      const size_t i = std::uniform_int_distribution<size_t>(0, placed_.size() - 1)(rng_);
      (void)s_->DeletePod(placed_[i], 0);
      placed_[i] = placed_.back();
      placed_.pop_back();
    }
    const core::PodSpec& spec = pods_[next_++ % pods_.size()];
    PodInfo p;
    p.uid = "pod-" + std::to_string(next_);
    p.name = p.uid;
    p.ns = "ns-" + std::to_string(10 + next_ % 90);
    p.shape = spec.shape;
    p.gpu_spec = spec.gpu_spec;
    (void)s_->SubmitPod(std::move(p), 0);
    const int64_t placed_before = s_->attempts_scheduled();
    s_->RunCycles(0);
    const std::string uid = "pod-" + std::to_string(next_);
    if (s_->attempts_scheduled() > placed_before) {
      placed_.push_back(uid);
    } else {
      (void)s_->DeletePod(uid, 0);
    }
    (void)s_->TakeChanges();
  }

  double gpu_alloc_pct() const {
    const core::ClusterState& st = s_->state();
    return 100.0 * static_cast<double>(st.gpu_allocated_milli()) /
           static_cast<double>(st.gpu_capacity_milli());
  }

 private:
  TraceCluster() : rng_(42) {}
  bool AboveSteady() const { return gpu_alloc_pct() > 90.0; }

  std::unique_ptr<Scheduler> s_;
  std::vector<core::PodSpec> pods_;
  std::vector<std::string> placed_;
  std::mt19937_64 rng_;
  size_t next_ = 0;
};

void BM_TraceDecision(benchmark::State& state) {
  const bool queues = state.range(0) != 0;
  static const char* const kPolicies[] = {"bestfit", "fgd", "cas"};
  const std::string policy = kPolicies[state.range(1)];
  static auto* clusters = new std::map<std::pair<std::string, bool>, std::unique_ptr<TraceCluster>>;
  auto& c = (*clusters)[{policy, queues}];
  std::string error;
  if (!c) c = TraceCluster::Create(policy, queues, &error);
  if (!c) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) c->Step();
  state.counters["decisions_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["gpu_alloc_pct"] = c->gpu_alloc_pct();
}
BENCHMARK(BM_TraceDecision)
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->ArgNames({"queues", "policy"})
    ->Unit(benchmark::kMicrosecond);

// MinimalVictims over 100,000 running pods on 10,000 full nodes.
void BM_MinimalVictims(benchmark::State& state) {
  constexpr int kNodes = 10000, kPerNode = 10;
  std::mt19937_64 rng(7);
  std::vector<VictimCandidate> running;
  for (int n = 0; n < kNodes; ++n) {
    for (int k = 0; k < kPerNode; ++k) {
      running.push_back({running.size(), n, static_cast<int32_t>(rng() % 10), 1,
                         static_cast<double>(rng() % 100000), false});
    }
  }
  const std::vector<int64_t> free(kNodes, 0);
  for (auto _ : state) {
    VictimSet v = MinimalVictims(5, 4, free, running);
    benchmark::DoNotOptimize(v.node);
  }
  state.counters["pods"] = static_cast<double>(running.size());
}
BENCHMARK(BM_MinimalVictims)->Unit(benchmark::kMicrosecond);

// The whole cycle of a pod that must preempt, on 10,000 full 10-GPU nodes (100,000 pods of
// priority 0): submit a priority-10 pod of 4 GPUs and run the cycle (timed); then, untimed, end
// it so that its victims take their place again.
void BM_PreemptingCycle(benchmark::State& state) {
  constexpr int kNodes = 10000, kGpus = 10;
  auto s = Cluster("bestfit", kNodes, kGpus);
  QueueConfig c;
  c.preemption = true;
  (void)s->SetQueues(c, 0);
  int64_t next = 0;
  for (int i = 0; i < kNodes * kGpus; ++i) (void)s->SubmitPod(Pod(next++, "batch", 1, 0), 0);
  s->RunCycles(0);
  std::vector<double> us;
  for (auto _ : state) {
    const int64_t id = next++;
    (void)s->SubmitPod(Pod(id, "urgent", 4, 10), 0);
    const auto t0 = std::chrono::steady_clock::now();
    s->RunCycles(0, 1);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                     .count());
    state.PauseTiming();
    (void)s->DeletePod("pod-" + std::to_string(id), 0);
    s->RunCycles(0);
    state.ResumeTiming();
  }
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    state.counters["p50_us"] = us[us.size() / 2];
    state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  }
  state.counters["preemptions"] = static_cast<double>(s->preemptions());
}
BENCHMARK(BM_PreemptingCycle)->Unit(benchmark::kMicrosecond)->Iterations(300);

}  // namespace
}  // namespace seedance::sched
BENCHMARK_MAIN();
