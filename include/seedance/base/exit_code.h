// Exit codes of every Seedance command, decided in one place from the status code, never from
// the message text: 0 success, 1 I/O or runtime failure, 2 usage or input error.
#pragma once

#include "absl/status/status.h"

namespace seedance::base {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // I/O errors, unreachable services, internal errors
inline constexpr int kExitUsage = 2;    // bad flags, malformed or meaningless input

// kOk -> 0. Usage and input errors -> 2: kInvalidArgument (malformed or meaningless input, bad
// flag), kOutOfRange (a value outside its accepted range), kNotFound (a named input does not
// exist), kAlreadyExists, kUnimplemented (a feature the input asks for that Seedance lacks).
// Every other code -> 1: kPermissionDenied, kDataLoss (read/write errors), kUnavailable,
// kDeadlineExceeded (services), kResourceExhausted, kFailedPrecondition, kInternal, kUnknown...
// The same table is in docs/cli.md.
int ExitCodeFor(const absl::Status& status);

}  // namespace seedance::base
