// Random identifiers: the uids of pods, at a server and at a federation front.
//
// Thread-safety: NewUuid may be called from any thread (each thread has its own generator).
#ifndef SEEDANCE_BASE_UUID_H_
#define SEEDANCE_BASE_UUID_H_

#include <string>

namespace seedance::base {

// A random RFC 4122 version 4 UUID, lower-case hex: "5f0c3a1e-9b7d-4c2a-8e11-0d6b2f3c4a5b".
std::string NewUuid();

}  // namespace seedance::base

#endif  // SEEDANCE_BASE_UUID_H_
