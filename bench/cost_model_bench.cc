// Cost of the cost model itself: the serving simulator calls StepSeconds once per iteration, so
// it must stay far below a microsecond per sequence. Run: build/bench/cost_model_bench
#include <benchmark/benchmark.h>

#include <vector>

#include "seedance/model/cost_model.h"

namespace {

using seedance::model::CostModel;
using seedance::model::LookupGpu;
using seedance::model::LookupModel;
using seedance::model::SequenceWork;

void BM_StepSecondsDecode(benchmark::State& state) {
  const CostModel cm(*LookupModel("llama-3-8b"), *LookupGpu("a100-80g"));
  std::vector<SequenceWork> batch;
  for (int i = 0; i < state.range(0); ++i) batch.push_back({1, 200 + 7 * i});
  for (auto _ : state) benchmark::DoNotOptimize(cm.StepSeconds(batch));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StepSecondsDecode)->Arg(1)->Arg(32)->Arg(256);

void BM_StepSecondsMixedTp4(benchmark::State& state) {
  const CostModel cm(*LookupModel("llama-3-70b"), *LookupGpu("h100"), 4);
  std::vector<SequenceWork> batch = {{512, 0}};
  for (int i = 0; i < 255; ++i) batch.push_back({1, 100 + 13 * i});
  for (auto _ : state) benchmark::DoNotOptimize(cm.StepSeconds(batch));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StepSecondsMixedTp4);

}  // namespace

BENCHMARK_MAIN();
