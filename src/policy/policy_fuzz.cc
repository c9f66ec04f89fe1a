// libFuzzer target: ParsePolicy on arbitrary bytes must return a value or an error, never crash,
// hang or leak; a parsed policy must answer ProfileFor and evaluate its conditions.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "seedance/policy/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<seedance::policy::Policy> p = seedance::policy::ParsePolicy(text, "fuzz.yaml");
  if (!p.ok()) return 0;
  (void)p->ProfileFor("default", {{"team", "a"}}, 0);
  const std::map<std::string, double> metrics = {
      {"gpu_free_pct", 5},
      {"pending_pods", std::numeric_limits<double>::quiet_NaN()},
      {"nodes", 0},
      {"bind_rate_per_s", std::numeric_limits<double>::infinity()}};
  for (const seedance::policy::Rule& r : p->rules) (void)r.condition.Eval(metrics);
  return 0;
}
