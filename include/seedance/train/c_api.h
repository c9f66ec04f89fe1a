// The C interface of seedance_train (docs/training.md), the shared library seedance_train_c that
// Python loads with ctypes: plain C types over raw pointers, no exceptions, errors as return codes.
// Each section below is owned by the .cc file it names.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// --- clip (c_api_clip.cc) ---
// Mixed-precision gradient clipping and loss scaling (clip.h) over raw pointers, for Python
// (src/train/mpgc_torch_test.py, ctypes). Every function returns 0 on success, otherwise the
// absl::StatusCode number (3 invalid argument, 9 failed precondition) with a message written
// into err[0..err_len) (NUL-terminated, truncated; err may be NULL when err_len is 0).
//
// A list of n gradient tensors is four parallel arrays: dtypes[i] (SEEDANCE_TRAIN_GRAD_*),
// data[i] (float*, uint16_t* bits, or int8_t* codes), sizes[i] (elements), int8_scales (n floats:
// the scale of each INT8 tensor, updated in place; other entries unused; NULL if no INT8 tensor).
// The functions are pure functions of their arguments; a loss scaler handle belongs to one
// thread at a time.
#define SEEDANCE_TRAIN_GRAD_F32 0
#define SEEDANCE_TRAIN_GRAD_F16 1
#define SEEDANCE_TRAIN_GRAD_BF16 2
#define SEEDANCE_TRAIN_GRAD_INT8 3
#define SEEDANCE_TRAIN_ACC_F32 0       /* FP32 sums (torch on CUDA) */
#define SEEDANCE_TRAIN_ACC_F64 1       /* FP64 sums */
#define SEEDANCE_TRAIN_ACC_TORCH_CPU 2 /* torch 1.13 on the CPU: FP16 sums in FP16 */

// The global norm of the n tensors (clip.h GlobalNorm) into *out_norm. norm_type: 2 or inf.
// accumulate: SEEDANCE_TRAIN_ACC_* (clip.h Accumulate). round_like_torch: 0 or 1 (clip.h).
int seedance_train_grad_norm(size_t n, const int* dtypes, void* const* data, const size_t* sizes,
                             const float* int8_scales, double norm_type, int accumulate,
                             int round_like_torch, double* out_norm, char* err, size_t err_len);

// torch.nn.utils.clip_grad_norm_ over the n tensors in place (clip.h ClipGradNorm). Writes the
// total norm and the applied (clamped) coefficient. Nothing is written on an error.
int seedance_train_clip_grad_norm(size_t n, const int* dtypes, void* const* data,
                                  const size_t* sizes, float* int8_scales, double max_norm,
                                  double norm_type, int accumulate, int round_like_torch,
                                  int error_if_nonfinite, double* out_total_norm,
                                  double* out_clip_coef, char* err, size_t err_len);

// Clipping of groups (clip.h ClipGradNormGroups): tensors [0, group_sizes[0]) are group 0, the
// next group_sizes[1] group 1, ...; per_group 1 clips each by its own norm, 0 all by the global
// norm. out_total_norms and out_clip_coefs hold num_groups doubles each.
int seedance_train_clip_grad_norm_groups(size_t num_groups, const size_t* group_sizes,
                                         const int* dtypes, void* const* data, const size_t* sizes,
                                         float* int8_scales, int per_group, double max_norm,
                                         double norm_type, int accumulate, int round_like_torch,
                                         double* out_total_norms, double* out_clip_coefs, char* err,
                                         size_t err_len);

// GradScaler.unscale_: every value times float(1 / double(loss_scale)); *out_found_inf is 1 when
// an input value was inf or NaN, else 0. loss_scale must be finite and > 0 (else 3).
int seedance_train_unscale_grads(size_t n, const int* dtypes, void* const* data,
                                 const size_t* sizes, float* int8_scales, float loss_scale,
                                 int* out_found_inf, char* err, size_t err_len);

// A LossScaler (clip.h; torch.cuda.amp.GradScaler's state machine). Create writes a handle into
// *out that seedance_train_loss_scaler_free releases.
typedef struct seedance_train_loss_scaler seedance_train_loss_scaler;
int seedance_train_loss_scaler_new(float init_scale, double growth_factor, double backoff_factor,
                                   int growth_interval, seedance_train_loss_scaler** out, char* err,
                                   size_t err_len);
void seedance_train_loss_scaler_free(seedance_train_loss_scaler* scaler);
// The current scale and growth tracker (NaN and -1 for a NULL handle).
float seedance_train_loss_scaler_scale(const seedance_train_loss_scaler* scaler);
int seedance_train_loss_scaler_growth_tracker(const seedance_train_loss_scaler* scaler);
// Ends a step: *out_skipped 1 when found_inf (the optimizer step must not run); *out_scale the
// scale for the next step. Returns 0, or 3 for a NULL pointer.
int seedance_train_loss_scaler_update(seedance_train_loss_scaler* scaler, int found_inf,
                                      int* out_skipped, float* out_scale);
// --- end clip ---

// --- compress (c_api_compress.cc) ---
// Scaled-sign compression with error feedback (compress.h) over raw pointers, for the PyTorch
// DDP communication hook (python/seedance_train/ddp_hook.py, ctypes). Pure functions of their
// arguments: any thread may call them, on distinct buffers.

// seedance_train_compress_sign scale kinds (compress.h: SignScale).
#define SEEDANCE_TRAIN_SCALE_L1_MEAN 0 /* ||v||_1 / d: EF-SGD's scaled sign */
#define SEEDANCE_TRAIN_SCALE_L2_RMS 1  /* ||v||_2 / sqrt(d): DeepSpeed's */

// Return codes of the compress functions: 0 on success; 3 is the clip section's (and
// absl::StatusCode's) invalid argument; 1 is not a code the clip functions return.
#define SEEDANCE_TRAIN_OK 0
#define SEEDANCE_TRAIN_NON_FINITE 1   /* the input (plus the error buffer) held an inf or a NaN */
#define SEEDANCE_TRAIN_BAD_ARGUMENT 3 /* a null pointer with d > 0, or an unknown scale kind */

// Bytes that hold d packed sign bits: ceil(d / 8).
size_t seedance_train_packed_bytes(size_t d);

// Compresses v[0..d) with error buffer `error` (d floats, or NULL for no feedback) into
// out_bits (seedance_train_packed_bytes(d) bytes, LSB first, 1 = non-negative) and *out_scale:
// p = v + error; bits = sign(p); scale = the `scale_kind` scale of p; error = p - scale * sign(p).
// Returns SEEDANCE_TRAIN_OK; or SEEDANCE_TRAIN_NON_FINITE with *out_scale the non-finite scale and
// neither out_bits nor `error` touched (the step can be skipped and retried); or
// SEEDANCE_TRAIN_BAD_ARGUMENT with nothing written.
int seedance_train_compress_sign(const float* v, size_t d, int scale_kind, float* error,
                                 uint8_t* out_bits, float* out_scale);

// acc[i] += scale * (bit i ? +1 : -1) for i < d; bits holds seedance_train_packed_bytes(d) bytes.
// Returns SEEDANCE_TRAIN_OK, or SEEDANCE_TRAIN_BAD_ARGUMENT (a null pointer with d > 0).
int seedance_train_add_unpacked_signs(const uint8_t* bits, size_t d, float scale, float* acc);

// out[i] = scale * (bit i ? +1 : -1) for i < d. Returns as seedance_train_add_unpacked_signs.
int seedance_train_unpack_signs(const uint8_t* bits, size_t d, float scale, float* out);
// --- end compress ---

#ifdef __cplusplus
}  // extern "C"
#endif
