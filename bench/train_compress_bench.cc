// Sign compression speed of seedance_train on one core (issue 38: compression + decompression
// >= 2 GB/s of FP32 input per core): CompressSign with error feedback (DeepSpeed's l2 scale) and
// AddUnpackedSigns, alone and together, on 2^24 floats (64 MiB, past every cache). bytes_per_second
// counts FP32 input bytes (4 per element), so the printed rate is GB/s of gradient per core.
//
//   build/bench/train_compress_bench --benchmark_min_time=2
#include <cstdint>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "seedance/train/compress.h"

namespace seedance::train {
namespace {

constexpr size_t kElements = size_t{1} << 24;

std::vector<float> Gradient() {
  std::mt19937 rng(38);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> v(kElements);
  for (float& x : v) x = normal(rng);
  return v;
}

void SetInputBytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(kElements * sizeof(float)));
}

// Compression of one gradient: p = v + e, sign bits, scale, e' = p - C(p).
void BM_CompressSignErrorFeedback(benchmark::State& state) {
  const std::vector<float> v = Gradient();
  std::vector<float> error(kElements, 0.0f);
  std::vector<uint8_t> bits(PackedBytes(kElements));
  for (auto _ : state) {
    SignCode code = CompressSign(v, SignScale::kL2Rms, error, bits);
    benchmark::DoNotOptimize(code);
    benchmark::ClobberMemory();
  }
  SetInputBytes(state);
}
BENCHMARK(BM_CompressSignErrorFeedback)->Unit(benchmark::kMillisecond);

// Decompression of one gradient into an accumulator (how the all-reduce sums ranks' chunks).
void BM_AddUnpackedSigns(benchmark::State& state) {
  std::vector<float> error(kElements, 0.0f);
  std::vector<uint8_t> bits(PackedBytes(kElements));
  const SignCode code = CompressSign(Gradient(), SignScale::kL2Rms, error, bits);
  std::vector<float> acc(kElements, 0.0f);
  for (auto _ : state) {
    AddUnpackedSigns(bits, code.scale, acc);
    benchmark::ClobberMemory();
  }
  SetInputBytes(state);
}
BENCHMARK(BM_AddUnpackedSigns)->Unit(benchmark::kMillisecond);

// Both, the per-core figure of issue 38: compress with error feedback, then decompress.
void BM_CompressThenDecompress(benchmark::State& state) {
  const std::vector<float> v = Gradient();
  std::vector<float> error(kElements, 0.0f);
  std::vector<uint8_t> bits(PackedBytes(kElements));
  std::vector<float> acc(kElements, 0.0f);
  for (auto _ : state) {
    const SignCode code = CompressSign(v, SignScale::kL2Rms, error, bits);
    AddUnpackedSigns(bits, code.scale, acc);
    benchmark::ClobberMemory();
  }
  SetInputBytes(state);
}
BENCHMARK(BM_CompressThenDecompress)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace seedance::train

BENCHMARK_MAIN();
