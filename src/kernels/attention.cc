#include "seedance/kernels/attention.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace seedance::kernels {

float AttentionScale(const AttentionShape& shape) {
  if (shape.scale.has_value()) return *shape.scale;
  return 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
}

absl::Status ValidateAttentionShape(const AttentionShape& shape) {
  const std::pair<const char*, int> sizes[] = {{"batch", shape.batch},
                                               {"heads", shape.heads},
                                               {"q_len", shape.q_len},
                                               {"kv_len", shape.kv_len}};
  for (const auto& [name, value] : sizes) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention shape: ", name, " must be positive (got ", value, ")"));
    }
  }
  bool supported = false;
  for (int d : kSupportedHeadDims) supported = supported || shape.head_dim == d;
  if (!supported) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention shape: head_dim must be 64 or 128 (got ", shape.head_dim, ")"));
  }
  const float scale = AttentionScale(shape);
  if (!std::isfinite(scale) || scale <= 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention shape: scale must be finite and positive (got ", scale, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateKvLengths(const AttentionShape& shape, std::span<const int32_t> kv_lengths) {
  if (kv_lengths.empty()) return absl::OkStatus();
  if (kv_lengths.size() != static_cast<size_t>(shape.batch)) {
    return absl::InvalidArgumentError(absl::StrCat("attention kv_lengths: one per batch entry (",
                                                   shape.batch, "), got ", kv_lengths.size()));
  }
  for (size_t b = 0; b < kv_lengths.size(); ++b) {
    if (kv_lengths[b] < 0 || kv_lengths[b] > shape.kv_len) {
      return absl::InvalidArgumentError(absl::StrCat("attention kv_lengths[", b,
                                                     "]: must be in [0, ", shape.kv_len, "] (got ",
                                                     kv_lengths[b], ")"));
    }
  }
  return absl::OkStatus();
}

int64_t QueryElements(const AttentionShape& shape) {
  return int64_t{shape.batch} * shape.heads * shape.q_len * shape.head_dim;
}

int64_t KeyElements(const AttentionShape& shape) {
  return int64_t{shape.batch} * shape.heads * shape.kv_len * shape.head_dim;
}

}  // namespace seedance::kernels
