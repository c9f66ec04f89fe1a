// `seedance analyze` cost on large synthetic profiles (8 x A100 per node, every 10th node idle,
// every 5th light): JSON parsing, the analysis with its consolidation plan, and both together.
#include <string>

#include "benchmark/benchmark.h"
#include "seedance/cost/analyze.h"
#include "seedance/telemetry/profile.h"
#include "seedance/telemetry/synthetic.h"

namespace {

using seedance::telemetry::Profile;

Profile Make(int nodes, int samples) {
  seedance::telemetry::SyntheticOptions o;
  o.nodes = nodes;
  o.samples = samples;
  o.idle_nodes.clear();
  for (int n = 2; n < nodes; n += 10) o.idle_nodes.push_back(n);
  for (int n = 0; n < nodes; n += 50) o.numa_mismatch_nodes.push_back(n);
  return seedance::telemetry::MakeSyntheticProfile(o);
}

void BM_ParseProfile(benchmark::State& state) {
  const std::string text = seedance::telemetry::ToJson(Make(state.range(0), state.range(1)));
  for (auto _ : state) {
    auto p = seedance::telemetry::ParseProfileJson(text, "bench");
    benchmark::DoNotOptimize(p);
  }
  state.counters["MB"] = text.size() / 1e6;
}

void BM_Analyze(benchmark::State& state) {
  const Profile p = Make(state.range(0), state.range(1));
  const auto prices = seedance::cost::PriceTable::Builtin();
  for (auto _ : state) {
    auto r = seedance::cost::Analyze(p, prices, {});
    benchmark::DoNotOptimize(r);
    state.counters["nodes_freed"] = r.ok() ? r->plan.size() : -1;
  }
}

void BM_ParseAnalyzeRender(benchmark::State& state) {
  const std::string text = seedance::telemetry::ToJson(Make(state.range(0), state.range(1)));
  const auto prices = seedance::cost::PriceTable::Builtin();
  for (auto _ : state) {
    auto p = seedance::telemetry::ParseProfileJson(text, "bench");
    auto r = seedance::cost::Analyze(*p, prices, {});
    std::string out = seedance::cost::RenderText(*r, *p);
    benchmark::DoNotOptimize(out);
  }
}

BENCHMARK(BM_ParseProfile)->Args({1000, 300})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Analyze)->Args({100, 300})->Args({1000, 300})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseAnalyzeRender)->Args({1000, 300})->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
