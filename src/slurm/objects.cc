#include "seedance/slurm/objects.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"

namespace seedance::slurm {
namespace {

using Json = nlohmann::json;

// Debian's absl has its own string_view.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

absl::Status PathError(std::string_view path, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("slurmrestd reply: ", A(path), ": ", A(message)));
}

// Deeper than any slurmrestd reply; refused before the parser's recursion.
constexpr int kMaxDepth = 64;

absl::StatusOr<Json> ParseObject(std::string_view body) {
  if (base::JsonNestingDepth(body, kMaxDepth) > kMaxDepth) {
    return PathError("$", absl::StrCat("JSON nested deeper than ", kMaxDepth, " levels"));
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return PathError("$", absl::StrCat("not JSON: ", base::ForTerminal(base::Clip(body, 120))));
  }
  if (!j.is_object()) return PathError("$", "not a JSON object");
  return j;
}

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (it->is_string()) {
    for (absl::string_view s : absl::StrSplit(it->get<std::string>(), ',', absl::SkipEmpty())) {
      out.emplace_back(s);
    }
    return out;
  }
  if (!it->is_array()) return out;
  for (const Json& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

// The items of a GRES string, "gpu:g0:1(S:0),shard:g0:4": commas inside parentheses do not split.
std::vector<std::string> GresItems(std::string_view gres) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      items.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    if (depth == 0 && c != ')') cur.push_back(c);
  }
  if (!cur.empty()) items.push_back(std::move(cur));
  return items;
}

// name:type:count -> (type index, count) for a type "<prefix><digits>", else nullopt.
std::optional<std::pair<int, int64_t>> TypedItem(std::string_view item, std::string_view name,
                                                 std::string_view prefix) {
  std::vector<absl::string_view> parts = absl::StrSplit(A(item), ':');
  if (parts.size() != 3 || parts[0] != A(name) || !absl::StartsWith(parts[1], A(prefix))) {
    return std::nullopt;
  }
  int index = -1;
  int64_t count = 0;
  const absl::string_view digits = parts[1].substr(prefix.size());
  if (digits.empty() || !absl::SimpleAtoi(digits, &index) || index < 0 ||
      index >= core::kMaxGpusPerNode || !absl::SimpleAtoi(parts[2], &count) || count < 1) {
    return std::nullopt;
  }
  return std::pair{index, count};
}

void ReadGres(const std::string& gres, std::string_view prefix, Node* n) {
  std::set<int> gpus;
  std::map<int, int64_t> shards;
  for (const std::string& item : GresItems(gres)) {
    if (auto g = TypedItem(item, "gpu", prefix); g && g->second == 1) gpus.insert(g->first);
    if (auto s = TypedItem(item, "shard", prefix)) shards[s->first] = s->second;
  }
  n->num_gpus = 0;
  while (gpus.contains(n->num_gpus)) ++n->num_gpus;
  n->shards_per_gpu = 0;
  if (n->num_gpus == 0 || static_cast<int>(shards.size()) < n->num_gpus) return;
  const int64_t per = shards.begin()->second;
  for (int i = 0; i < n->num_gpus; ++i) {
    auto it = shards.find(i);
    if (it == shards.end() || it->second != per) return;
  }
  n->shards_per_gpu = static_cast<int32_t>(std::min<int64_t>(per, 1000));
}

// Bounds of a node's figures: 1M CPUs, 1 EiB of memory in MiB.
constexpr int64_t kMaxCpus = int64_t{1} << 20;
constexpr int64_t kMaxMib = int64_t{1} << 40;

bool HasAny(const std::vector<std::string>& flags, std::initializer_list<std::string_view> any) {
  for (const std::string& f : flags) {
    for (std::string_view a : any) {
      if (absl::EqualsIgnoreCase(f, A(a))) return true;
    }
  }
  return false;
}

}  // namespace

bool Node::Available() const { return Unavailability().empty(); }

bool Node::Lost() const {
  return absl::EqualsIgnoreCase(state, "down") ||
         HasAny(state_flags, {"NOT_RESPONDING", "POWERED_DOWN", "POWER_DOWN"});
}

std::string Node::Unavailability() const {
  const std::string s = absl::AsciiStrToLower(state);
  const bool bad_state = s == "down" || s == "drained" || s == "draining" || s == "fail" ||
                         s == "failing" || s == "future" || s == "unknown" || s == "error";
  const bool bad_flag =
      HasAny(state_flags, {"DRAIN", "DRAINED", "DRAINING", "NOT_RESPONDING", "FAIL", "POWERED_DOWN",
                           "POWER_DOWN", "MAINTENANCE", "REBOOT_REQUESTED", "REBOOT_ISSUED"});
  if (!bad_state && !bad_flag) return "";
  std::string out = s;
  for (const std::string& f : state_flags) absl::StrAppend(&out, "+", absl::AsciiStrToLower(f));
  if (!reason.empty()) absl::StrAppend(&out, " (", base::Clip(reason, 100), ")");
  return out;
}

absl::StatusOr<std::vector<Node>> ParseNodes(std::string_view body,
                                             std::string_view gpu_type_prefix) {
  absl::StatusOr<Json> j = ParseObject(body);
  if (!j.ok()) return j.status();
  if (absl::Status st = ErrorsOf(200, body, "slurm: list nodes"); !st.ok()) return st;
  auto nodes = j->find("nodes");
  if (nodes == j->end() || !nodes->is_array()) return PathError("$.nodes", "missing or not a list");
  std::vector<Node> out;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const Json& v = (*nodes)[i];
    if (!v.is_object() || base::StringField(v, "name").empty()) {
      return PathError(base::JsonPathIndex("$.nodes", i), "not a node with a name");
    }
    Node n;
    n.name = base::StringField(v, "name");
    n.cpus = base::IntField(v, "cpus");
    n.memory_mib = base::IntField(v, "real_memory");
    ReadGres(base::StringField(v, "gres"), gpu_type_prefix, &n);
    n.state = base::StringField(v, "state");
    n.state_flags = Strings(v, "state_flags");
    n.features = Strings(v, "active_features");
    if (n.features.empty()) n.features = Strings(v, "features");
    n.partitions = Strings(v, "partitions");
    n.reason = base::StringField(v, "reason");
    n.address = base::StringField(v, "address");
    const int64_t port = base::IntField(v, "port");
    n.port = static_cast<int>(port);
    // Beyond any machine: refused here so no product (cpus x 1000) can overflow downstream.
    for (const auto& [field, value, max] :
         {std::tuple{"cpus", n.cpus, kMaxCpus}, std::tuple{"real_memory", n.memory_mib, kMaxMib},
          std::tuple{"port", port, int64_t{65535}}}) {
      if (value < 0 || value > max) {
        return PathError(base::JsonPathChild(base::JsonPathIndex("$.nodes", i), field),
                         absl::StrCat(value, " is out of range [0, ", max, "]"));
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

JobPhase PhaseOf(std::string_view state) {
  if (state == "COMPLETED") return JobPhase::kSucceeded;
  if (state == "NODE_FAIL" || state == "PREEMPTED") return JobPhase::kNodeLost;
  if (state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" || state == "OUT_OF_MEMORY" ||
      state == "DEADLINE" || state == "BOOT_FAIL") {
    return JobPhase::kFailed;
  }
  return JobPhase::kActive;
}

std::string_view JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kActive:
      return "Active";
    case JobPhase::kSucceeded:
      return "Succeeded";
    case JobPhase::kFailed:
      return "Failed";
    case JobPhase::kNodeLost:
      return "NodeLost";
  }
  return "Active";
}

absl::StatusOr<std::vector<Job>> ParseJobs(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body);
  if (!j.ok()) return j.status();
  if (absl::Status st = ErrorsOf(200, body, "slurm: list jobs"); !st.ok()) return st;
  auto jobs = j->find("jobs");
  if (jobs == j->end() || !jobs->is_array()) return PathError("$.jobs", "missing or not a list");
  std::vector<Job> out;
  out.reserve(jobs->size());
  for (size_t i = 0; i < jobs->size(); ++i) {
    const Json& v = (*jobs)[i];
    if (!v.is_object() || base::IntField(v, "job_id") <= 0) {
      return PathError(base::JsonPathIndex("$.jobs", i), "not a job with a job_id");
    }
    Job job;
    job.id = base::IntField(v, "job_id");
    job.name = base::StringField(v, "name");
    job.state = base::StringField(v, "job_state");
    job.nodes = base::StringField(v, "nodes");
    job.reason = base::StringField(v, "state_reason");
    job.comment = base::StringField(v, "comment");
    job.exit_code = base::IntField(v, "exit_code");
    job.phase = PhaseOf(job.state);
    out.push_back(std::move(job));
  }
  return out;
}

std::string SubmitBody(const JobSpec& spec) {
  Json env = Json::object();
  for (const auto& [k, v] : spec.environment) env[k] = v;
  // slurmrestd 22.05 refuses a job without an environment.
  if (env.empty()) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  Json job = {{"name", spec.name},
              {"nodes", "1"},
              {"tasks", 1},
              {"cpus_per_task", std::max<int64_t>(1, spec.cpus)},
              {"current_working_directory", spec.cwd.empty() ? std::string("/tmp") : spec.cwd},
              {"environment", env}};
  if (!spec.partition.empty()) job["partition"] = spec.partition;
  if (!spec.node.empty()) job["nodelist"] = spec.node;
  if (!spec.gres.empty()) job["gres"] = spec.gres;
  if (spec.memory_mib > 0) job["memory_per_node"] = spec.memory_mib;
  if (spec.time_limit_min > 0) job["time_limit"] = spec.time_limit_min;
  if (!spec.standard_output.empty()) job["standard_output"] = spec.standard_output;
  if (!spec.standard_error.empty()) job["standard_error"] = spec.standard_error;
  if (!spec.comment.empty()) job["comment"] = spec.comment;
  if (!spec.argv.empty()) job["argv"] = spec.argv;
  Json body = {{"script", spec.script}, {"job", job}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::Status ErrorsOf(int http_status, std::string_view body, std::string_view what) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> errors;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array()) {
    for (const Json& e : j["errors"]) {
      if (!e.is_object()) continue;
      std::string text = base::StringField(e, "error");
      const std::string description = base::StringField(e, "description");
      if (!description.empty() && description != text) {
        text = text.empty() ? description : absl::StrCat(text, ": ", description);
      }
      int64_t code = base::IntField(e, "error_number");
      if (code == 0) code = base::IntField(e, "error_code");
      errors.push_back(absl::StrCat(base::ForTerminal(base::Clip(text, 200)),
                                    code != 0 ? absl::StrCat(" (error ", code, ")") : ""));
    }
  }
  if (errors.empty() && http_status >= 200 && http_status < 300) return absl::OkStatus();
  if (errors.empty()) {
    errors.push_back(absl::StrCat("HTTP ", http_status, ": ",
                                  base::ForTerminal(base::Clip(std::string(body), 200))));
  }
  const std::string text = absl::StrCat(A(what), ": ", absl::StrJoin(errors, "; "));
  if (http_status == 401 || http_status == 403) return absl::UnauthenticatedError(text);
  if (http_status >= 500 && errors.empty()) return absl::UnavailableError(text);
  // slurmrestd answers 500 for a job Slurm refused: the request, not the service, is at fault.
  return absl::FailedPreconditionError(text);
}

absl::StatusOr<int64_t> ParseSubmitReply(int http_status, std::string_view body) {
  if (absl::Status st = ErrorsOf(http_status, body, "slurm: submit"); !st.ok()) return st;
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || base::IntField(j, "job_id") <= 0) {
    return absl::UnavailableError(absl::StrCat("slurm: submit: no job_id in the reply: ",
                                               base::ForTerminal(base::Clip(body, 200))));
  }
  return base::IntField(j, "job_id");
}

absl::StatusOr<std::string> GresFor(std::span<const int8_t> gpus, int32_t gpu_milli,
                                    int32_t shards_per_gpu, std::string_view gpu_type_prefix) {
  if (gpus.empty()) return std::string();
  if (gpu_milli < core::kMilliGpu) {
    if (shards_per_gpu <= 0) {
      return absl::FailedPreconditionError(
          "the pod shares a GPU but its node has no typed shard GRES (shard:<type>:N per GPU "
          "in gres.conf)");
    }
    const int64_t shards =
        (int64_t{gpu_milli} * shards_per_gpu + core::kMilliGpu - 1) / core::kMilliGpu;
    return absl::StrCat("shard:", A(gpu_type_prefix), static_cast<int>(gpus[0]), ":", shards);
  }
  std::vector<std::string> items;
  for (int8_t g : gpus)
    items.push_back(absl::StrCat("gpu:", A(gpu_type_prefix), static_cast<int>(g), ":1"));
  return absl::StrJoin(items, ",");
}

core::NodeSpec ToNodeSpec(const Node& node, const std::string& default_gpu_model) {
  core::NodeSpec spec;
  spec.name = node.name;
  spec.cpu_milli = node.cpus * 1000;
  spec.memory_mib = node.memory_mib;
  spec.num_gpus = node.num_gpus;
  if (node.num_gpus > 0) {
    spec.gpu_model = default_gpu_model;
    for (const std::string& f : node.features) {
      if (absl::StartsWith(f, "gpu-") && f.size() > 4) {
        spec.gpu_model = f.substr(4);
        break;
      }
    }
  }
  return spec;
}

}  // namespace seedance::slurm
