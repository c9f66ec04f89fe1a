// A whole cluster through a Prometheus server's HTTP API (/api/v1/query, /api/v1/query_range),
// reading the metric names of dcgm-exporter, node-exporter and kube-state-metrics.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "prometheus_names.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

using nlohmann::json;
using Labels = std::map<std::string, std::string>;

// The node a series belongs to. Exporters behind Kubernetes service discovery usually carry a
// relabelled `node` (or `kubernetes_node`) label; dcgm-exporter has `Hostname`; a plain
// node-exporter target only has `instance` ("host:port").
std::string NodeOf(const Labels& m) {
  for (const char* key : {"node", "kubernetes_node", "nodename", "Hostname"}) {
    auto it = m.find(key);
    if (it != m.end() && !it->second.empty()) return it->second;
  }
  auto it = m.find("instance");
  if (it == m.end()) return "";
  const std::string& inst = it->second;
  const size_t colon = inst.rfind(':');
  return colon == std::string::npos ? inst : inst.substr(0, colon);
}

std::string Get(const Labels& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

struct PromSample {
  Labels metric;
  double value = 0;
};
// One instant vector per step of a range.
using Vector = std::vector<PromSample>;

class PromClient {
 public:
  explicit PromClient(PrometheusOptions options) : options_(std::move(options)) {}

  absl::Status Init() {
    const std::string& url = options_.url;
    if (absl::StartsWith(url, "https://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus ", url, ": https is not supported; use http://"));
    }
    if (!absl::StartsWith(url, "http://") || url.size() <= 7) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus ", url, ": expected http://HOST:PORT[/PATH]"));
    }
    std::string rest = url.substr(7);
    const size_t slash = rest.find('/');
    std::string hostport = slash == std::string::npos ? rest : rest.substr(0, slash);
    prefix_ = slash == std::string::npos ? "" : rest.substr(slash);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    int port = 80;
    std::string host = hostport;
    if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
      host = hostport.substr(0, colon);
      if (!absl::SimpleAtoi(hostport.substr(colon + 1), &port) || port <= 0 || port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("--prometheus ", url, ": bad port"));
      }
    }
    if (host.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--prometheus ", url, ": no host"));
    }
    client_ = std::make_unique<httplib::Client>(host, port);
    const auto timeout =
        std::chrono::microseconds(static_cast<int64_t>(std::max(0.001, options_.timeout_s) * 1e6));
    client_->set_connection_timeout(timeout);
    client_->set_read_timeout(timeout);
    client_->set_write_timeout(timeout);
    client_->set_keep_alive(true);
    return absl::OkStatus();
  }

  // Instant query at `time`.
  absl::StatusOr<Vector> Query(const std::string& promql, double time) {
    httplib::Params params{{"query", promql}, {"time", Num(time)}};
    auto doc = Call("/api/v1/query", params);
    if (!doc.ok()) return doc.status();
    Vector out;
    const json& result = (*doc)["data"]["result"];
    if (!result.is_array()) return Bad(promql, "no data.result array");
    for (const json& r : result) {
      PromSample s;
      if (!ParseSample(r, "value", &s)) return Bad(promql, "malformed vector sample");
      out.push_back(std::move(s));
    }
    return out;
  }

  // Range query; returns one Vector per step start, start + step, ..., end.
  absl::StatusOr<std::vector<Vector>> QueryRange(const std::string& promql, double start,
                                                 double end, double step) {
    httplib::Params params{
        {"query", promql}, {"start", Num(start)}, {"end", Num(end)}, {"step", Num(step)}};
    auto doc = Call("/api/v1/query_range", params);
    if (!doc.ok()) return doc.status();
    const size_t steps = static_cast<size_t>(std::llround((end - start) / step)) + 1;
    std::vector<Vector> out(steps);
    const json& result = (*doc)["data"]["result"];
    if (!result.is_array()) return Bad(promql, "no data.result array");
    for (const json& r : result) {
      if (!r.is_object() || !r.contains("values") || !r["values"].is_array()) {
        return Bad(promql, "malformed matrix");
      }
      Labels labels;
      if (r.contains("metric") && r["metric"].is_object()) {
        for (auto it = r["metric"].begin(); it != r["metric"].end(); ++it) {
          if (it.value().is_string()) labels[it.key()] = it.value().get<std::string>();
        }
      }
      for (const json& pt : r["values"]) {
        double t = 0, v = 0;
        if (!ParsePoint(pt, &t, &v)) return Bad(promql, "malformed matrix point");
        const long long k = std::llround((t - start) / step);
        if (k < 0 || static_cast<size_t>(k) >= steps) continue;
        out[k].push_back({labels, v});
      }
    }
    return out;
  }

  const std::string& url() const { return options_.url; }

 private:
  static std::string Num(double t) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.3f", t);
    return buf;
  }
  absl::Status Bad(const std::string& promql, const std::string& what) {
    return absl::DataLossError(
        absl::StrCat("prometheus ", options_.url, ": query '", promql, "': ", what));
  }
  static bool ParsePoint(const json& pt, double* t, double* v) {
    if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_string()) return false;
    *t = pt[0].get<double>();
    const std::string s = pt[1].get<std::string>();
    if (s == "NaN" || s == "+Inf" || s == "-Inf") {
      *v = std::nan("");
      return true;
    }
    return absl::SimpleAtod(s, v);
  }
  static bool ParseSample(const json& r, const char* key, PromSample* s) {
    if (!r.is_object() || !r.contains(key)) return false;
    if (r.contains("metric") && r["metric"].is_object()) {
      for (auto it = r["metric"].begin(); it != r["metric"].end(); ++it) {
        if (it.value().is_string()) s->metric[it.key()] = it.value().get<std::string>();
      }
    }
    double t = 0;
    return ParsePoint(r[key], &t, &s->value);
  }

  absl::StatusOr<json> Call(const std::string& path, const httplib::Params& params) {
    const auto t0 = std::chrono::steady_clock::now();
    httplib::Result res = client_->Get(prefix_ + path, params, httplib::Headers{});
    if (!res) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return absl::UnavailableError(absl::StrCat(
          "prometheus ", options_.url, ": cannot query ", path, ": ",
          httplib::to_string(res.error()), " (gave up after ", std::llround(waited * 10) / 10.0,
          " s; timeout ", options_.timeout_s, " s)"));
    }
    json doc = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    if (res->status != 200) {
      std::string msg = absl::StrCat("HTTP ", res->status);
      if (!doc.is_discarded() && doc.contains("error") && doc["error"].is_string()) {
        absl::StrAppend(&msg, ": ", doc["error"].get<std::string>());
      }
      return absl::UnavailableError(
          absl::StrCat("prometheus ", options_.url, ": ", path, ": ", msg));
    }
    if (doc.is_discarded() || !doc.is_object() || doc.value("status", "") != "success" ||
        !doc.contains("data") || !doc["data"].is_object()) {
      return absl::DataLossError(
          absl::StrCat("prometheus ", options_.url, ": ", path, ": not a Prometheus API response"));
    }
    return doc;
  }

  PrometheusOptions options_;
  std::string prefix_;
  std::unique_ptr<httplib::Client> client_;
};

class PrometheusCollector : public Collector {
 public:
  explicit PrometheusCollector(PrometheusOptions options)
      : options_(options), client_(std::move(options)) {}
  absl::Status Init() { return client_.Init(); }

  std::string_view Name() const override { return "prometheus"; }
  bool HasHistory() const override { return true; }

  // Range-queries every series in one go for a history run; Sample then reads from the cache.
  absl::Status Prefetch(double start, double end, double step) {
    for (const auto& [key, promql] : SeriesQueries()) {
      auto r = client_.QueryRange(promql, start, end, step);
      if (!r.ok()) return r.status();
      range_[key] = std::move(*r);
    }
    range_start_ = start;
    range_step_ = step;
    return absl::OkStatus();
  }

  absl::Status Describe(Profile* profile) override {
    profile->source = "prometheus " + client_.url();
    const double now = describe_time_ > 0 ? describe_time_ : NowUnix();
    auto gpus = client_.Query(names::kGpuUtil, now);
    if (!gpus.ok()) return gpus.status();
    auto fb_used = client_.Query(names::kFbUsed, now);
    if (!fb_used.ok()) return fb_used.status();
    auto fb_free = client_.Query(names::kFbFree, now);
    if (!fb_free.ok()) return fb_free.status();
    auto cpus = client_.Query(absl::StrCat(names::kNodeCpuSeconds, "{mode=\"idle\"}"), now);
    if (!cpus.ok()) return cpus.status();
    auto mem_total = client_.Query(names::kNodeMemTotal, now);
    if (!mem_total.ok()) return mem_total.status();
    auto alloc = client_.Query(names::kNodeAllocatable, now);
    if (!alloc.ok()) return alloc.status();
    auto pod_info = client_.Query(names::kPodInfo, now);
    if (!pod_info.ok()) return pod_info.status();
    auto requests = client_.Query(names::kPodRequests, now);
    if (!requests.ok()) return requests.status();
    auto pending = client_.Query(absl::StrCat(names::kPodPhase, "{phase=\"Pending\"} == 1"), now);
    if (!pending.ok()) return pending.status();

    auto node = [&](const std::string& name) -> NodeProfile& {
      auto it = node_index_.find(name);
      if (it == node_index_.end()) {
        it = node_index_.emplace(name, profile->nodes.size()).first;
        NodeProfile n;
        n.name = name;
        profile->nodes.push_back(std::move(n));
      }
      return profile->nodes[it->second];
    };
    // GPUs (dcgm-exporter): label gpu = device index, modelName, UUID, and the pod using it.
    std::map<std::string, std::map<int, GpuInfo>> gpus_by_node;
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, int>>>
        pod_gpus;  // (namespace, pod) -> (node, gpu)
    for (const PromSample& s : *gpus) {
      const std::string n = NodeOf(s.metric);
      int idx = 0;
      if (n.empty() || !absl::SimpleAtoi(Get(s.metric, "gpu"), &idx) || idx < 0 || idx > 255) {
        continue;
      }
      GpuInfo& g = gpus_by_node[n][idx];
      g.index = idx;
      g.model = Get(s.metric, "modelName");
      g.uuid = Get(s.metric, "UUID");
      g.pci_bus_id = Get(s.metric, "pci_bus_id");
      const std::string pod = Get(s.metric, "pod");
      if (!pod.empty()) pod_gpus[{Get(s.metric, "namespace"), pod}].push_back({n, idx});
    }
    std::map<std::pair<std::string, int>, double> fb;
    for (const auto* v : {&*fb_used, &*fb_free}) {
      for (const PromSample& s : *v) {
        int idx = 0;
        if (absl::SimpleAtoi(Get(s.metric, "gpu"), &idx)) fb[{NodeOf(s.metric), idx}] += s.value;
      }
    }
    for (auto& [name, by_index] : gpus_by_node) {
      NodeProfile& n = node(name);
      // Index positions must be dense: fill gaps with GPUs of unknown model.
      const int max_index = by_index.rbegin()->first;
      for (int i = 0; i <= max_index; ++i) {
        GpuInfo g = by_index.count(i) ? by_index[i] : GpuInfo{};
        g.index = i;
        g.memory_mib = static_cast<int64_t>(std::llround(fb[{name, i}]));
        n.gpus.push_back(std::move(g));
      }
    }
    // Node CPU count and memory (node-exporter), or allocatable (kube-state-metrics).
    std::map<std::string, int> cpu_count;
    for (const PromSample& s : *cpus) ++cpu_count[NodeOf(s.metric)];
    for (const auto& [name, count] : cpu_count) {
      if (!name.empty()) node(name).cpus = count;
    }
    for (const PromSample& s : *mem_total) {
      const std::string n = NodeOf(s.metric);
      if (!n.empty()) node(n).memory_mib = static_cast<int64_t>(s.value / (1 << 20));
    }
    for (const PromSample& s : *alloc) {
      const std::string n = Get(s.metric, "node");
      const std::string res = Get(s.metric, "resource");
      if (n.empty()) continue;
      if (res == "cpu") node(n).cpus = static_cast<int>(std::floor(s.value));
      if (res == "memory") node(n).memory_mib = static_cast<int64_t>(s.value / (1 << 20));
    }
    // Pods (kube-state-metrics): where they run, what they request, which are pending.
    struct PodRec {
      PodInfo info;
      std::string node;
    };
    std::map<std::pair<std::string, std::string>, PodRec> pods;
    for (const PromSample& s : *pod_info) {
      PodRec& p = pods[{Get(s.metric, "namespace"), Get(s.metric, "pod")}];
      p.info.name = Get(s.metric, "pod");
      p.info.namespace_name = Get(s.metric, "namespace");
      p.node = Get(s.metric, "node");
    }
    for (const PromSample& s : *requests) {
      auto it = pods.find({Get(s.metric, "namespace"), Get(s.metric, "pod")});
      if (it == pods.end()) continue;
      const std::string res = Get(s.metric, "resource");
      PodInfo& p = it->second.info;
      if (res == "cpu") p.cpu_milli += std::llround(s.value * 1000);
      if (res == "memory") p.memory_mib += std::llround(s.value / (1 << 20));
      if (res == names::kGpuResource) p.num_gpus += static_cast<int32_t>(std::llround(s.value));
    }
    std::set<std::pair<std::string, std::string>> pending_set;
    for (const PromSample& s : *pending)
      pending_set.insert({Get(s.metric, "namespace"), Get(s.metric, "pod")});
    for (auto& [key, rec] : pods) {
      if (rec.info.num_gpus > 0) rec.info.gpu_milli = 1000;
      if (pending_set.count(key) || rec.node.empty()) {
        profile->pending_pods.push_back(rec.info);
        continue;
      }
      auto g = pod_gpus.find(key);
      if (g != pod_gpus.end() && static_cast<int32_t>(g->second.size()) == rec.info.num_gpus) {
        for (const auto& [gn, gi] : g->second) {
          if (gn == rec.node) rec.info.gpu_ids.push_back(gi);
        }
        if (static_cast<int32_t>(rec.info.gpu_ids.size()) != rec.info.num_gpus)
          rec.info.gpu_ids.clear();
        std::sort(rec.info.gpu_ids.begin(), rec.info.gpu_ids.end());
      }
      node(rec.node).pods.push_back(rec.info);
    }
    return absl::OkStatus();
  }

  absl::Status Sample(double unix_s, Profile* profile) override {
    std::map<std::string, Vector> values;
    if (!range_.empty()) {
      const long long k = std::llround((unix_s - range_start_) / range_step_);
      for (auto& [key, steps] : range_) {
        values[key] = k >= 0 && static_cast<size_t>(k) < steps.size() ? steps[k] : Vector{};
      }
    } else {
      for (const auto& [key, promql] : SeriesQueries()) {
        auto r = client_.Query(promql, unix_s);
        if (!r.ok()) return r.status();
        values[key] = std::move(*r);
      }
    }
    const size_t i = profile->timestamps_s.size();  // index of the value being appended
    auto grow = [i](std::vector<double>& s) { s.resize(i + 1, Missing()); };
    for (NodeProfile& n : profile->nodes) {
      grow(n.cpu_util_pct);
      grow(n.mem_used_mib);
      for (GpuInfo& g : n.gpus) {
        for (auto* s : {&g.util_pct, &g.mem_used_mib, &g.mem_bw_util_pct, &g.pcie_rx_mib_s,
                        &g.pcie_tx_mib_s, &g.power_w}) {
          grow(*s);
        }
      }
    }
    auto gpu_at = [&](const Labels& m) -> GpuInfo* {
      auto it = node_index_.find(NodeOf(m));
      int idx = 0;
      if (it == node_index_.end() || !absl::SimpleAtoi(Get(m, "gpu"), &idx)) return nullptr;
      NodeProfile& n = profile->nodes[it->second];
      return idx >= 0 && idx < static_cast<int>(n.gpus.size()) ? &n.gpus[idx] : nullptr;
    };
    auto node_at = [&](const Labels& m) -> NodeProfile* {
      auto it = node_index_.find(NodeOf(m));
      return it == node_index_.end() ? nullptr : &profile->nodes[it->second];
    };
    const std::pair<const char*, std::vector<double> GpuInfo::*> gpu_series[] = {
        {"util", &GpuInfo::util_pct},
        {"fb_used", &GpuInfo::mem_used_mib},
        {"mem_copy", &GpuInfo::mem_bw_util_pct},
        {"power", &GpuInfo::power_w},
        {"pcie_rx", &GpuInfo::pcie_rx_mib_s},
        {"pcie_tx", &GpuInfo::pcie_tx_mib_s}};
    for (const auto& [key, member] : gpu_series) {
      const bool bytes = absl::StartsWith(key, "pcie");
      for (const auto& s : values[key]) {
        if (GpuInfo* g = gpu_at(s.metric)) (g->*member)[i] = bytes ? s.value / (1 << 20) : s.value;
      }
    }
    for (const auto& s : values["cpu_idle"]) {
      if (NodeProfile* n = node_at(s.metric)) n->cpu_util_pct[i] = 100.0 * (1.0 - s.value);
    }
    for (const auto& s : values["mem_used"]) {
      if (NodeProfile* n = node_at(s.metric)) n->mem_used_mib[i] = s.value / (1 << 20);
    }
    return absl::OkStatus();
  }

  void set_describe_time(double t) { describe_time_ = t; }

 private:
  static double NowUnix() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::vector<std::pair<std::string, std::string>> SeriesQueries() const {
    const std::string window =
        absl::StrCat(static_cast<int>(std::max(1.0, options_.rate_window_s)), "s");
    return {
        {"util", names::kGpuUtil},
        {"fb_used", names::kFbUsed},
        {"mem_copy", names::kMemCopyUtil},
        {"power", names::kPowerUsage},
        {"pcie_rx", names::kPcieRxBytes},
        {"pcie_tx", names::kPcieTxBytes},
        {"cpu_idle", absl::StrCat("avg without (cpu, mode) (rate(", names::kNodeCpuSeconds,
                                  "{mode=\"idle\"}[", window, "]))")},
        {"mem_used", absl::StrCat(names::kNodeMemTotal, " - ", names::kNodeMemAvailable)},
    };
  }

  PrometheusOptions options_;
  PromClient client_;
  std::map<std::string, size_t> node_index_;
  std::map<std::string, std::vector<Vector>> range_;
  double range_start_ = 0, range_step_ = 1;
  double describe_time_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Collector>> NewPrometheusCollector(PrometheusOptions options) {
  auto c = std::make_unique<PrometheusCollector>(std::move(options));
  if (absl::Status s = c->Init(); !s.ok()) return s;
  return std::unique_ptr<Collector>(std::move(c));
}

namespace internal {
// Used by the profiler: range-prefetch for history runs (see profiler.cc).
absl::Status PrefetchHistory(Collector* c, double start, double end, double step) {
  auto* p = dynamic_cast<PrometheusCollector*>(c);
  if (p == nullptr) return absl::OkStatus();
  p->set_describe_time(end);
  return p->Prefetch(start, end, step);
}
}  // namespace internal

}  // namespace seedance::telemetry
