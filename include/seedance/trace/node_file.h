// Reads any node file the simulator reads: an openb node CSV, or a cluster descriptor (YAML or
// JSON, docs/formats.md) chosen by the .yaml/.yml/.json extension.
#ifndef SEEDANCE_TRACE_NODE_FILE_H_
#define SEEDANCE_TRACE_NODE_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::trace {

bool IsDescriptorPath(const std::string& path);
// InvalidArgument naming the file (and line) for bad content, or an empty node list.
absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeFile(const std::string& path);

}  // namespace seedance::trace

#endif  // SEEDANCE_TRACE_NODE_FILE_H_
