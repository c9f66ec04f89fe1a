#include "seedance/k8s/snapshot.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;

// kubectl objects nest about 15 deep (managedFields deeper); far beyond that is hostile.
constexpr int kMaxDepth = 128;
// Unknowns named in one error message; the rest are counted.
constexpr size_t kShownUnknowns = 5;

std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 200)); }

absl::Status Bad(std::string_view source, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Shown(source), ": ", message));
}

// Refuses, or records as warnings, what was not understood.
absl::Status Report(std::string_view source, const std::vector<Unknown>& unknown,
                    const SnapshotOptions& options, Snapshot* s) {
  if (unknown.empty()) return absl::OkStatus();
  if (options.ignore_unknown) {
    for (const Unknown& u : unknown) {
      s->warnings.push_back(absl::StrCat(Shown(source), ": ", u.path, ": ", u.what, ": skipped"));
    }
    return absl::OkStatus();
  }
  std::vector<std::string> shown;
  for (size_t i = 0; i < unknown.size() && i < kShownUnknowns; ++i) {
    shown.push_back(absl::StrCat(unknown[i].path, " (", unknown[i].what, ")"));
  }
  return Bad(source, absl::StrCat(unknown.size(), " thing", unknown.size() == 1 ? "" : "s",
                                  " Seedance does not understand: ", absl::StrJoin(shown, "; "),
                                  unknown.size() > kShownUnknowns ? "; ..." : "",
                                  "; pass --ignore-unknown to skip them and go on"));
}

absl::Status AddItem(const json& item, const std::string& path, std::string_view source,
                     const SnapshotOptions& options, Snapshot* s) {
  const std::string kind = base::StringField(item, "kind");
  std::vector<Unknown> unknown;
  auto prefixed = [&](const absl::Status& st) { return Bad(source, st.message()); };
  if (kind == "Node") {
    Node n;
    if (absl::Status st = DecodeNode(item, path, &n, &unknown); !st.ok()) return prefixed(st);
    // A resource a node has and Seedance ignores is a note, never a reason to refuse.
    for (const Unknown& u : unknown) {
      s->warnings.push_back(absl::StrCat(Shown(source), ": ", u.path, ": ", u.what));
    }
    s->nodes.push_back(std::move(n));
    return absl::OkStatus();
  }
  if (kind == "Pod") {
    Pod p;
    if (absl::Status st = DecodePod(item, path, &p, &unknown); !st.ok()) return prefixed(st);
    if (p.Terminal()) {
      ++s->terminal_pods;
      return absl::OkStatus();
    }
    if (absl::Status st = Report(source, unknown, options, s); !st.ok()) return st;
    if (unknown.empty()) s->pods.push_back(std::move(p));
    return absl::OkStatus();
  }
  unknown.push_back({path, kind.empty() ? "an object without a kind"
                                        : absl::StrCat("kind ", base::ForTerminal(kind))});
  return Report(source, unknown, options, s);
}

// Pods bound to a node that is not in the snapshot, GPU placements beyond their node.
absl::Status CheckPlacements(const SnapshotOptions& options, Snapshot* s,
                             const std::map<std::string, size_t>& node_at) {
  std::vector<Pod> kept;
  std::vector<Unknown> unknown;
  for (Pod& p : s->pods) {
    const std::string who = absl::StrCat("pod ", p.ns, "/", p.name);
    bool ok = true;
    if (!p.node_name.empty()) {
      auto it = node_at.find(p.node_name);
      if (it == node_at.end()) {
        unknown.push_back({who, absl::StrCat("bound to node ", Shown(p.node_name),
                                             ", which the snapshot does not hold")});
        ok = false;
      } else {
        const Node& n = s->nodes[it->second];
        for (GpuAssignment& g : p.gpus) {
          if (g.index < 0) {
            auto u = std::find(n.gpu_uuids.begin(), n.gpu_uuids.end(), g.uuid);
            if (u != n.gpu_uuids.end()) g.index = static_cast<int>(u - n.gpu_uuids.begin());
          }
          if (g.index < 0 || g.index >= n.spec.num_gpus) {
            unknown.push_back(
                {who, absl::StrCat("placed on GPU ",
                                   g.index < 0 ? Shown(g.uuid) : std::to_string(g.index),
                                   ", which node ", Shown(n.spec.name), " does not have")});
            ok = false;
            break;
          }
        }
      }
    }
    if (ok) kept.push_back(std::move(p));
  }
  if (absl::Status st = Report("snapshot", unknown, options, s); !st.ok()) return st;
  s->pods = std::move(kept);
  return absl::OkStatus();
}

// HAMi's use-gputype / nouse-gputype: substrings of the node models (case-insensitive).
void ResolveGpuTypes(const std::set<std::string>& models, Pod* p) {
  if (p->gpu_type_substrings.empty() && p->gpu_type_excluded.empty()) return;
  auto has = [](const std::string& model, const std::vector<std::string>& subs) {
    const std::string m = absl::AsciiStrToLower(model);
    return std::any_of(subs.begin(), subs.end(), [&](const std::string& sub) {
      return absl::StrContains(m, absl::AsciiStrToLower(sub));
    });
  };
  std::vector<std::string> accepted;
  for (const std::string& m : models) {
    if (!p->gpu_type_substrings.empty() && !has(m, p->gpu_type_substrings)) continue;
    if (has(m, p->gpu_type_excluded)) continue;
    accepted.push_back(m);
  }
  if (!p->gpu_spec.empty()) {  // a nodeSelector as well: both must hold
    std::set<std::string> selected = absl::StrSplit(p->gpu_spec, '|');
    std::erase_if(accepted, [&](const std::string& m) { return !selected.contains(m); });
  }
  // No model left: a name no node has, so the simulator reports the pod as never fitting.
  p->gpu_spec = accepted.empty() ? absl::StrCat("none-of(", absl::StrJoin(models, ","), ")")
                                 : absl::StrJoin(accepted, "|");
}

// The per-GPU share of a pod asked by memory, on its node or the smallest GPU it accepts.
absl::Status ResolveShares(const SnapshotOptions& options, Snapshot* s,
                           const std::map<std::string, size_t>& node_at) {
  std::vector<Pod> kept;
  std::vector<Unknown> unknown;
  for (Pod& p : s->pods) {
    if (p.shape.num_gpu == 0 || p.gpu_memory_mib == 0) {
      kept.push_back(std::move(p));
      continue;
    }
    int64_t memory = 0;
    if (!p.node_name.empty()) {
      memory = s->nodes[node_at.at(p.node_name)].gpu_memory_mib;
    } else {
      std::set<std::string> accepted;
      if (!p.gpu_spec.empty()) accepted = absl::StrSplit(p.gpu_spec, '|');
      int64_t smallest = std::numeric_limits<int64_t>::max();
      for (const Node& n : s->nodes) {
        if (n.spec.num_gpus == 0 || n.gpu_memory_mib <= 0) continue;
        if (!accepted.empty() && !accepted.contains(n.spec.gpu_model)) continue;
        smallest = std::min(smallest, n.gpu_memory_mib);
      }
      if (smallest != std::numeric_limits<int64_t>::max()) memory = smallest;
    }
    const int32_t share = p.ShareFor(memory);
    if (share <= 0) {
      unknown.push_back(
          {absl::StrCat("pod ", p.ns, "/", p.name),
           absl::StrCat("asks for ", p.gpu_memory_mib,
                        " MiB of GPU memory, but no node it could use says how much its GPUs "
                        "have (label ",
                        kGpuMemoryLabel, " or ", kGfdMemoryLabel, ")")});
      continue;
    }
    p.shape.gpu_milli = share;
    kept.push_back(std::move(p));
  }
  if (absl::Status st = Report("snapshot", unknown, options, s); !st.ok()) return st;
  s->pods = std::move(kept);
  return absl::OkStatus();
}

}  // namespace

bool LooksLikeSnapshot(std::string_view text) {
  // A cheap look at the ends: a single object starts with apiVersion and kind; kubectl writes a
  // List's keys in order (apiVersion, items, kind, metadata), so its kind is near the end.
  constexpr size_t kLook = 1024;
  const absl::string_view all(text.data(), text.size());
  const absl::string_view head = all.substr(0, kLook);
  const absl::string_view tail = all.substr(all.size() > kLook ? all.size() - kLook : 0);
  if (!absl::StrContains(head, "\"apiVersion\"")) return false;
  for (const char* kind : {"List", "NodeList", "PodList", "Node", "Pod"}) {
    for (const char* sep : {"\":\"", "\": \""}) {
      const std::string key = absl::StrCat("\"kind", sep, kind, "\"");
      if (absl::StrContains(head, key) || absl::StrContains(tail, key)) return true;
    }
  }
  return false;
}

absl::Status AddSnapshotText(std::string_view text, std::string_view source,
                             const SnapshotOptions& options, Snapshot* snapshot) {
  if (base::JsonNestingDepth(text, kMaxDepth) > kMaxDepth) {
    return Bad(source, absl::StrCat("JSON nested deeper than ", kMaxDepth, " levels"));
  }
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    const size_t byte = std::min(e.byte, text.size());
    const auto line = std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(byte), '\n');
    return Bad(source, absl::StrCat("line ", line + 1, ": invalid JSON (byte ", e.byte, ")",
                                    byte >= text.size() ? ": unexpected end of file" : ""));
  } catch (const json::exception& e) {
    // A number beyond a double (1e400) and the like: the parser names no position.
    return Bad(source, absl::StrCat("invalid JSON: ", base::Clip(e.what(), 160)));
  }
  if (!doc.is_object()) return Bad(source, "$: must be a kubectl JSON object (kind List)");
  if (absl::StatusOr<const json*> k = base::JsonMemberOf(doc, "kind", "$", base::JsonKind::kString);
      !k.ok()) {
    return Bad(source, k.status().message());
  }
  const std::string kind = base::StringField(doc, "kind");
  if (kind == "Node" || kind == "Pod") return AddItem(doc, "$", source, options, snapshot);
  if (kind != "List" && kind != "NodeList" && kind != "PodList") {
    return Bad(source, absl::StrCat("$.kind: '", base::ForTerminal(base::Clip(kind, 40)),
                                    "' is not List, NodeList, PodList, Node or Pod (write the "
                                    "file with kubectl get nodes -o json)"));
  }
  auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return absl::OkStatus();
  if (absl::Status st = base::CheckJsonKind(*items, "$.items", base::JsonKind::kArray); !st.ok()) {
    return Bad(source, st.message());
  }
  for (size_t i = 0; i < items->size(); ++i) {
    if (absl::Status st =
            AddItem((*items)[i], base::JsonPathIndex("$.items", i), source, options, snapshot);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status FinishSnapshot(const SnapshotOptions& options, Snapshot* s) {
  std::map<std::string, size_t> node_at;
  std::set<std::string> models;
  for (size_t i = 0; i < s->nodes.size(); ++i) {
    if (!node_at.emplace(s->nodes[i].spec.name, i).second) {
      return Bad("snapshot", absl::StrCat("node ", Shown(s->nodes[i].spec.name), " appears twice"));
    }
    if (s->nodes[i].spec.num_gpus > 0) models.insert(s->nodes[i].spec.gpu_model);
  }
  std::set<std::pair<std::string, std::string>> pods;
  for (const Pod& p : s->pods) {
    if (!pods.emplace(p.ns, p.name).second) {
      return Bad("snapshot",
                 absl::StrCat("pod ", Shown(p.ns), "/", Shown(p.name), " appears twice"));
    }
  }
  for (Pod& p : s->pods) ResolveGpuTypes(models, &p);
  if (absl::Status st = CheckPlacements(options, s, node_at); !st.ok()) return st;
  return ResolveShares(options, s, node_at);
}

absl::StatusOr<Snapshot> LoadSnapshot(const std::vector<std::string>& paths,
                                      const SnapshotOptions& options) {
  Snapshot s;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
    if (!text.ok()) return text.status();
    if (absl::Status st = AddSnapshotText(*text, path == "-" ? "<stdin>" : path, options, &s);
        !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = FinishSnapshot(options, &s); !st.ok()) return st;
  return s;
}

std::vector<core::NodeSpec> ToNodeSpecs(const Snapshot& snapshot) {
  std::vector<core::NodeSpec> out;
  for (const Node& n : snapshot.nodes) {
    core::NodeSpec spec = n.spec;
    const bool tainted = std::any_of(spec.taints.begin(), spec.taints.end(), [](const auto& t) {
      return t.key == "node.kubernetes.io/unschedulable";
    });
    if (n.unschedulable && !tainted) {
      spec.taints.push_back({"node.kubernetes.io/unschedulable", "", "NoSchedule"});
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<core::PodSpec> ToPodSpecs(const Snapshot& snapshot) {
  std::vector<const Pod*> order;
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const Pod& p : snapshot.pods) {
    order.push_back(&p);
    if (p.creation_unix_s >= 0) first = std::min(first, p.creation_unix_s);
  }
  std::stable_sort(order.begin(), order.end(), [](const Pod* a, const Pod* b) {
    return std::tie(a->creation_unix_s, a->ns, a->name) <
           std::tie(b->creation_unix_s, b->ns, b->name);
  });
  std::vector<core::PodSpec> out;
  for (const Pod* p : order) {
    core::PodSpec spec;
    spec.name = absl::StrCat(p->ns, "/", p->name);
    spec.shape = p->shape;
    spec.gpu_spec = p->gpu_spec;
    spec.qos = p->qos;
    spec.priority = p->priority;
    spec.creation_s = p->creation_unix_s >= 0 ? p->creation_unix_s - first : 0;
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace seedance::k8s
