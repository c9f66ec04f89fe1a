// JSON forms of the live scheduler's objects: what the API replies, what the watch stream
// carries and what the state store keeps (docs/api.md).
//
// Nodes round-trip exactly through NodeToJson / NodeFromJson (the store keeps this form); pods
// through PodToJson / PodFromJson. The reply forms add what the server knows beyond the object
// (allocation, the pods on a node).
#ifndef SEEDANCE_SERVER_CODEC_H_
#define SEEDANCE_SERVER_CODEC_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/core/cluster_state.h"
#include "seedance/sched/ledger.h"

namespace seedance::server {

using Json = nlohmann::ordered_json;

// The node's spec: name, cpu_milli, memory_mib, num_gpus, gpu_model, cost_usd_per_hour, power_w,
// labels, taints, topology.
Json NodeToJson(const core::NodeSpec& node);
absl::StatusOr<core::NodeSpec> NodeFromJson(const Json& j);

// GET /v1/nodes/{name}: the spec plus cordoned, allocated and free resources per GPU, and the
// uids of the pods bound there (when with_pods).
Json NodeStatusJson(const core::ClusterState& state, int n, const sched::PodLedger& ledger,
                    bool with_pods);

// GET /v1/cluster: this cluster's name and backend, its schedulable capacity (live nodes not
// cordoned) and what is free on it, per GPU model too (largest free CPU, memory and whole GPUs on
// one node: whether a pod can fit at all), and the pods waiting. What a federation front reads of
// a member (docs/federation.md).
Json ClusterSummaryJson(const std::string& cluster, const std::string& backend,
                        const core::ClusterState& state, size_t pending_pods);

// The API's pod: uid, name, namespace, phase, node, gpus [{index, milli}], revision, and the
// request (cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, priority, labels, gang).
Json PodToJson(const sched::PodInfo& pod, const core::ClusterState& state);
// DumpJson(PodToJson(pod, state), -1) written directly, byte for byte the same, without the
// tree (the submit path writes a pod three times: its event, its stored record, the reply).
// as_pending: the pod as it was submitted (phase Pending, no node, GPUs or NUMA node);
// revision >= 0 replaces pod.revision.
std::string PodJsonText(const sched::PodInfo& pod, const core::ClusterState& state,
                        bool as_pending = false, int64_t revision = -1);
// Inverse of PodToJson (node resolved by name against `state`; the placement's node must exist).
absl::StatusOr<sched::PodInfo> PodFromJson(const Json& j, const core::ClusterState& state);

// The pod a POST /v1/pods request (or a deployment's template) makes: a new uid (base::NewUuid),
// created now.
sched::PodInfo PodFromRequest(api::PodRequest request);

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_CODEC_H_
