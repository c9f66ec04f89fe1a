// Names the calling thread as `top -H`, `ps -L`, perf and gdb show it, so that an operator can
// tell the server's threads apart (the HTTP I/O threads, the service loop, a federation front's
// client loop and member threads). Linux keeps 15 bytes of a name: longer names are cut.
//
// Thread-safety: names the calling thread only.
#ifndef SEEDANCE_BASE_THREAD_NAME_H_
#define SEEDANCE_BASE_THREAD_NAME_H_

#include <string>
#include <string_view>

namespace seedance::base {

void NameThisThread(std::string_view name);
// The calling thread's name ("" when it cannot be read).
std::string ThisThreadName();

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_THREAD_NAME_H_
