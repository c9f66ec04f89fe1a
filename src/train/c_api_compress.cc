// The compress section of the C interface (c_api.h): thin wrappers over compress.h that turn
// null pointers and unknown scale kinds into return codes, since a ctypes caller cannot see a
// failed check's message before the process ends.
#include <cstddef>
#include <cstdint>
#include <span>

#include "seedance/train/c_api.h"
#include "seedance/train/compress.h"

namespace {

using seedance::train::PackedBytes;
using seedance::train::SignScale;

bool ScaleOfKind(int kind, SignScale* scale) {
  switch (kind) {
    case SEEDANCE_TRAIN_SCALE_L1_MEAN:
      *scale = SignScale::kL1Mean;
      return true;
    case SEEDANCE_TRAIN_SCALE_L2_RMS:
      *scale = SignScale::kL2Rms;
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" {

size_t seedance_train_packed_bytes(size_t d) { return PackedBytes(d); }

int seedance_train_compress_sign(const float* v, size_t d, int scale_kind, float* error,
                                 uint8_t* out_bits, float* out_scale) {
  SignScale scale;
  if (!ScaleOfKind(scale_kind, &scale) || out_scale == nullptr) return SEEDANCE_TRAIN_BAD_ARGUMENT;
  if (d > 0 && (v == nullptr || out_bits == nullptr)) return SEEDANCE_TRAIN_BAD_ARGUMENT;
  const std::span<float> error_span =
      error == nullptr ? std::span<float>() : std::span<float>(error, d);
  const seedance::train::SignCode code =
      seedance::train::CompressSign(std::span<const float>(v, d), scale, error_span,
                                    std::span<uint8_t>(out_bits, PackedBytes(d)));
  *out_scale = code.scale;
  return code.finite ? SEEDANCE_TRAIN_OK : SEEDANCE_TRAIN_NON_FINITE;
}

int seedance_train_add_unpacked_signs(const uint8_t* bits, size_t d, float scale, float* acc) {
  if (d > 0 && (bits == nullptr || acc == nullptr)) return SEEDANCE_TRAIN_BAD_ARGUMENT;
  seedance::train::AddUnpackedSigns(std::span<const uint8_t>(bits, PackedBytes(d)), scale,
                                    std::span<float>(acc, d));
  return SEEDANCE_TRAIN_OK;
}

int seedance_train_unpack_signs(const uint8_t* bits, size_t d, float scale, float* out) {
  if (d > 0 && (bits == nullptr || out == nullptr)) return SEEDANCE_TRAIN_BAD_ARGUMENT;
  seedance::train::UnpackSigns(std::span<const uint8_t>(bits, PackedBytes(d)), scale,
                               std::span<float>(out, d));
  return SEEDANCE_TRAIN_OK;
}

}  // extern "C"
