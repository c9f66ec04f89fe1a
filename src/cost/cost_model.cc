#include "seedance/cost/cost_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace seedance::cost {

absl::StatusOr<double> CostPer1kTokensUsd(const Deployment& d) {
  if (!(d.gpu_usd_per_hour >= 0)) return absl::InvalidArgumentError("GPU price must be >= 0");
  if (d.num_gpus <= 0) return absl::InvalidArgumentError("num_gpus must be > 0");
  if (!(d.throughput_tokens_per_s > 0)) return absl::InvalidArgumentError("throughput must be > 0");
  if (!(d.utilisation > 0 && d.utilisation <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("utilisation must be in (0, 1], got ", d.utilisation));
  }
  const double usd_per_s = d.num_gpus * d.gpu_usd_per_hour / 3600.0;
  const double tokens_per_s = d.throughput_tokens_per_s * d.utilisation;
  return usd_per_s / tokens_per_s * 1000.0;
}

SliceCost SliceCostOf(std::span<const double> demands, double slice, const SliceCostParams& p) {
  SliceCost c;
  c.slice = slice;
  for (double d : demands) {
    // A hair of tolerance so that 0.25 / 0.125 counts as exactly 2 slices.
    const double k = std::ceil(d / slice - 1e-9);
    c.slices += static_cast<int>(k);
    c.waste_gpus += k * slice - d;
  }
  c.overhead_gpus = p.overhead_per_slice * c.slices + p.metadata_per_gpu_slice * p.num_gpus / slice;
  return c;
}

absl::StatusOr<SliceCost> BestSliceSize(std::span<const double> demands,
                                        std::span<const double> candidates,
                                        const SliceCostParams& p) {
  if (demands.empty()) return absl::InvalidArgumentError("no demands");
  if (candidates.empty()) return absl::InvalidArgumentError("no candidate slice sizes");
  for (double d : demands) {
    if (!(d > 0)) return absl::InvalidArgumentError(absl::StrCat("demand must be > 0, got ", d));
  }
  SliceCost best;
  bool have = false;
  for (double s : candidates) {
    if (!(s > 0 && s <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("slice size must be in (0, 1], got ", s));
    }
    SliceCost c = SliceCostOf(demands, s, p);
    const double eps = 1e-12;
    if (!have || c.total_gpus() < best.total_gpus() - eps ||
        (std::fabs(c.total_gpus() - best.total_gpus()) <= eps && s > best.slice)) {
      best = c;
      have = true;
    }
  }
  return best;
}

std::vector<double> PowerOfTwoSlices(int max_slices_per_gpu) {
  std::vector<double> out;
  for (int k = 1; k <= max_slices_per_gpu; k *= 2) out.push_back(1.0 / k);
  return out;
}

double ContinuousOptimalSlice(std::span<const double> demands, const SliceCostParams& p) {
  if (demands.empty()) return 1.0;
  double sum = 0;
  for (double d : demands) sum += d;
  const double n = static_cast<double>(demands.size());
  const double a = p.overhead_per_slice * sum + p.metadata_per_gpu_slice * p.num_gpus;
  if (a <= 0) return 1e-9;  // no overhead: the finer the better
  return std::clamp(std::sqrt(2.0 * a / n), 1e-9, 1.0);
}

double SeedOverhead(double granularity, double base_ops) {
  const double metadata_overhead = 100.0 * (1.0 / granularity);
  const double fragmentation_loss = 0.3 * (1.0 - granularity);
  return metadata_overhead + base_ops * fragmentation_loss;
}

}  // namespace seedance::cost
