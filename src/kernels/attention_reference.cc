// The host references of attention.h: the tiled online-softmax computation of the CUDA kernel
// (attention.cu) and plain FP64 softmax attention. Online softmax: Milakov and Gimelshein,
// "Online normalizer calculation for softmax" (2018); its tiled use: Dao et al., "FlashAttention"
// (2022), Algorithm 1, and FlashAttention-2 (2023), section 3.1 (one rescale per tile, the
// division by the row sum once at the end).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "seedance/base/check.h"
#include "seedance/kernels/attention.h"
#include "seedance/model/float_formats.h"

namespace seedance::kernels {
namespace {

float Decode(ElementType element, uint16_t bits) {
  return element == ElementType::kFloat16 ? model::FromFloat16(model::Float16{bits})
                                          : model::FromBFloat16(model::BFloat16{bits});
}

uint16_t Encode(ElementType element, float value) {
  return element == ElementType::kFloat16 ? model::ToFloat16(value).bits
                                          : model::ToBFloat16(value).bits;
}

void CheckInputs(const AttentionShape& shape, const AttentionInputs& in) {
  const absl::Status valid = ValidateAttentionShape(shape);
  SEEDANCE_CHECK(valid.ok()) << "attention reference given a bad shape: " << valid.message();
  const absl::Status lengths = ValidateKvLengths(shape, in.kv_lengths);
  SEEDANCE_CHECK(lengths.ok()) << "attention reference given bad kv_lengths: " << lengths.message();
  SEEDANCE_CHECK(static_cast<int64_t>(in.q.size()) == QueryElements(shape))
      << "attention reference: q holds " << in.q.size() << " elements, the shape needs "
      << QueryElements(shape);
  SEEDANCE_CHECK(static_cast<int64_t>(in.k.size()) == KeyElements(shape) &&
                 static_cast<int64_t>(in.v.size()) == KeyElements(shape))
      << "attention reference: k and v hold " << in.k.size() << " and " << in.v.size()
      << " elements, the shape needs " << KeyElements(shape);
}

// The keys query row `i` of batch entry `b` sees: [0, end), the causal and padding masks both
// cutting from the end (attention.h).
int VisibleKeys(const AttentionShape& shape, std::span<const int32_t> kv_lengths, int b, int i) {
  int end = kv_lengths.empty() ? shape.kv_len : kv_lengths[b];
  if (shape.causal) end = std::min(end, std::max(0, i + (shape.kv_len - shape.q_len) + 1));
  return end;
}

// Decoded rows of one (batch, head): rows x head_dim floats.
std::vector<float> DecodeRows(ElementType element, std::span<const uint16_t> data, int64_t offset,
                              int64_t count) {
  std::vector<float> rows(count);
  for (int64_t n = 0; n < count; ++n) rows[n] = Decode(element, data[offset + n]);
  return rows;
}

// One query row as the kernel computes it; writes head_dim rounded outputs to `out`.
void TiledRow(const AttentionShape& shape, const float* q, const std::vector<float>& k,
              const std::vector<float>& v, int visible, uint16_t* out) {
  const int d = shape.head_dim;
  const float scale = AttentionScale(shape);
  float row_max = -std::numeric_limits<float>::infinity();
  float row_sum = 0.0f;
  std::vector<float> acc(d, 0.0f), scores(kAttentionKeyTile);
  for (int t0 = 0; t0 < visible; t0 += kAttentionKeyTile) {
    const int t1 = std::min(t0 + kAttentionKeyTile, visible);
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int j = t0; j < t1; ++j) {
      float dot = 0.0f;
      for (int c = 0; c < d; ++c) dot += q[c] * k[int64_t{j} * d + c];
      scores[j - t0] = dot * scale;
      tile_max = std::max(tile_max, scores[j - t0]);
    }
    const float new_max = std::max(row_max, tile_max);
    // exp(-inf) is 0: the first tile rescales the empty sum and accumulator by nothing.
    const float correction = std::exp(row_max - new_max);
    row_sum *= correction;
    for (float& a : acc) a *= correction;
    for (int j = t0; j < t1; ++j) {
      // Rounded as the kernel stores it for the tensor-core product, and summed so.
      const float p =
          Decode(shape.element, Encode(shape.element, std::exp(scores[j - t0] - new_max)));
      row_sum += p;
      for (int c = 0; c < d; ++c) acc[c] += p * v[int64_t{j} * d + c];
    }
    row_max = new_max;
  }
  for (int c = 0; c < d; ++c) {
    out[c] = Encode(shape.element, row_sum > 0.0f ? acc[c] / row_sum : 0.0f);
  }
}

// One query row in FP64; writes head_dim outputs to `out`.
void Fp64Row(const AttentionShape& shape, const float* q, const std::vector<float>& k,
             const std::vector<float>& v, int visible, double* out) {
  const int d = shape.head_dim;
  const double scale = AttentionScale(shape);
  std::vector<double> scores(visible);
  double max_score = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < visible; ++j) {
    double dot = 0.0;
    for (int c = 0; c < d; ++c) dot += double{q[c]} * k[int64_t{j} * d + c];
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0.0;
  for (double& s : scores) sum += (s = std::exp(s - max_score));
  for (int c = 0; c < d; ++c) {
    double value = 0.0;
    for (int j = 0; j < visible; ++j) value += scores[j] * v[int64_t{j} * d + c];
    out[c] = visible > 0 ? value / sum : 0.0;
  }
}

// Calls row(q_row, k, v, visible, output_offset) for every query row, K and V of its (batch,
// head) decoded once.
template <typename RowFn>
void ForEachRow(const AttentionShape& shape, const AttentionInputs& in, RowFn row) {
  const int64_t d = shape.head_dim;
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.heads; ++h) {
      const int64_t head = int64_t{b} * shape.heads + h;
      const std::vector<float> q =
          DecodeRows(shape.element, in.q, head * shape.q_len * d, shape.q_len * d);
      const std::vector<float> k =
          DecodeRows(shape.element, in.k, head * shape.kv_len * d, shape.kv_len * d);
      const std::vector<float> v =
          DecodeRows(shape.element, in.v, head * shape.kv_len * d, shape.kv_len * d);
      for (int i = 0; i < shape.q_len; ++i) {
        row(q.data() + i * d, k, v, VisibleKeys(shape, in.kv_lengths, b, i),
            (head * shape.q_len + i) * d);
      }
    }
  }
}

}  // namespace

std::vector<uint16_t> TiledAttentionReference(const AttentionShape& shape,
                                              const AttentionInputs& in) {
  CheckInputs(shape, in);
  std::vector<uint16_t> out(QueryElements(shape));
  ForEachRow(
      shape, in,
      [&](const float* q, const std::vector<float>& k, const std::vector<float>& v, int visible,
          int64_t offset) { TiledRow(shape, q, k, v, visible, out.data() + offset); });
  return out;
}

std::vector<double> Fp64Attention(const AttentionShape& shape, const AttentionInputs& in) {
  CheckInputs(shape, in);
  std::vector<double> out(QueryElements(shape));
  ForEachRow(
      shape, in,
      [&](const float* q, const std::vector<float>& k, const std::vector<float>& v, int visible,
          int64_t offset) { Fp64Row(shape, q, k, v, visible, out.data() + offset); });
  return out;
}

}  // namespace seedance::kernels
