// SEEDANCE_CHECK's failure path (check.h).
#include "seedance/base/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace seedance::base::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line), condition_(condition) {}

CheckFailure::~CheckFailure() {
  const std::string message = message_.str();
  std::fprintf(stderr, "seedance: invariant violated at %s:%d: %s%s%s\n", file_, line_,
               condition_, message.empty() ? "" : ": ", message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace seedance::base::internal
