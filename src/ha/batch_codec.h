// The bytes of one store::Batch as the etcd store keeps it in a log or snapshot key: a magic
// ("SDB1"), then every field length-prefixed (little-endian fixed-width integers). Decoding
// checks every length against what is left, so a torn or foreign value is DataLoss, never a
// crash.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "seedance/store/store.h"

namespace seedance::ha {

std::string EncodeBatch(const store::Batch& batch);
absl::StatusOr<store::Batch> DecodeBatch(std::string_view bytes);

}  // namespace seedance::ha
