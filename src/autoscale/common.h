// Helpers shared by the three autoscaler modes (internal to seedance_autoscale).
#ifndef SEEDANCE_SRC_AUTOSCALE_COMMON_H_
#define SEEDANCE_SRC_AUTOSCALE_COMMON_H_

#include <initializer_list>
#include <string_view>

#include "absl/status/status.h"
#include "seedance/autoscale/autoscaler.h"

namespace seedance::autoscale::internal {

// InvalidArgument "<mode>: field 'min_replicas' ..." unless 1 <= min_replicas <= max_replicas.
[[nodiscard]] absl::Status ValidateReplicaBounds(std::string_view mode, int min_replicas,
                                                 int max_replicas);

// InvalidArgument "<mode>: field '<field>': must be <what> (got V)" unless `ok`; also rejects a
// non-finite value.
[[nodiscard]] absl::Status ValidateField(std::string_view mode, std::string_view field,
                                         double value, bool ok, std::string_view what);

// One option's check, for a table of them.
struct FieldCheck {
  const char* field;
  double value;
  bool ok;
  const char* what;
};
// The first failing check of `checks` as ValidateField's status; OK when all pass.
[[nodiscard]] absl::Status ValidateFields(std::string_view mode,
                                          std::initializer_list<FieldCheck> checks);

// Checks the REQUIRES of Autoscaler::Decide that all modes share (time order, replica count) and
// records now_s in *last_now_s.
void CheckObservation(const Observation& obs, double* last_now_s);

// A finite value >= 0 (a metric).
void CheckMetric(std::string_view name, double value);

int Clamp(int replicas, int min_replicas, int max_replicas);

}  // namespace seedance::autoscale::internal

#endif  // SEEDANCE_SRC_AUTOSCALE_COMMON_H_
