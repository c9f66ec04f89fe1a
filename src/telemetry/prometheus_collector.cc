// A whole cluster through a Prometheus server's HTTP API (/api/v1/query, /api/v1/query_range),
// reading the metric names of dcgm-exporter, node-exporter and kube-state-metrics.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus_names.h"
#include "prometheus_response.h"
#include "seedance/base/clock.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/telemetry/collector.h"

namespace seedance::telemetry {
namespace {

using Labels = internal::PromLabels;

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

// A count or size from a series value: `v` rounded when it is finite and within [0, max], else
// 0 (unknown). Servers are untrusted: 1e300 or NaN must not reach an integer conversion.
int64_t Quantity(double v, double max = static_cast<double>(int64_t{1} << 40)) {
  return v >= 0 && v <= max ? static_cast<int64_t>(std::llround(v)) : 0;
}
// A series value that must lie within [lo, hi] to mean anything; NaN (missing) otherwise.
double Within(double v, double lo, double hi) { return v >= lo && v <= hi ? v : Missing(); }

using PromSample = internal::PromSample;
// One instant vector per step of a range.
using Vector = internal::PromVector;

// "%41" -> "A"; anything malformed is kept as it is.
std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    int hi = 0, lo = 0;
    auto hex = [](char c, int* v) {
      if (c >= '0' && c <= '9')
        *v = c - '0';
      else if (c >= 'a' && c <= 'f')
        *v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        *v = c - 'A' + 10;
      else
        return false;
      return true;
    };
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1], &hi) && hex(s[i + 2], &lo)) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace


namespace {

class PromClient {
 public:
  explicit PromClient(PrometheusOptions options)
      : options_(std::move(options)), shown_url_(base::RedactUrl(options_.url)) {}

  absl::Status Init() {
    const std::string& url = options_.url;
    if (absl::StartsWith(url, "https://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus ", shown_url_, ": https is not supported; use http://"));
    }
    if (!absl::StartsWith(url, "http://") || url.size() <= 7) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus ", shown_url_, ": expected http://HOST:PORT[/PATH]"));
    }
    std::string rest = url.substr(7);
    if (rest.find_first_of("?#") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--prometheus ", shown_url_, ": a query string or fragment is not supported"));
    }
    const size_t slash = rest.find('/');
    std::string hostport = slash == std::string::npos ? rest : rest.substr(0, slash);
    prefix_ = slash == std::string::npos ? "" : rest.substr(slash);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    std::string user, password;
    if (const size_t at = hostport.rfind('@'); at != std::string::npos) {
      const std::string userinfo = hostport.substr(0, at);
      hostport = hostport.substr(at + 1);
      const size_t colon = userinfo.find(':');
      user = PercentDecode(userinfo.substr(0, colon));
      if (colon != std::string::npos) password = PercentDecode(userinfo.substr(colon + 1));
    }
    int port = 80;
    std::string host = hostport;
    const size_t bracket = hostport.rfind(']');
    if (const size_t colon = hostport.rfind(':');
        colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
      host = hostport.substr(0, colon);
      if (!absl::SimpleAtoi(hostport.substr(colon + 1), &port) || port <= 0 || port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("--prometheus ", shown_url_, ": bad port"));
      }
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--prometheus ", shown_url_, ": no host"));
    }
    if (!(options_.timeout_s > 0 && options_.timeout_s <= 600)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeout ", base::FormatNumber(options_.timeout_s), ": expected (0, 600]"));
    }
    client_ = std::make_unique<httplib::Client>(host, port);
    if (!user.empty() || !password.empty()) client_->set_basic_auth(user, password);
    const auto timeout = std::chrono::microseconds(static_cast<int64_t>(options_.timeout_s * 1e6));
    client_->set_connection_timeout(timeout);
    // The total deadline (Fetch's watchdog) ends a request; the per-read timeout only backs it up.
    client_->set_read_timeout(timeout + std::chrono::seconds(1));
    client_->set_write_timeout(timeout + std::chrono::seconds(1));
    client_->set_keep_alive(true);
    return absl::OkStatus();
  }

  // Instant query at `time`.
  absl::StatusOr<Vector> Query(const std::string& promql, double time) {
    httplib::Params params{{"query", promql}, {"time", Num(time)}};
    const std::string path = "/api/v1/query";
    auto body = Call(path, params);
    if (!body.ok()) return body.status();
    return internal::ParseQueryResponse(*body, Where(path, promql));
  }

  // Range query; returns one Vector per step start, start + step, ..., end.
  absl::StatusOr<std::vector<Vector>> QueryRange(const std::string& promql, double start,
                                                 double end, double step) {
    httplib::Params params{
        {"query", promql}, {"start", Num(start)}, {"end", Num(end)}, {"step", Num(step)}};
    const std::string path = "/api/v1/query_range";
    auto body = Call(path, params);
    if (!body.ok()) return body.status();
    return internal::ParseRangeResponse(*body, Where(path, promql), start, end, step);
  }

  // The server's URL with any credentials replaced by "<redacted>": for messages and profiles.
  const std::string& url() const { return shown_url_; }

 private:
  static std::string Num(double t) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.3f", t);
    return buf;
  }
  std::string Where(const std::string& path, const std::string& promql) const {
    return absl::StrCat("prometheus ", shown_url_, ": ", prefix_, path, " (query '",
                        base::Clip(promql, 120), "')");
  }

  // GET prefix_ + path with a total deadline of timeout_s and a body cap; returns the body of an
  // HTTP 200 reply.
  absl::StatusOr<std::string> Call(const std::string& path, const httplib::Params& params) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.timeout_s));
    struct Watch {
      base::Mutex mu;
      std::condition_variable cv;
      bool done ABSL_GUARDED_BY(mu) = false;  // the request returned
    } watch;
    std::atomic<bool> expired{false};
    // The watchdog: at the deadline, shut the connection down (and keep doing so until the
    // request returns, in case it was still connecting), so no server can hold a request past
    // --timeout by sending one byte at a time.
    std::thread watchdog([&] {
      base::MutexLock lock(watch.mu);
      auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(watch.mu) { return watch.done; };
      if (lock.WaitUntil(watch.cv, deadline, done)) return;
      expired.store(true);
      while (!done()) {
        client_->stop();
        lock.WaitFor(watch.cv, std::chrono::milliseconds(20), done);
      }
    });
    const size_t max_bytes =
        std::min(options_.max_response_bytes, internal::kMaxPrometheusResponseBytes);
    std::string body;
    bool too_big = false;
    int status = 0;
    httplib::Result res = client_->Get(
        prefix_ + path, params, httplib::Headers{},
        [&](const httplib::Response& r) {
          status = r.status;
          return true;
        },
        [&](const char* data, size_t len) {
          if (len > max_bytes - body.size()) {
            too_big = true;
            return false;
          }
          body.append(data, len);
          if (Clock::now() >= deadline) {
            expired.store(true);
            return false;
          }
          return true;
        });
    {
      base::MutexLock lock(watch.mu);
      watch.done = true;
    }
    watch.cv.notify_all();
    watchdog.join();
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::string what = absl::StrCat("prometheus ", shown_url_, ": ", prefix_, path);
    const std::string timing =
        absl::StrCat("gave up after ", base::FormatNumber(std::round(waited * 10) / 10),
                     " s; timeout ", base::FormatNumber(options_.timeout_s), " s");
    if (too_big) {
      return absl::ResourceExhaustedError(absl::StrCat(what, ": reply larger than ", max_bytes,
                                                       " bytes (the limit); query a "
                                                       "smaller cluster or a shorter range"));
    }
    if (expired.load()) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": cannot query: no complete reply within --timeout (", timing, ")"));
    }
    if (!res) {
      return absl::UnavailableError(absl::StrCat(
          what, ": cannot query: ", httplib::to_string(res.error()), " (", timing, ")"));
    }
    if (status != 200) {
      std::string msg = absl::StrCat(what, ": HTTP ", status);
      const std::string err = internal::PrometheusErrorMessage(body);
      if (!err.empty()) absl::StrAppend(&msg, ": ", err);
      return absl::UnavailableError(msg);
    }
    return body;
  }

  PrometheusOptions options_;
  std::string shown_url_;
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
    const double now = describe_time_ > 0 ? describe_time_ : base::UnixNowSeconds();
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
        g.memory_mib = Quantity(fb[{name, i}]);
        n.gpus.push_back(std::move(g));
      }
    }
    // Node CPU count and memory (node-exporter), or allocatable (kube-state-metrics).
    std::map<std::string, int> cpu_count;
    for (const PromSample& s : *cpus) ++cpu_count[NodeOf(s.metric)];
    for (const auto& [name, count] : cpu_count) {
      if (!name.empty()) node(name).cpus = static_cast<int>(std::min(count, 1 << 20));
    }
    for (const PromSample& s : *mem_total) {
      const std::string n = NodeOf(s.metric);
      if (!n.empty()) node(n).memory_mib = Quantity(std::floor(s.value / (1 << 20)));
    }
    for (const PromSample& s : *alloc) {
      const std::string n = Get(s.metric, "node");
      const std::string res = Get(s.metric, "resource");
      if (n.empty()) continue;
      if (res == "cpu") node(n).cpus = static_cast<int>(Quantity(std::floor(s.value), 1 << 20));
      if (res == "memory") node(n).memory_mib = Quantity(std::floor(s.value / (1 << 20)));
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
      // Each term is at most 2^40 (or 2^20 GPUs), and the sums are capped the same way, so no
      // server can make them overflow.
      if (res == "cpu")
        p.cpu_milli = std::min(p.cpu_milli + Quantity(s.value * 1000), int64_t{1} << 40);
      if (res == "memory") {
        p.memory_mib = std::min(p.memory_mib + Quantity(s.value / (1 << 20)), int64_t{1} << 40);
      }
      if (res == names::kGpuResource) {
        p.num_gpus = static_cast<int32_t>(
            std::min<int64_t>(p.num_gpus + Quantity(s.value, 1 << 20), 1 << 20));
      }
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
      const bool percent = absl::string_view(key) == "util" || absl::string_view(key) == "mem_copy";
      for (const auto& s : values[key]) {
        if (GpuInfo* g = gpu_at(s.metric)) {
          (g->*member)[i] = Within(bytes ? s.value / (1 << 20) : s.value, 0, percent ? 100 : 1e15);
        }
      }
    }
    for (const auto& s : values["cpu_idle"]) {
      if (NodeProfile* n = node_at(s.metric)) {
        n->cpu_util_pct[i] = Within(100.0 * (1.0 - s.value), 0, 100);
      }
    }
    for (const auto& s : values["mem_used"]) {
      if (NodeProfile* n = node_at(s.metric))
        n->mem_used_mib[i] = Within(s.value / (1 << 20), 0, 1e15);
    }
    return absl::OkStatus();
  }

  void set_describe_time(double t) { describe_time_ = t; }

 private:
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

class PromQuerier : public PrometheusQuerier {
 public:
  explicit PromQuerier(PrometheusOptions options) : client_(std::move(options)) {}
  absl::Status Init() { return client_.Init(); }

  absl::StatusOr<double> Sum(const std::string& promql, double unix_time_s) override {
    absl::StatusOr<Vector> v = client_.Query(promql, unix_time_s);
    if (!v.ok()) return v.status();
    double sum = 0;
    bool any = false;
    for (const internal::PromSample& s : *v) {
      if (std::isnan(s.value)) continue;
      sum += s.value;
      any = true;
    }
    if (!any) {
      return absl::NotFoundError(absl::StrCat("prometheus ", client_.url(), ": query '",
                                              base::Clip(promql, 120), "' matched no series"));
    }
    return sum;
  }
  const std::string& url() const override { return client_.url(); }

 private:
  PromClient client_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PrometheusQuerier>> NewPrometheusQuerier(PrometheusOptions options) {
  auto q = std::make_unique<PromQuerier>(std::move(options));
  if (absl::Status s = q->Init(); !s.ok()) return s;
  return std::unique_ptr<PrometheusQuerier>(std::move(q));
}

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
