// Tenancy's speed goals (issue 13, BENCHMARKS.md "Tenants"):
//   * a scheduling decision with 100 queues at 10,000 nodes, beside the same without queues;
//   * the preemption victim search at 10,000 nodes with 100,000 running pods: MinimalVictims
//     alone, and the whole cycle of a pod that must preempt (candidate scan, choice, evictions,
//     placement), with its p99 as a counter.
#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "seedance/sched/scheduler.h"
#include "seedance/sched/tenancy.h"

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
