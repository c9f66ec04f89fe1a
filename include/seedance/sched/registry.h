// Name -> factory registry of placement policies, as in the Kubernetes scheduler framework.
//
// Built-in policies (RegisterBuiltins): the FGD paper's five baselines and FGD, exactly as the
// authors' simulator (hkust-adsl/kubernetes-scheduler-simulator) defines them, plus Seedance's
// own cost-aware policy:
//   random, dotprod, clustering, packing, bestfit, fgd, cas
// Registering a name twice is refused.
//
// Thread-safety: Register is not thread-safe; Create is safe once registration is over.
#ifndef SEEDANCE_SCHED_REGISTRY_H_
#define SEEDANCE_SCHED_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/sched/frag.h"
#include "seedance/sched/framework.h"

namespace seedance::sched {

// What a factory may use to build a policy.
struct PolicyContext {
  // The replayed workload's typical shapes, handed to `fgd` in advance (its oracle). Policies
  // that learn online must not read it.
  TargetWorkload oracle_workload;
  // Free-form tuning knobs ("key" -> "value"), e.g. from --policy-opt.
  std::map<std::string, std::string> params;
  // True when a cluster autoscaler grows and shrinks the cluster. A policy that spreads pods to
  // keep room on every node (cas's CPU balance) then packs instead: an autoscaler adds room when
  // it is needed, and only a node that empties can be removed (docs/cas.md, "Elastic clusters").
  bool elastic = false;
};

using PolicyFactory = std::function<absl::StatusOr<Profile>(const PolicyContext&)>;

class Registry {
 public:
  absl::Status Register(const std::string& name, PolicyFactory factory);
  absl::StatusOr<Profile> Create(const std::string& name, const PolicyContext& ctx) const;
  std::vector<std::string> Names() const;
  bool Contains(const std::string& name) const { return factories_.count(name) > 0; }

  // A registry holding every built-in policy.
  static const Registry& Builtins();

 private:
  std::map<std::string, PolicyFactory> factories_;
};

// The six reference policies in the paper's order.
const std::vector<std::string>& ReferencePolicyNames();

}  // namespace seedance::sched

#endif  // SEEDANCE_SCHED_REGISTRY_H_
