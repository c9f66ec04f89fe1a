#include "seedance/kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "seedance/model/float_formats.h"

namespace seedance::kernels {
namespace {

// Tolerances of the tiled reference against FP64 attention on the same (already rounded)
// inputs. What separates them is the kernel's own rounding, not the inputs':
//   - the output rounded to the element type, half an ulp: O is a weighted mean of V rows drawn
//     from N(0, 1), so |O| < 4 almost always and the error is at most 2^-10 ~ 9.8e-4 (FP16, 10
//     mantissa bits) and 2^-7 ~ 7.8e-3 (BF16, 7 bits), far less for the usual |O| < 1;
//   - the probabilities rounded to the element type before they multiply V (the 16-bit tensor-
//     core product), each off by at most 2^-11 / 2^-8 relative; they are summed as rounded, so
//     the weights still sum to one and O moves by sum_j w_j e_j (V_j - O), errors of both signs
//     that mostly cancel: a few 1e-4 (FP16), a few 1e-3 (BF16). (Summing the unrounded
//     probabilities, as FlashAttention-2 does, doubles the BF16 error: 1.2e-2 on these cases.)
//   - FP32 sums and exponentials: ~1e-6, negligible.
// Measured on the cases below: at most 1.0e-3 (FP16) and 7.2e-3 (BF16). The limits are the
// issue's, the ones the GPU kernel must meet against FP32 attention: 2e-3 (FP16), 1e-2 (BF16).
// A dropped mask is off by 0.1 or more and a wrong scale by more than 0.01 (the mutation tests
// below break the computation on purpose and show it).
constexpr double kFloat16Tolerance = 2e-3;
constexpr double kBFloat16Tolerance = 1e-2;

double Tolerance(ElementType element) {
  return element == ElementType::kFloat16 ? kFloat16Tolerance : kBFloat16Tolerance;
}

float Decode(ElementType element, uint16_t bits) {
  return element == ElementType::kFloat16 ? model::FromFloat16(model::Float16{bits})
                                          : model::FromBFloat16(model::BFloat16{bits});
}

uint16_t Encode(ElementType element, float value) {
  return element == ElementType::kFloat16 ? model::ToFloat16(value).bits
                                          : model::ToBFloat16(value).bits;
}

// Seeded inputs, drawn from N(0, 1) and rounded to the element type.
struct Problem {
  AttentionShape shape;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> kv_lengths;

  AttentionInputs Inputs() const { return {q, k, v, kv_lengths}; }
};

Problem RandomProblem(const AttentionShape& shape, uint32_t seed,
                      std::vector<int32_t> kv_lengths = {}) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Problem p{shape, {}, {}, {}, std::move(kv_lengths)};
  for (auto* data : {&p.q, &p.k, &p.v}) {
    const int64_t n = data == &p.q ? QueryElements(shape) : KeyElements(shape);
    for (int64_t i = 0; i < n; ++i) data->push_back(Encode(shape.element, normal(rng)));
  }
  return p;
}

double MaxAbsError(ElementType element, const std::vector<uint16_t>& got,
                   const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double{Decode(element, got[i])} - want[i]));
  }
  return worst;
}

std::string Name(ElementType element) { return element == ElementType::kFloat16 ? "fp16" : "bf16"; }

AttentionShape Shape(int batch, int heads, int q_len, int kv_len, int head_dim, bool causal,
                     ElementType element) {
  AttentionShape s;
  s.batch = batch;
  s.heads = heads;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.causal = causal;
  s.element = element;
  return s;
}

struct Case {
  std::string name;
  int batch, heads, q_len, kv_len, head_dim;
  bool causal;
  std::vector<int32_t> kv_lengths;
};

// Shapes chosen to cross tile edges (kAttentionKeyTile = 64): one partial tile, exact tiles,
// several tiles with a ragged last one; q_len below, equal to and above kv_len; padding that
// ends inside a tile, on a tile edge, and at zero keys.
const Case kCases[] = {
    {"single_key", 1, 1, 1, 1, 64, false, {}},
    {"one_partial_tile", 2, 2, 17, 23, 64, false, {}},
    {"square_causal", 1, 3, 130, 130, 64, true, {}},
    {"decode_row_sees_cache", 2, 2, 1, 200, 128, true, {}},
    {"prefill_over_cache_causal", 1, 2, 40, 150, 128, true, {}},
    {"more_queries_than_keys_causal", 1, 1, 90, 33, 64, true, {}},
    {"padding_inside_and_on_tile_edge", 3, 2, 20, 192, 128, false, {100, 64, 192}},
    {"padding_with_causal", 2, 2, 96, 96, 64, true, {70, 1}},
    {"padding_to_zero_keys", 2, 1, 8, 65, 128, false, {0, 65}},
};

class AttentionReferenceTest : public ::testing::TestWithParam<ElementType> {};

TEST_P(AttentionReferenceTest, TiledMatchesFp64WithinElementTolerance) {
  const ElementType element = GetParam();
  uint32_t seed = 43;
  for (const Case& c : kCases) {
    const Problem p =
        RandomProblem(Shape(c.batch, c.heads, c.q_len, c.kv_len, c.head_dim, c.causal, element),
                      seed++, c.kv_lengths);
    const double err = MaxAbsError(element, TiledAttentionReference(p.shape, p.Inputs()),
                                   Fp64Attention(p.shape, p.Inputs()));
    EXPECT_LE(err, Tolerance(element)) << c.name << " " << Name(element);
    RecordProperty(c.name + "_" + Name(element) + "_max_abs_error", std::to_string(err));
  }
}

// A peaked softmax whose row maximum grows from tile to tile: every tile rescales what the
// earlier ones accumulated, so a missing or wrong rescale shows.
TEST_P(AttentionReferenceTest, RescalesAcrossTilesWhenTheMaximumGrows) {
  const ElementType element = GetParam();
  AttentionShape shape = Shape(1, 1, 4, 256, 64, false, element);
  shape.scale = 0.5f;
  Problem p = RandomProblem(shape, 7);
  for (int j = 0; j < shape.kv_len; ++j) {  // K[j] ~ (j / 16) Q[0]: later keys score higher
    for (int c = 0; c < shape.head_dim; ++c) {
      const float qc = Decode(element, p.q[c]);
      p.k[j * shape.head_dim + c] = Encode(element, 0.02f * static_cast<float>(j / 16) * qc);
    }
  }
  const double err = MaxAbsError(element, TiledAttentionReference(shape, p.Inputs()),
                                 Fp64Attention(shape, p.Inputs()));
  EXPECT_LE(err, Tolerance(element));
}

INSTANTIATE_TEST_SUITE_P(Elements, AttentionReferenceTest,
                         ::testing::Values(ElementType::kFloat16, ElementType::kBFloat16),
                         [](const auto& info) { return Name(info.param); });

// The comparison above catches a dropped mask: the same inputs without the causal mask (or
// without the padding) are far outside the tolerance.
TEST(AttentionReferenceMutationTest, DroppedCausalMaskIsCaught) {
  const Problem p = RandomProblem(Shape(1, 2, 64, 64, 64, true, ElementType::kFloat16), 11);
  AttentionShape unmasked = p.shape;
  unmasked.causal = false;
  const double err =
      MaxAbsError(ElementType::kFloat16, TiledAttentionReference(unmasked, p.Inputs()),
                  Fp64Attention(p.shape, p.Inputs()));
  EXPECT_GT(err, 0.1);
}

TEST(AttentionReferenceMutationTest, DroppedPaddingIsCaught) {
  const Problem p =
      RandomProblem(Shape(2, 1, 16, 128, 64, false, ElementType::kBFloat16), 12, {40, 128});
  const AttentionInputs unpadded{p.q, p.k, p.v, {}};
  const double err = MaxAbsError(ElementType::kBFloat16, TiledAttentionReference(p.shape, unpadded),
                                 Fp64Attention(p.shape, p.Inputs()));
  EXPECT_GT(err, 0.1);
}

TEST(AttentionReferenceMutationTest, WrongScaleIsCaught) {
  const Problem p = RandomProblem(Shape(1, 1, 16, 100, 128, false, ElementType::kFloat16), 13);
  AttentionShape rescaled = p.shape;
  rescaled.scale = 1.0f / 8.0f;  // 1/sqrt(64), not 1/sqrt(128)
  const double err =
      MaxAbsError(ElementType::kFloat16, TiledAttentionReference(rescaled, p.Inputs()),
                  Fp64Attention(p.shape, p.Inputs()));
  EXPECT_GT(err, 0.01);
}

// Properties known without either implementation.
TEST(AttentionPropertiesTest, FirstCausalRowIsTheFirstValueRow) {
  const Problem p = RandomProblem(Shape(1, 1, 5, 5, 64, true, ElementType::kFloat16), 21);
  const std::vector<uint16_t> out = TiledAttentionReference(p.shape, p.Inputs());
  for (int c = 0; c < 64; ++c) EXPECT_EQ(out[c], p.v[c]) << "column " << c;
}

TEST(AttentionPropertiesTest, ZeroQueryAveragesTheVisibleValues) {
  Problem p = RandomProblem(Shape(1, 1, 1, 3, 64, false, ElementType::kFloat16), 22, {2});
  std::fill(p.q.begin(), p.q.end(), Encode(ElementType::kFloat16, 0.0f));
  const std::vector<uint16_t> out = TiledAttentionReference(p.shape, p.Inputs());
  for (int c = 0; c < 64; ++c) {
    const float mean =
        0.5f * (Decode(ElementType::kFloat16, p.v[c]) + Decode(ElementType::kFloat16, p.v[64 + c]));
    EXPECT_NEAR(Decode(ElementType::kFloat16, out[c]), mean, 1e-3) << "column " << c;
  }
}

TEST(AttentionPropertiesTest, PaddedKeysDoNotChangeTheOutput) {
  Problem p = RandomProblem(Shape(1, 2, 8, 100, 128, false, ElementType::kBFloat16), 23, {70});
  const std::vector<uint16_t> before = TiledAttentionReference(p.shape, p.Inputs());
  for (int h = 0; h < 2; ++h) {
    for (int j = 70; j < 100; ++j) {
      for (int c = 0; c < 128; ++c) {
        const int64_t at = (int64_t{h} * 100 + j) * 128 + c;
        p.k[at] = Encode(ElementType::kBFloat16, 30.0f);
        p.v[at] = Encode(ElementType::kBFloat16, -50.0f);
      }
    }
  }
  EXPECT_EQ(TiledAttentionReference(p.shape, p.Inputs()), before);
}

TEST(AttentionPropertiesTest, RowWithoutKeysIsZero) {
  const Problem p = RandomProblem(Shape(1, 1, 4, 2, 64, true, ElementType::kFloat16), 24);
  // Bottom-right causal: rows 0 and 1 see keys up to i - 2, that is none.
  const std::vector<uint16_t> out = TiledAttentionReference(p.shape, p.Inputs());
  const std::vector<double> fp64 = Fp64Attention(p.shape, p.Inputs());
  for (int c = 0; c < 2 * 64; ++c) {
    EXPECT_EQ(Decode(ElementType::kFloat16, out[c]), 0.0f);
    EXPECT_EQ(fp64[c], 0.0);
  }
  for (int c = 0; c < 64; ++c) EXPECT_EQ(out[2 * 64 + c], p.v[c]) << "row 2 sees key 0 only";
}

TEST(AttentionPropertiesTest, DefaultScaleIsOneOverSqrtHeadDim) {
  AttentionShape shape = Shape(1, 1, 1, 1, 128, false, ElementType::kFloat16);
  EXPECT_FLOAT_EQ(AttentionScale(shape), 1.0f / std::sqrt(128.0f));
  shape.scale = 0.25f;
  EXPECT_FLOAT_EQ(AttentionScale(shape), 0.25f);
}

TEST(AttentionShapeTest, RefusesWhatTheKernelCannotRun) {
  struct Row {
    std::string name;
    AttentionShape shape;
    std::string want;
  };
  AttentionShape ok = Shape(1, 1, 1, 1, 64, false, ElementType::kFloat16);
  std::vector<Row> rows;
  rows.push_back({"ok", ok, ""});
  AttentionShape s = ok;
  s.head_dim = 96;
  rows.push_back({"head_dim", s, "head_dim must be 64 or 128 (got 96)"});
  s = ok;
  s.kv_len = 0;
  rows.push_back({"kv_len", s, "kv_len must be positive (got 0)"});
  s = ok;
  s.batch = -1;
  rows.push_back({"batch", s, "batch must be positive (got -1)"});
  s = ok;
  s.scale = std::nanf("");
  rows.push_back({"scale", s, "scale must be finite and positive"});
  for (const Row& row : rows) {
    const absl::Status status = ValidateAttentionShape(row.shape);
    if (row.want.empty()) {
      EXPECT_TRUE(status.ok()) << row.name << ": " << status;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << row.name;
      EXPECT_NE(status.message().find(row.want), std::string::npos) << row.name << ": " << status;
    }
  }
}

TEST(AttentionShapeTest, KvLengthsOnePerBatchEntryWithinKvLen) {
  const AttentionShape shape = Shape(2, 1, 1, 10, 64, false, ElementType::kFloat16);
  EXPECT_TRUE(ValidateKvLengths(shape, {}).ok());
  EXPECT_TRUE(ValidateKvLengths(shape, std::vector<int32_t>{0, 10}).ok());
  EXPECT_EQ(ValidateKvLengths(shape, std::vector<int32_t>{3}).message(),
            "attention kv_lengths: one per batch entry (2), got 1");
  EXPECT_EQ(ValidateKvLengths(shape, std::vector<int32_t>{3, 11}).message(),
            "attention kv_lengths[1]: must be in [0, 10] (got 11)");
}

TEST(AttentionLauncherTest, UnavailableWithoutCudaButRefusesBadShapesFirst) {
  const AttentionShape shape = Shape(1, 1, 1, 1, 64, false, ElementType::kFloat16);
  const absl::Status status = RunAttentionCuda(shape, {}, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "built without CUDA");
  AttentionShape bad = shape;
  bad.head_dim = 80;
  EXPECT_EQ(RunAttentionCuda(bad, {}, nullptr).code(), absl::StatusCode::kInvalidArgument);
}

// The references' invariants (attention.h's REQUIRES) abort.
TEST(AttentionReferenceDeathTest, BadShapeAborts) {
  const Problem p = RandomProblem(Shape(1, 1, 1, 1, 64, false, ElementType::kFloat16), 31);
  AttentionShape bad = p.shape;
  bad.head_dim = 32;
  EXPECT_DEATH(TiledAttentionReference(bad, p.Inputs()),
               "attention reference given a bad shape: .*head_dim must be 64 or 128");
}

TEST(AttentionReferenceDeathTest, BadKvLengthsAbort) {
  const Problem p = RandomProblem(Shape(1, 1, 1, 4, 64, false, ElementType::kFloat16), 32, {5});
  EXPECT_DEATH(Fp64Attention(p.shape, p.Inputs()),
               "attention reference given bad kv_lengths: .*must be in \\[0, 4\\]");
}

TEST(AttentionReferenceDeathTest, WrongQuerySizeAborts) {
  const Problem p = RandomProblem(Shape(1, 1, 2, 4, 64, false, ElementType::kFloat16), 33);
  const AttentionInputs short_q{std::span(p.q).first(64), p.k, p.v, {}};
  EXPECT_DEATH(TiledAttentionReference(p.shape, short_q),
               "attention reference: q holds 64 elements, the shape needs 128");
}

TEST(AttentionReferenceDeathTest, WrongKeyOrValueSizeAborts) {
  const Problem p = RandomProblem(Shape(1, 1, 2, 4, 64, false, ElementType::kFloat16), 34);
  const AttentionInputs short_v{p.q, p.k, std::span(p.v).first(10), {}};
  EXPECT_DEATH(Fp64Attention(p.shape, short_v),
               "attention reference: k and v hold 256 and 10 elements, the shape needs 256");
}

}  // namespace
}  // namespace seedance::kernels
