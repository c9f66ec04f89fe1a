#include "seedance/sim/go_rand.h"

#include "seedance/base/check.h"

namespace seedance::sim {
namespace {

constexpr int kLen = GoRand::kLen;
constexpr int kTap = GoRand::kTap;
constexpr int32_t kInt32Max = 0x7fffffff;

// Park–Miller minimal standard step, x' = 48271 x mod (2^31 - 1), in Schrage's form so that
// every intermediate fits an int32 exactly as in Go.
int32_t SeedRand(int32_t x) {
  constexpr int32_t kA = 48271, kQ = 44488, kR = 3399;
  const int32_t hi = x / kQ;
  const int32_t lo = x % kQ;
  x = kA * lo - kR * hi;
  if (x < 0) x += kInt32Max;
  return x;
}

using Poly = std::array<uint64_t, kLen>;  // coefficients of x^0..x^606, arithmetic mod 2^64

// a * b mod (x^607 - x^334 - 1): the characteristic polynomial of s[n+607] = s[n+334] + s[n].
Poly MulMod(const Poly& a, const Poly& b) {
  std::array<uint64_t, 2 * kLen - 1> prod{};
  for (int i = 0; i < kLen; ++i) {
    if (a[i] == 0) continue;
    for (int j = 0; j < kLen; ++j) prod[i + j] += a[i] * b[j];
  }
  // x^k = x^(k-607) * x^607 = x^(k-607) * (x^334 + 1) = x^(k-273) + x^(k-607).
  for (int k = 2 * kLen - 2; k >= kLen; --k) {
    prod[k - kLen] += prod[k];
    prod[k - kTap] += prod[k];
  }
  Poly out;
  for (int i = 0; i < kLen; ++i) out[i] = prod[i];
  return out;
}

Poly MulX(const Poly& a) {
  Poly out{};
  for (int i = kLen - 1; i > 0; --i) out[i] = a[i - 1];
  const uint64_t top = a[kLen - 1];
  out[kLen - kTap] += top;  // x^607 = x^334 + 1
  out[0] += top;
  return out;
}

std::array<int64_t, kLen> DeriveCooked() {
  // gen_cooked.go's srand(1): shifts 20 and 10 (the production Seed uses 40 and 20).
  std::array<uint64_t, kLen> vec{};
  int32_t x = 1;
  for (int i = -20; i < kLen; ++i) {
    x = SeedRand(x);
    if (i >= 0) {
      uint64_t u = static_cast<uint64_t>(x) << 20;
      x = SeedRand(x);
      u ^= static_cast<uint64_t>(x) << 10;
      x = SeedRand(x);
      u ^= static_cast<uint64_t>(x);
      vec[i] = u;
    }
  }
  // Step t (t = 1, 2, ...) of vrand writes s[t+606] = s[t-1] + s[t+333] into slot
  // (334 - t) mod 607, where s[k] = vec[(333 - k) mod 607] for k < 607 are the initial words.
  Poly s;
  for (int k = 0; k < kLen; ++k) s[k] = vec[((333 - k) % kLen + kLen) % kLen];

  // After N steps slot p holds s[M] for the one M in [N, N+606] with M - 606 = 334 - p mod 607.
  constexpr uint64_t kSteps = 7'800'000'000'000ull;
  Poly r{};
  r[0] = 1;
  for (int bit = 63; bit >= 0; --bit) {
    r = MulMod(r, r);
    if ((kSteps >> bit) & 1) r = MulX(r);
  }
  std::array<int64_t, kLen> cooked{};
  for (int j = 0; j < kLen; ++j) {
    uint64_t value = 0;  // s[N + j] = sum_i r_j[i] s[i]
    for (int i = 0; i < kLen; ++i) value += r[i] * s[i];
    const uint64_t t = kSteps + static_cast<uint64_t>(j) - 606;
    const int slot = static_cast<int>(((334 + kLen) - static_cast<int>(t % kLen)) % kLen);
    cooked[slot] = static_cast<int64_t>(value);
    r = MulX(r);
  }
  return cooked;
}

}  // namespace

const std::array<int64_t, GoRand::kLen>& GoRand::Cooked() {
  static const std::array<int64_t, kLen> table = DeriveCooked();
  return table;
}

void GoRand::Seed(int64_t seed) {
  const std::array<int64_t, kLen>& cooked = Cooked();
  tap_ = 0;
  feed_ = kLen - kTap;
  seed %= kInt32Max;
  if (seed < 0) seed += kInt32Max;
  if (seed == 0) seed = 89482311;
  int32_t x = static_cast<int32_t>(seed);
  for (int i = -20; i < kLen; ++i) {
    x = SeedRand(x);
    if (i >= 0) {
      uint64_t u = static_cast<uint64_t>(x) << 40;
      x = SeedRand(x);
      u ^= static_cast<uint64_t>(x) << 20;
      x = SeedRand(x);
      u ^= static_cast<uint64_t>(x);
      u ^= static_cast<uint64_t>(cooked[i]);
      vec_[i] = u;
    }
  }
}

uint64_t GoRand::Uint64() {
  if (--tap_ < 0) tap_ += kLen;
  if (--feed_ < 0) feed_ += kLen;
  const uint64_t x = vec_[feed_] + vec_[tap_];
  vec_[feed_] = x;
  return x;
}

int64_t GoRand::Int63n(int64_t n) {
  SEEDANCE_CHECK(n > 0) << "Int63n(" << n << "): the bound must be positive";
  if ((n & (n - 1)) == 0) return Int63() & (n - 1);
  const uint64_t two63 = uint64_t{1} << 63;
  const int64_t max = static_cast<int64_t>(two63 - 1 - two63 % static_cast<uint64_t>(n));
  int64_t v = Int63();
  while (v > max) v = Int63();
  return v % n;
}

int32_t GoRand::Int31n(int32_t n) {
  SEEDANCE_CHECK(n > 0) << "Int31n(" << n << "): the bound must be positive";
  if ((n & (n - 1)) == 0) return Int31() & (n - 1);
  const uint32_t two31 = uint32_t{1} << 31;
  const int32_t max = static_cast<int32_t>(two31 - 1 - two31 % static_cast<uint32_t>(n));
  int32_t v = Int31();
  while (v > max) v = Int31();
  return v % n;
}

int32_t GoRand::BoundedInt31(int32_t n) {
  uint32_t v = Uint32();
  uint64_t prod = static_cast<uint64_t>(v) * static_cast<uint64_t>(n);
  uint32_t low = static_cast<uint32_t>(prod);
  if (low < static_cast<uint32_t>(n)) {
    const uint32_t thresh = (0u - static_cast<uint32_t>(n)) % static_cast<uint32_t>(n);
    while (low < thresh) {
      v = Uint32();
      prod = static_cast<uint64_t>(v) * static_cast<uint64_t>(n);
      low = static_cast<uint32_t>(prod);
    }
  }
  return static_cast<int32_t>(prod >> 32);
}

int64_t GoRand::Intn(int64_t n) {
  SEEDANCE_CHECK(n > 0) << "Intn(" << n << "): the bound must be positive";
  if (n <= kInt32Max) return Int31n(static_cast<int32_t>(n));
  return Int63n(n);
}

double GoRand::Float64() {
  for (;;) {
    const double f = static_cast<double>(Int63()) / 9223372036854775808.0;  // 2^63
    if (f != 1) return f;
  }
}

std::vector<int> GoRand::Perm(int n) {
  std::vector<int> m(n > 0 ? n : 0);
  for (int i = 0; i < n; ++i) {
    const int j = static_cast<int>(Intn(i + 1));
    m[i] = m[j];
    m[j] = i;
  }
  return m;
}

}  // namespace seedance::sim
