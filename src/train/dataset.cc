// The trainer's data set: a numeric CSV read by the one CSV scanner, split and standardised.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/trace/csv_table.h"
#include "seedance/train/trainer.h"

namespace seedance::train {

absl::StatusOr<Dataset> ParseCsvDataset(std::string_view text, std::string_view source,
                                        int label_column) {
  absl::StatusOr<trace::table::NumericTable> table = trace::table::ReadNumericTable(text, source);
  if (!table.ok()) return table.status();
  const int columns = static_cast<int>(table->names.size());
  const int label = label_column < 0 ? columns + label_column : label_column;
  if (columns < 2 || label < 0 || label >= columns) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace::AbslView(source), ": --label-column ", label_column,
                     " is not a column of a ", columns, "-column table (0..", columns - 1,
                     ", or -1 for the last); a data set needs a label and "
                     "at least one feature"));
  }
  if (table->rows() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace::AbslView(source), ": the table has no data rows"));
  }
  Dataset data;
  data.features = columns - 1;
  data.x.reserve(table->rows() * static_cast<size_t>(data.features));
  for (size_t r = 0; r < table->rows(); ++r) {
    const double* row = table->values.data() + r * static_cast<size_t>(columns);
    const double y = row[label];
    if (y < 0 || y != std::floor(y) || y > 1e6) {
      return absl::InvalidArgumentError(
          absl::StrCat(trace::AbslView(source), ":", table->lines[r], ": field '",
                       table->names[static_cast<size_t>(label)],
                       "': a class label must be an integer in 0..1000000 (got '", y, "')"));
    }
    data.y.push_back(static_cast<int>(y));
    data.classes = std::max(data.classes, static_cast<int>(y) + 1);
    for (int c = 0; c < columns; ++c) {
      if (c != label) data.x.push_back(static_cast<float>(row[c]));
    }
  }
  if (data.classes < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        trace::AbslView(source), ": column '", table->names[static_cast<size_t>(label)],
        "' holds one class only; a classifier needs at least two"));
  }
  return data;
}

absl::StatusOr<Dataset> ReadCsvDataset(const std::string& path, int label_column) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseCsvDataset(*text, path, label_column);
}

namespace {

Dataset Take(const Dataset& all, std::span<const size_t> rows) {
  Dataset part;
  part.features = all.features;
  part.classes = all.classes;
  const size_t f = static_cast<size_t>(all.features);
  for (size_t r : rows) {
    part.y.push_back(all.y[r]);
    part.x.insert(part.x.end(), all.x.begin() + static_cast<ptrdiff_t>(r * f),
                  all.x.begin() + static_cast<ptrdiff_t>((r + 1) * f));
  }
  return part;
}

// Standardises every feature of `parts` by the mean and deviation of `reference` (a constant
// feature is centred only).
void Standardize(const Dataset& reference, std::initializer_list<Dataset*> parts) {
  const size_t f = static_cast<size_t>(reference.features);
  std::vector<double> mean(f, 0.0), var(f, 0.0);
  const double n = static_cast<double>(std::max<size_t>(1, reference.rows()));
  for (size_t r = 0; r < reference.rows(); ++r) {
    for (size_t c = 0; c < f; ++c) mean[c] += reference.x[r * f + c] / n;
  }
  for (size_t r = 0; r < reference.rows(); ++r) {
    for (size_t c = 0; c < f; ++c) {
      const double d = reference.x[r * f + c] - mean[c];
      var[c] += d * d / n;
    }
  }
  for (Dataset* part : parts) {
    for (size_t r = 0; r < part->rows(); ++r) {
      for (size_t c = 0; c < f; ++c) {
        const double sd = std::sqrt(var[c]);
        const double centred = part->x[r * f + c] - mean[c];
        part->x[r * f + c] = static_cast<float>(sd > 1e-12 ? centred / sd : centred);
      }
    }
  }
}

}  // namespace

Split SplitDataset(const Dataset& all, double test_fraction, uint64_t seed) {
  std::vector<size_t> order(all.rows());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  size_t test = static_cast<size_t>(std::llround(test_fraction * static_cast<double>(all.rows())));
  if (test_fraction > 0 && test == 0) test = 1;
  test = std::min(test, all.rows() > 0 ? all.rows() - 1 : 0);
  Split split;
  split.test = Take(all, std::span<const size_t>(order.data(), test));
  split.train = Take(all, std::span<const size_t>(order.data() + test, order.size() - test));
  const Dataset reference = split.train;
  Standardize(reference, {&split.train, &split.test});
  return split;
}

}  // namespace seedance::train
