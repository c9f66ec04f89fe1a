// Schema-checked readers of Prometheus HTTP API replies (/api/v1/query, /api/v1/query_range).
//
// A reply is untrusted input: every field is checked for its type and meaning, and the first
// problem is an error that names the request (`where`, e.g. "prometheus http://h:9090
// /api/v1/query (query 'up')") and the JSON path of the offending value, e.g.
//   ...: $.data.result[3].value[1]: expected a string holding a number
// Errors are DataLoss (a malformed reply; the CLI exits 1), never an abort. Bodies over
// kMaxPrometheusResponseBytes or nested deeper than kMaxPrometheusJsonDepth are refused before
// they are parsed.
//
// Thread-safety: pure functions.
#ifndef SEEDANCE_TELEMETRY_PROMETHEUS_RESPONSE_H_
#define SEEDANCE_TELEMETRY_PROMETHEUS_RESPONSE_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::telemetry::internal {

// Largest reply body read from a Prometheus server (after decompression): 256 MiB.
inline constexpr size_t kMaxPrometheusResponseBytes = size_t{256} << 20;
// Deepest nesting of arrays and objects a reply may have (real replies have 5).
inline constexpr int kMaxPrometheusJsonDepth = 64;

using PromLabels = std::map<std::string, std::string>;
struct PromSample {
  PromLabels metric;
  double value = 0;  // NaN for "NaN", "+Inf", "-Inf" (not measurable)
};
// One instant vector.
using PromVector = std::vector<PromSample>;

// The body of a successful (HTTP 200) instant query: resultType "vector".
absl::StatusOr<PromVector> ParseQueryResponse(std::string_view body, std::string_view where);

// The body of a successful range query over start, start + step, ..., end (step > 0): one
// PromVector per step; points off the grid are placed at the nearest step, points outside the
// range are dropped. REQUIRES: start <= end, step > 0, (end - start) / step < 2^31.
absl::StatusOr<std::vector<PromVector>> ParseRangeResponse(std::string_view body,
                                                           std::string_view where, double start,
                                                           double end, double step);

// The "error" string of a Prometheus error reply (clipped to 200 bytes), or "" when the body is
// not one.
std::string PrometheusErrorMessage(std::string_view body);

}  // namespace seedance::telemetry::internal

#endif  // SEEDANCE_TELEMETRY_PROMETHEUS_RESPONSE_H_
