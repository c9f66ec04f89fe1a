// libFuzzer target: any bytes a Prometheus server sends as the body of an instant or a range
// query must give a status or vectors, never a crash (schema checks, number parsing, the range
// grid). The first byte picks the reader and the range's step.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "prometheus_response.h"
#include "seedance/base/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  namespace in = seedance::telemetry::internal;
  if (mode & 1) {
    (void)in::ParseQueryResponse(body, "fuzz /api/v1/query");
  } else {
    const double step = 1 + (mode >> 1);
    const double start = 1700000000;
    auto r =
        in::ParseRangeResponse(body, "fuzz /api/v1/query_range", start, start + 10 * step, step);
    SEEDANCE_CHECK(!r.ok() || r->size() == 11)
        << "a range of 10 steps parsed into " << r->size() << " points, not 11";
  }
  (void)in::PrometheusErrorMessage(body);
  return 0;
}
