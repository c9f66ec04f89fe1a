// Kubernetes resource quantities ("500m", "2", "1.5", "16Gi", "100M", "1e3"), as
// k8s.io/apimachinery/pkg/api/resource parses them:
//   quantity  ::= sign? number suffix
//   number    ::= digits | digits "." digits? | "." digits
//   suffix    ::= "" | binarySI | decimalSI | ("e" | "E") sign? digits
//   binarySI  ::= Ki Mi Gi Ti Pi Ei            (powers of 1024)
//   decimalSI ::= n u m k M G T P E            (powers of 1000)
// Values are converted exactly (integer arithmetic, no floating point) to a target unit and
// rounded in the direction the caller asks: requests round up, capacities round down, so that
// Seedance never promises more than the cluster has.
//
// Thread-safety: pure functions.
#ifndef SEEDANCE_K8S_QUANTITY_H_
#define SEEDANCE_K8S_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace seedance::k8s {

enum class Round { kUp, kDown };

// The target unit: value x 10^decimal_exp x 2^binary_exp. Milli-units (CPU) are {3, 0}; MiB from
// bytes is {0, -20}; plain counts are {0, 0}.
struct Unit {
  int decimal_exp = 0;
  int binary_exp = 0;
};
inline constexpr Unit kMilli{3, 0};
inline constexpr Unit kMib{0, -20};
inline constexpr Unit kCount{0, 0};

// The quantity in `unit`, rounded as asked. InvalidArgument (message without a location: the
// caller adds one) for text that is not a quantity, a negative value, more than 18 significant
// digits, or a result beyond int64.
[[nodiscard]] absl::StatusOr<int64_t> ParseQuantity(std::string_view text, Unit unit, Round round);

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_QUANTITY_H_
