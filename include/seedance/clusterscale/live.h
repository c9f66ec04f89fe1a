// The cluster autoscaler's decisions for a live cluster (`seedance server --node-groups`,
// docs/cluster-autoscaler.md "In the service"): the same node groups, expansion options and
// expanders as the simulator (cluster_autoscaler.h), driven by what the service sees at each scan
// instead of by a simulated clock.
//
// One scan, as the Kubernetes Cluster Autoscaler's RunOnce:
//   1. Nodes asked for earlier are matched against the nodes that exist: one that exists has
//      joined; one still missing after provision_timeout_s has failed, is forgotten (its room in
//      the group is given back) and its group is backed off for backoff_s (CA's node group
//      backoff) so a broken provisioner is not asked again every scan.
//   2. Scale-down: a node of a group with no pod on it is unneeded from the first scan that saw
//      it empty; unneeded for scale_down_unneeded_s or more, and its group above min_size, it is
//      removed (CA's --scale-down-unneeded-time; CA's default is the same 10 minutes).
//   3. Scale-up: the unschedulable pods that would not fit on the nodes still being provisioned
//      (each as its group's empty template, first fit) are handed to the expander with each
//      group's room (max_size less its existing and requested nodes); its choice is requested
//      under names GROUP-K, K the lowest not in use by a node or a request of the group (as
//      Slurm's fixed pool of cloud node names: at most max_size + 1 names per group are used).
// Nothing here does I/O or reads a clock.
//
// Thread-safety: not thread-safe; callers serialise access.
#ifndef SEEDANCE_CLUSTERSCALE_LIVE_H_
#define SEEDANCE_CLUSTERSCALE_LIVE_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "seedance/clusterscale/cluster_autoscaler.h"

namespace seedance::clusterscale {

namespace internal {
class ArrivalWindow;
}  // namespace internal

struct LiveOptions {
  ScaleUpOptions scale_up;
  double scale_down_unneeded_s = 600;  // CA's --scale-down-unneeded-time
  double provision_timeout_s = 900;    // CA's --max-node-provision-time is 15 min
  double backoff_s = 300;              // CA's --initial-node-group-backoff-duration
  // CA's --scale-down-utilization-threshold: a node of a group whose utilization (LiveNode) stays
  // below this for scale_down_unneeded_s is drained when every pod on it fits on the other
  // schedulable nodes (simulated: best fit, largest GPU request first): its pods are evicted
  // (back to the queue, each a restart) and the node removed. 0 = off: only empty nodes are
  // removed. CA's default is 0.5; here off, as evicting a training pod costs its progress since
  // the last checkpoint.
  double scale_down_utilization_threshold = 0;
  int max_drains_per_scan = 1;  // CA drains non-empty nodes one at a time
  // Underused nodes tried per scan, the least used first (CA's
  // --scale-down-non-empty-candidates-count): bounds a scan's work on a large cluster.
  int max_drain_candidates = 30;
  // Predictive pre-scaling, as the simulator's `prescale`: every scan, when the free GPU capacity
  // of the schedulable and provisioning nodes, less what the unschedulable pods will take, is
  // below the GPU demand expected within demand_horizon_s (the last hour's arrivals' GPU rate x
  // the horizon), nodes are requested for the shortfall, sized by the expander for the latest
  // arrivals' shapes.
  bool prescale = false;
  // Seedance's headroom guard, as the simulator's `drain_keeps_headroom`: an underused node is
  // drained only if the free GPU capacity left afterwards still covers that expected demand.
  bool drain_keeps_headroom = false;
  // How far ahead both look: about the time a node requested now takes to join, plus a scan.
  double demand_horizon_s = 250;
};

// InvalidArgument naming the field (times must be finite and >= 0, provision_timeout_s > 0,
// the threshold in [0, 1], max_drains_per_scan and max_drain_candidates >= 1, demand_horizon_s
// finite and >= 0).
absl::Status Validate(const LiveOptions& options);

// A node of the cluster as a scan sees it.
struct LiveNode {
  std::string name;
  int group = -1;      // index into the groups; -1: not in any group (never removed or counted)
  bool empty = false;  // no pod bound or assumed on it
  // Read only when draining (scale_down_utilization_threshold > 0):
  bool schedulable = true;  // pods of a drained node may move here (not cordoned or tainted)
  // As CA computes it: the allocated share of the GPUs on a GPU node, the larger of the
  // allocated CPU and memory shares on a node without GPUs.
  double utilization = 0;
  // "= {}": initialisers that stop after `empty` stay free of missing-initialiser warnings.
  std::string gpu_model = {};
  int64_t cpu_free_milli = 0, memory_free_mib = 0;
  std::vector<int32_t> gpu_free_milli = {};  // per GPU
  std::vector<PendingPod> pods = {};         // the requests of the pods on it
};

struct LiveView {
  double now_s = 0;
  std::vector<LiveNode> nodes;
  std::vector<PendingPod> unschedulable;  // pods the scheduler tried and could not place
  std::vector<PendingPod> arrivals;       // pods submitted since the previous scan (demand)
};

struct LiveActions {
  std::vector<std::pair<int, std::string>> add;  // (group, new node name), to provision
  std::vector<std::string> remove;               // empty nodes to remove, then release
  // Underused nodes to drain (evict their pods, then remove and release): (name, pods on it).
  std::vector<std::pair<std::string, int>> drain;
  std::vector<std::pair<int, std::string>> timed_out;  // (group, name) requested, never joined
  int pods_helped = 0;                                 // unschedulable pods the additions are for
  int pods_waiting_for_upcoming = 0;                   // left to nodes still being provisioned
  // Unschedulable pods no node can be asked for, by why (CA's NotTriggerScaleUp): no group's
  // node could hold one even empty; or every group that could is at max_size or backed off.
  int pods_no_group_fits = 0;
  int pods_groups_full = 0;
  int prescaled = 0;                 // of `add`, nodes asked for ahead of demand (prescale)
  double expected_demand_milli = 0;  // GPU milli expected within demand_horizon_s
};

// What a group looks like after a scan, for status and metrics.
struct LiveGroupStatus {
  int ready = 0;         // existing nodes of the group
  int provisioning = 0;  // requested, not joined yet
  int unneeded = 0;      // empty or underused nodes waiting out scale_down_unneeded_s
  bool backed_off = false;
};

// K when `node` is named GROUP-K for the group named `group` (K decimal, >= 0), else -1.
int IndexInGroup(std::string_view node, std::string_view group);

// The pods of `pods` that do not fit on the free room of the schedulable `nodes` when all are
// placed at once (first fit, largest GPU request first): for a gang, the members new nodes must
// hold. Empty when the gang fits now and only waits for its retry.
std::vector<PendingPod> LeftOver(const std::vector<PendingPod>& pods,
                                 const std::vector<LiveNode>& nodes);

class LiveAutoscaler {
 public:
  // REQUIRES: Validate(options).ok(); every group's min_size <= max_size.
  LiveAutoscaler(std::vector<NodeGroup> groups, LiveOptions options);
  ~LiveAutoscaler();
  LiveAutoscaler(const LiveAutoscaler&) = delete;
  LiveAutoscaler& operator=(const LiveAutoscaler&) = delete;

  LiveActions Scan(const LiveView& view);
  // A requested node the provisioner says it cannot bring up: forgotten and its group backed off
  // from now_s, as a timeout would. A name not requested (joined, timed out) changes nothing.
  void Failed(const std::string& name, double now_s);

  const std::vector<NodeGroup>& groups() const { return groups_; }
  const std::vector<LiveGroupStatus>& status() const { return status_; }

 private:
  struct Requested {
    int group = -1;
    double at_s = 0;
  };
  void MatchRequested(const LiveView& view, LiveActions* out);
  void Shrink(const LiveView& view, std::vector<int>* size, double* ready_free_milli,
              LiveActions* out);
  void Drain(const LiveView& view, std::vector<const LiveNode*> candidates, std::vector<int>* size,
             double* ready_free_milli, LiveActions* out);
  void Grow(const LiveView& view, const std::vector<int>& size, LiveActions* out);
  void Prescale(const LiveView& view, const std::vector<int>& room, const ScaleUp& up,
                LiveActions* out);
  std::string NewName(int group, const LiveView& view) const;

  std::vector<NodeGroup> groups_;
  LiveOptions options_;
  std::map<std::string, Requested> requested_;    // name -> request, until joined or timed out
  std::map<std::string, double> unneeded_since_;  // group node -> first scan seen unneeded
  std::vector<double> backoff_until_;             // per group
  std::vector<LiveGroupStatus> status_;
  std::unique_ptr<internal::ArrivalWindow> arrivals_;  // from the first scan on
};

}  // namespace seedance::clusterscale

#endif  // SEEDANCE_CLUSTERSCALE_LIVE_H_
