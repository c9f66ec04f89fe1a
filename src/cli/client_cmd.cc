// The client commands over the REST API (docs/api.md): `seedance get nodes|pods|pod UID`,
// `apply -f FILE|-`, `delete pod UID`, `explain UID`, `cordon NODE`, `uncordon NODE`,
// `submit -- SCRIPT` (a batch script as a pod, for the Slurm backend).
// They only parse flags, call seedance_api's Client and print.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client_common.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/api/client.h"
#include "seedance/base/build_info.h"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/text.h"
#include "yaml-cpp/yaml.h"

namespace seedance::cli {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

const std::vector<std::string> kGetFormats = {"table", "json", "yaml", "wide"};
const std::vector<std::string> kExplainFormats = {"table", "json", "yaml"};
constexpr int kMaxPages = 100000;
// A listing longer than this is refused: a server that never ends its pages (new continue tokens
// with items, forever) must not grow the client without bound. 10 x the largest state measured.
constexpr size_t kMaxListItems = 1000000;


std::string LabelsText(const Json& j) {
  if (!j.is_object() || !j.contains("labels") || !j["labels"].is_object() || j["labels"].empty()) {
    return "<none>";
  }
  std::vector<std::string> parts;
  for (const auto& [k, v] : j["labels"].items()) {
    parts.push_back(base::ForTerminal(k) + "=" +
                    (v.is_string() ? base::ForTerminal(v.get<std::string>()) : std::string()));
  }
  return absl::StrJoin(parts, ",");
}

std::string TaintsText(const Json& j) {
  if (!j.is_object() || !j.contains("taints") || !j["taints"].is_array() || j["taints"].empty()) {
    return "<none>";
  }
  std::vector<std::string> parts;
  for (const Json& t : j["taints"]) {
    std::string value = Str(t, "value", "");
    parts.push_back(Str(t, "key") + (value.empty() ? "" : "=" + value) + ":" + Str(t, "effect"));
  }
  return absl::StrJoin(parts, ",");
}

// As kubectl: Ready, or Unknown when the node carries the taint Kubernetes' node controller (or
// the Slurm backend, docs/slurm.md) gives a node whose state cannot be read; then
// ",SchedulingDisabled" when it is cordoned.
std::string NodeStatus(const Json& n) {
  bool unreachable = false;
  if (n.contains("taints") && n["taints"].is_array()) {
    for (const Json& t : n["taints"]) {
      if (Str(t, "key", "") == "node.kubernetes.io/unreachable") unreachable = true;
    }
  }
  return absl::StrCat(unreachable ? "Unknown" : "Ready",
                      base::BoolField(n, "cordoned") ? ",SchedulingDisabled" : "");
}

std::string NodesTable(const std::vector<Json>& nodes, bool wide) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"NAME",      "STATUS",     "GPU_MODEL", "GPUS",
                                   "CPU_MILLI", "MEMORY_MIB", "GPU_MILLI", "PODS"};
  if (wide) {
    for (const char* h : {"COST_USD_PER_HOUR", "LABELS", "TAINTS"}) head.push_back(h);
  }
  rows.push_back(head);
  for (const Json& n : nodes) {
    const Json alloc = n.is_object() && n.contains("allocated") ? n["allocated"] : Json::object();
    const int64_t gpus = Int(n, "num_gpus");
    std::vector<std::string> row = {
        Str(n, "name"),
        NodeStatus(n),
        Str(n, "gpu_model", "") == "" ? "-" : Str(n, "gpu_model"),
        absl::StrCat(gpus),
        absl::StrCat(Int(alloc, "cpu_milli"), "/", Int(n, "cpu_milli")),
        absl::StrCat(Int(alloc, "memory_mib"), "/", Int(n, "memory_mib")),
        absl::StrCat(Int(alloc, "gpu_milli"), "/", 1000 * gpus),
        Str(n, "num_pods", "0")};
    if (wide) {
      row.push_back(Str(n, "cost_usd_per_hour"));
      row.push_back(LabelsText(n));
      row.push_back(TaintsText(n));
    }
    rows.push_back(std::move(row));
  }
  return Table(rows);
}

std::string GpusText(const Json& p) {
  if (!p.is_object() || !p.contains("gpus") || !p["gpus"].is_array() || p["gpus"].empty()) {
    return "-";
  }
  std::vector<std::string> parts;
  for (const Json& g : p["gpus"]) parts.push_back(Str(g, "index") + ":" + Str(g, "milli"));
  return absl::StrJoin(parts, ",");
}

std::string PodsTable(const std::vector<Json>& pods, bool wide) {
  std::vector<std::vector<std::string>> rows;
  // A federation front's pods name their member cluster (docs/federation.md).
  const bool federated = std::any_of(pods.begin(), pods.end(),
                                     [](const Json& p) { return p.contains("cluster"); });
  std::vector<std::string> head = {"NAMESPACE", "NAME", "UID", "PHASE", "NODE", "GPUS"};
  if (federated) head.insert(head.begin() + 4, "CLUSTER");
  if (wide) {
    for (const char* h :
         {"CPU_MILLI", "MEMORY_MIB", "NUM_GPU", "GPU_MILLI", "PRIORITY", "REVISION", "LABELS"}) {
      head.push_back(h);
    }
  }
  rows.push_back(head);
  for (const Json& p : pods) {
    std::vector<std::string> row = {Str(p, "namespace"), Str(p, "name"), Str(p, "uid"),
                                    Str(p, "phase"),     Str(p, "node"), GpusText(p)};
    if (federated) row.insert(row.begin() + 4, Str(p, "cluster"));
    if (wide) {
      for (const char* k :
           {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "priority", "revision"}) {
        row.push_back(Str(p, k));
      }
      row.push_back(LabelsText(p));
    }
    rows.push_back(std::move(row));
  }
  return Table(rows);
}

// One resource of a queue's figures: "12" (a GPU count), "-" for none or unlimited.
std::string GpusOf(const Json& q, const char* field) {
  if (!q.is_object() || !q.contains(field) || !q[field].is_object()) return "-";
  const Json& v = q[field].value("gpus", Json(nullptr));
  if (!v.is_number()) return "-";
  return absl::StrFormat("%g", v.get<double>());
}

std::string QueuesTable(const std::vector<Json>& queues, bool wide) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"NAME",  "PARENT",   "GPUS_USED", "GUARANTEED", "LIMIT",
                                   "FAIR_SHARE", "BORROWED", "PENDING",   "WEIGHT"};
  if (wide) head.push_back("NAMESPACES");
  rows.push_back(head);
  for (const Json& q : queues) {
    std::vector<std::string> row = {Str(q, "name"),          Str(q, "parent"),
                                    GpusOf(q, "usage"),      GpusOf(q, "guaranteed"),
                                    GpusOf(q, "limit"),      GpusOf(q, "fair_share"),
                                    GpusOf(q, "borrowed"),   GpusOf(q, "pending"),
                                    Str(q, "weight")};
    if (wide) {
      std::vector<std::string> nss;
      if (q.is_object() && q.contains("namespaces") && q["namespaces"].is_array()) {
        for (const Json& n : q["namespaces"]) nss.push_back(n.is_string() ? n.get<std::string>() : "?");
      }
      row.push_back(nss.empty() ? "-" : base::ForTerminal(absl::StrJoin(nss, ",")));
    }
    rows.push_back(std::move(row));
  }
  return Table(rows);
}


// Every item of a listing, following "continue" tokens.
absl::StatusOr<std::vector<Json>> List(api::Client& client, const std::string& path,
                                       const std::string& query) {
  std::vector<Json> items;
  std::string token;
  std::set<std::string> seen;
  for (int page = 0; page < kMaxPages; ++page) {
    std::string q = query;
    if (!token.empty())
      absl::StrAppend(&q, q.empty() ? "" : "&", "continue=", api::UrlEncode(token));
    absl::StatusOr<Json> reply =
        client.CallObject("GET", q.empty() ? path : path + "?" + q, {"items"});
    if (!reply.ok()) return reply.status();
    if (!(*reply)["items"].is_array()) {
      return absl::DataLossError(
          absl::StrCat("GET ", client.server(), path, ": the reply's \"items\" is not a list"));
    }
    for (Json& item : (*reply)["items"]) items.push_back(std::move(item));
    if (items.size() > kMaxListItems) {
      return absl::DataLossError(absl::StrCat("GET ", path, ": more than ", kMaxListItems,
                                              " items; the listing would not end"));
    }
    const Json next = reply->value("continue", Json(nullptr));
    if (!next.is_string() || next.get<std::string>().empty()) return items;
    token = next.get<std::string>();
    if (!seen.insert(token).second) {
      return absl::DataLossError(absl::StrCat("GET ", path,
                                              ": the server repeated the continue "
                                              "token; the listing would never end"));
    }
  }
  return absl::DataLossError(absl::StrCat("GET ", path, ": more than ", kMaxPages, " pages"));
}

absl::Status CheckNodeName(const std::string& name) {
  if (api::IsDnsSubdomain(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("NODE '", base::ForTerminal(base::Clip(name)),
                   "': a node name is a DNS-1123 name (lower-case letters, digits, '-' and '.')"));
}

// ------------------------------------------------------------------------------------- get

struct GetFlags {
  ClientFlags client;
  OutFlags out;
  std::string phase, ns, node;
  std::string uid;
};

int RunGetNodes(const GetFlags& f) {
  absl::StatusOr<Output> out = ResolveOut(f.out, kGetFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<std::vector<Json>> nodes = List(*client, "/v1/nodes", "");
  if (!nodes.ok()) return ClientFail(nodes.status());
  if (nodes->empty() && (out->format == "table" || out->format == "wide")) {
    std::fprintf(stderr, "No nodes found.\n");
    return kExitOk;
  }
  Json fields = {{"items", *nodes}};
  absl::Status s = Print(*out, "get-nodes/v1", fields, NodesTable(*nodes, out->format == "wide"));
  return s.ok() ? kExitOk : Fail(s);
}

int RunGetPods(const GetFlags& f) {
  absl::StatusOr<Output> out = ResolveOut(f.out, kGetFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  if (!f.phase.empty() && f.phase != "Pending" && f.phase != "Assumed" && f.phase != "Bound" &&
      f.phase != "Unknown" && f.phase != "Deleted") {
    return UsageError("--phase: expected Pending, Assumed, Bound, or at a federation front "
                      "Unknown or Deleted, got '" +
                      base::ForTerminal(base::Clip(f.phase)) + "'");
  }
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  std::vector<std::string> query;
  if (!f.phase.empty()) query.push_back("phase=" + api::UrlEncode(f.phase));
  if (!f.ns.empty()) query.push_back("namespace=" + api::UrlEncode(f.ns));
  if (!f.node.empty()) query.push_back("node=" + api::UrlEncode(f.node));
  absl::StatusOr<std::vector<Json>> pods = List(*client, "/v1/pods", absl::StrJoin(query, "&"));
  if (!pods.ok()) return ClientFail(pods.status());
  if (pods->empty() && (out->format == "table" || out->format == "wide")) {
    std::fprintf(stderr, "No pods found.\n");
    return kExitOk;
  }
  Json fields = {{"items", *pods}};
  absl::Status s = Print(*out, "get-pods/v1", fields, PodsTable(*pods, out->format == "wide"));
  return s.ok() ? kExitOk : Fail(s);
}

int RunGetPod(const GetFlags& f) {
  absl::StatusOr<Output> out = ResolveOut(f.out, kGetFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  if (absl::Status s = CheckUid(f.uid); !s.ok()) return Fail(s);
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> pod =
      client->CallObject("GET", "/v1/pods/" + api::UrlEncode(f.uid), {"uid", "phase"});
  if (!pod.ok()) return ClientFail(pod.status());
  absl::Status s = Print(*out, "get-pod/v1", *pod, PodsTable({*pod}, out->format == "wide"));
  return s.ok() ? kExitOk : Fail(s);
}

int RunGetQueues(const GetFlags& f) {
  absl::StatusOr<Output> out = ResolveOut(f.out, kGetFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply = client->CallObject("GET", "/v1/queues", {"items"});
  if (!reply.ok()) return ClientFail(reply.status());
  std::vector<Json> queues;
  if ((*reply)["items"].is_array()) queues.assign((*reply)["items"].begin(), (*reply)["items"].end());
  if (queues.empty() && (out->format == "table" || out->format == "wide")) {
    std::fprintf(stderr, "No queues (the policy has no queues: section, or none is yours).\n");
    return kExitOk;
  }
  absl::Status s =
      Print(*out, "get-queues/v1", *reply, QueuesTable(queues, out->format == "wide"));
  return s.ok() ? kExitOk : Fail(s);
}

Command AddGet(CLI::App& app) {
  auto f = std::make_shared<GetFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "get", "List nodes, pods or queues, or show one pod, from a running server");
  cmd.app->footer(std::string("Examples:\n"
                              "  seedance get nodes\n"
                              "  seedance get pods --phase Pending -o wide\n"
                              "  seedance get pod 5f0c3a1e-9b7d-4c2a-8e11-0d6b2f3c4a5b -o json\n"
                              "  seedance get nodes --server http://sched.example:7070 "
                              "--token-file ~/.seedance/token -o yaml\n") +
                  kServerNote + "\n" + kExitFooter);
  CLI::App* nodes = cmd.app->add_subcommand("nodes", "List the nodes: capacity, allocation, pods");
  CLI::App* pods = cmd.app->add_subcommand("pods", "List the pods (every page)");
  CLI::App* pod = cmd.app->add_subcommand("pod", "Show one pod by UID");
  CLI::App* queues = cmd.app->add_subcommand(
      "queues", "List the tenant queues: GPUs used, guaranteed, limit, fair share, borrowed, pending");
  for (CLI::App* sub : {nodes, pods, pod, queues}) {
    AddClientFlags(sub, &f->client);
    AddOutFlags(sub, &f->out, kGetFormats);
    sub->footer(std::string(kServerNote) + "\n" + kExitFooter);
  }
  nodes->footer(std::string("Examples:\n  seedance get nodes\n  seedance get nodes -o wide\n") +
                kServerNote + "\n" + kExitFooter);
  pods->add_option("--phase", f->phase,
                   "Only pods in this phase: Pending, Assumed, Bound; at a federation front "
                   "also Unknown (on a lost member) or Deleted (ended on its member)")
      ->type_name("PHASE");
  pods->add_option("--namespace,-n", f->ns, "Only pods of this namespace")->type_name("NS");
  pods->add_option("--node", f->node, "Only pods on this node")->type_name("NODE");
  pods->footer(std::string("Examples:\n  seedance get pods\n"
                           "  seedance get pods --phase Bound --node gpu-1 -o json\n") +
               kServerNote + "\n" + kExitFooter);
  pod->add_option("UID", f->uid, "The pod's UID (from POST /v1/pods or `seedance get pods`)")
      ->required();
  pod->footer(std::string("Examples:\n  seedance get pod 5f0c3a1e-9b7d-4c2a-8e11-0d6b2f3c4a5b\n"
                          "  seedance get pod UID -o yaml\n") +
              kServerNote + "\n" + kExitFooter);
  queues->footer(std::string("Examples:\n  seedance get queues\n  seedance get queues -o wide\n"
                             "  seedance get queues -o json   # every resource, not only GPUs\n") +
                 kServerNote + "\n" + kExitFooter);
  cmd.run = [f, nodes, pods, pod, queues]() {
    if (queues->parsed()) return RunGetQueues(*f);
    if (nodes->parsed()) return RunGetNodes(*f);
    if (pods->parsed()) return RunGetPods(*f);
    if (pod->parsed()) return RunGetPod(*f);
    return UsageError(
        "get: say what to get: nodes, pods, pod UID or queues (seedance get --help)");
  };
  return cmd;
}

// ----------------------------------------------------------------------------------- apply

struct ApplyFlags {
  ClientFlags client;
  std::string file;
  bool dry_run = false;
};

int RunApply(const ApplyFlags& f) {
  absl::StatusOr<std::string> text = base::ReadInput(f.file, base::InputKind::kDescriptor);
  if (!text.ok()) return Fail(text.status());
  const std::string source = f.file == "-" ? "<stdin>" : base::ForTerminal(f.file);
  absl::StatusOr<std::vector<api::ApplyObject>> objects = api::ParseApplyFile(*text, source);
  if (!objects.ok()) return Fail(objects.status());
  std::string report;
  if (f.dry_run) {
    for (const api::ApplyObject& o : *objects) {
      absl::StrAppend(&report, o.kind == api::ApplyObject::kNode ? "node/" : "pod/",
                      base::ForTerminal(o.name), " valid (dry run)\n");
    }
    absl::Status s = base::WriteStdout(report);
    return s.ok() ? kExitOk : Fail(s);
  }
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  size_t done = 0;
  for (const api::ApplyObject& o : *objects) {
    const bool node = o.kind == api::ApplyObject::kNode;
    const std::string what = absl::StrCat(node ? "node/" : "pod/", base::ForTerminal(o.name));
    absl::StatusOr<Json> reply =
        node ? client->CallObject("PUT", "/v1/nodes/" + api::UrlEncode(o.name), {"name"},
                                  o.body_json)
             : client->CallObject("POST", "/v1/pods", {"uid", "phase"}, o.body_json);
    if (!reply.ok()) {
      // What was applied stays applied; say so, then the failure with its place in the file.
      (void)base::WriteStdout(report);
      const absl::Status s(
          reply.status().code(),
          absl::StrCat(source, ":", o.line, ": ", what, ": ", reply.status().message(), " (", done,
                       " of ", objects->size(), " objects applied before it)"));
      return ClientFail(api::WithHttpStatus(s, api::HttpStatusOf(reply.status())));
    }
    ++done;
    if (node) {
      absl::StrAppend(&report, what, " applied\n");
    } else {
      const std::string phase = Str(*reply, "phase");
      absl::StrAppend(&report, what, " created: uid ", Str(*reply, "uid"), ", ", phase);
      if (phase != "Pending")
        absl::StrAppend(&report, " on ", Str(*reply, "node"), " (GPUs ", GpusText(*reply), ")");
      absl::StrAppend(&report, "\n");
    }
  }
  absl::Status s = base::WriteStdout(report);
  return s.ok() ? kExitOk : Fail(s);
}

Command AddApply(CLI::App& app) {
  auto f = std::make_shared<ApplyFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "apply",
      "Create or update nodes and submit pods from a YAML or JSON file (docs/api.md#apply-files)");
  cmd.app->add_option("-f,--filename", f->file, "The file ('-' = standard input)")
      ->type_name("FILE")
      ->required();
  cmd.app->add_flag("--dry-run", f->dry_run, "Check the file only; send nothing");
  AddClientFlags(cmd.app, &f->client);
  cmd.app->footer(
      std::string("Each object has kind: Node or Pod and the body of PUT /v1/nodes/{name} or\n"
                  "POST /v1/pods, inline or under spec:. YAML files may hold several documents\n"
                  "(---); JSON files one object or a list. The whole file is checked before\n"
                  "anything is sent; a bad object is reported as FILE:LINE: $[INDEX].FIELD.\n\n"
                  "Examples:\n"
                  "  seedance apply -f cluster.yaml\n"
                  "  seedance apply -f pods.json --dry-run\n"
                  "  cat pod.yaml | seedance apply -f -\n") +
      kServerNote + "\n" + kExitFooter);
  cmd.run = [f]() { return RunApply(*f); };
  return cmd;
}

// ------------------------------------------------------------------- delete, explain, cordon

struct UidFlags {
  ClientFlags client;
  OutFlags out;
  std::string uid;
};

int RunDeletePod(const UidFlags& f) {
  if (absl::Status s = CheckUid(f.uid); !s.ok()) return Fail(s);
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply =
      client->CallObject("DELETE", "/v1/pods/" + api::UrlEncode(f.uid), {"uid"});
  if (!reply.ok()) return ClientFail(reply.status());
  absl::Status s = base::WriteStdout("pod " + base::ForTerminal(f.uid) + " deleted\n");
  return s.ok() ? kExitOk : Fail(s);
}

Command AddDelete(CLI::App& app) {
  auto f = std::make_shared<UidFlags>();
  Command cmd;
  cmd.app = app.add_subcommand("delete", "Delete a pod (it ended: its resources are freed)");
  CLI::App* pod = cmd.app->add_subcommand("pod", "Delete one pod by UID");
  pod->add_option("UID", f->uid, "The pod's UID")->required();
  AddClientFlags(pod, &f->client);
  const std::string footer = std::string(
                                 "Examples:\n"
                                 "  seedance delete pod 5f0c3a1e-9b7d-4c2a-8e11-0d6b2f3c4a5b\n") +
                             kServerNote + "\n" + kExitFooter;
  cmd.app->footer(footer);
  pod->footer(footer);
  cmd.run = [f, pod]() {
    if (pod->parsed()) return RunDeletePod(*f);
    return UsageError("delete: say what to delete: pod UID (seedance delete --help)");
  };
  return cmd;
}

std::string ExplainText(const Json& e) {
  std::string out = absl::StrCat("pod ", Str(e, "uid"), ": ", Str(e, "phase"));
  // A federation front names the member cluster the pod is on.
  const std::string cluster =
      e.contains("cluster") && e["cluster"].is_string() ? " in cluster " + Str(e, "cluster") : "";
  if (Str(e, "phase") != "Pending") {
    return absl::StrCat(out, " on ", Str(e, "node"), cluster, "\n");
  }
  absl::StrAppend(&out, cluster);
  absl::StrAppend(&out, "\n", Str(e, "message", ""), "\n");
  if (e.contains("reasons") && e["reasons"].is_object() && !e["reasons"].empty()) {
    std::vector<std::pair<int64_t, std::string>> reasons;
    for (const auto& [k, v] : e["reasons"].items()) {
      reasons.emplace_back(v.is_number_integer() ? v.get<int64_t>() : 0, base::ForTerminal(k));
    }
    std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<std::vector<std::string>> rows = {{"REASON", "NODES"}};
    for (const auto& [n, name] : reasons) rows.push_back({name, absl::StrCat(n)});
    absl::StrAppend(&out, Table(rows));
  }
  if (e.contains("evicted") && e["evicted"].is_string()) {
    absl::StrAppend(&out, "evicted: ", Str(e, "evicted"), "\n");
  }
  if (e.contains("last_attempt") && e["last_attempt"].is_string()) {
    absl::StrAppend(&out, "last attempt: ", Str(e, "last_attempt"), "\n");
  }
  return out;
}

int RunExplain(const UidFlags& f) {
  absl::StatusOr<Output> out = ResolveOut(f.out, kExplainFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  if (absl::Status s = CheckUid(f.uid); !s.ok()) return Fail(s);
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply =
      client->CallObject("GET", "/v1/pods/" + api::UrlEncode(f.uid) + "/explain", {"uid", "phase"});
  if (!reply.ok()) return ClientFail(reply.status());
  absl::Status s = Print(*out, "explain/v1", *reply, ExplainText(*reply));
  return s.ok() ? kExitOk : Fail(s);
}

Command AddExplain(CLI::App& app) {
  auto f = std::make_shared<UidFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "explain", "Why a pod is pending: how many nodes fit and why the others do not");
  cmd.app->add_option("UID", f->uid, "The pod's UID")->required();
  AddClientFlags(cmd.app, &f->client);
  AddOutFlags(cmd.app, &f->out, kExplainFormats);
  cmd.app->footer(std::string("Examples:\n"
                              "  seedance explain 5f0c3a1e-9b7d-4c2a-8e11-0d6b2f3c4a5b\n"
                              "  seedance explain UID -o json\n") +
                  kServerNote + "\n" + kExitFooter);
  cmd.run = [f]() { return RunExplain(*f); };
  return cmd;
}

struct NodeFlags {
  ClientFlags client;
  std::string node;
};

int RunCordon(const NodeFlags& f, bool cordon) {
  if (absl::Status s = CheckNodeName(f.node); !s.ok()) return Fail(s);
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply = client->CallObject(
      "POST", "/v1/nodes/" + api::UrlEncode(f.node) + (cordon ? "/cordon" : "/uncordon"), {"name"});
  if (!reply.ok()) return ClientFail(reply.status());
  absl::Status s = base::WriteStdout("node/" + base::ForTerminal(f.node) +
                                     (cordon ? " cordoned\n" : " uncordoned\n"));
  return s.ok() ? kExitOk : Fail(s);
}

Command AddCordon(CLI::App& app, bool cordon) {
  auto f = std::make_shared<NodeFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      cordon ? "cordon" : "uncordon",
      cordon ? "Mark a node unschedulable: no new pod goes there; bound pods stay"
             : "Mark a cordoned node schedulable again");
  cmd.app->add_option("NODE", f->node, "The node's name")->required();
  AddClientFlags(cmd.app, &f->client);
  cmd.app->footer(std::string("Examples:\n  seedance ") + (cordon ? "cordon" : "uncordon") +
                  " gpu-17\n" + kServerNote + "\n" + kExitFooter);
  cmd.run = [f, cordon]() { return RunCordon(*f, cordon); };
  return cmd;
}

}  // namespace

// ------------------------------------------------------------------------------------ submit

struct SubmitFlags {
  ClientFlags client;
  std::string script;
  std::string name, ns = "default", partition, workdir, output;
  int gpus = 0, gpu_milli = 1000, priority = 0;
  int64_t cpu_milli = 1000, memory_mib = 0, time_limit_min = 0;
  double wait_s = 10;
};

// A DNS-1123 name from the script's file name, with a random suffix: "train-sh-3f9a1c".
std::string PodNameFor(const std::string& script) {
  std::string base = script.substr(script.find_last_of('/') + 1), out;
  for (char c : base) {
    const char l = absl::ascii_tolower(static_cast<unsigned char>(c));
    out.push_back(absl::ascii_isalnum(static_cast<unsigned char>(l)) ? l : '-');
  }
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) out = "job";
  std::random_device rd;
  return absl::StrFormat("%s-%06x", out, rd() & 0xffffff);
}

absl::StatusOr<std::string> SubmitBody(const SubmitFlags& f) {
  absl::StatusOr<std::string> script = base::ReadInput(f.script, base::InputKind::kConfig);
  if (!script.ok()) return script.status();
  if (!absl::StartsWith(*script, "#!")) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::ForTerminal(f.script),
                     ":1: a batch script starts with an interpreter line such as #!/bin/bash"));
  }
  api::PodRequest r;
  r.name = f.name.empty() ? PodNameFor(f.script) : f.name;
  r.ns = f.ns;
  r.cpu_milli = f.cpu_milli;
  r.memory_mib = f.memory_mib;
  r.num_gpu = f.gpus;
  r.gpu_milli = f.gpus == 0 ? 0 : f.gpu_milli;
  r.priority = f.priority;
  r.annotations["slurm.seedance.io/script"] = *script;
  if (!f.partition.empty()) r.annotations["slurm.seedance.io/partition"] = f.partition;
  if (!f.workdir.empty()) r.annotations["slurm.seedance.io/workdir"] = f.workdir;
  if (!f.output.empty()) r.annotations["slurm.seedance.io/output"] = f.output;
  if (f.time_limit_min > 0) {
    r.annotations["slurm.seedance.io/time-limit-min"] = absl::StrCat(f.time_limit_min);
  }
  const std::string body = api::PodRequestToJson(r).dump();
  // The server checks again; checking here names the flag instead of a JSON path.
  if (absl::StatusOr<api::PodRequest> back = api::ParsePodRequest(body); !back.ok()) {
    return back.status();
  }
  return body;
}

std::string Annotation(const Json& pod, const char* key) {
  const Json a = pod.value("annotations", Json::object());
  return a.is_object() && a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

// Waits for the job id (or Slurm's refusal) of the pod just submitted.
int WaitForJob(api::Client& client, const std::string& uid, double wait_s) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(int64_t(wait_s * 1e6));
  Json pod;
  while (true) {
    absl::StatusOr<Json> reply =
        client.CallObject("GET", "/v1/pods/" + api::UrlEncode(uid), {"uid"});
    if (!reply.ok() && api::HttpStatusOf(reply.status()) == 404) {
      return base::WriteStdout(absl::StrCat("pod ", uid, " ran and ended\n")).ok() ? kExitOk
                                                                                   : kExitFailure;
    }
    if (!reply.ok()) return ClientFail(reply.status());
    pod = *reply;
    const std::string job = Annotation(pod, "slurm.seedance.io/job-id");
    if (!job.empty()) {
      const std::string line = absl::StrCat("Submitted batch job ", job, " (pod ", uid, " on ",
                                            Str(pod, "node"), ", GPUs ", GpusText(pod), ")\n");
      return base::WriteStdout(line).ok() ? kExitOk : kExitFailure;
    }
    const std::string error = Annotation(pod, "slurm.seedance.io/error");
    if (!error.empty()) {
      std::fprintf(stderr, "seedance submit: pod %s stays pending: %s\n", uid.c_str(),
                   base::ForTerminal(error).c_str());
      return kExitFailure;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return base::WriteStdout(absl::StrCat("pod ", uid, " is pending (no room yet; `seedance explain ",
                                        uid, "` says why)\n"))
                 .ok()
             ? kExitOk
             : kExitFailure;
}

int RunSubmit(const SubmitFlags& f) {
  absl::StatusOr<std::string> body = SubmitBody(f);
  if (!body.ok()) return Fail(body.status());
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply = client->CallObject("POST", "/v1/pods", {"uid"}, *body);
  if (!reply.ok()) return ClientFail(reply.status());
  const std::string uid = Str(*reply, "uid");
  if (f.wait_s <= 0) {
    return base::WriteStdout(absl::StrCat("pod ", uid, " submitted\n")).ok() ? kExitOk
                                                                             : kExitFailure;
  }
  return WaitForJob(*client, uid, f.wait_s);
}

Command AddSubmit(CLI::App& app) {
  auto f = std::make_shared<SubmitFlags>();
  Command cmd;
  cmd.app = app.add_subcommand(
      "submit",
      "Submit a batch script as a pod; with --backend slurm it runs as a Slurm job on "
      "the node and GPUs Seedance chose (docs/slurm.md)");
  cmd.app->add_option("script", f->script, "The batch script (#!... first), after --")
      ->type_name("SCRIPT")
      ->required();
  AddInt<int>(cmd.app, "--gpus", &f->gpus, 0, api::kMaxPodGpus, "GPUs (whole, or one shared)");
  AddInt<int>(cmd.app, "--gpu-milli", &f->gpu_milli, 1, 1000,
              "Share of its GPU, in thousandths, for --gpus 1 (a Slurm shard request)");
  AddInt<int64_t>(cmd.app, "--cpu-milli", &f->cpu_milli, 0, api::kMaxQuantity,
                  "CPU in thousandths of a core (a job gets whole CPUs, rounded up)");
  AddInt<int64_t>(cmd.app, "--memory-mib", &f->memory_mib, 0, api::kMaxQuantity,
                  "Memory in MiB (0: Slurm's default per CPU)");
  AddInt<int>(cmd.app, "--priority", &f->priority, INT32_MIN, INT32_MAX, "Queue priority");
  AddInt<int64_t>(cmd.app, "--time-limit", &f->time_limit_min, 0, 525600,
                  "Minutes (0: the partition's limit)");
  cmd.app->add_option("--name", f->name, "Pod name (default: from the script's, made unique)");
  cmd.app->add_option("-n,--namespace", f->ns, "Namespace (a tenant's)")->capture_default_str();
  cmd.app->add_option("--partition", f->partition, "Slurm partition (default: the server's)");
  cmd.app->add_option("--workdir", f->workdir, "The job's working directory")->type_name("DIR");
  cmd.app->add_option("--output", f->output, "The job's output file (Slurm's %j, %x ...)")
      ->type_name("PATTERN");
  AddDuration(cmd.app, "--wait", &f->wait_s, 1, base::Closed(0, 86400),
              "How long to wait for the job id (0: print the pod's UID and return)");
  AddClientFlags(cmd.app, &f->client);
  cmd.app->footer(std::string("Prints \"Submitted batch job N\" once the job is in Slurm, or that "
                              "the pod is pending\nwhile no GPUs are free. Slurm's refusal "
                              "(unknown partition, GRES not available,\nslurmrestd down) is "
                              "printed and exits 1; the pod stays pending and is tried again.\n\n"
                              "Examples:\n"
                              "  seedance submit --gpus 2 -- train.sh\n"
                              "  seedance submit --gpus 1 --gpu-milli 500 --time-limit 60 -- "
                              "infer.sh\n\n") +
                  kServerNote + "\n" + kExitFooter);
  cmd.run = [f]() { return RunSubmit(*f); };
  return cmd;
}

std::vector<Command> AddClientCommands(CLI::App& app) {
  return {AddGet(app),          AddApply(app),         AddDelete(app), AddExplain(app),
          AddCordon(app, true), AddCordon(app, false), AddSubmit(app)};
}

}  // namespace seedance::cli
