// One continuous-batching scheduler iteration (Schedule + Complete) with N running sequences in
// decode, and with a mix of decodes and a chunked prefill.
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "seedance/serving/batch_scheduler.h"

namespace seedance::serving {
namespace {

struct Rig {
  std::vector<SchedRequest> reqs;
  std::unique_ptr<BatchScheduler> sched;
  double now = 0;
};

// `n` requests with short prompts and long outputs, all prefilled before timing, plus
// `extra_prefills` huge prompts that stay in chunked prefill.
std::unique_ptr<Rig> MakeRig(int n, int extra_prefills) {
  auto rig = std::make_unique<Rig>();
  rig->reqs.assign(static_cast<size_t>(n), SchedRequest{64, 1 << 20, {}});
  for (int i = 0; i < extra_prefills; ++i) rig->reqs.push_back({1 << 22, 1, {}});
  SchedulerOptions o;
  o.max_num_seqs = n + extra_prefills;
  o.max_num_batched_tokens = n + 512;  // every decode plus a 512-token prefill chunk
  KvBlockManagerOptions kv;
  kv.block_size = 16;
  kv.num_blocks = 1 << 21;
  rig->sched = NewContinuousScheduler(rig->reqs, o, kv);
  for (int i = 0; i < n + extra_prefills; ++i) rig->sched->Arrive(i);
  for (int i = 0; i < 200; ++i) {  // until every short prompt is prefilled
    rig->sched->Schedule();
    rig->sched->Complete(rig->now += 1);
  }
  return rig;
}

void BM_ContinuousSchedulerStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int prefills = static_cast<int>(state.range(1));
  auto rig = MakeRig(n, prefills);
  int64_t steps = 0;
  for (auto _ : state) {
    const StepPlan& plan = rig->sched->Schedule();
    benchmark::DoNotOptimize(plan.work.data());
    rig->sched->Complete(rig->now += 1);
    if (++steps == 20000) {  // rebuild before the KV pool fills up
      state.PauseTiming();
      rig = MakeRig(n, prefills);
      steps = 0;
      state.ResumeTiming();
    }
  }
  state.counters["seqs"] = n + prefills;
}
BENCHMARK(BM_ContinuousSchedulerStep)
    ->Args({64, 0})
    ->Args({256, 0})
    ->Args({255, 1})
    ->Args({1024, 0})
    ->ArgNames({"decoding", "prefilling"});

}  // namespace
}  // namespace seedance::serving
