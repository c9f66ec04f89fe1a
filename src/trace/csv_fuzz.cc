// libFuzzer target: the CSV readers must return a status, never crash, on any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/trace/csv_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)seedance::trace::ParseNodeCsv(text, "fuzz");
  (void)seedance::trace::ParsePodCsv(text, "fuzz");
  return 0;
}
