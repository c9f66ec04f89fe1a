// libFuzzer target: the cluster descriptor parsers (YAML and JSON) must return a status, never
// crash, hang or exhaust memory, on any bytes. The first byte picks the format, so one corpus
// covers both; whatever parses must also survive a round trip through the writers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/core/resource_descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto parsed = json ? seedance::core::ParseClusterJson(text, "fuzz.json")
                     : seedance::core::ParseClusterYaml(text, "fuzz.yaml");
  if (!parsed.ok()) return 0;
  (void)seedance::core::ToNodeSpecs(*parsed);
  auto again = json ? seedance::core::ParseClusterJson(seedance::core::ToJson(*parsed), "fuzz")
                    : seedance::core::ParseClusterYaml(seedance::core::ToYaml(*parsed), "fuzz");
  SEEDANCE_CHECK(again.ok()) << again.status().message();
  return 0;
}
