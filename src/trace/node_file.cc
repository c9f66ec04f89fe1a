#include "seedance/trace/node_file.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/trace/csv_reader.h"

namespace seedance::trace {

bool IsDescriptorPath(const std::string& path) {
  return absl::EndsWith(path, ".yaml") || absl::EndsWith(path, ".yml") ||
         absl::EndsWith(path, ".json");
}

absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeFile(const std::string& path) {
  const std::string shown = base::ForTerminal(base::Clip(path, 200));
  absl::StatusOr<std::vector<core::NodeSpec>> nodes;
  if (IsDescriptorPath(path)) {
    absl::StatusOr<core::ClusterDescriptor> cluster = core::LoadClusterDescriptor(path);
    if (!cluster.ok()) return cluster.status();
    nodes = core::ToNodeSpecs(*cluster);
    if (!nodes.ok()) {
      return absl::Status(nodes.status().code(),
                          absl::StrCat(shown, ": ", nodes.status().message()));
    }
  } else {
    nodes = ReadNodeCsv(path);
    if (!nodes.ok()) return nodes.status();
  }
  if (nodes->empty()) return absl::InvalidArgumentError(absl::StrCat(shown, ": no nodes"));
  return nodes;
}

}  // namespace seedance::trace
