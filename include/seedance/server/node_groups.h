// Node groups of `seedance server --node-groups FILE` (docs/cluster-autoscaler.md, "In the
// service"): the cluster autoscaler on the live scheduler. Every scan_interval_s the controller
// reads, on the service's loop, the nodes of each group and the pods the scheduler tried and
// could not place anywhere, and hands them to clusterscale::LiveAutoscaler; it then removes the
// empty nodes it chose (only if still empty: the check and the removal are one operation) and
// asks the provisioner for the new ones.
//
// A node belongs to group G when it carries the label seedance.io/node-group=G, or, without that
// label, when its name is G-K (K a decimal number). New nodes are named G-K.
//
// Provisioners:
//   simulated  the controller itself adds the group's template node (PUT, labelled with its
//              group) delay_s after asking; for trying the autoscaler without a cloud.
//   command    as Slurm's ResumeProgram/SuspendProgram: `resume_program NAME...` is run (not
//              through a shell; SEEDANCE_NODE_GROUP=G in its environment) once per group and
//              scan with the names to bring up; the nodes must then register under those names
//              (PUT /v1/nodes/NAME, e.g. by `seedance node-agent`) within provision_timeout_s.
//              `suspend_program NAME...` is run for nodes removed. A resume program that exits
//              non-zero fails its nodes at once (the group is backed off).
//
// Pods that appear between two scans are the arrivals that pre-scaling and the headroom guard
// count (live.h); the first scan after a start only takes note of the pods there are.
//
// Only the leader decides (a follower's scan is refused by the service and skipped). Requests in
// flight are not durable: after a restart, a pod still unschedulable is asked for again.
//
// Thread-safety: Start and the destructor from one thread; StatusJson from any thread.
#ifndef SEEDANCE_SERVER_NODE_GROUPS_H_
#define SEEDANCE_SERVER_NODE_GROUPS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/clusterscale/live.h"
#include "seedance/server/service.h"

namespace seedance::server {

inline constexpr char kNodeGroupLabel[] = "seedance.io/node-group";

struct NodeGroupsConfig {
  double scan_interval_s = 10;  // CA's --scan-interval
  clusterscale::LiveOptions autoscaler;
  std::vector<clusterscale::NodeGroup> groups;  // templates carry kNodeGroupLabel
  enum class Provisioner { kSimulated, kCommand } provisioner = Provisioner::kSimulated;
  double simulated_delay_s = 180;               // simulated
  // command: how long a node takes to register after its resume program starts, for the
  // expected-demand horizon of pre-scaling and the headroom guard (simulated: delay_s).
  double provision_estimate_s = 240;
  std::string resume_program, suspend_program;  // command: absolute paths
};

// Decodes a node-groups file (JSON; docs/cluster-autoscaler.md has the schema). InvalidArgument
// naming `file` and the JSON path, e.g. "g.json: $.groups[1].max_size: must be >= min_size (2)".
// Templates are read as PUT /v1/nodes bodies (short or descriptor form).
absl::StatusOr<NodeGroupsConfig> ParseNodeGroupsConfig(std::string_view text,
                                                       std::string_view file);

class NodeGroupController {
 public:
  static absl::StatusOr<std::unique_ptr<NodeGroupController>> Start(Service& service,
                                                                    NodeGroupsConfig config);
  ~NodeGroupController();
  // GET /v1/node-groups: {"provisioner", "scan_interval_s", "scans", "errors", "last_error",
  // "last_scan": {time, unschedulable, pods_helped, waiting_for_upcoming, arrivals,
  // expected_demand_gpus, prescaled, not_helped: {no_group_fits, groups_full_or_backed_off},
  // added, removed,
  // drained, pods_evicted, timed_out, observe_ms (reading the state on the service's loop),
  // decide_ms}, "groups": [{name, min_size, max_size, ready, provisioning, unneeded,
  // backed_off, template}]}.
  std::string StatusJson() const;

  struct State;

 private:
  explicit NodeGroupController(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_NODE_GROUPS_H_
