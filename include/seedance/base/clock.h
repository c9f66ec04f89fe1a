// The wall clock as the services and collectors read it: seconds since the Unix epoch.
#ifndef SEEDANCE_BASE_CLOCK_H_
#define SEEDANCE_BASE_CLOCK_H_

#include <chrono>

namespace seedance::base {

// Seconds since the Unix epoch, with the system clock's resolution (it may step: for
// timestamps and schedules that follow the wall clock, not for measuring durations).
inline double UnixNowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_CLOCK_H_
