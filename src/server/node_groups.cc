#include "seedance/server/node_groups.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config_json.h"
#include "nlohmann/json.hpp"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "seedance/api/api.h"
#include "seedance/base/clock.h"
#include "seedance/base/json_path.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "seedance/clusterscale/report.h"
#include "seedance/server/codec.h"

extern char** environ;

namespace seedance::server {

namespace {

using JsonDoc = nlohmann::json;

// ---- the file ----

absl::StatusOr<clusterscale::NodeGroup> ParseGroup(const JsonDoc& j, const std::string& path,
                                                   std::string_view file) {
  clusterscale::NodeGroup g;
  Fields f(j, path, file);
  f.String("name", &g.name, true);
  f.Int("min_size", &g.min_size, 0, 100'000);
  f.Int("max_size", &g.max_size, 0, 100'000);
  const JsonDoc* node = f.Member("node");
  f.NoOthers();
  if (f.ok() && (!api::IsDnsLabel(g.name) || g.name.size() > 40)) {
    f.Fail("name", "must be a DNS-1123 label of at most 40 characters (nodes are NAME-K)");
  }
  if (f.ok() && g.max_size < g.min_size) {
    f.Fail("max_size", absl::StrCat("must be >= min_size (", g.min_size, ")"));
  }
  if (!f.ok()) return f.status();
  if (node == nullptr) return WithPath(file, f.At("node"), absl::InvalidArgumentError("required"));
  absl::StatusOr<api::NodeRequest> r = api::DecodeNodeRequest(g.name, node->dump());
  if (!r.ok()) return WithPath(file, f.At("node"), r.status());
  if (r->cordoned) {
    return WithPath(file, base::JsonPathChild(f.At("node"), "cordoned"),
                    absl::InvalidArgumentError("a template node cannot be cordoned"));
  }
  for (const core::Taint& t : r->spec.taints) {
    if (t.effect != core::kTaintPreferNoSchedule) {
      return WithPath(file, base::JsonPathChild(f.At("node"), "taints"),
                      absl::InvalidArgumentError(
                          absl::StrCat("a ", t.effect,
                                       " taint: pods carry no tolerations, so no pod could go "
                                       "to such a node and the group would grow for nothing")));
    }
  }
  auto [label, added] = r->spec.labels.emplace(kNodeGroupLabel, g.name);
  if (!added && label->second != g.name) {
    return WithPath(
        file, base::JsonPathChild(f.At("node"), "labels"),
        absl::InvalidArgumentError(absl::StrCat(
            kNodeGroupLabel, " is '", base::Clip(label->second, 60), "', not the group's name")));
  }
  g.node = std::move(r->spec);
  return g;
}

absl::Status ParseProvisioner(const JsonDoc* j, const std::string& path, std::string_view file,
                              NodeGroupsConfig* c) {
  if (j == nullptr) return absl::OkStatus();  // simulated, default delay
  Fields f(*j, path, file);
  std::string kind = "simulated";
  f.String("kind", &kind);
  f.Number("delay_s", &c->simulated_delay_s);
  f.Number("provision_estimate_s", &c->provision_estimate_s);
  f.String("resume_program", &c->resume_program);
  f.String("suspend_program", &c->suspend_program);
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (kind == "simulated") {
    c->provisioner = NodeGroupsConfig::Provisioner::kSimulated;
    if (!(c->simulated_delay_s >= 0 && c->simulated_delay_s <= 86'400)) {
      f.Fail("delay_s", "must be in [0, 86400] seconds");
    }
    if (!c->resume_program.empty() || !c->suspend_program.empty()) {
      f.Fail(c->resume_program.empty() ? "suspend_program" : "resume_program",
             "only for kind command");
    }
    if (j->contains("provision_estimate_s")) {
      f.Fail("provision_estimate_s", "only for kind command (simulated: delay_s)");
    }
  } else if (kind == "command") {
    c->provisioner = NodeGroupsConfig::Provisioner::kCommand;
    if (j->contains("delay_s")) f.Fail("delay_s", "only for kind simulated");
    if (!(c->provision_estimate_s >= 0 && c->provision_estimate_s <= 86'400)) {
      f.Fail("provision_estimate_s", "must be in [0, 86400] seconds");
    }
    for (auto [key, value] : {std::pair{"resume_program", &c->resume_program},
                              std::pair{"suspend_program", &c->suspend_program}}) {
      if (!value->starts_with("/")) f.Fail(key, "required: an absolute path");
    }
  } else {
    f.Fail("kind", absl::StrCat("'", base::Clip(kind, 40), "' is not one of simulated, command"));
  }
  return f.status();
}

absl::Status ParseTop(const JsonDoc& j, std::string_view file, NodeGroupsConfig* c,
                      const JsonDoc** groups, const JsonDoc** provisioner) {
  Fields f(j, "$", file);
  clusterscale::LiveOptions& o = c->autoscaler;
  f.Number("scan_interval_s", &c->scan_interval_s);
  f.Number("scale_down_unneeded_s", &o.scale_down_unneeded_s);
  f.Number("provision_timeout_s", &o.provision_timeout_s);
  f.Number("backoff_s", &o.backoff_s);
  f.Number("scale_down_utilization_threshold", &o.scale_down_utilization_threshold);
  f.Int("max_drains_per_scan", &o.max_drains_per_scan);
  f.Int("max_drain_candidates", &o.max_drain_candidates);
  f.Bool("prescale", &o.prescale);
  f.Bool("drain_keeps_headroom", &o.drain_keeps_headroom);
  f.Int("max_nodes_per_scale_up", &o.scale_up.max_nodes_per_scale_up);
  f.Number("balance_tolerance", &o.scale_up.balance_tolerance);
  std::string expander = "seedance";
  f.String("expander", &expander);
  *groups = f.Member("groups");
  *provisioner = f.Member("provisioner");
  f.NoOthers();
  if (f.ok() && !(c->scan_interval_s >= 0.05 && c->scan_interval_s <= 3600)) {
    f.Fail("scan_interval_s", "must be in [0.05, 3600] seconds");
  }
  if (f.ok()) {
    // Clipped: every expander's name is shorter, and the message quotes it.
    absl::StatusOr<clusterscale::ExpanderKind> kind =
        clusterscale::ParseExpander(base::Clip(expander, 40));
    if (kind.ok()) {
      o.scale_up.expander = *kind;
    } else {
      f.Fail("expander", std::string(kind.status().message()));
    }
  }
  if (f.ok()) {
    // The field Validate names is this file's key of the same name.
    if (absl::Status st = clusterscale::Validate(o); !st.ok()) {
      const std::string msg(st.message());
      f.Fail(msg.substr(0, msg.find(':')), msg.substr(std::min(msg.size(), msg.find(':') + 2)));
    }
  }
  if (f.ok() && (*groups == nullptr || !(*groups)->is_array() || (*groups)->empty())) {
    f.Fail("groups", "expected a non-empty list");
  }
  return f.status();
}

}  // namespace

absl::StatusOr<NodeGroupsConfig> ParseNodeGroupsConfig(std::string_view text,
                                                       std::string_view file) {
  absl::StatusOr<JsonDoc> parsed = ParseConfigJson(text, file);
  if (!parsed.ok()) return parsed.status();
  NodeGroupsConfig c;
  const JsonDoc* groups = nullptr;
  const JsonDoc* provisioner = nullptr;
  if (absl::Status st = ParseTop(*parsed, file, &c, &groups, &provisioner); !st.ok()) return st;
  if (absl::Status st = ParseProvisioner(provisioner, "$.provisioner", file, &c); !st.ok()) {
    return st;
  }
  // A simulated node that joined after its request timed out would come on top of the one asked
  // for again in its place.
  if (c.provisioner == NodeGroupsConfig::Provisioner::kSimulated &&
      !(c.simulated_delay_s < c.autoscaler.provision_timeout_s)) {
    return WithPath(file, "$.provisioner.delay_s",
                    absl::InvalidArgumentError(
                        absl::StrCat(c.simulated_delay_s, " must be below provision_timeout_s (",
                                     c.autoscaler.provision_timeout_s, ")")));
  }
  // Pre-scaling's and the guard's horizon: a node asked for now joins after the provisioning
  // delay, and is asked for at the next scan at the latest.
  c.autoscaler.demand_horizon_s =
      (c.provisioner == NodeGroupsConfig::Provisioner::kSimulated ? c.simulated_delay_s
                                                                  : c.provision_estimate_s) +
      c.scan_interval_s;
  if (groups->size() > 1000) {
    return WithPath(file, "$.groups", absl::InvalidArgumentError("at most 1000 groups"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string path = base::JsonPathIndex("$.groups", i);
    absl::StatusOr<clusterscale::NodeGroup> g = ParseGroup((*groups)[i], path, file);
    if (!g.ok()) return g.status();
    // G-K of one group must not read as a node of another (a-1 and a-1-2): names are prefixes
    // of no other group's name followed by '-'.
    for (const std::string& other : names) {
      if (g->name.starts_with(other + "-") || other.starts_with(g->name + "-") ||
          g->name == other) {
        return WithPath(file, base::JsonPathChild(path, "name"),
                        absl::InvalidArgumentError(absl::StrCat(
                            "'", g->name, "' clashes with group '", other,
                            "' (the same name, or one is the other's name followed by '-')")));
      }
    }
    names.insert(g->name);
    c.groups.push_back(std::move(*g));
  }
  return c;
}

// ---- the controller ----

struct NodeGroupController::State {
  struct Join {  // simulated provisioner: a node to add at due_s
    double due_s;
    int group;
    std::string name;
  };
  struct Child {  // command provisioner: a program still running
    pid_t pid;
    bool resume;
    int group;
    std::vector<std::string> names;
  };

  Service& service;
  NodeGroupsConfig config;
  clusterscale::LiveAutoscaler autoscaler;
  std::map<std::string, int> group_index;  // group name -> index (GroupOf)
  mutable base::Mutex mu;  // the members below, and the autoscaler's status
  std::condition_variable cv;
  bool stop ABSL_GUARDED_BY(mu) = false;
  std::vector<Join> joins ABSL_GUARDED_BY(mu);
  std::vector<Child> children ABSL_GUARDED_BY(mu);
  std::thread loop;
  int64_t scans ABSL_GUARDED_BY(mu) = 0;
  int64_t errors ABSL_GUARDED_BY(mu) = 0;
  std::string last_error ABSL_GUARDED_BY(mu);
  JsonDoc last_scan ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<prometheus::Gauge*> ready_gauge, provisioning_gauge;
  std::vector<prometheus::Counter*> added_counter, removed_counter, drained_counter, failed_counter;
  prometheus::Counter* pods_evicted = nullptr;
  prometheus::Counter* errors_counter = nullptr;
  prometheus::Histogram* decide_seconds = nullptr;

  State(Service& s, NodeGroupsConfig c)
      : service(s), config(std::move(c)), autoscaler(config.groups, config.autoscaler) {
    for (size_t g = 0; g < config.groups.size(); ++g) group_index[config.groups[g].name] = g;
  }
  void Loop();
  void Scan(double now_s);
  bool Observe(clusterscale::LiveView* view);
  // The pods the last scan saw (loop thread): those not among them are arrivals. Not valid
  // before the first scan, or after one that could not read the state.
  std::unordered_set<std::string> seen_uids;
  bool seen_valid = false;
  int64_t held_by_quota = 0;  // at the last read: pending pods over their queue's limit
  struct Removed {
    std::vector<std::string> removed, drained;
    int64_t pods_evicted = 0;
  };
  Removed Remove(const clusterscale::LiveActions& act);
  void AddDue(double now_s);
  void Spawn(bool resume, int group, std::vector<std::string> names);
  void Reap();
  void Error(std::string message);
  void FailNodes(int group, const std::vector<std::string>& names);
};

void NodeGroupController::State::FailNodes(int group, const std::vector<std::string>& names) {
  base::MutexLock lock(mu);
  for (const std::string& n : names) {
    autoscaler.Failed(n, base::UnixNowSeconds());
    failed_counter[group]->Increment();
  }
}

void NodeGroupController::State::Error(std::string message) {
  base::MutexLock lock(mu);
  ++errors;
  errors_counter->Increment();
  last_error = base::Clip(std::move(message), 300);
}

namespace {

// The group a node belongs to (the header's rule), or -1.
int GroupOf(const core::NodeSpec& node, const std::map<std::string, int>& by_name) {
  if (auto l = node.labels.find(kNodeGroupLabel); l != node.labels.end()) {
    auto g = by_name.find(l->second);
    return g == by_name.end() ? -1 : g->second;
  }
  const size_t dash = node.name.rfind('-');
  if (dash == std::string::npos) return -1;
  auto g = by_name.find(node.name.substr(0, dash));
  if (g == by_name.end() || clusterscale::IndexInGroup(node.name, g->first) < 0) return -1;
  return g->second;
}

// A pending pod as the autoscaler sees it.
clusterscale::PendingPod AsPending(const sched::PodInfo& p) {
  clusterscale::PendingPod out;
  out.shape = p.shape;
  if (!p.gpu_spec.empty()) out.gpu_models = absl::StrSplit(p.gpu_spec, '|');
  return out;
}

// Node n as a scan sees it (live.h's LiveNode).
clusterscale::LiveNode Describe(const sched::Scheduler& s, int n, int group) {
  const core::ClusterState& st = s.state();
  const core::NodeSpec& spec = st.node(n);
  clusterscale::LiveNode out{spec.name, group, s.ledger().num_pods_on_node(n) == 0};
  out.schedulable = st.schedulable(n);
  out.gpu_model = spec.gpu_model;
  out.cpu_free_milli = st.cpu_left(n);
  out.memory_free_mib = st.memory_left(n);
  const std::span<const int32_t> gpus = st.gpu_left(n);
  out.gpu_free_milli.assign(gpus.begin(), gpus.end());
  if (spec.num_gpus > 0) {
    int64_t free = 0;
    for (int32_t g : gpus) free += g;
    out.utilization = 1 - static_cast<double>(free) / (spec.num_gpus * core::kMilliGpu);
  } else {
    auto used = [](int64_t left, int64_t total) {
      return total > 0 ? 1 - static_cast<double>(left) / static_cast<double>(total) : 0.0;
    };
    out.utilization = std::max(used(out.cpu_free_milli, spec.cpu_milli),
                               used(out.memory_free_mib, spec.memory_mib));
  }
  for (const sched::PodInfo* p : s.ledger().PodsOnNode(n)) out.pods.push_back(AsPending(*p));
  return out;
}

}  // namespace

// The nodes of the cluster and the pods no node can take now (tried and failed, and rejected by
// every node's filter: a pod that fits somewhere is only waiting for its retry, as CA's
// filterOutSchedulable). False when the service refused the read (shutting down, not ready).
bool NodeGroupController::State::Observe(clusterscale::LiveView* view) {
  const Reply r = service.Run([&](Service::Context& c) -> Service::Finisher {
    const core::ClusterState& st = c.scheduler.state();
    std::vector<std::string> names;
    for (int n = 0; n < st.num_nodes(); ++n) {
      if (!st.alive(n)) continue;
      names.push_back(st.node(n).name);
      view->nodes.push_back(Describe(c.scheduler, n, GroupOf(st.node(n), group_index)));
    }
    std::unordered_set<std::string> uids;
    std::map<std::string, std::vector<clusterscale::PendingPod>> gangs;  // failed members
    held_by_quota = 0;
    c.scheduler.ledger().ForEach([&](const sched::PodInfo& p) {
      uids.insert(p.uid);
      if (seen_valid && !seen_uids.contains(p.uid)) view->arrivals.push_back(AsPending(p));
      if (p.phase != sched::PodPhase::kPending || c.scheduler.LastFailure(p.uid).empty()) return;
      // Held back by its queue's quota, not by room: a new node would not let it run.
      if (!c.scheduler.OverLimit(p).empty()) {
        ++held_by_quota;
        return;
      }
      if (!p.gang.empty()) {
        gangs[absl::StrCat(p.ns, "/", p.gang)].push_back(AsPending(p));
        return;
      }
      const auto fits = c.scheduler.FilterNodes(p, names);
      if (std::none_of(fits.begin(), fits.end(), [](const auto& f) { return !f.has_value(); })) {
        view->unschedulable.push_back(AsPending(p));
      }
    });
    // A gang is placed all at once: when its members do not fit together, those the free room
    // cannot take count as unschedulable, even if each alone would fit.
    for (const auto& [key, members] : gangs) {
      const std::vector<clusterscale::PendingPod> left =
          clusterscale::LeftOver(members, view->nodes);
      view->unschedulable.insert(view->unschedulable.end(), left.begin(), left.end());
    }
    seen_uids = std::move(uids);
    view->now_s = base::UnixNowSeconds();
    return [] { return Reply{200, "{}"}; };
  });
  seen_valid = r.status == 200;
  return seen_valid;
}

// Removes each node of `remove` that is still empty, and drains each of `drain` that still has
// the pods the scan saw (cordon, evict them back to the queue, remove): the check and the change
// are one operation on the service's loop, and the evicted pods are placed again in the same
// batch. Returns the nodes removed and drained, and the pods evicted.
NodeGroupController::State::Removed NodeGroupController::State::Remove(
    const clusterscale::LiveActions& act) {
  Removed out;
  service.Run([&](Service::Context& c) -> Service::Finisher {
    for (const std::string& name : act.remove) {
      const int n = c.scheduler.state().FindNode(name);
      if (n < 0 || c.scheduler.ledger().num_pods_on_node(n) != 0) continue;  // a pod came
      if (c.scheduler.DeleteNode(name, /*drain=*/false).ok()) out.removed.push_back(name);
    }
    for (const auto& [name, pods] : act.drain) {
      const int n = c.scheduler.state().FindNode(name);
      if (n < 0 || c.scheduler.ledger().num_pods_on_node(n) != static_cast<size_t>(pods)) continue;
      if (!c.scheduler.CordonNode(name, true).ok()) continue;
      std::vector<std::string> uids;
      for (const sched::PodInfo* p : c.scheduler.ledger().PodsOnNode(n)) uids.push_back(p->uid);
      for (const std::string& uid : uids) {
        if (c.scheduler.Evict(uid, c.now_s).ok()) ++out.pods_evicted;
      }
      if (c.scheduler.DeleteNode(name, /*drain=*/false).ok()) out.drained.push_back(name);
    }
    return [] { return Reply{200, "{}"}; };
  });
  return out;
}

// Simulated provisioner: adds the nodes whose delay is over.
void NodeGroupController::State::AddDue(double now_s) {
  std::vector<Join> due;
  {
    base::MutexLock lock(mu);
    auto split = std::stable_partition(joins.begin(), joins.end(),
                                       [&](const Join& j) { return j.due_s > now_s; });
    due.assign(std::make_move_iterator(split), std::make_move_iterator(joins.end()));
    joins.erase(split, joins.end());
  }
  if (due.empty()) return;
  absl::Status failed;
  const Reply r = service.Run([&](Service::Context& c) -> Service::Finisher {
    for (const Join& j : due) {
      core::NodeSpec node = config.groups[j.group].node;
      node.name = j.name;
      if (absl::Status st = c.scheduler.PutNode(std::move(node)); !st.ok() && failed.ok()) {
        failed = st;
      }
    }
    return [] { return Reply{200, "{}"}; };
  });
  if (r.status != 200) Error(absl::StrCat("adding simulated nodes: ", base::Clip(r.body, 200)));
  if (!failed.ok()) Error(absl::StrCat("adding a simulated node: ", failed.message()));
}

void NodeGroupController::State::Spawn(bool resume, int group, std::vector<std::string> names) {
  const std::string& program = resume ? config.resume_program : config.suspend_program;
  std::vector<std::string> args = {program};
  args.insert(args.end(), names.begin(), names.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("SEEDANCE_NODE_GROUP=")) env_strings.emplace_back(*e);
  }
  env_strings.push_back(absl::StrCat("SEEDANCE_NODE_GROUP=", config.groups[group].name));
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  // stdin from /dev/null, no descriptor of the server's beyond stdout and stderr (its listening
  // socket among them), and a clean signal state (the server blocks SIGTERM for its own loop).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    Error(absl::StrCat(program, ": cannot start: ", std::strerror(rc)));
    if (resume) FailNodes(group, names);
    return;
  }
  base::MutexLock lock(mu);
  children.push_back({pid, resume, group, std::move(names)});
}

// Collects finished programs; a resume program that failed fails its nodes.
void NodeGroupController::State::Reap() {
  std::vector<Child> running;
  std::vector<Child> mine;
  {
    base::MutexLock lock(mu);
    mine.swap(children);
  }
  for (Child& ch : mine) {
    int status = 0;
    const pid_t r = waitpid(ch.pid, &status, WNOHANG);
    if (r == 0) {
      running.push_back(std::move(ch));
      continue;
    }
    const bool ok = r == ch.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) continue;
    const std::string& program = ch.resume ? config.resume_program : config.suspend_program;
    Error(absl::StrCat(program, " ", base::Clip(absl::StrJoin(ch.names, " "), 120), ": ",
                       r != ch.pid         ? "lost"
                       : WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                                           : absl::StrCat("signal ", WTERMSIG(status))));
    if (ch.resume) FailNodes(ch.group, ch.names);
  }
  base::MutexLock lock(mu);
  children.insert(children.end(), std::make_move_iterator(running.begin()),
                  std::make_move_iterator(running.end()));
}

void NodeGroupController::State::Scan(double now_s) {
  clusterscale::LiveView view;
  const auto observe_start = std::chrono::steady_clock::now();
  if (!service.leading()) {
    seen_valid = false;  // a new leader starts its count of arrivals afresh
    return;
  }
  if (!Observe(&view)) return;
  const double observe_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - observe_start).count();
  clusterscale::LiveActions act;
  double decide_s = 0;
  {
    base::MutexLock lock(mu);
    const auto start = std::chrono::steady_clock::now();
    act = autoscaler.Scan(view);
    decide_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const Removed done = Remove(act);
  std::vector<std::string> removed = done.removed;
  removed.insert(removed.end(), done.drained.begin(), done.drained.end());
  std::map<std::string, int> group_of;
  for (const clusterscale::LiveNode& n : view.nodes) group_of[n.name] = n.group;
  const bool command = config.provisioner == NodeGroupsConfig::Provisioner::kCommand;
  if (command) {
    std::map<int, std::vector<std::string>> added_by_group, removed_by_group;
    for (const auto& [g, name] : act.add) added_by_group[g].push_back(name);
    for (const std::string& r : removed) removed_by_group[group_of[r]].push_back(r);
    for (auto& [g, names] : added_by_group) Spawn(true, g, std::move(names));
    for (auto& [g, names] : removed_by_group) Spawn(false, g, std::move(names));
  }
  base::MutexLock lock(mu);
  ++scans;
  decide_seconds->Observe(decide_s);
  JsonDoc added = JsonDoc::array(), timed_out = JsonDoc::array();
  for (const auto& [g, name] : act.add) {
    if (!command) joins.push_back({now_s + config.simulated_delay_s, g, name});
    added_counter[g]->Increment();
    added.push_back(name);
  }
  for (const auto& [g, name] : act.timed_out) {
    failed_counter[g]->Increment();
    timed_out.push_back(name);
  }
  for (const std::string& r : done.removed) removed_counter[group_of[r]]->Increment();
  for (const std::string& r : done.drained) drained_counter[group_of[r]]->Increment();
  pods_evicted->Increment(static_cast<double>(done.pods_evicted));
  for (size_t g = 0; g < config.groups.size(); ++g) {
    ready_gauge[g]->Set(autoscaler.status()[g].ready);
    provisioning_gauge[g]->Set(autoscaler.status()[g].provisioning);
  }
  last_scan = {{"time", view.now_s},
               {"unschedulable", view.unschedulable.size()},
               {"held_by_quota", held_by_quota},
               {"pods_helped", act.pods_helped},
               {"waiting_for_upcoming", act.pods_waiting_for_upcoming},
               {"arrivals", view.arrivals.size()},
               {"expected_demand_gpus", act.expected_demand_milli / core::kMilliGpu},
               {"prescaled", act.prescaled},
               {"not_helped",
                {{"no_group_fits", act.pods_no_group_fits},
                 {"groups_full_or_backed_off", act.pods_groups_full}}},
               {"added", std::move(added)},
               {"removed", done.removed},
               {"drained", done.drained},
               {"pods_evicted", done.pods_evicted},
               {"timed_out", std::move(timed_out)},
               {"observe_ms", observe_s * 1e3},
               {"decide_ms", decide_s * 1e3}};
}

void NodeGroupController::State::Loop() {
  double next_scan = base::UnixNowSeconds();
  base::MutexLock lock(mu);
  while (!stop) {
    double wake = next_scan;
    for (const Join& j : joins) wake = std::min(wake, j.due_s);
    const double now = base::UnixNowSeconds();
    if (!children.empty()) wake = std::min(wake, now + 0.2);  // poll running programs
    const double wait_s = wake - now;
    if (wait_s > 0) {
      lock.WaitFor(cv, std::chrono::duration<double>(wait_s));
      continue;
    }
    lock.Unlock();
    Reap();
    AddDue(base::UnixNowSeconds());
    if (base::UnixNowSeconds() >= next_scan) {
      Scan(base::UnixNowSeconds());
      next_scan = std::max(next_scan + config.scan_interval_s, base::UnixNowSeconds());
    }
    lock.Lock();
  }
}

absl::StatusOr<std::unique_ptr<NodeGroupController>> NodeGroupController::Start(
    Service& service, NodeGroupsConfig config) {
  if (absl::Status st = clusterscale::Validate(config.autoscaler); !st.ok()) return st;
  auto state = std::make_unique<State>(service, std::move(config));
  auto& registry = *service.metrics().registry;
  auto& size = prometheus::BuildGauge()
                   .Name("seedance_node_group_nodes")
                   .Help(
                       "Nodes of a node group, by state (ready: registered; provisioning: "
                       "asked for, not registered yet)")
                   .Register(registry);
  auto& changes = prometheus::BuildCounter()
                      .Name("seedance_cluster_autoscaler_nodes_total")
                      .Help(
                          "Nodes the cluster autoscaler asked for (added), removed empty, "
                          "drained and removed, or gave up on (failed: timed out or the resume "
                          "program failed)")
                      .Register(registry);
  auto& evicted = prometheus::BuildCounter()
                      .Name("seedance_cluster_autoscaler_evicted_pods_total")
                      .Help("Pods evicted from drained nodes (queued again; each a restart)")
                      .Register(registry);
  auto& errors = prometheus::BuildCounter()
                     .Name("seedance_cluster_autoscaler_errors_total")
                     .Help(
                         "Provisioner failures (programs that could not start or exited "
                         "non-zero, simulated nodes refused)")
                     .Register(registry);
  auto& decide = prometheus::BuildHistogram()
                     .Name("seedance_cluster_autoscaler_decide_seconds")
                     .Help(
                         "Time to decide one scan (scale-down and scale-up), without the "
                         "reads and writes of the state")
                     .Register(registry);
  State& s = *state;
  s.errors_counter = &errors.Add({});
  s.pods_evicted = &evicted.Add({});
  s.decide_seconds = &decide.Add(
      {}, prometheus::Histogram::BucketBoundaries{1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 1, 3});
  for (const clusterscale::NodeGroup& g : s.config.groups) {
    s.ready_gauge.push_back(&size.Add({{"group", g.name}, {"state", "ready"}}));
    s.provisioning_gauge.push_back(&size.Add({{"group", g.name}, {"state", "provisioning"}}));
    s.added_counter.push_back(&changes.Add({{"group", g.name}, {"change", "added"}}));
    s.removed_counter.push_back(&changes.Add({{"group", g.name}, {"change", "removed"}}));
    s.drained_counter.push_back(&changes.Add({{"group", g.name}, {"change", "drained"}}));
    s.failed_counter.push_back(&changes.Add({{"group", g.name}, {"change", "failed"}}));
  }
  s.loop = std::thread([&s] { s.Loop(); });
  return std::unique_ptr<NodeGroupController>(new NodeGroupController(std::move(state)));
}

NodeGroupController::NodeGroupController(std::unique_ptr<State> state) : state_(std::move(state)) {}

NodeGroupController::~NodeGroupController() {
  {
    base::MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->loop.joinable()) state_->loop.join();
  state_->Reap();  // programs still running are left to finish on their own
}

std::string NodeGroupController::StatusJson() const {
  const State& s = *state_;
  base::MutexLock lock(s.mu);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (size_t g = 0; g < s.config.groups.size(); ++g) {
    const clusterscale::NodeGroup& group = s.config.groups[g];
    const clusterscale::LiveGroupStatus& st = s.autoscaler.status()[g];
    groups.push_back({{"name", group.name},
                      {"min_size", group.min_size},
                      {"max_size", group.max_size},
                      {"ready", st.ready},
                      {"provisioning", st.provisioning},
                      {"unneeded", st.unneeded},
                      {"backed_off", st.backed_off},
                      {"template",
                       {{"cpu_milli", group.node.cpu_milli},
                        {"memory_mib", group.node.memory_mib},
                        {"num_gpus", group.node.num_gpus},
                        {"gpu_model", group.node.gpu_model},
                        {"cost_usd_per_hour", group.node.cost_usd_per_hour}}}});
  }
  const bool command = s.config.provisioner == NodeGroupsConfig::Provisioner::kCommand;
  nlohmann::ordered_json j = {{"provisioner", command ? "command" : "simulated"},
                              {"scan_interval_s", s.config.scan_interval_s},
                              {"scans", s.scans},
                              {"errors", s.errors}};
  if (!s.last_error.empty()) j["last_error"] = s.last_error;
  j["last_scan"] = s.last_scan;
  j["groups"] = std::move(groups);
  return base::DumpJson(j);
}

}  // namespace seedance::server
