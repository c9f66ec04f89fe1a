// libFuzzer target: the operator/all-reduce profile reader and the model check must return a
// status or a number, never crash, on any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/model/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<seedance::model::Profile> p = seedance::model::ParseProfileCsv(text, "fuzz");
  if (p.ok()) {
    static const seedance::model::GpuSpec gpu = *seedance::model::LookupGpu("h100");
    (void)seedance::model::CheckProfile(*p, gpu);
  }
  return 0;
}
