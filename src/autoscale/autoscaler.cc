#include "seedance/autoscale/autoscaler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common.h"
#include "seedance/base/check.h"

namespace seedance::autoscale {

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kHpa:
      return "hpa";
    case Mode::kSeed:
      return "seed";
    case Mode::kPredictive:
      return "predictive";
  }
  SEEDANCE_UNREACHABLE();
  return "";
}

absl::StatusOr<Mode> ParseMode(std::string_view name) {
  for (Mode m : {Mode::kHpa, Mode::kSeed, Mode::kPredictive}) {
    if (name == ModeName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat("autoscaler mode: got '", std::string(name),
                                                 "', expected one of hpa, seed, predictive"));
}

namespace internal {

absl::Status ValidateReplicaBounds(std::string_view mode, int min_replicas, int max_replicas) {
  if (min_replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(mode), ": field 'min_replicas': must be >= 1 (got ", min_replicas, ")"));
  }
  if (max_replicas < min_replicas) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(mode), ": field 'max_replicas': must be >= min_replicas ",
                     min_replicas, " (got ", max_replicas, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateField(std::string_view mode, std::string_view field, double value, bool ok,
                           std::string_view what) {
  if (ok && std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(mode), ": field '", std::string(field),
                                                 "': must be ", std::string(what), " (got ", value,
                                                 ")"));
}

absl::Status ValidateFields(std::string_view mode, std::initializer_list<FieldCheck> checks) {
  for (const FieldCheck& c : checks) {
    if (absl::Status s = ValidateField(mode, c.field, c.value, c.ok, c.what); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void CheckObservation(const Observation& obs, double* last_now_s) {
  SEEDANCE_CHECK(std::isfinite(obs.now_s) && obs.now_s >= *last_now_s)
      << "observation at " << obs.now_s << " s comes before the previous one at " << *last_now_s
      << " s";
  SEEDANCE_CHECK(obs.current_replicas >= 0)
      << "current_replicas " << obs.current_replicas << " is negative";
  *last_now_s = obs.now_s;
}

void CheckMetric(std::string_view name, double value) {
  SEEDANCE_CHECK(std::isfinite(value) && value >= 0)
      << "metric " << name << " = " << value << " is not a finite value >= 0";
}

int Clamp(int replicas, int min_replicas, int max_replicas) {
  return std::clamp(replicas, min_replicas, max_replicas);
}

}  // namespace internal
}  // namespace seedance::autoscale
