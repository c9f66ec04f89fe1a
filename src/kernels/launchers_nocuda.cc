// The CUDA launchers of a build without the CUDA toolkit: every one answers Unavailable, after
// the same argument checks as the CUDA build, so a caller sees a bad shape as a bad shape.
#include "seedance/kernels/attention.h"

namespace seedance::kernels {

absl::Status RunAttentionCuda(const AttentionShape& shape, const AttentionDeviceBuffers& buffers,
                              void* cuda_stream) {
  (void)buffers;
  (void)cuda_stream;
  if (absl::Status valid = ValidateAttentionShape(shape); !valid.ok()) return valid;
  return absl::UnavailableError("built without CUDA");
}

}  // namespace seedance::kernels
