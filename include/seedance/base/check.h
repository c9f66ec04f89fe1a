// Invariant checks that stay on in every build type, Release included.
//
//   SEEDANCE_CHECK(free_blocks_ <= num_blocks_) << "block " << id << " freed twice";
//
// A failed check is a bug in Seedance, not bad input: it prints "seedance: invariant violated
// at FILE:LINE: CONDITION: MESSAGE" to stderr and aborts the process, so a core dump or a death
// test sees it. Expected failures (bad input, I/O) are absl::Status values, never checks.
// Unlike assert(), NDEBUG does not remove these; the condition is evaluated exactly once.
#pragma once

#include <sstream>

namespace seedance::base {
namespace internal {

// Collects the message of a failed check; its destructor reports it and aborts.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return message_; }

 private:
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream message_;
};

// Gives the `cond ? (void)0 : Voidify() & stream` trick a void right-hand side.
struct CheckVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace seedance::base

#define SEEDANCE_CHECK(condition)                             \
  (condition) ? (void)0                                       \
              : ::seedance::base::internal::CheckVoidify() &  \
                    ::seedance::base::internal::CheckFailure( \
                        __FILE__, __LINE__, #condition)       \
                        .stream()

// Marks a point the code must never reach (an unhandled enum value, a broken invariant).
#define SEEDANCE_UNREACHABLE() SEEDANCE_CHECK(false) << "unreachable code reached"
