// libFuzzer target: the CSV readers (and the numeric table of training data sets) must return a
// status, never crash, on any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/trace/csv_reader.h"
#include "seedance/trace/csv_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)seedance::trace::ParseNodeCsv(text, "fuzz");
  (void)seedance::trace::ParsePodCsv(text, "fuzz");
  // The schema-free numeric table of `seedance train`'s data sets (seedance_train).
  absl::StatusOr<seedance::trace::table::NumericTable> table =
      seedance::trace::table::ReadNumericTable(text, "fuzz");
  if (table.ok() && table->values.size() != table->rows() * table->names.size()) __builtin_trap();
  return 0;
}
