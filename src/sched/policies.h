// Internal: plugin classes of the built-in policies and their GPU choosers.
#ifndef SEEDANCE_SCHED_POLICIES_H_
#define SEEDANCE_SCHED_POLICIES_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/framework.h"
#include "seedance/sched/registry.h"

namespace seedance::sched::internal {

// Best-fit GPU choice of the reference's Open-Gpu-Share plugin: a sharing pod goes to the GPU
// with the least room that still fits (lowest index on ties); whole-GPU pods take the
// lowest-indexed fully free GPUs.
bool ChooseBestFitGpus(const core::ClusterState& s, const core::PodShape& pod, core::Placement* p);
// A Reserve plugin choosing the GPUs by ChooseBestFitGpus (the baselines' and gpushare's).
std::shared_ptr<ReservePlugin> NewBestFitGpuReserve();
// Lowest-indexed fully free GPUs (the reference's AllocateExclusiveGpuId); for a pod asking for
// a share of each of several GPUs (a Kubernetes HAMi or KAI request; the reference's traces have
// none), the lowest-indexed GPUs with that share left.
bool ChooseExclusiveGpus(const core::ClusterState& s, const core::PodShape& pod,
                         core::Placement* p);

// cas's option names, and a check of `params` as cas options (kInvalidArgument naming the
// option, its accepted range and the value).
std::vector<std::string> CasOptionNames();
absl::Status CheckCasOptions(const std::map<std::string, std::string>& params);

// The reference policies take no options. A run comparing several policies hands the same
// options to each, so cas's options are accepted (checked, then unused); any other key is
// kInvalidArgument naming it.
absl::Status CheckReferencePolicyOptions(const PolicyContext& ctx, const std::string& policy);

absl::StatusOr<Profile> MakeRandom(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeDotProd(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeClustering(const PolicyContext& ctx);
absl::StatusOr<Profile> MakePacking(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeBestFit(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeFgd(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeCas(const PolicyContext& ctx);
// kube-scheduler's resource scoring (kube_default.cc): NodeResourcesFit with the LeastAllocated
// (its default) or MostAllocated strategy plus NodeResourcesBalancedAllocation, over CPU and
// memory only; GPUs of a sharing pod best fit (gpushare's binpack).
absl::StatusOr<Profile> MakeLeastAllocated(const PolicyContext& ctx);
absl::StatusOr<Profile> MakeMostAllocated(const PolicyContext& ctx);

}  // namespace seedance::sched::internal

#endif  // SEEDANCE_SCHED_POLICIES_H_
