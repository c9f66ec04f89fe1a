// Placement across the members of a federation (docs/federation.md): which member cluster a pod
// (or a whole gang) goes to, from what each member says of itself in GET /v1/cluster.
//
// A member is seen as a MemberView: its configuration (name, region, labels, prices) and the
// summary of its last GET /v1/cluster reply (ParseClusterSummary), or lost. Decide returns a
// typed Decision, never an error: the member chosen (-1: none) with the pod's expected cost
// there, and one reason per member not chosen ("us-east: no node has 8 free V100M16 GPUs
// (largest 4)", "slurm-a: lost").
//
// Fit. A pod fits a member when the summary allows it: for some GPU model it accepts (its
// gpu_spec; empty = any), that model's largest_free has the pod's whole GPUs (num_gpu > 1 or
// gpu_milli == 1000), its CPU and its memory; a GPU-sharing pod (one GPU, gpu_milli < 1000) needs
// only gpu_milli free on that model in all, an approximation (the summary does not say how the
// free milli-GPUs are spread over GPUs). A CPU-only pod needs the cluster's largest_free CPU and
// memory. largest_free reports each resource's maximum over the nodes on its own, so the test is
// necessary, not sufficient: a pod it refuses fits on no node of the member; one it accepts may
// still find no single node with all of it (the member's own scheduler then keeps it pending, and
// a front withdraws it and asks again, as MultiKueue withdraws a copy a worker did not admit).
//
// Constraints, from the pod's labels and request: federation.seedance.io/cluster (the member's
// name), federation.seedance.io/region (the member's region), gpu_spec (the models) and the
// device ask (device_type, device_memory_mib: which models pass is core::DeviceAccepts, the rule
// each member's scheduler applies, so an NPU pod is sent only where there are NPUs and "any
// accelerator with >= X MiB" is priced on every model of either kind that has the memory).
//
// Policies (docs/federation.md compares them):
//   kCost          Seedance: among the members where the pod fits, the lowest expected cost:
//                  gpu_hour(model) x num_gpu x gpu_milli/1000 x hours + cpu_hour x cores x hours
//                  + egress_gb x data_gb when the pod's data lies in another region than the
//                  member's (a member without a region is another region); the model is the
//                  cheapest accepted model with room there, hours the expected duration or 1 h
//                  when unknown. Ties: the most free whole GPUs, then file order.
//   kFirstToAdmit  MultiKueue-like: the first member in file order where the pod fits.
//   kStaticWeights Karmada-like: a deterministic weighted round robin over the members by their
//                  configured weights (WeightedRotation); the member whose turn it is takes the
//                  pod if it fits, else the next in file order after it that fits.
// Gangs are never split: DecideGang places every ask of a gang on one member or on none.
//
// Pure functions over plain values: no I/O, no clock, no threads, so that the HTTP front calls
// exactly these. Thread-safety: the functions may be called from any thread, except that a
// kStaticWeights decision advances the WeightedRotation it is given, which is not thread-safe
// (one owner decides with it).
#ifndef SEEDANCE_FEDERATION_PLACEMENT_H_
#define SEEDANCE_FEDERATION_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/api/api.h"
#include "seedance/federation/config.h"

namespace seedance::federation {

// The pod labels that constrain where it may go.
inline constexpr std::string_view kClusterLabel = "federation.seedance.io/cluster";
inline constexpr std::string_view kRegionLabel = "federation.seedance.io/region";
// The duration kCost prices a pod for when its expected duration is unknown.
inline constexpr double kUnknownDurationS = 3600;

// ---- What a member says of itself: GET /v1/cluster (docs/api.md; server::ClusterSummaryJson).

struct Capacity {
  int64_t cpu_milli = 0, memory_mib = 0, num_gpus = 0;
};
struct FreeRoom {
  int64_t cpu_milli = 0, memory_mib = 0, gpu_milli = 0, whole_gpus = 0;
};
// The most free on any one node, each resource on its own.
struct LargestFree {
  int64_t cpu_milli = 0, memory_mib = 0, whole_gpus = 0;
};
// Schedulable room of a set of nodes (live, not cordoned).
struct Room {
  int64_t nodes = 0;
  Capacity capacity;
  FreeRoom free;
  LargestFree largest_free;
};
struct ModelRoom : Room {
  std::string gpu_model;
  bool npu = false;               // "device_type": "npu" (absent or "gpu": a GPU)
  int64_t device_memory_mib = 0;  // one device's memory; 0 = unknown
};
struct ClusterSummary : Room {
  std::string cluster, backend;
  int64_t cordoned_nodes = 0;
  std::vector<ModelRoom> gpu_models;  // nodes with GPUs, by model
  int64_t pending_pods = 0;
  // The room of `model`'s nodes, or nullptr when the member has none.
  const ModelRoom* Model(std::string_view model) const;
};

// A GET /v1/cluster reply. Keys the reader does not know are ignored (a newer member may say
// more); a known key of the wrong type or a negative count is InvalidArgument "GET /v1/cluster:
// $.free.cpu_milli: must be an integer in 0..9223372036854775807 (got -1)".
absl::StatusOr<ClusterSummary> ParseClusterSummary(std::string_view json);

// ---- Members and pods as the placement sees them.

struct MemberView {
  std::string name;
  std::string region;
  std::map<std::string, std::string> labels;
  Prices prices;
  bool lost = false;  // silent for lost_after: never chosen
  // Not empty: the member is not chosen for this decision and this is the reason given (a front
  // leaves out a member that refused the pod: "refused: ...", "unreachable: ...").
  std::string refused;
  ClusterSummary summary;
};
// The view of a configured member with its last summary.
MemberView ViewOf(const MemberConfig& member, ClusterSummary summary, bool lost = false);

struct PodAsk {
  api::PodRequest request;                    // shape, gpu_spec, labels (the constraints), gang
  std::optional<double> expected_duration_s;  // unknown: priced as kUnknownDurationS
  std::string data_region;                    // "" = the pod reads no data worth moving
  double data_gb = 0;
};

// ---- Policies.

enum class PolicyKind { kCost, kFirstToAdmit, kStaticWeights };
// "cost", "first-to-admit", "static-weights".
std::string_view PolicyName(PolicyKind kind);

// kStaticWeights' turn: a smooth weighted round robin (nginx's) over the members, so that over
// many pods member i takes the share weight_i / sum of weights of those that fit wherever it
// fits, interleaved rather than in runs. Deterministic: no randomness.
class WeightedRotation {
 public:
  // One weight per member, in file order (MemberConfig::weight).
  // REQUIRES: at least one weight; each finite and > 0.
  explicit WeightedRotation(std::vector<double> weights);
  // The members in the order the next pod tries them: the one whose turn it is, then the others
  // in file order after it (wrapping). Changes nothing.
  std::vector<int> Order() const;
  // The pod went to `member`: every member earns its weight, the taker pays the total.
  // REQUIRES: 0 <= member < size().
  void Charge(int member);
  size_t size() const { return weights_.size(); }

 private:
  std::vector<double> weights_;
  std::vector<double> credit_;
  double total_ = 0;
};

struct Policy {
  PolicyKind kind = PolicyKind::kCost;
  // kStaticWeights: the turn, charged by each decision that chose a member. REQUIRES (for
  // kStaticWeights): non-null, with one weight per member view.
  WeightedRotation* rotation = nullptr;
};

struct Decision {
  int member = -1;               // index into the views; -1: the pod fits no member now
  double expected_cost_usd = 0;  // on the chosen member (what kCost minimised); 0 when none
  // Per ask, the GPU model priced there ("" for a CPU-only pod): a front may pin it (gpu_spec)
  // so that the cost holds. Empty when no member was chosen.
  std::vector<std::string> gpu_models;
  // Per ask, what a front pins as the pod's gpu_spec so that the cost holds without tying the
  // pod to one model: the model priced, then every other model of the member the pod accepts
  // priced at most as it is, "|"-joined ("" for a CPU-only pod). A model with no room now is
  // included: the member's scheduler binds the pod to whichever frees first.
  std::vector<std::string> gpu_specs;
  std::vector<std::string> reasons;  // one per member not chosen, in file order
};

// Where the pod goes under `policy`.
Decision Decide(const PodAsk& pod, std::span<const MemberView> members, Policy policy);

// Where a gang goes: one member for all of `gang`'s asks or none. A member fits when every ask
// passes its constraints and fits largest_free on its own (as Decide), and the asks together fit
// the member's free room: CPU and memory in all, and per GPU model the whole GPUs and milli-GPUs
// of the asks priced on it (each ask takes the cheapest accepted model with room). The expected
// cost is the asks' sum. REQUIRES: `gang` is not empty.
Decision DecideGang(std::span<const PodAsk> gang, std::span<const MemberView> members,
                    Policy policy);

}  // namespace seedance::federation

#endif  // SEEDANCE_FEDERATION_PLACEMENT_H_
