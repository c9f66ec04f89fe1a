// GPU price table: USD per GPU-hour by GPU model.
//
// The built-in table (PriceTable::Builtin) holds on-demand list prices of common cloud GPUs; the
// source and the date they were read are in docs/cost.md and in PriceTable::source. A YAML file
// (--prices) replaces or extends it:
//   source: "our negotiated rates, 2026-01"   # optional
//   hours_per_month: 730                      # optional, default 730 (8760 / 12)
//   gpu_usd_per_hour:
//     A100-80GB: 2.10
//     "NVIDIA H100 80GB HBM3": 4.00
// Model names are matched after canonicalisation (CanonicalGpuModel), so "NVIDIA A100-SXM4-80GB"
// as reported by NVML or dcgm-exporter finds "A100-80GB".
//
// Thread-safety: plain values.
#ifndef SEEDANCE_COST_PRICES_H_
#define SEEDANCE_COST_PRICES_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace seedance::cost {

// "NVIDIA A100-SXM4-80GB" -> "A100-80GB", "Tesla V100-SXM2-16GB" -> "V100", "NVIDIA L4" -> "L4",
// "NVIDIA H100 80GB HBM3" -> "H100"; a name it does not recognise is returned upper-cased with
// spaces replaced by '-'.
std::string CanonicalGpuModel(std::string_view reported);

struct PriceTable {
  std::map<std::string, double> gpu_usd_per_hour;  // by canonical model
  double hours_per_month = 730;
  std::string source;

  // Built-in on-demand prices (docs/cost.md says where they come from and when).
  static PriceTable Builtin();
  // Price of one GPU of the model, if known.
  std::optional<double> GpuUsdPerHour(std::string_view model) const;
};

// The most a price may be, in USD per GPU-hour; more is taken for a typo (or `.inf`).
inline constexpr double kMaxGpuUsdPerHour = 10000;

// Parses a YAML price table (`source` names it in messages) and lays it over `base` (entries in
// the text win). Errors are InvalidArgument and name the source, the line and the field: invalid
// YAML, an unknown or repeated field, a price that is not a finite number in
// [0, kMaxGpuUsdPerHour] (".inf", ".nan", -1), hours_per_month outside (0, 744], two entries for
// one canonical model, nesting deeper than a price table has.
[[nodiscard]] absl::StatusOr<PriceTable> ParsePrices(std::string_view text,
                                                     const std::string& source,
                                                     const PriceTable& base);
// Reads `path` (base::ReadInput, kind kConfig: "-" = stdin; a directory or missing file is an
// error naming the path) and parses it with ParsePrices.
[[nodiscard]] absl::StatusOr<PriceTable> LoadPrices(const std::string& path,
                                                    const PriceTable& base);

}  // namespace seedance::cost

#endif  // SEEDANCE_COST_PRICES_H_
