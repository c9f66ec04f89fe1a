// Cost model of a deployment (MISSION §1 "Cost model", seed A ch.1) and the slice-size trade-off
// of GPU sharing (seed A §2.1 "Granularity cost model"). docs/cost.md derives every formula.
//
// Cost per 1K tokens: a deployment of `num_gpus` GPUs at `gpu_usd_per_hour` each serves
// `throughput_tokens_per_s` tokens per second while busy and is busy a fraction `utilisation`
// of the time it is paid for:
//   usd_per_1k_tokens = num_gpus * gpu_usd_per_hour / (3600 * throughput * utilisation) * 1000
//
// Slice-size trade-off: a GPU is cut into slices of size s (a fraction of one GPU, 0 < s <= 1).
// Each workload i asks for d_i GPU and receives ceil(d_i / s) slices. Two costs pull apart:
//   fragmentation (rounding) waste  W(s) = sum_i (ceil(d_i/s) * s - d_i)      grows with s
//   per-slice overhead              O(s) = overhead_per_slice * sum_i ceil(d_i/s)
//                                          + metadata_per_gpu_slice / s      grows as s shrinks
// total(s) = W(s) + O(s), in GPUs (multiply by a GPU price for USD/hour). With continuous demand
// (rounding waste ~ s/2 per workload) total(s) ~ n*s/2 + a/s, minimised at s* = sqrt(2a/n).
// The seed's own function overhead(g) = 100/g + base_ops*0.3*(1-g) has no interior minimum for
// base_ops > 333 (its derivative is negative on (0, 1]); SeedOverhead reproduces it for the record.
//
// Thread-safety: pure functions.
#ifndef SEEDANCE_COST_COST_MODEL_H_
#define SEEDANCE_COST_COST_MODEL_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::cost {

struct Deployment {
  double gpu_usd_per_hour = 0;
  int num_gpus = 1;
  double throughput_tokens_per_s = 0;  // while busy, all GPUs together
  double utilisation = 1;              // busy fraction of paid time, (0, 1]
};

// USD per 1,000 tokens. InvalidArgument for non-positive throughput/utilisation or price < 0.
[[nodiscard]] absl::StatusOr<double> CostPer1kTokensUsd(const Deployment& d);

struct SliceCostParams {
  // GPU fraction lost per slice handed out (runtime context, reserved memory, MPS client).
  double overhead_per_slice = 0.005;
  // Scheduler/metadata cost per GPU, proportional to slices per GPU (1/s), in GPUs.
  double metadata_per_gpu_slice = 0.0;
  int num_gpus = 1;  // GPUs whose metadata is counted
};

struct SliceCost {
  double slice = 0;          // s
  int slices = 0;            // sum_i ceil(d_i / s)
  double waste_gpus = 0;     // W(s)
  double overhead_gpus = 0;  // O(s)
  double total_gpus() const { return waste_gpus + overhead_gpus; }
};

// Cost of slice size s for the demands (each in (0, 1] GPU... or more for multi-GPU demands).
// REQUIRES: 0 < s <= 1, every demand > 0.
SliceCost SliceCostOf(std::span<const double> demands, double slice, const SliceCostParams& p);

// The candidate slice size with the least total cost (ties: the larger slice, fewer objects).
// InvalidArgument if candidates or demands are empty or out of range.
[[nodiscard]] absl::StatusOr<SliceCost> BestSliceSize(std::span<const double> demands,
                                                      std::span<const double> candidates,
                                                      const SliceCostParams& p);

// Power-of-two candidates 1, 1/2, ..., 1/max_slices_per_gpu.
std::vector<double> PowerOfTwoSlices(int max_slices_per_gpu);

// Continuous approximation: total(s) = n*s/2 + a/s with a = overhead_per_slice * sum_i d_i +
// metadata_per_gpu_slice * num_gpus; minimiser s* = sqrt(2a/n), clamped to (0, 1].
double ContinuousOptimalSlice(std::span<const double> demands, const SliceCostParams& p);

// The seed's function (seed A §2.1), kept to document why it cannot be used as is.
double SeedOverhead(double granularity, double base_ops = 1e6);

}  // namespace seedance::cost

#endif  // SEEDANCE_COST_COST_MODEL_H_
