// Sign compression and error feedback (compress.h), without MPI.
#include "seedance/train/compress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "seedance/model/float_formats.h"
#include "seedance/train/collective.h"

namespace seedance::train {
namespace {

std::vector<float> Random(size_t n, uint64_t seed, float spread = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(SignCompression, PackUnpackKeepsEverySignWithZeroAsPositive) {
  for (size_t d : {0u, 1u, 7u, 8u, 9u, 1023u, 1024u, 1025u, 3001u}) {
    std::vector<float> v = Random(d, d + 1);
    if (d > 2) v[1] = 0.0f, v[2] = -0.0f;
    std::vector<uint8_t> bits(PackedBytes(d));
    PackSigns(v, bits);
    std::vector<float> out(d);
    UnpackSigns(bits, 0.5f, out);
    for (size_t i = 0; i < d; ++i) {
      const float want = (v[i] >= 0.0f) ? 0.5f : -0.5f;  // -0.0 >= 0 too
      ASSERT_EQ(out[i], want) << "d=" << d << " i=" << i;
    }
    if (d % 8 != 0) {
      EXPECT_EQ(bits.back() >> (d % 8), 0) << "bits past d are zero, d=" << d;
    }
    std::vector<float> acc(d, 1.0f);
    AddUnpackedSigns(bits, 2.0f, acc);
    for (size_t i = 0; i < d; ++i) ASSERT_EQ(acc[i], 1.0f + 2.0f * (v[i] >= 0 ? 1 : -1));
  }
}

TEST(SignCompression, ScalesAreTheL1MeanAndTheRms) {
  const std::vector<float> v = {3.0f, -4.0f, 0.0f, 1.0f};
  EXPECT_FLOAT_EQ(SignScaleOf(v, SignScale::kL1Mean), 2.0f);
  EXPECT_FLOAT_EQ(SignScaleOf(v, SignScale::kL2Rms), std::sqrt(26.0f / 4.0f));
  EXPECT_EQ(SignScaleOf({}, SignScale::kL2Rms), 0.0f);
  const std::vector<float> bad = {1.0f, std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(std::isfinite(SignScaleOf(bad, SignScale::kL1Mean)));
}

// sum_t C(p_t) == sum_t v_t - e_T after every step (the telescoping identity of error feedback).
TEST(ErrorFeedback, AppliedSumDiffersFromGivenSumByExactlyTheBuffer) {
  for (SignScale scale : {SignScale::kL1Mean, SignScale::kL2Rms}) {
    const size_t d = 1001;
    std::vector<double> given(d, 0.0), applied(d, 0.0);
    std::vector<float> error(d, 0.0f), out(d);
    std::vector<uint8_t> bits(PackedBytes(d));
    for (int step = 0; step < 200; ++step) {
      const std::vector<float> v = Random(d, 100 + step, 1.0f + step % 7);
      const SignCode code = CompressSign(v, scale, error, bits);
      ASSERT_TRUE(code.finite);
      UnpackSigns(bits, code.scale, out);
      double worst = 0;
      for (size_t i = 0; i < d; ++i) {
        given[i] += v[i];
        applied[i] += out[i];
        // Each step's identity holds exactly in FP32 up to the rounding of p - C(p); summed over
        // steps in FP64 the residual is a few FP32 ulps of the running sums.
        worst = std::max(worst, std::fabs(applied[i] - (given[i] - error[i])));
      }
      ASSERT_LT(worst, 1e-4) << "step " << step;
    }
  }
}

TEST(ErrorFeedback, NonFiniteInputLeavesTheBufferAlone) {
  std::vector<float> v = Random(64, 3);
  std::vector<float> error = Random(64, 4, 0.1f);
  const std::vector<float> before = error;
  v[17] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> bits(PackedBytes(64), 0xAB);
  const SignCode code = CompressSign(v, SignScale::kL2Rms, error, bits);
  EXPECT_FALSE(code.finite);
  EXPECT_EQ(error, before);
  EXPECT_EQ(bits, std::vector<uint8_t>(8, 0xAB));
}

// A 2-D least-squares problem in the style of Karimireddy et al.'s counterexamples: f(x) =
// 1/2 (<a1, x>^2 + <a2, x>^2), a1 = (1, -1 + eps), a2 = (-1, 1 + eps), optimum x* = 0, and SGD
// that samples a1 and a2 in turn. A sample's gradient <a_i, x> a_i has the sign pattern of +-a_i,
// and with eps < 1 both a1 and a2 have the pattern +-(1, -1): sign SGD only ever moves along
// (1, -1), x1 + x2 never changes, and from x0 = (1, 1) the loss stays above the minimum of f on
// the line x1 + x2 = 2. With error feedback the error buffer carries the (1, 1) component until
// it flips a sign; both samples vanish at x* (interpolation), so EF-SGD converges linearly.
double Run2d(bool feedback, int steps) {
  const float eps = 0.5f;
  const float a[2][2] = {{1.0f, -1.0f + eps}, {-1.0f, 1.0f + eps}};
  float x[2] = {1.0f, 1.0f};
  std::vector<float> error(feedback ? 2 : 0, 0.0f);
  std::vector<uint8_t> bits(1);
  std::vector<float> update(2);
  const float lr = 0.1f;
  for (int t = 0; t < steps; ++t) {
    const float* ai = a[t % 2];
    const float dot = ai[0] * x[0] + ai[1] * x[1];
    const std::vector<float> step = {lr * dot * ai[0], lr * dot * ai[1]};
    const SignCode code = CompressSign(step, SignScale::kL1Mean, error, bits);
    UnpackSigns(bits, code.scale, update);
    x[0] -= update[0];
    x[1] -= update[1];
  }
  double loss = 0;
  for (const float* ai : a) {
    const double dot = static_cast<double>(ai[0]) * x[0] + static_cast<double>(ai[1]) * x[1];
    loss += 0.5 * dot * dot;
  }
  return loss;
}

TEST(ErrorFeedback, SignSgdStallsWithoutFeedbackAndConvergesWithIt) {
  const double without = Run2d(false, 20000);
  const double with = Run2d(true, 20000);
  EXPECT_GE(without, 0.2) << "scaled sign SGD without error feedback";
  EXPECT_LT(with, 1e-10) << "with error feedback";
}

TEST(Casts, Float16AndBFloat16RoundToNearestEven) {
  const std::vector<float> v = {1.0f, 65504.0f, 70000.0f, 1.0f + 1.0f / 2048.0f, -2.5f};
  std::vector<uint16_t> half(v.size());
  std::vector<float> back(v.size());
  CastToFloat16(v, half);
  CastFromFloat16(half, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 65504.0f);
  EXPECT_TRUE(std::isinf(back[2]));
  EXPECT_EQ(back[3], 1.0f);  // a tie rounds to the even neighbour
  EXPECT_EQ(back[4], -2.5f);
  CastToBFloat16(v, half);
  CastFromBFloat16(half, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[2], 70144.0f);  // 8 significant bits
}

// The FP16 casts (F16C where the CPU has it) give model::ToFloat16's bits: every half value back,
// and rounding at and around every tie, overflow, subnormals, NaN.
TEST(Casts, Float16MatchesTheSoftwareConversionBitForBit) {
  std::vector<uint16_t> every(65536);
  for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(every.size());
  CastFromFloat16(every, wide);
  std::vector<float> values;
  for (size_t i = 0; i < every.size(); ++i) {
    const float want = model::FromFloat16(model::Float16{every[i]});
    ASSERT_TRUE(std::memcmp(&wide[i], &want, sizeof(float)) == 0 ||
                (std::isnan(want) && std::isnan(wide[i])))
        << i;
    if (std::isfinite(want)) {
      values.push_back(want);
      values.push_back(std::nextafter(want, 1e9f));
      values.push_back(std::nextafter(want, -1e9f));
    }
  }
  const std::vector<float> more = Random(10001, 9, 3000.0f);
  values.insert(values.end(), more.begin(), more.end());
  values.push_back(65520.0f);  // the first value that rounds to infinity
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  std::vector<uint16_t> half(values.size());
  CastToFloat16(values, half);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t want = model::ToFloat16(values[i]).bits;
    if (std::isnan(values[i])) {
      ASSERT_TRUE(std::isnan(model::FromFloat16(model::Float16{half[i]})));
      continue;
    }
    ASSERT_EQ(half[i], want) << values[i];
  }
  std::vector<uint16_t> sum(half.begin(), half.end() - 1);
  const std::vector<uint16_t> addend(half.rbegin() + 1, half.rend());
  AddFloat16(addend, sum);
  for (size_t i = 0; i < sum.size(); ++i) {
    const float exact =
        model::FromFloat16(model::Float16{addend[i]}) + model::FromFloat16(model::Float16{half[i]});
    ASSERT_EQ(sum[i], model::ToFloat16(exact).bits) << i;
  }
}

TEST(ChunkOf, BytesSplitAsEvenlyAsWholeBytesAllow) {
  for (size_t total : {0u, 1u, 7u, 125u, 1000u}) {
    for (int n : {1, 2, 3, 4, 8}) {
      size_t next = 0;
      for (int j = 0; j < n; ++j) {
        const ByteChunk c = ChunkOf(total, n, j);
        EXPECT_EQ(c.offset, next);
        EXPECT_GE(c.bytes, total / n);
        EXPECT_LE(c.bytes, (total + n - 1) / n);
        next += c.bytes;
      }
      EXPECT_EQ(next, total);
    }
  }
}

using CompressDeathTest = ::testing::Test;

TEST(CompressDeathTest, WrongSizesAreInvariantViolations) {
  std::vector<float> v(9), e(8);
  std::vector<uint8_t> one(1), two(2);
  EXPECT_DEATH(PackSigns(v, one), "bits.size\\(\\) == PackedBytes\\(v.size\\(\\)\\)");
  EXPECT_DEATH(UnpackSigns(one, 1.0f, v), "bits.size\\(\\) == PackedBytes\\(out.size\\(\\)\\)");
  EXPECT_DEATH(AddUnpackedSigns(one, 1.0f, v),
               "bits.size\\(\\) == PackedBytes\\(out.size\\(\\)\\)");
  EXPECT_DEATH(SignScaleOfSum(v, e, SignScale::kL2Rms),
               "error.empty\\(\\) \\|\\| error.size\\(\\) == v.size\\(\\)");
  EXPECT_DEATH(CompressSignWithScale(v, 1.0f, {}, one),
               "bits.size\\(\\) == PackedBytes\\(v.size\\(\\)\\)");
  EXPECT_DEATH(CompressSignWithScale(v, NAN, {}, two), "std::isfinite\\(scale\\)");
  std::vector<uint16_t> h(3);
  EXPECT_DEATH(CastToFloat16(v, h), "out.size\\(\\) == v.size\\(\\)");
  std::vector<uint16_t> h9(9);
  EXPECT_DEATH(AddFloat16(h, h9), "a.size\\(\\) == b.size\\(\\)");
  EXPECT_DEATH(ChunkOf(10, 2, 2), "ranks > 0 && j >= 0 && j < ranks");
}

}  // namespace
}  // namespace seedance::train
