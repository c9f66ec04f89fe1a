// Readers for the Alibaba GPU cluster trace (cluster-trace-gpu-v2023, "openb") CSV files.
//
// Node schema: sn,cpu_milli,memory_mib,gpu,model
// Pod schema:  name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
//              creation_time,deletion_time,scheduled_time]  (the short variant stops after
//              gpu_milli). Columns are matched by header name, so their order may vary; an
//              unknown header is an error.
//
// Files are read with base::ReadInput (kind kTrace): "-" is standard input, a directory, a device
// that never ends or a file over the trace cap is an error naming the path. Node names (sn) and
// pod names must be unique within their file: a repeated name is an error naming its line and
// the line of its first use.
// Every content error is an absl::Status of code kInvalidArgument (read errors keep
// base::ReadInput's codes, e.g. kNotFound for a missing file) whose message reads "FILE:LINE: field
// 'NAME': what was wrong (got 'VALUE')"; LINE is 1-based and counts every line of the file.
// Dialect (the one of every CSV reader, seedance/trace/csv_table.h): the header is the first
// non-blank line; blank lines are skipped anywhere; "\n" or "\r\n" ends a line; spaces around a
// field are trimmed; there is no CSV quoting (a field's surrounding double quotes are stripped, but
// a comma always separates). A file with a header and no rows is valid and yields an empty list.
// Thread-safety: all functions are pure and may be called concurrently.
#ifndef SEEDANCE_TRACE_CSV_READER_H_
#define SEEDANCE_TRACE_CSV_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/core/cluster_state.h"

namespace seedance::trace {

// Parses node CSV text; `source` names the input in error messages. Checks a non-empty sn,
// cpu_milli and memory_mib >= 0 and gpu in 0..core::kMaxGpusPerNode; a GPU node may have an empty
// model.
absl::StatusOr<std::vector<core::NodeSpec>> ParseNodeCsv(std::string_view text,
                                                         std::string_view source);
// Parses pod CSV text; when `lines` is given it receives the 1-based line of each pod.
// PodSpec::shape.gpu_model_mask is left 0; resolve it against a cluster with
// ClusterState::ModelMask(pod.gpu_spec). Checks a non-empty name, quantities >= 0, gpu_milli in
// 0..1000, gpu_milli == 0 exactly when num_gpu == 0, and gpu_milli == 1000 when num_gpu > 1. Times
// are integer seconds (a decimal is rounded down); an empty or absent creation_time is 0, an empty
// or absent deletion_time/scheduled_time is -1; a deletion_time before creation_time is an error.
// priority comes from qos: LS 3, Guaranteed 2,
// Burstable 1, BE 0, anything else (including empty) 1.
absl::StatusOr<std::vector<core::PodSpec>> ParsePodCsv(std::string_view text,
                                                       std::string_view source,
                                                       std::vector<int64_t>* lines = nullptr);

absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeCsv(const std::string& path);
absl::StatusOr<std::vector<core::PodSpec>> ReadPodCsv(const std::string& path,
                                                      std::vector<int64_t>* lines = nullptr);

// A pod's gpu_spec ("A|B|C") names the GPU models it accepts. A name the cluster does not have is
// not an error (the trace may describe a larger cluster) but deserves a warning: one message per
// such pod, "SOURCE:LINE: field 'gpu_spec': 'X' is not a GPU model of the cluster (...); ...",
// at most `max_warnings` of them plus one line counting the rest. `lines` are the pods' lines
// (ParsePodCsv); `cluster_models` the cluster's model names (ClusterState::gpu_models()).
std::vector<std::string> UnknownGpuModelWarnings(const std::vector<core::PodSpec>& pods,
                                                 const std::vector<int64_t>& lines,
                                                 std::string_view source,
                                                 const std::vector<std::string>& cluster_models,
                                                 size_t max_warnings = 10);

// The public data folder: $SEEDANCE_DATA_DIR if set and non-empty, else ../shared/data beside
// the source checkout (compiled in), else "../shared/data" relative to the working directory.
std::string DataDir();
// True when SEEDANCE_REQUIRE_DATA=1: tests must fail rather than skip on missing data.
bool DataRequired();

}  // namespace seedance::trace

#endif  // SEEDANCE_TRACE_CSV_READER_H_
