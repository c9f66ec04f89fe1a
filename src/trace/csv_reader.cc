// Implementation of the Alibaba GPU trace CSV readers.
//
// The whole input is held in one string and scanned with string_views: a row's fields are views
// into the text, and only the strings that end up in NodeSpec/PodSpec are allocated. The CSV
// dialect is the trace's: comma-separated, no quoting (a field that starts with '"' merely has
// its surrounding quotes stripped; a quoted comma still splits), spaces/tabs around fields are
// trimmed, "\r\n" and "\n" both end a line, blank lines are skipped anywhere.

#include "seedance/trace/csv_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/trace/csv_table.h"
#include "seedance/trace/input_error.h"
#include "seedance/trace/line_scanner.h"

namespace seedance::trace {
namespace {

using table::Column;
using table::CountLines;
using table::ParseInRange;
using table::ParseQuantity;
using table::ParseTime;
using table::Row;
using table::ScanTable;

// Column order here fixes the indexes used by the row parsers below; the file may order its
// columns differently.
enum NodeColumn { kNodeSn, kNodeCpuMilli, kNodeMemoryMib, kNodeGpu, kNodeModel };
constexpr std::array<Column, 5> kNodeColumns = {{
    {"sn", true},
    {"cpu_milli", true},
    {"memory_mib", true},
    {"gpu", true},
    {"model", true},
}};

enum PodColumn {
  kPodName,
  kPodCpuMilli,
  kPodMemoryMib,
  kPodNumGpu,
  kPodGpuMilli,
  kPodGpuSpec,
  kPodQos,
  kPodPhase,
  kPodCreationTime,
  kPodDeletionTime,
  kPodScheduledTime,
};
constexpr std::array<Column, 11> kPodColumns = {{
    {"name", true},
    {"cpu_milli", true},
    {"memory_mib", true},
    {"num_gpu", true},
    {"gpu_milli", true},
    {"gpu_spec", false},
    {"qos", false},
    {"pod_phase", false},
    {"creation_time", false},
    {"deletion_time", false},
    {"scheduled_time", false},
}};

absl::Status ParseNodeRow(const Row& row, core::NodeSpec* node) {
  if (row.value(kNodeSn).empty()) return row.Error(kNodeSn, "node name must not be empty");
  int64_t gpu = 0;
  if (absl::Status s = ParseQuantity(row, kNodeCpuMilli, &node->cpu_milli); !s.ok()) return s;
  if (absl::Status s = ParseQuantity(row, kNodeMemoryMib, &node->memory_mib); !s.ok()) return s;
  if (absl::Status s = ParseInRange(row, kNodeGpu, 0, core::kMaxGpusPerNode, &gpu); !s.ok()) {
    return s;
  }
  node->name = std::string(row.value(kNodeSn));
  node->num_gpus = static_cast<int32_t>(gpu);
  node->gpu_model = std::string(row.value(kNodeModel));
  return absl::OkStatus();
}

int32_t QosPriority(std::string_view qos) {
  if (qos == "LS") return 3;
  if (qos == "Guaranteed") return 2;
  if (qos == "Burstable") return 1;
  if (qos == "BE") return 0;
  return 1;
}

absl::Status ParsePodRow(const Row& row, core::PodSpec* pod) {
  if (row.value(kPodName).empty()) return row.Error(kPodName, "pod name must not be empty");
  core::PodShape& shape = pod->shape;
  int64_t num_gpu = 0;
  int64_t gpu_milli = 0;
  if (absl::Status s = ParseQuantity(row, kPodCpuMilli, &shape.cpu_milli); !s.ok()) return s;
  if (absl::Status s = ParseQuantity(row, kPodMemoryMib, &shape.memory_mib); !s.ok()) return s;
  if (absl::Status s =
          ParseInRange(row, kPodNumGpu, 0, std::numeric_limits<int32_t>::max(), &num_gpu);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseInRange(row, kPodGpuMilli, 0, core::kMilliGpu, &gpu_milli); !s.ok()) {
    return s;
  }
  if (num_gpu == 0 && gpu_milli != 0) return row.Error(kPodGpuMilli, "must be 0 when num_gpu is 0");
  if (num_gpu > 0 && gpu_milli == 0) {
    return row.Error(kPodGpuMilli, absl::StrCat("must be > 0 when num_gpu is ", num_gpu));
  }
  if (num_gpu > 1 && gpu_milli != core::kMilliGpu) {
    return row.Error(kPodGpuMilli,
                     absl::StrCat("must be ", core::kMilliGpu, " when num_gpu is ", num_gpu));
  }
  if (absl::Status s = ParseTime(row, kPodCreationTime, 0, &pod->creation_s); !s.ok()) return s;
  if (absl::Status s = ParseTime(row, kPodDeletionTime, -1, &pod->deletion_s); !s.ok()) return s;
  if (pod->deletion_s >= 0 && pod->deletion_s < pod->creation_s) {
    return row.Error(kPodDeletionTime,
                     absl::StrCat("must not be before creation_time (", pod->creation_s, ")"));
  }
  if (absl::Status s = ParseTime(row, kPodScheduledTime, -1, &pod->scheduled_s); !s.ok()) {
    return s;
  }
  shape.num_gpu = static_cast<int32_t>(num_gpu);
  shape.gpu_milli = static_cast<int32_t>(gpu_milli);
  shape.gpu_model_mask = 0;
  pod->name = std::string(row.value(kPodName));
  pod->gpu_spec = std::string(row.value(kPodGpuSpec));
  pod->qos = std::string(row.value(kPodQos));
  pod->priority = QosPriority(pod->qos);
  return absl::OkStatus();
}

// First line of each name seen so far; the views point into the text being parsed.
using FirstLines = std::unordered_map<std::string_view, int64_t>;

// Names must be unique within a file: a repeated node or pod name is an error naming both lines.
absl::Status CheckUnique(const Row& row, int col, std::string_view what, FirstLines* first_line) {
  auto [it, inserted] = first_line->emplace(row.value(col), row.line);
  if (inserted) return absl::OkStatus();
  return row.Error(
      col, absl::StrCat("duplicate ", AbslView(what), " name (first at line ", it->second, ")"));
}

}  // namespace

absl::StatusOr<std::vector<core::NodeSpec>> ParseNodeCsv(std::string_view text,
                                                         std::string_view source) {
  std::vector<core::NodeSpec> nodes;
  nodes.reserve(CountLines(text));
  FirstLines first_line;
  absl::Status s = ScanTable(text, source, kNodeColumns, [&](const Row& row) {
    core::NodeSpec node;
    if (absl::Status s = ParseNodeRow(row, &node); !s.ok()) return s;
    if (absl::Status s = CheckUnique(row, kNodeSn, "node", &first_line); !s.ok()) return s;
    nodes.push_back(std::move(node));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return nodes;
}

absl::StatusOr<std::vector<core::PodSpec>> ParsePodCsv(std::string_view text,
                                                       std::string_view source,
                                                       std::vector<int64_t>* lines) {
  std::vector<core::PodSpec> pods;
  pods.reserve(CountLines(text));
  if (lines != nullptr) lines->clear();
  FirstLines first_line;
  absl::Status s = ScanTable(text, source, kPodColumns, [&](const Row& row) {
    core::PodSpec pod;
    if (absl::Status s = ParsePodRow(row, &pod); !s.ok()) return s;
    if (absl::Status s = CheckUnique(row, kPodName, "pod", &first_line); !s.ok()) return s;
    pods.push_back(std::move(pod));
    if (lines != nullptr) lines->push_back(row.line);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return pods;
}

absl::StatusOr<std::vector<core::NodeSpec>> ReadNodeCsv(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseNodeCsv(*text, path);
}

absl::StatusOr<std::vector<core::PodSpec>> ReadPodCsv(const std::string& path,
                                                      std::vector<int64_t>* lines) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParsePodCsv(*text, path, lines);
}

std::vector<std::string> UnknownGpuModelWarnings(const std::vector<core::PodSpec>& pods,
                                                 const std::vector<int64_t>& lines,
                                                 std::string_view source,
                                                 const std::vector<std::string>& cluster_models,
                                                 size_t max_warnings) {
  std::vector<std::string> warnings;
  size_t unreported = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    std::vector<std::string_view> unknown;
    size_t named = 0;
    const std::string_view spec = pods[i].gpu_spec;
    for (size_t start = 0; start <= spec.size();) {
      const size_t bar = std::min(spec.find('|', start), spec.size());
      const std::string_view part = spec.substr(start, bar - start);
      start = bar + 1;
      if (part.empty()) continue;
      ++named;
      if (std::find(cluster_models.begin(), cluster_models.end(), part) == cluster_models.end()) {
        unknown.push_back(part);
      }
    }
    if (unknown.empty()) continue;
    if (warnings.size() >= max_warnings) {
      ++unreported;
      continue;
    }
    std::string models;
    for (std::string_view u : unknown) {
      absl::StrAppend(&models, models.empty() ? "" : ", ", "'", QuoteValue(u), "'");
    }
    std::string known;
    for (const std::string& m : cluster_models) {
      if (known.size() > 200) {
        absl::StrAppend(&known, ", ...");
        break;
      }
      absl::StrAppend(&known, known.empty() ? "" : ", ", QuoteValue(m));
    }
    const int64_t line = i < lines.size() ? lines[i] : 0;
    absl::StrAppend(&models, unknown.size() == 1 ? " is" : " are",
                    " not a GPU model of the cluster (", known.empty() ? "none" : known, "); ",
                    unknown.size() == named ? "the pod can never be placed"
                                            : "the pod uses only the other models it names");
    warnings.push_back(absl::StrCat(AbslView(source), ":", line, ": field 'gpu_spec': ", models));
  }
  if (unreported > 0) {
    warnings.push_back(absl::StrCat(AbslView(source), ": ", unreported,
                                    " more pods name GPU models the cluster lacks"));
  }
  return warnings;
}

std::string DataDir() {
  if (const char* env = std::getenv("SEEDANCE_DATA_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
#ifdef SEEDANCE_SOURCE_DIR
  std::error_code ec;
  const std::filesystem::path beside_checkout =
      (std::filesystem::path(SEEDANCE_SOURCE_DIR) / ".." / "shared" / "data").lexically_normal();
  if (std::filesystem::is_directory(beside_checkout, ec)) return beside_checkout.string();
#endif
  return "../shared/data";
}

bool DataRequired() {
  const char* env = std::getenv("SEEDANCE_REQUIRE_DATA");
  return env != nullptr && std::string_view(env) == "1";
}

}  // namespace seedance::trace
