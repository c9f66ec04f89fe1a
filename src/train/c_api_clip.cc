// The clip section of the C interface (c_api.h): thin wrappers over clip.h that turn null
// pointers, unknown dtypes and bad options into status codes and messages, since a ctypes caller
// cannot see a failed check's message before the process ends.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "seedance/train/c_api.h"
#include "seedance/train/clip.h"

struct seedance_train_loss_scaler {
  seedance::train::LossScaler scaler;
};

namespace {

using seedance::train::Accumulate;
using seedance::train::ClipMode;
using seedance::train::ClipOptions;
using seedance::train::ClipResult;
using seedance::train::GradTensor;

int Report(const absl::Status& status, char* err, size_t err_len) {
  if (status.ok()) return 0;
  if (err != nullptr && err_len > 0) {
    const absl::string_view message = status.message();
    const size_t n = std::min(message.size(), err_len - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
  }
  return static_cast<int>(status.code());
}

absl::StatusOr<GradTensor> TensorAt(size_t i, const int* dtypes, void* const* data,
                                    const size_t* sizes, float* int8_scales) {
  const size_t size = sizes[i];
  if (size > 0 && data[i] == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("gradient ", i, ": data is NULL"));
  }
  switch (dtypes[i]) {
    case SEEDANCE_TRAIN_GRAD_F32:
      return GradTensor::Float32({static_cast<float*>(data[i]), size});
    case SEEDANCE_TRAIN_GRAD_F16:
      return GradTensor::Float16({static_cast<uint16_t*>(data[i]), size});
    case SEEDANCE_TRAIN_GRAD_BF16:
      return GradTensor::BFloat16({static_cast<uint16_t*>(data[i]), size});
    case SEEDANCE_TRAIN_GRAD_INT8:
      if (int8_scales == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("gradient ", i, ": INT8 without int8_scales"));
      }
      return GradTensor::Int8({static_cast<int8_t*>(data[i]), size}, &int8_scales[i]);
    default:
      return absl::InvalidArgumentError(absl::StrCat("gradient ", i, ": dtype ", dtypes[i],
                                                     "; expected 0 (F32), 1 (F16), ",
                                                     "2 (BF16) or 3 (INT8)"));
  }
}

absl::StatusOr<std::vector<GradTensor>> Tensors(size_t n, const int* dtypes, void* const* data,
                                                const size_t* sizes, float* int8_scales) {
  if (n > 0 && (dtypes == nullptr || data == nullptr || sizes == nullptr)) {
    return absl::InvalidArgumentError("gradients: dtypes, data or sizes is NULL");
  }
  std::vector<GradTensor> grads;
  grads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    absl::StatusOr<GradTensor> g = TensorAt(i, dtypes, data, sizes, int8_scales);
    if (!g.ok()) return g.status();
    grads.push_back(*g);
  }
  return grads;
}

absl::Status CheckAccumulate(int accumulate) {
  if (accumulate >= SEEDANCE_TRAIN_ACC_F32 && accumulate <= SEEDANCE_TRAIN_ACC_TORCH_CPU) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("accumulate is ", accumulate, "; expected 0 (FP32), 1 (FP64) or 2 (torch CPU)"));
}

ClipOptions OptionsOf(double max_norm, double norm_type, int accumulate, int round_like_torch,
                      int error_if_nonfinite) {
  ClipOptions options;
  options.max_norm = max_norm;
  options.norm_type = norm_type;
  options.accumulate = static_cast<Accumulate>(accumulate);
  options.round_like_torch = round_like_torch != 0;
  options.error_if_nonfinite = error_if_nonfinite != 0;
  return options;
}

// Splits the tensors into groups of group_sizes[g] tensors each.
absl::StatusOr<std::vector<std::vector<GradTensor>>> Groups(size_t num_groups,
                                                            const size_t* group_sizes,
                                                            std::vector<GradTensor> all) {
  if (num_groups > 0 && group_sizes == nullptr) {
    return absl::InvalidArgumentError("groups: group_sizes is NULL");
  }
  std::vector<std::vector<GradTensor>> groups(num_groups);
  size_t next = 0;
  for (size_t g = 0; g < num_groups; ++g) {
    groups[g].assign(all.begin() + static_cast<ptrdiff_t>(next),
                     all.begin() + static_cast<ptrdiff_t>(next + group_sizes[g]));
    next += group_sizes[g];
  }
  return groups;
}

size_t Total(size_t num_groups, const size_t* group_sizes) {
  size_t total = 0;
  for (size_t g = 0; group_sizes != nullptr && g < num_groups; ++g) total += group_sizes[g];
  return total;
}

}  // namespace

extern "C" {

int seedance_train_grad_norm(size_t n, const int* dtypes, void* const* data, const size_t* sizes,
                             const float* int8_scales, double norm_type, int accumulate,
                             int round_like_torch, double* out_norm, char* err, size_t err_len) {
  if (out_norm == nullptr)
    return Report(absl::InvalidArgumentError("out_norm is NULL"), err, err_len);
  const absl::StatusOr<seedance::train::NormType> type = seedance::train::ParseNormType(norm_type);
  if (!type.ok()) return Report(type.status(), err, err_len);
  // The norm only reads: the scales are not written.
  const absl::StatusOr<std::vector<GradTensor>> grads =
      Tensors(n, dtypes, data, sizes, const_cast<float*>(int8_scales));
  if (!grads.ok()) return Report(grads.status(), err, err_len);
  if (absl::Status status = CheckAccumulate(accumulate); !status.ok()) {
    return Report(status, err, err_len);
  }
  seedance::train::NormOptions options;
  options.norm_type = *type;
  options.accumulate = static_cast<Accumulate>(accumulate);
  options.round_like_torch = round_like_torch != 0;
  *out_norm = seedance::train::GlobalNorm(*grads, options);
  return 0;
}

int seedance_train_clip_grad_norm(size_t n, const int* dtypes, void* const* data,
                                  const size_t* sizes, float* int8_scales, double max_norm,
                                  double norm_type, int accumulate, int round_like_torch,
                                  int error_if_nonfinite, double* out_total_norm,
                                  double* out_clip_coef, char* err, size_t err_len) {
  if (out_total_norm == nullptr || out_clip_coef == nullptr) {
    return Report(absl::InvalidArgumentError("out_total_norm or out_clip_coef is NULL"), err,
                  err_len);
  }
  if (absl::Status status = CheckAccumulate(accumulate); !status.ok()) {
    return Report(status, err, err_len);
  }
  const absl::StatusOr<std::vector<GradTensor>> grads =
      Tensors(n, dtypes, data, sizes, int8_scales);
  if (!grads.ok()) return Report(grads.status(), err, err_len);
  const absl::StatusOr<ClipResult> result = seedance::train::ClipGradNorm(
      *grads, OptionsOf(max_norm, norm_type, accumulate, round_like_torch, error_if_nonfinite));
  if (!result.ok()) return Report(result.status(), err, err_len);
  *out_total_norm = result->total_norm;
  *out_clip_coef = result->clip_coef;
  return 0;
}

int seedance_train_clip_grad_norm_groups(size_t num_groups, const size_t* group_sizes,
                                         const int* dtypes, void* const* data, const size_t* sizes,
                                         float* int8_scales, int per_group, double max_norm,
                                         double norm_type, int accumulate, int round_like_torch,
                                         double* out_total_norms, double* out_clip_coefs, char* err,
                                         size_t err_len) {
  if (num_groups > 0 && (out_total_norms == nullptr || out_clip_coefs == nullptr)) {
    return Report(absl::InvalidArgumentError("out_total_norms or out_clip_coefs is NULL"), err,
                  err_len);
  }
  if (absl::Status status = CheckAccumulate(accumulate); !status.ok()) {
    return Report(status, err, err_len);
  }
  absl::StatusOr<std::vector<GradTensor>> all =
      Tensors(Total(num_groups, group_sizes), dtypes, data, sizes, int8_scales);
  if (!all.ok()) return Report(all.status(), err, err_len);
  const absl::StatusOr<std::vector<std::vector<GradTensor>>> groups =
      Groups(num_groups, group_sizes, *std::move(all));
  if (!groups.ok()) return Report(groups.status(), err, err_len);
  const absl::StatusOr<std::vector<ClipResult>> results = seedance::train::ClipGradNormGroups(
      *groups, per_group != 0 ? ClipMode::kPerGroup : ClipMode::kGlobal,
      OptionsOf(max_norm, norm_type, accumulate, round_like_torch, 0));
  if (!results.ok()) return Report(results.status(), err, err_len);
  for (size_t g = 0; g < num_groups; ++g) {
    out_total_norms[g] = (*results)[g].total_norm;
    out_clip_coefs[g] = (*results)[g].clip_coef;
  }
  return 0;
}

int seedance_train_unscale_grads(size_t n, const int* dtypes, void* const* data,
                                 const size_t* sizes, float* int8_scales, float loss_scale,
                                 int* out_found_inf, char* err, size_t err_len) {
  if (out_found_inf == nullptr) {
    return Report(absl::InvalidArgumentError("out_found_inf is NULL"), err, err_len);
  }
  if (!std::isfinite(loss_scale) || !(loss_scale > 0)) {
    return Report(absl::InvalidArgumentError(
                      absl::StrCat("loss_scale is ", loss_scale, "; expected a finite number > 0")),
                  err, err_len);
  }
  const absl::StatusOr<std::vector<GradTensor>> grads =
      Tensors(n, dtypes, data, sizes, int8_scales);
  if (!grads.ok()) return Report(grads.status(), err, err_len);
  *out_found_inf = seedance::train::UnscaleGrads(*grads, loss_scale) ? 1 : 0;
  return 0;
}

int seedance_train_loss_scaler_new(float init_scale, double growth_factor, double backoff_factor,
                                   int growth_interval, seedance_train_loss_scaler** out, char* err,
                                   size_t err_len) {
  if (out == nullptr) return Report(absl::InvalidArgumentError("out is NULL"), err, err_len);
  absl::StatusOr<seedance::train::LossScaler> scaler = seedance::train::LossScaler::Create(
      {init_scale, growth_factor, backoff_factor, growth_interval});
  if (!scaler.ok()) return Report(scaler.status(), err, err_len);
  *out = new seedance_train_loss_scaler{*scaler};
  return 0;
}

void seedance_train_loss_scaler_free(seedance_train_loss_scaler* scaler) { delete scaler; }

float seedance_train_loss_scaler_scale(const seedance_train_loss_scaler* scaler) {
  return scaler == nullptr ? NAN : scaler->scaler.scale();
}

int seedance_train_loss_scaler_growth_tracker(const seedance_train_loss_scaler* scaler) {
  return scaler == nullptr ? -1 : scaler->scaler.growth_tracker();
}

int seedance_train_loss_scaler_update(seedance_train_loss_scaler* scaler, int found_inf,
                                      int* out_skipped, float* out_scale) {
  if (scaler == nullptr || out_skipped == nullptr || out_scale == nullptr) {
    return static_cast<int>(absl::StatusCode::kInvalidArgument);
  }
  const seedance::train::ScaleUpdate update = scaler->scaler.Update(found_inf != 0);
  *out_skipped = update.step_skipped ? 1 : 0;
  *out_scale = update.scale;
  return 0;
}

}  // extern "C"
