// Readers for the Alibaba GPU cluster trace (cluster-trace-gpu-v2023, "openb") CSV files.
//
// Node schema: sn,cpu_milli,memory_mib,gpu,model
// Pod schema:  name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
//              creation_time,deletion_time,scheduled_time]  (the short variant stops after
//              gpu_milli). Columns are matched by header name, so their order may vary; an
//              unknown header is an error.
//
// Every error is an absl::Status of code kInvalidArgument (bad content) or kNotFound (missing
// file) whose message reads "FILE:LINE: field 'NAME': what was wrong (got 'VALUE')"; LINE is
// 1-based and counts every line of the file. Dialect: the header is the first non-blank line;
// blank lines are skipped anywhere; "\n" or "\r\n" ends a line; spaces around a field are
// trimmed; there is no CSV quoting (a field's surrounding double quotes are stripped, but a comma
// always separates). A file with a header and no rows is valid and yields an empty list.
// Thread-safety: all functions are pure and may be called concurrently.
#ifndef SEEDANCE_TRACE_CSV_READER_H_
#define SEEDANCE_TRACE_CSV_READER_H_

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
// Parses pod CSV text. PodSpec::shape.gpu_model_mask is left 0; resolve it against a cluster
// with ClusterState::ModelMask(pod.gpu_spec). Checks a non-empty name, quantities >= 0, gpu_milli
// in 0..1000, gpu_milli == 0 exactly when num_gpu == 0, and gpu_milli == 1000 when num_gpu > 1.
// Times are integer seconds (a decimal is rounded down); an empty or absent creation_time is 0, an
// empty or absent deletion_time/scheduled_time is -1. priority comes from qos: LS 3, Guaranteed 2,
// Burstable 1, BE 0, anything else (including empty) 1.
absl::StatusOr<std::vector<core::PodSpec>> ParsePodCsv(std::string_view text,
                                                       std::string_view source);

absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeCsv(const std::string& path);
absl::StatusOr<std::vector<core::PodSpec>> ReadPodCsv(const std::string& path);

// The public data folder: $SEEDANCE_DATA_DIR if set and non-empty, else ../shared/data beside
// the source checkout (compiled in), else "../shared/data" relative to the working directory.
std::string DataDir();
// True when SEEDANCE_REQUIRE_DATA=1: tests must fail rather than skip on missing data.
bool DataRequired();

}  // namespace seedance::trace

#endif  // SEEDANCE_TRACE_CSV_READER_H_
