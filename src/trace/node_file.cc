#include "seedance/trace/node_file.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/k8s/snapshot.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::trace {
namespace {

std::string Shown(const std::string& path) { return base::ForTerminal(base::Clip(path, 200)); }

bool IsYamlPath(const std::string& path) {
  return absl::EndsWith(path, ".yaml") || absl::EndsWith(path, ".yml");
}

std::string SourceName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

// Nodes from the text of a node file that is not YAML.
absl::StatusOr<std::vector<core::NodeSpec>> NodesFromText(const std::string& path,
                                                          const std::string& text,
                                                          const InputOptions& options,
                                                          std::vector<std::string>* warnings) {
  if (k8s::LooksLikeSnapshot(text)) {
    k8s::Snapshot s;
    const k8s::SnapshotOptions so{.ignore_unknown = options.ignore_unknown};
    if (absl::Status st = k8s::AddSnapshotText(text, SourceName(path), so, &s); !st.ok()) {
      return st;
    }
    if (absl::Status st = k8s::FinishSnapshot(so, &s); !st.ok()) return st;
    if (warnings != nullptr)
      warnings->insert(warnings->end(), s.warnings.begin(), s.warnings.end());
    return k8s::ToNodeSpecs(s);
  }
  if (absl::EndsWith(path, ".json")) {
    absl::StatusOr<core::ClusterDescriptor> cluster = core::ParseClusterJson(text, path);
    if (!cluster.ok()) return cluster.status();
    absl::StatusOr<std::vector<core::NodeSpec>> nodes = core::ToNodeSpecs(*cluster);
    if (!nodes.ok()) {
      return absl::Status(nodes.status().code(),
                          absl::StrCat(Shown(path), ": ", nodes.status().message()));
    }
    return nodes;
  }
  return ParseNodeCsv(text, path);
}

absl::Status NoNodes(const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat(Shown(path), ": no nodes"));
}

}  // namespace

bool IsDescriptorPath(const std::string& path) {
  return IsYamlPath(path) || absl::EndsWith(path, ".json");
}

absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeFile(const std::string& path,
                                                         const InputOptions& options,
                                                         std::vector<std::string>* warnings) {
  absl::StatusOr<std::vector<core::NodeSpec>> nodes;
  if (IsYamlPath(path)) {
    absl::StatusOr<core::ClusterDescriptor> cluster = core::LoadClusterDescriptor(path);
    if (!cluster.ok()) return cluster.status();
    nodes = core::ToNodeSpecs(*cluster);
    if (!nodes.ok()) {
      return absl::Status(nodes.status().code(),
                          absl::StrCat(Shown(path), ": ", nodes.status().message()));
    }
  } else {
    // JSON node files may be kubectl snapshots of large clusters: the trace cap, not the
    // descriptor's.
    absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
    if (!text.ok()) return text.status();
    nodes = NodesFromText(path, *text, options, warnings);
    if (!nodes.ok()) return nodes.status();
  }
  if (nodes->empty()) return NoNodes(path);
  return nodes;
}

absl::StatusOr<NodesAndPods> ReadNodesAndPods(const std::string& nodes_path,
                                              const std::string& pods_path,
                                              const InputOptions& options) {
  // The nodes first, so that a problem with both files names the node file, as it always has.
  std::string nodes_text;
  if (!IsYamlPath(nodes_path)) {
    absl::StatusOr<std::string> text = base::ReadInput(nodes_path, base::InputKind::kTrace);
    if (!text.ok()) return text.status();
    nodes_text = *std::move(text);
  }
  absl::StatusOr<std::string> pods_text = base::ReadInput(pods_path, base::InputKind::kTrace);
  if (!pods_text.ok()) return pods_text.status();
  NodesAndPods out;
  if (!k8s::LooksLikeSnapshot(*pods_text)) {
    absl::StatusOr<std::vector<core::NodeSpec>> nodes =
        IsYamlPath(nodes_path) ? ReadNodeFile(nodes_path, options, &out.warnings)
                               : NodesFromText(nodes_path, nodes_text, options, &out.warnings);
    if (!nodes.ok()) return nodes.status();
    if (nodes->empty()) return NoNodes(nodes_path);
    absl::StatusOr<std::vector<core::PodSpec>> pods =
        ParsePodCsv(*pods_text, pods_path, &out.pod_lines);
    if (!pods.ok()) return pods.status();
    out.nodes = std::move(*nodes);
    out.pods = std::move(*pods);
    return out;
  }
  if (!k8s::LooksLikeSnapshot(nodes_text)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(pods_path),
                     ": a kubectl pod snapshot goes with a kubectl node snapshot as --nodes "
                     "(kubectl get nodes -o json); ",
                     Shown(nodes_path), " is not one"));
  }
  k8s::Snapshot s;
  const k8s::SnapshotOptions so{.ignore_unknown = options.ignore_unknown};
  for (auto [path, text] :
       {std::pair{&nodes_path, &nodes_text}, std::pair{&pods_path, &*pods_text}}) {
    if (absl::Status st = k8s::AddSnapshotText(*text, SourceName(*path), so, &s); !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = k8s::FinishSnapshot(so, &s); !st.ok()) return st;
  if (s.nodes.empty()) return NoNodes(nodes_path);
  out.nodes = k8s::ToNodeSpecs(s);
  out.pods = k8s::ToPodSpecs(s);
  out.warnings = std::move(s.warnings);
  if (s.terminal_pods > 0) {
    out.warnings.push_back(absl::StrCat(Shown(pods_path), ": ", s.terminal_pods,
                                        " Succeeded or Failed pods left out (they hold nothing)"));
  }
  return out;
}

}  // namespace seedance::trace
