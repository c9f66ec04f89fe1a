// libFuzzer target: the operator/all-reduce profile reader and the model check must return a
// status or a number, never crash, on any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/serving/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<seedance::serving::Profile> p = seedance::serving::ParseProfileCsv(text, "fuzz");
  if (p.ok()) {
    static const seedance::serving::GpuSpec gpu = *seedance::serving::LookupGpu("h100");
    (void)seedance::serving::CheckProfile(*p, gpu);
  }
  return 0;
}
