// Scheduling policies as YAML files: which placement profile serves which class of pod, and
// rules over live metrics that act on the cluster (docs/policy.md has the format and an example).
//
//   profiles:          placement profiles: a registered policy (sched's registry), its options
//                      and score weights
//   default_profile:   the profile for a pod no class matches (default: the first profile)
//   classes:           pod classes (namespace, labels, priority range) -> profile; first match wins
//   rules:             condition over metrics, priority, timeout, action
//   plugins:           shared objects implementing actions (docs/plugins.md)
//   preemption:        true: a pod that fits nowhere may evict lower-priority pods (default false)
//   queues:            tenant queues: a tree with guaranteed quotas, limits and over-quota
//                      weights; a leaf's namespaces put pods in it (docs/tenancy.md)
//
// ParsePolicy is a pure function (it loads no plugin; PolicyManager does). Errors are
// InvalidArgument "FILE:LINE:COL: $.field.path: message" (base/json_path.h); unknown keys are
// refused with a did-you-mean. Policy objects are immutable once parsed except for the class ->
// profile switches that rules make, which are atomics: ProfileFor may be called from any thread
// while PolicyManager::Evaluate runs.
#ifndef SEEDANCE_POLICY_POLICY_H_
#define SEEDANCE_POLICY_POLICY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/policy/expr.h"
#include "seedance/sched/registry.h"
#include "seedance/sched/tenancy.h"

namespace seedance::policy {

// The metric names the server publishes for conditions (docs/policy.md describes each):
// gpu_free_pct, gpu_alloc_pct, pending_pods, unschedulable_pods, nodes, cordoned_nodes,
// fragmentation_ratio, bind_rate_per_s.
const std::vector<std::string>& ServerMetricNames();

// Limits on a policy document (InvalidArgument when exceeded). Nesting depth and alias expansion
// are limited as for cluster descriptors (core::CheckYamlLimits).
inline constexpr size_t kMaxPolicyBytes = 1 << 20;
inline constexpr size_t kMaxPolicyEntries = 1000;  // profiles, classes, rules or plugins each

// Reserved class name for pods that no class matches: `switch_profile` may target it.
inline constexpr std::string_view kDefaultClass = "default";

struct PodClass {
  std::string ns;                                     // namespace; empty = any
  std::map<std::string, std::string> labels;          // all must be equal on the pod; empty = any
  std::optional<int32_t> min_priority, max_priority;  // inclusive
  bool Matches(std::string_view ns, const std::map<std::string, std::string>& labels,
               int32_t priority) const;
};

struct PlacementProfile {
  std::string name;
  std::string policy;                          // a registered policy (sched::Registry)
  std::map<std::string, std::string> options;  // handed to the policy's factory (PolicyContext)
  // Score plugin name -> weight (the Profile's WeightedScore::weight), e.g. {CostAwareScore: 2}.
  std::map<std::string, int64_t> weights;
};

struct ClassBinding {
  std::string name;
  PodClass match;
  std::string profile;
  int profile_index = 0;  // into Policy::profiles
};

struct Action {
  enum Kind { kSwitchProfile, kCordon, kDrain, kAlert, kPlugin };
  Kind kind = kAlert;
  std::string target;  // class name / node name / alert name / plugin name
  std::string value;   // profile name / alert message / plugin argument (JSON text)
  // Filled by PolicyManager::Evaluate: the rule that fired, and for plugin actions the plugin's
  // reply (or the failure) and whether it succeeded.
  std::string rule;
  std::string result;
  bool ok = true;
};
std::string_view ActionKindName(Action::Kind kind);  // "switch_profile", "cordon", ...

struct Rule {
  std::string name;
  Expr condition;
  int priority = 0;      // higher first
  double timeout_s = 0;  // cooldown after firing, and how long its effect lasts (docs/policy.md)
  Action action;
};

struct PluginRef {
  std::string name;
  std::string path;   // as written in the file
  std::string where;  // "FILE:LINE:COL: $.plugins[i].path" for errors when loading
};

// A queue of the policy: its place in the tree, quota, limit and weight, and the namespaces whose
// pods it holds (leaf queues only).
struct QueueBinding {
  sched::QueueSpec spec;
  std::vector<std::string> namespaces;
};

class LoadedPlugin;  // plugin.h

struct Policy {
  std::string source;  // file name or "PUT /v1/policy"
  std::string text;    // the document as given
  std::vector<PlacementProfile> profiles;
  std::string default_profile;
  int default_profile_index = 0;
  std::vector<ClassBinding> classes;
  std::vector<Rule> rules;  // in file order
  std::vector<PluginRef> plugins;
  std::vector<QueueBinding> queues;  // in file order; empty = no tenancy
  bool preemption = false;           // priority preemption (sched::QueueConfig::preemption)
  // Filled by PolicyManager (by name; empty when the policy came from ParsePolicy alone).
  std::map<std::string, std::shared_ptr<LoadedPlugin>> loaded_plugins;

  // The profile for a pod: the first class that matches (or the default profile), honouring an
  // active switch_profile action on that class. The reference lives as long as the Policy.
  const PlacementProfile& ProfileFor(std::string_view ns,
                                     const std::map<std::string, std::string>& labels,
                                     int32_t priority) const;
  // Index into classes of the first match, or -1 (the default class).
  int ClassFor(std::string_view ns, const std::map<std::string, std::string>& labels,
               int32_t priority) const;
  const PlacementProfile* FindProfile(std::string_view name) const;
  int ProfileIndex(std::string_view name) const;  // -1 if absent

  // Class -> profile switches (index classes.size() is the default class); -1 = none. Written by
  // PolicyManager::Evaluate, read by ProfileFor. Shared so copies of a Policy share them.
  std::shared_ptr<std::vector<std::atomic<int>>> switches;
  void SetSwitch(int class_index, int profile_index) const;  // -1 clears
  int SwitchOf(int class_index) const;                       // -1 = none
};

// What a policy name and its options build: the names of its score plugins (for `weights`).
struct ProfileInfo {
  std::vector<std::string> score_plugins;
};
using ProfileValidator = std::function<absl::StatusOr<ProfileInfo>(
    const std::string& policy, const std::map<std::string, std::string>& options)>;

struct ParseOptions {
  // Names conditions may use.
  std::vector<std::string> known_metrics = ServerMetricNames();
  // Policy names `profiles[].policy` may use; empty = sched::Registry::Builtins().Names().
  std::vector<std::string> known_policies;
  // Checks a profile's options (an error names the option); empty = build the profile with the
  // built-in registry when it holds the name (with a stand-in workload for fgd's oracle).
  ProfileValidator validate_profile;
};

absl::StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source,
                                   const ParseOptions& options);
absl::StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source);

// Builds the scheduler profile `p` describes: registry.Create(p.policy, ctx with p.options as its
// params), then p.weights applied to the score plugins of those names (InvalidArgument when the
// profile has no score plugin of a name; ParsePolicy has already checked built-in policies).
absl::StatusOr<sched::Profile> BuildProfile(
    const PlacementProfile& p, sched::PolicyContext ctx,
    const sched::Registry& registry = sched::Registry::Builtins());

// The policy the server runs without --policy: one profile "default" using `cas`, no rules.
std::string_view DefaultPolicyText();

}  // namespace seedance::policy

#endif  // SEEDANCE_POLICY_POLICY_H_
