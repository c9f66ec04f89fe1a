// The bytes of one store::Batch as the etcd store keeps it in a log or snapshot key: a magic
// ("SDB1", or "SDB2" when the batch has objects), then every field length-prefixed
// (little-endian fixed-width integers); SDB2 appends put_objects (kind, key, json, revision),
// delete_objects and delete_object_prefixes to SDB1's fields. A batch without objects is
// written as SDB1, byte for byte as before objects existed, so older replicas still read it.
// Decoding reads both and checks every length against what is left, so a torn or foreign value
// is DataLoss, never a crash.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "seedance/store/store.h"

namespace seedance::ha {

std::string EncodeBatch(const store::Batch& batch);
absl::StatusOr<store::Batch> DecodeBatch(std::string_view bytes);

}  // namespace seedance::ha
