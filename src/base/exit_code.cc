// The one table from status codes to exit codes (exit_code.h, docs/cli.md).
#include "seedance/base/exit_code.h"

namespace seedance::base {

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kUnimplemented:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

}  // namespace seedance::base
