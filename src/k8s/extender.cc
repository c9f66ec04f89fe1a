#include "seedance/k8s/extender.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"
#include "seedance/sched/explain.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;

// Request bodies nest like pods (about 15 levels); far deeper is hostile.
constexpr int kMaxDepth = 128;

// `path`: where in the body, in the syntax of base/json_path.h ("$.Pod.spec", "$.NodeNames[3]").
absl::Status Bad(std::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(path), ": ", message));
}

// Go's decoder: the exact key, else any key equal ignoring case (the last such key wins).
const json* Field(const json& obj, std::string_view key) {
  if (auto it = obj.find(key); it != obj.end()) return &*it;
  const json* found = nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (absl::EqualsIgnoreCase(it.key(), absl::string_view(key.data(), key.size()))) {
      found = &*it;
    }
  }
  return found;
}

absl::StatusOr<json> ParseBody(std::string_view body, const char* what) {
  if (base::JsonNestingDepth(body, kMaxDepth) > kMaxDepth) {
    return Bad("$", absl::StrCat("JSON nested deeper than ", kMaxDepth, " levels"));
  }
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("$", absl::StrCat("invalid JSON (expected ", what, ")"));
  if (!doc.is_object()) {
    return Bad("$", absl::StrCat("expected ", what, " (an object), got ", doc.type_name()));
  }
  return doc;
}

absl::Status DecodePodField(const json& doc, std::string_view key, Pod* pod) {
  const json* p = Field(doc, key);
  const std::string at = base::JsonPathChild("$", key);
  if (p == nullptr || p->is_null()) return Bad(at, "missing (the pod being scheduled)");
  std::vector<Unknown> unknown;
  if (absl::Status st = DecodePod(*p, at, pod, &unknown); !st.ok()) return st;
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(unknown[0].path, ": ", unknown[0].what, ": Seedance cannot place it"));
  }
  return absl::OkStatus();
}

absl::Status DecodeNodeList(const json& list, ExtenderArgs* out) {
  if (!list.is_object()) return Bad("$.Nodes", "expected a v1.NodeList object");
  const json* items = Field(list, "items");
  if (items == nullptr || items->is_null()) return absl::OkStatus();
  if (absl::Status st = base::CheckJsonKind(*items, "$.Nodes.items", base::JsonKind::kArray);
      !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < items->size(); ++i) {
    const std::string at = base::JsonPathIndex("$.Nodes.items", i);
    Node n;
    std::vector<Unknown> ignored;  // resources Seedance does not schedule stay kube-scheduler's
    if (absl::Status st = DecodeNode((*items)[i], at, &n, &ignored); !st.ok()) return st;
    out->node_names.push_back(n.spec.name);
    out->node_objects.push_back((*items)[i]);
    out->nodes.push_back(std::move(n));
  }
  return absl::OkStatus();
}

absl::Status DecodeNames(const json& names, std::string_view at, std::vector<std::string>* out) {
  if (absl::Status st = base::CheckJsonKind(names, at, base::JsonKind::kArray); !st.ok()) return st;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string name_at = base::JsonPathIndex(at, i);
    if (absl::Status st = base::CheckJsonKind(names[i], name_at, base::JsonKind::kString);
        !st.ok()) {
      return st;
    }
    out->push_back(names[i].get<std::string>());
  }
  return absl::OkStatus();
}

std::string Reason(sched::FilterReason r) {
  return absl::StrCat("seedance: ", std::string(sched::FilterReasonName(r)));
}

// Reasons no eviction can fix.
bool Unresolvable(sched::FilterReason r) {
  return r == sched::FilterReason::kCordoned || r == sched::FilterReason::kTainted ||
         r == sched::FilterReason::kGpuModel || r == sched::FilterReason::kTooFewGpus;
}

// The smallest GPU memory among the named nodes the scheduler knows (0: none says).
int64_t SmallestGpuMemory(const sched::Scheduler& s, const std::vector<std::string>& names) {
  int64_t smallest = 0;
  for (const std::string& name : names) {
    const int n = s.state().FindNode(name);
    if (n < 0 || s.state().node(n).num_gpus == 0) continue;
    const int64_t m = GpuMemoryOf(s.state().node(n));
    if (m > 0 && (smallest == 0 || m < smallest)) smallest = m;
  }
  return smallest;
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  absl::StatusOr<json> doc = ParseBody(body, "ExtenderArgs {Pod, Nodes, NodeNames}");
  if (!doc.ok()) return doc.status();
  ExtenderArgs args;
  if (absl::Status st = DecodePodField(*doc, "Pod", &args.pod); !st.ok()) {
    if (!absl::IsOutOfRange(st)) return st;
    args.pod = Pod{};
    args.unplaceable = absl::StrCat("seedance: ", st.message());
  }
  const json* nodes = Field(*doc, "Nodes");
  const json* names = Field(*doc, "NodeNames");
  if (nodes != nullptr && !nodes->is_null()) {
    args.has_nodes = true;
    if (absl::Status st = DecodeNodeList(*nodes, &args); !st.ok()) return st;
  } else if (names != nullptr && !names->is_null()) {
    if (absl::Status st = DecodeNames(*names, "$.NodeNames", &args.node_names); !st.ok()) {
      return st;
    }
  } else {
    return Bad("$", "neither Nodes nor NodeNames given (no candidate nodes)");
  }
  return args;
}

absl::StatusOr<BindingArgs> ParseBindingArgs(std::string_view body) {
  absl::StatusOr<json> doc = ParseBody(body, "ExtenderBindingArgs {PodName, PodNamespace, ...}");
  if (!doc.ok()) return doc.status();
  BindingArgs b;
  for (auto [key, dst] :
       {std::pair{"PodName", &b.pod_name}, std::pair{"PodNamespace", &b.pod_namespace},
        std::pair{"PodUID", &b.pod_uid}, std::pair{"Node", &b.node}}) {
    const json* v = Field(*doc, key);
    if (v == nullptr || !v->is_string() || v->get<std::string>().empty()) {
      return Bad(base::JsonPathChild("$", key), "missing (a non-empty string)");
    }
    *dst = v->get<std::string>();
  }
  return b;
}

absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(std::string_view body) {
  absl::StatusOr<json> doc = ParseBody(body, "ExtenderPreemptionArgs {Pod, NodeNameTo...}");
  if (!doc.ok()) return doc.status();
  PreemptionArgs args;
  if (absl::Status st = DecodePodField(*doc, "Pod", &args.pod); !st.ok()) return st;
  const json* meta = Field(*doc, "NodeNameToMetaVictims");
  const json* full = Field(*doc, "NodeNameToVictims");
  args.meta = meta != nullptr && !meta->is_null();
  const json* map = args.meta ? meta : full;
  const std::string key = args.meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  if (map == nullptr || map->is_null()) return args;
  if (!map->is_object()) {
    return Bad(base::JsonPathChild("$", key), "expected an object (node name -> victims)");
  }
  for (const auto& [node, victims] : map->items()) {
    const std::string at = base::JsonPathChild(base::JsonPathChild("$", key), node);
    if (!victims.is_object()) return Bad(at, "expected {Pods, NumPDBViolations}");
    auto& [uids, pdb] = args.victims[node];
    if (const json* n = Field(victims, "NumPDBViolations"); n != nullptr && !n->is_null()) {
      if (absl::Status st = base::CheckJsonKind(*n, base::JsonPathChild(at, "NumPDBViolations"),
                                                base::JsonKind::kInteger);
          !st.ok()) {
        return st;
      }
      pdb = n->get<int64_t>();
    }
    const json* pods = Field(victims, "Pods");
    if (pods == nullptr || pods->is_null()) continue;
    if (absl::Status st =
            base::CheckJsonKind(*pods, base::JsonPathChild(at, "Pods"), base::JsonKind::kArray);
        !st.ok()) {
      return st;
    }
    for (size_t i = 0; i < pods->size(); ++i) {
      const std::string pat = base::JsonPathIndex(base::JsonPathChild(at, "Pods"), i);
      const json& p = (*pods)[i];
      const json* uid = nullptr;
      if (p.is_object()) {
        if (args.meta) {
          uid = Field(p, "UID");
        } else if (const json* m = Field(p, "metadata"); m != nullptr && m->is_object()) {
          uid = Field(*m, "uid");
        }
      }
      if (uid == nullptr || !uid->is_string()) {
        return Bad(pat,
                   args.meta ? "expected {UID: string}" : "expected a v1.Pod with metadata.uid");
      }
      uids.push_back(uid->get<std::string>());
    }
  }
  return args;
}

int64_t GpuMemoryOf(const core::NodeSpec& node) {
  for (const char* key : {kGpuMemoryLabel, kGfdMemoryLabel}) {
    auto it = node.labels.find(key);
    int64_t v = 0;
    if (it != node.labels.end() && absl::SimpleAtoi(it->second, &v) && v > 0) return v;
  }
  return 0;
}

sched::PodInfo ToPodInfo(const Pod& pod, int64_t gpu_memory_mib) {
  sched::PodInfo p;
  p.uid = pod.Key();
  p.name = pod.name;
  p.ns = pod.ns;
  p.priority = pod.priority;
  p.labels = pod.labels;
  p.gpu_spec = pod.gpu_spec;
  p.shape = pod.shape;
  if (p.shape.num_gpu > 0 && pod.gpu_memory_mib > 0)
    p.shape.gpu_milli = pod.ShareFor(gpu_memory_mib);
  return p;
}

absl::Status LearnNodes(sched::Scheduler& scheduler, const std::vector<Node>& nodes) {
  for (const Node& n : nodes) {
    core::NodeSpec spec = n.spec;
    const int at = scheduler.state().FindNode(spec.name);
    if (at >= 0 && scheduler.state().node(at) == spec &&
        scheduler.state().cordoned(at) == n.unschedulable) {
      continue;
    }
    if (absl::Status st = scheduler.PutNode(std::move(spec)); !st.ok()) return st;
    if (absl::Status st = scheduler.CordonNode(n.spec.name, n.unschedulable); !st.ok()) return st;
  }
  return absl::OkStatus();
}

sched::PodInfo ResolvePod(const sched::Scheduler& scheduler, const Pod& pod,
                          const std::vector<std::string>& candidates) {
  return ToPodInfo(pod, SmallestGpuMemory(scheduler, candidates));
}

FilterResult Filter(sched::Scheduler& scheduler, const ExtenderArgs& args,
                    const sched::PodInfo& pod) {
  FilterResult r;
  if (pod.shape.num_gpu > 0 && pod.shape.gpu_milli <= 0) {
    r.error =
        "seedance: the pod asks for GPU memory, but no candidate node says how much its "
        "GPUs have (label nvidia.com/gpu.memory or seedance.io/gpu-memory-mib)";
    return r;
  }
  scheduler.NoteArrival(pod);
  const std::vector<std::optional<sched::FilterReason>> why =
      scheduler.FilterNodes(pod, args.node_names);
  for (size_t i = 0; i < why.size(); ++i) {
    const std::string& name = args.node_names[i];
    if (!why[i]) {
      r.passed.push_back(name);
    } else if (*why[i] == sched::FilterReason::kNodeRemoved) {
      r.failed[name] = "seedance: node not known to Seedance (yet)";
    } else if (Unresolvable(*why[i])) {
      r.unresolvable[name] = Reason(*why[i]);
    } else {
      r.failed[name] = Reason(*why[i]);
    }
  }
  return r;
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> Prioritize(sched::Scheduler& scheduler,
                                                                        const ExtenderArgs& args,
                                                                        const sched::PodInfo& pod) {
  scheduler.NoteArrival(pod);
  std::vector<std::optional<int64_t>> totals;
  absl::StatusOr<int> best = scheduler.RankNodes(pod, args.node_names, &totals);
  if (!best.ok()) return best.status();
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& t : totals) {
    if (!t) continue;
    lo = std::min(lo, *t);
    hi = std::max(hi, *t);
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < totals.size(); ++i) {
    int64_t score = 0;
    if (static_cast<int>(i) == *best) {
      score = kMaxExtenderPriority;
    } else if (totals[i]) {
      // 0..9 by the policy's own total; the chosen node alone gets 10.
      const long double span = static_cast<long double>(hi) - static_cast<long double>(lo);
      score = span <= 0 ? kMaxExtenderPriority - 1
                        : static_cast<int64_t>((kMaxExtenderPriority - 1) *
                                               (static_cast<long double>(*totals[i]) - lo) / span);
    }
    out.push_back({args.node_names[i], score});
  }
  return out;
}

std::map<std::string, std::pair<std::vector<std::string>, int64_t>> Preempt(
    sched::Scheduler& scheduler, const PreemptionArgs& args) {
  std::map<std::string, std::pair<std::vector<std::string>, int64_t>> kept;
  std::vector<std::string> names;
  for (const auto& [node, v] : args.victims) names.push_back(node);
  const sched::PodInfo pod = ToPodInfo(args.pod, SmallestGpuMemory(scheduler, names));
  for (const auto& [node, v] : args.victims) {
    if (scheduler.FitsWithout(pod, node, v.first)) kept[node] = v;
  }
  return kept;
}

std::string GpusAnnotation(const core::Placement& placement, int32_t milli,
                           const std::vector<std::string>& gpu_uuids) {
  std::vector<std::string> parts;
  for (int8_t g : placement.gpu_ids()) {
    const size_t i = static_cast<size_t>(g);
    parts.push_back(
        absl::StrCat(i < gpu_uuids.size() ? gpu_uuids[i] : std::to_string(i), ":", milli));
  }
  return absl::StrJoin(parts, ",");
}

std::string FilterResultJson(const ExtenderArgs& args, const FilterResult& r) {
  json out = json::object();
  out["Nodes"] = nullptr;
  out["NodeNames"] = nullptr;
  if (args.has_nodes) {
    json items = json::array();
    size_t next = 0;
    for (size_t i = 0; i < args.node_names.size() && next < r.passed.size(); ++i) {
      if (args.node_names[i] == r.passed[next]) {
        items.push_back(args.node_objects[i]);
        ++next;
      }
    }
    out["Nodes"] = {{"metadata", json::object()}, {"items", std::move(items)}};
  } else {
    out["NodeNames"] = r.passed;
  }
  out["FailedNodes"] = r.failed;
  out["FailedAndUnresolvableNodes"] = r.unresolvable;
  out["Error"] = r.error;
  return base::DumpJson(out);
}

std::string PriorityListJson(const std::vector<std::pair<std::string, int64_t>>& scores) {
  json out = json::array();
  for (const auto& [host, score] : scores) out.push_back({{"Host", host}, {"Score", score}});
  return base::DumpJson(out);
}

std::string BindingResultJson(std::string_view error) {
  return base::DumpJson(json{{"Error", std::string(error)}});
}

std::string PreemptionResultJson(
    const std::map<std::string, std::pair<std::vector<std::string>, int64_t>>& victims) {
  json map = json::object();
  for (const auto& [node, v] : victims) {
    json pods = json::array();
    for (const std::string& uid : v.first) pods.push_back({{"UID", uid}});
    map[node] = {{"Pods", std::move(pods)}, {"NumPDBViolations", v.second}};
  }
  return base::DumpJson(json{{"NodeNameToMetaVictims", std::move(map)}});
}

}  // namespace seedance::k8s
