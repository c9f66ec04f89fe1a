// libFuzzer target: any bytes given to `seedance analyze --prices` must give a status or a price
// table, never a crash, a hang or a stack overflow (yaml-cpp's recursive parser behind the
// nesting pre-check); a table that parses holds only finite, non-negative prices.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/cost/prices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto base = seedance::cost::PriceTable::Builtin();
  auto table = seedance::cost::ParsePrices(text, "fuzz.yaml", base);
  if (!table.ok()) return 0;
  for (const auto& [model, price] : table->gpu_usd_per_hour) {
    SEEDANCE_CHECK(std::isfinite(price) && price >= 0)
        << "a parsed price table holds " << price << " $/h for " << model;
  }
  SEEDANCE_CHECK(table->hours_per_month > 0 && table->hours_per_month <= 744)
      << "a parsed price table holds " << table->hours_per_month << " hours per month";
  return 0;
}
