// The CUDA launchers of a build with the CUDA toolkit (SEEDANCE_WITH_CUDA=ON, docs/kernels.md):
// the argument checks of attention.h, then the kernel's C entry point (attention.cu).
// Plain C++: only the .cu sources need nvcc.
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels_c_api.h"
#include "seedance/kernels/attention.h"

namespace seedance::kernels {
namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

absl::Status RunAttentionCuda(const AttentionShape& shape, const AttentionDeviceBuffers& buffers,
                              void* cuda_stream) {
  if (absl::Status valid = ValidateAttentionShape(shape); !valid.ok()) return valid;
  const std::pair<const char*, const void*> pointers[] = {
      {"q", buffers.q}, {"k", buffers.k}, {"v", buffers.v}, {"o", buffers.o}};
  for (const auto& [name, pointer] : pointers) {
    if (pointer == nullptr || !Aligned16(pointer)) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention buffers: ", name, " must be a 16-byte aligned device pointer"));
    }
  }
  const int element =
      shape.element == ElementType::kFloat16 ? SEEDANCE_ELEMENT_FLOAT16 : SEEDANCE_ELEMENT_BFLOAT16;
  const int code = seedance_attention_forward(
      element, shape.batch, shape.heads, shape.q_len, shape.kv_len, shape.head_dim,
      shape.causal ? 1 : 0, AttentionScale(shape), buffers.q, buffers.k, buffers.v, buffers.o,
      buffers.kv_lengths, cuda_stream);
  if (code != 0) {
    return absl::InternalError(
        absl::StrCat("attention kernel launch: ", seedance_cuda_error_string(code)));
  }
  return absl::OkStatus();
}

}  // namespace seedance::kernels
