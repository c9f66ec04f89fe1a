#include "seedance/base/uuid.h"

#include <cstdint>
#include <random>

#include "absl/strings/str_format.h"

namespace seedance::base {

std::string NewUuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng(), b = rng();
  // Version 4 in the third group's first digit, variant 10 in the fourth group's top bits.
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                         ((b >> 48) & 0x3fff) | 0x8000, b & 0xffffffffffffull);
}

}  // namespace seedance::base
