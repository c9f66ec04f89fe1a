// libFuzzer target: any bytes given to `seedance analyze` as a profile must give a status or a
// profile, never a crash (the fast reader, nlohmann's fallback and its error paths), and a profile
// that parses must survive its own JSON form.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/telemetry/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = seedance::telemetry::ParseProfileJson(text, "fuzz");
  if (!profile.ok()) return 0;
  (void)seedance::telemetry::ParseProfileJson(seedance::telemetry::ToJson(*profile), "again");
  return 0;
}
