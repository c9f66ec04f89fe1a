// A bit-exact re-implementation of Go's math/rand generator (Go 1.0 – 1.19 semantics of
// rand.NewSource / rand.Seed and the Rand methods the FGD authors' simulator calls).
//
// Why: the FGD paper's published per-seed results (../shared/data/fgd-atc23-expected-results)
// come from a Go simulator whose pod order and tie-break node order are drawn from math/rand
// seeded with 42..51. With this generator `seedance simulate --rng reference` replays the very
// same orders, so "seed 42" means the paper's seed 42 (docs/simulator.md, "Random streams").
//
// The source is Go's additive lagged Fibonacci generator, x[n] = x[n-607] + x[n-273] mod 2^64,
// whose 607 words are seeded from a Park–Miller sequence XOR a fixed "cooked" table. Go ships the
// table as constants; here it is derived from its definition (the generator's state after
// 7.8e12 steps from srand(1), see Go's gen_cooked.go) by polynomial jump-ahead, once per process.
//
// Thread-safety: a GoRand is not thread-safe; distinct instances are independent.
#ifndef SEEDANCE_SIM_GO_RAND_H_
#define SEEDANCE_SIM_GO_RAND_H_

#include <array>
#include <cstdint>
#include <vector>

namespace seedance::sim {

class GoRand {
 public:
  static constexpr int kLen = 607;
  static constexpr int kTap = 273;

  explicit GoRand(int64_t seed) { Seed(seed); }

  // rngSource.Seed: same stream as Go's rand.NewSource(seed) and the global rand.Seed(seed).
  void Seed(int64_t seed);

  uint64_t Uint64();
  int64_t Int63() { return static_cast<int64_t>(Uint64() & kMask63); }
  uint32_t Uint32() { return static_cast<uint32_t>(Int63() >> 31); }
  int32_t Int31() { return static_cast<int32_t>(Int63() >> 32); }
  int64_t Int() { return Int63(); }  // 64-bit platforms: uint(Int63()) as int
  int64_t Int63n(int64_t n);         // requires n > 0
  int32_t Int31n(int32_t n);         // requires n > 0
  int64_t Intn(int64_t n);           // requires n > 0
  double Float64();                  // [0, 1)
  std::vector<int> Perm(int n);

  // rand.Shuffle: calls swap(i, j) exactly as Go does (Fisher–Yates from the top, Lemire's
  // bounded draw for i < 2^31).
  template <typename Swap>
  void Shuffle(int64_t n, Swap&& swap) {
    int64_t i = n - 1;
    for (; i > (int64_t{1} << 31) - 2; --i) swap(i, Int63n(i + 1));
    for (; i > 0; --i) swap(i, static_cast<int64_t>(BoundedInt31(static_cast<int32_t>(i + 1))));
  }

  // The cooked seeding table, derived at first use (exposed for tests).
  static const std::array<int64_t, kLen>& Cooked();

 private:
  static constexpr uint64_t kMask63 = (uint64_t{1} << 63) - 1;
  int32_t BoundedInt31(int32_t n);  // Go's unexported int31n (Lemire)

  std::array<uint64_t, kLen> vec_{};
  int tap_ = 0;
  int feed_ = 0;
};

}  // namespace seedance::sim

#endif  // SEEDANCE_SIM_GO_RAND_H_
