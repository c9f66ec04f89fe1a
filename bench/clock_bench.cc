// Cost of adding one NTP sample to each clock estimator (the regression refits its 64-sample
// window every time) and of parsing and checking one reply packet.
#include <benchmark/benchmark.h>

#include "seedance/engine/clock_sync.h"
#include "seedance/engine/sntp.h"

namespace {

using namespace seedance::engine;

void BM_EstimatorAddSample(benchmark::State& state, bool regression) {
  ClockSimulator sim(ClockSimOptions{});
  std::vector<ClockSample> samples;
  for (int i = 0; i < 4096; ++i) samples.push_back(sim.Next().sample);
  auto est = regression ? NewRegressionEstimator() : NewEwmaEstimator();
  size_t i = 0;
  for (auto _ : state) {
    est->AddSample(samples[i++ & 4095]);
    if ((i & 4095) == 0) est = regression ? NewRegressionEstimator() : NewEwmaEstimator();
    benchmark::DoNotOptimize(est->OffsetAt(0));
  }
}
BENCHMARK_CAPTURE(BM_EstimatorAddSample, seedance, true);
BENCHMARK_CAPTURE(BM_EstimatorAddSample, ewma, false);

void BM_ParseAndValidateReply(benchmark::State& state) {
  NtpPacket p;
  p.mode = kNtpModeServer;
  p.stratum = 2;
  p.originate_ts = 1234;
  p.receive_ts = p.transmit_ts = 5678;
  const auto bytes = EncodeNtpPacket(p);
  for (auto _ : state) {
    auto r = ParseNtpPacket(bytes);
    benchmark::DoNotOptimize(ValidateSntpReply(*r, 1234).ok());
  }
}
BENCHMARK(BM_ParseAndValidateReply);

}  // namespace

BENCHMARK_MAIN();
