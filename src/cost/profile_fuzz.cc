// libFuzzer target: any bytes given to `seedance analyze` as a profile must give a status or a
// report, never a crash: the profile reader, the analysis and its three renderings.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/cost/analyze.h"
#include "seedance/telemetry/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = seedance::telemetry::ParseProfileJson(text, "fuzz");
  if (!profile.ok()) return 0;
  auto report = seedance::cost::Analyze(*profile, seedance::cost::PriceTable::Builtin(), {});
  if (!report.ok()) return 0;
  (void)seedance::cost::RenderText(*report, *profile);
  (void)seedance::cost::RenderJson(*report, *profile);
  (void)seedance::cost::RenderHtml(*report, *profile);
  (void)seedance::telemetry::ToJson(*profile);
  return 0;
}
