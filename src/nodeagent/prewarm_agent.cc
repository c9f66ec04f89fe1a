// The node agent's prewarm loop (prewarm_agent.h): the watch loop (on Run's thread) keeps the
// set of this node's pods with a prewarm list, and `parallel_pods` workers prewarm them through
// the NodeCache and write the outcome on the pod.
#include "seedance/nodeagent/prewarm_agent.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iterator>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "httplib.h"
#include "seedance/api/api.h"
#include "seedance/base/mutex.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::nodeagent {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string StringOr(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// "GET /v1/watch" for the events after `since`, waiting up to timeout_s.
std::string WatchPath(int64_t since, double timeout_s) {
  return absl::StrCat("/v1/watch?format=json&since=", since,
                      "&timeout=", base::FormatNumber(timeout_s), "s");
}

api::ClientOptions WithTimeout(api::ClientOptions o, double timeout_s) {
  o.timeout_s = timeout_s;
  return o;
}

class Agent : public PrewarmAgent {
 public:
  Agent(PrewarmAgentOptions o, NodeCache* cache) : o_(std::move(o)), cache_(cache) {
    m_.lead_time_buckets.assign(std::size(kLeadTimeBuckets), 0);
  }

  absl::Status Run() override;
  void Stop() override {
    base::MutexLock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  PrewarmAgentMetrics metrics() const override {
    base::MutexLock lock(mu_);
    return m_;
  }
  std::string PrometheusText() const override;

 private:
  // Where a tracked pod is: waiting for a worker, being prewarmed, or prewarmed (pinned when
  // Ready).
  enum class State { kQueued, kRunning, kDone };
  struct Tracked {
    State state = State::kQueued;
    bool gone = false;  // deleted, unbound or moved while running: unpin when done
    std::map<std::string, std::string> recorded;  // the status annotations the server has
    std::string prewarm;                          // the list, as annotated
    Clock::time_point seen;                       // when the agent saw it bound here
  };

  void Log(const std::string& line) const {
    if (o_.log) o_.log(line);
  }
  // Waits up to `s` seconds; false when Stop was called.
  bool Sleep(double s);
  bool stopping() {
    base::MutexLock lock(mu_);
    return stopping_;
  }
  void CountServerError(const absl::Status& st);
  absl::Status Relist(api::Client& client, int64_t* since);
  absl::Status WatchOnce(api::Client& client, int64_t* since);
  void OnPod(const PodView& pod);
  void Drop(const std::string& uid, const char* why);
  void Worker();
  void Prewarm(const std::string& uid);
  // PATCHes the status, retrying while the server is unreachable. False: the pod is gone.
  bool Record(api::Client& client, const std::string& uid, const Json& patch);

  const PrewarmAgentOptions o_;
  NodeCache* const cache_;
  mutable base::Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Tracked> tracked_ ABSL_GUARDED_BY(mu_);
  PrewarmAgentMetrics m_ ABSL_GUARDED_BY(mu_);
};

bool Agent::Sleep(double s) {
  base::MutexLock lock(mu_);
  lock.WaitFor(cv_, std::chrono::duration<double>(s),
               [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
  return !stopping_;
}

void Agent::CountServerError(const absl::Status& st) {
  Log(absl::StrCat("server: ", st.message()));
  base::MutexLock lock(mu_);
  ++m_.server_errors;
}

absl::Status Agent::Relist(api::Client& client, int64_t* since) {
  std::vector<PodView> pods;
  std::string cont;
  int64_t revision = -1;
  do {
    std::string path = absl::StrCat("/v1/pods?limit=5000&node=", api::UrlEncode(o_.node));
    if (!cont.empty()) absl::StrAppend(&path, "&continue=", api::UrlEncode(cont));
    absl::StatusOr<Json> page = client.CallObject("GET", path, {"items", "revision"});
    if (!page.ok()) return page.status();
    if (revision < 0) revision = page->value("revision", int64_t{0});
    for (const Json& item : (*page)["items"]) {
      absl::StatusOr<PodView> v = ViewOfPod(item);
      if (!v.ok()) return v.status();
      pods.push_back(*std::move(v));
    }
    cont = StringOr(*page, "continue");
  } while (!cont.empty());
  std::vector<std::string> vanished;
  {
    base::MutexLock lock(mu_);
    ++m_.relists;
    for (const auto& entry : tracked_) {
      const std::string& uid = entry.first;
      if (std::none_of(pods.begin(), pods.end(), [&](const PodView& p) { return p.uid == uid; })) {
        vanished.push_back(uid);
      }
    }
  }
  for (const std::string& uid : vanished) Drop(uid, "no longer on this node");
  for (const PodView& p : pods) OnPod(p);
  *since = revision;
  Log(absl::StrCat("listed ", pods.size(), " pod(s) on node ", o_.node, " at revision ", revision));
  return absl::OkStatus();
}

absl::Status Agent::WatchOnce(api::Client& client, int64_t* since) {
  absl::StatusOr<Json> reply =
      client.CallObject("GET", WatchPath(*since, o_.watch_timeout_s), {"events", "revision"});
  if (!reply.ok()) return reply.status();
  for (const Json& e : (*reply)["events"]) {
    const std::string type = StringOr(e, "type");
    auto obj = e.find("object");
    if (!type.starts_with("Pod") || obj == e.end() || !obj->is_object()) continue;
    if (type == "PodDeleted") {
      Drop(StringOr(*obj, "uid"), "deleted");
      continue;
    }
    absl::StatusOr<PodView> v = ViewOfPod(*obj);
    if (v.ok()) OnPod(*v);
  }
  *since = std::max(*since, reply->value("revision", *since));
  return absl::OkStatus();
}

void Agent::OnPod(const PodView& pod) {
  if (!WantsPrewarm(pod, o_.node)) {
    bool known = false;
    {
      base::MutexLock lock(mu_);
      known = tracked_.count(pod.uid) > 0;
    }
    if (known) Drop(pod.uid, pod.node == o_.node ? "unbound" : "moved to another node");
    return;
  }
  base::MutexLock lock(mu_);
  auto [it, added] = tracked_.try_emplace(pod.uid);
  if (!added) {
    // Our own PATCH comes back as a PodUpdated: remember what the server has.
    it->second.recorded = pod.status_annotations;
    return;
  }
  it->second.recorded = pod.status_annotations;
  it->second.prewarm = *pod.prewarm;
  it->second.seen = Clock::now();
  queue_.push_back(pod.uid);
  ++m_.pods_in_flight;
  cv_.notify_all();
}

void Agent::Drop(const std::string& uid, const char* why) {
  {
    base::MutexLock lock(mu_);
    auto it = tracked_.find(uid);
    if (it == tracked_.end()) return;
    if (it->second.state == State::kRunning) {
      it->second.gone = true;  // the worker unpins when Prewarm returns
      return;
    }
    if (it->second.state == State::kQueued) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), uid), queue_.end());
      --m_.pods_in_flight;
    }
    tracked_.erase(it);
    ++m_.unpinned;
  }
  cache_->Unpin(uid);
  Log(absl::StrCat("pod ", uid, ": ", why, "; its objects are unpinned"));
}

void Agent::Worker() {
  while (true) {
    std::string uid;
    {
      base::MutexLock lock(mu_);
      lock.Wait(cv_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      });
      if (stopping_) return;  // queued pods are prewarmed again after a restart
      uid = queue_.front();
      queue_.pop_front();
      tracked_[uid].state = State::kRunning;
    }
    Prewarm(uid);
  }
}

void Agent::Prewarm(const std::string& uid) {
  std::string list;
  Clock::time_point seen;
  {
    base::MutexLock lock(mu_);
    list = tracked_[uid].prewarm;
    seen = tracked_[uid].seen;
  }
  absl::StatusOr<std::vector<RemoteObject>> objs = ParsePrewarmList(list);
  std::vector<FetchResult> results;
  if (objs.ok()) {
    Log(absl::StrCat("pod ", uid, ": prewarming ", objs->size(), " object(s)"));
    results = cache_->Prewarm(*objs, uid);
  }
  const double lead_s = SecondsSince(seen);
  if (std::any_of(results.begin(), results.end(),
                  [](const FetchResult& r) { return absl::IsCancelled(r.status); })) {
    // Stopped, not failed: the next start prewarms it again (resuming), so nothing is recorded.
    Log(absl::StrCat("pod ", uid, ": stopped while prewarming; the next start resumes it"));
    base::MutexLock lock(mu_);
    --m_.pods_in_flight;
    return;
  }
  const Json patch = StatusPatch(results, objs.status(), lead_s, o_.node);
  const bool ready = patch[kPrewarmStatus] == "Ready";
  if (!ready) cache_->Unpin(uid);  // a failed pod does not hold the budget
  bool gone = false, changed = true;
  {
    base::MutexLock lock(mu_);
    Tracked& t = tracked_[uid];
    gone = t.gone;
    auto status = t.recorded.find(kPrewarmStatus);
    auto error = t.recorded.find(kPrewarmError);
    changed = status == t.recorded.end() || status->second != patch[kPrewarmStatus] ||
              (error == t.recorded.end() ? !patch[kPrewarmError].is_null()
                                         : patch[kPrewarmError] != error->second);
  }
  Log(absl::StrCat("pod ", uid, ": ", patch[kPrewarmStatus].get<std::string>(),
                   ready ? absl::StrFormat(" after %.3f s", lead_s)
                         : absl::StrCat(": ", patch[kPrewarmError].get<std::string>())));
  if (!gone && changed) {
    absl::StatusOr<api::Client> client = api::Client::Create(WithTimeout(o_.client, 30));
    if (client.ok()) gone = !Record(*client, uid, patch);
  }
  base::MutexLock lock(mu_);
  --m_.pods_in_flight;
  if (ready) ++m_.pods_ready;
  if (!ready) ++m_.pods_failed;
  if (ready && changed) {
    ++m_.lead_time_count;
    m_.lead_time_sum_s += lead_s;
    m_.lead_time_max_s = std::max(m_.lead_time_max_s, lead_s);
    for (size_t i = 0; i < std::size(kLeadTimeBuckets); ++i) {
      if (lead_s <= kLeadTimeBuckets[i]) ++m_.lead_time_buckets[i];
    }
  }
  if (gone) {
    tracked_.erase(uid);
    ++m_.unpinned;
    lock.Unlock();
    cache_->Unpin(uid);
    Log(absl::StrCat("pod ", uid, ": gone while prewarming; its objects are unpinned"));
    return;
  }
  tracked_[uid].state = State::kDone;
}

bool Agent::Record(api::Client& client, const std::string& uid, const Json& patch) {
  double wait_s = o_.retry_min_s;
  while (true) {
    absl::StatusOr<Json> r =
        client.CallObject("PATCH", absl::StrCat("/v1/pods/", api::UrlEncode(uid), "/annotations"),
                          {"uid"}, patch.dump());
    if (r.ok()) return true;
    if (absl::IsNotFound(r.status())) return false;
    CountServerError(r.status());
    // A refusal (a bad token, a 400) will not change by asking again.
    if (api::HttpStatusOf(r.status()) >= 400 && api::HttpStatusOf(r.status()) < 500 &&
        api::HttpStatusOf(r.status()) != 429) {
      return true;
    }
    if (!Sleep(wait_s)) return true;
    wait_s = std::min(wait_s * 2, o_.retry_max_s);
  }
}

absl::Status Agent::Run() {
  absl::StatusOr<api::Client> client =
      api::Client::Create(WithTimeout(o_.client, o_.watch_timeout_s + 15));
  if (!client.ok()) return client.status();
  std::vector<std::thread> workers;
  for (int i = 0; i < o_.parallel_pods; ++i) workers.emplace_back([this] { Worker(); });
  int64_t since = 0;
  bool listed = false;
  double wait_s = o_.retry_min_s;
  while (!stopping()) {
    absl::Status st = listed ? WatchOnce(*client, &since) : Relist(*client, &since);
    if (st.ok()) {
      listed = true;
      wait_s = o_.retry_min_s;
      continue;
    }
    if (api::HttpStatusOf(st) == 410) {  // the server no longer has events that old
      Log(absl::StrCat("watch: revision ", since, " is gone (410); listing again"));
      listed = false;
      continue;
    }
    CountServerError(st);
    if (!Sleep(wait_s)) break;
    wait_s = std::min(wait_s * 2, o_.retry_max_s);
  }
  // Downloads in flight stop at their next bytes (their partials stay for the next start), so a
  // stop does not wait for a large prewarm to finish.
  cache_->Cancel();
  for (std::thread& w : workers) w.join();
  return absl::OkStatus();
}

void AppendMetric(std::string* out, const char* name, const char* type, const char* help,
                  int64_t value) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                  value, "\n");
}

std::string Agent::PrometheusText() const {
  const NodeCacheStats c = cache_->stats();
  const PrewarmAgentMetrics m = metrics();
  std::string out;
  AppendMetric(&out, "seedance_node_cache_hits_total", "counter",
               "Objects asked for that were already local.", c.hits);
  AppendMetric(&out, "seedance_node_cache_misses_total", "counter",
               "Objects asked for that had to be fetched.", c.misses);
  AppendMetric(&out, "seedance_node_cache_fetched_bytes_total", "counter",
               "Bytes received from object stores.", c.bytes_fetched);
  AppendMetric(&out, "seedance_node_cache_evictions_total", "counter",
               "Objects and partial downloads removed for space.", c.evictions);
  AppendMetric(&out, "seedance_node_cache_resumed_total", "counter",
               "Downloads resumed with a Range request.", c.resumed);
  AppendMetric(&out, "seedance_node_cache_checksum_failures_total", "counter",
               "Downloads whose sha256 did not match.", c.checksum_failures);
  AppendMetric(&out, "seedance_node_cache_fetch_failures_total", "counter",
               "Fetches that failed otherwise.", c.fetch_failures);
  AppendMetric(&out, "seedance_node_cache_used_bytes", "gauge",
               "Bytes the cache holds on disk now.", c.bytes_used);
  AppendMetric(&out, "seedance_node_cache_objects", "gauge", "Complete objects held now.",
               c.objects);
  absl::StrAppend(&out,
                  "# HELP seedance_prewarm_pods_total Prewarms finished, by outcome.\n"
                  "# TYPE seedance_prewarm_pods_total counter\n",
                  "seedance_prewarm_pods_total{result=\"ready\"} ", m.pods_ready, "\n",
                  "seedance_prewarm_pods_total{result=\"failed\"} ", m.pods_failed, "\n");
  AppendMetric(&out, "seedance_prewarm_in_flight", "gauge", "Prewarms running or queued.",
               m.pods_in_flight);
  AppendMetric(&out, "seedance_prewarm_server_errors_total", "counter",
               "Failed calls to the Seedance server (retried).", m.server_errors);
  absl::StrAppend(&out,
                  "# HELP seedance_prewarm_lead_time_seconds From the pod seen bound on this "
                  "node to every object local and verified.\n"
                  "# TYPE seedance_prewarm_lead_time_seconds histogram\n");
  for (size_t i = 0; i < std::size(kLeadTimeBuckets); ++i) {
    absl::StrAppend(&out, "seedance_prewarm_lead_time_seconds_bucket{le=\"",
                    base::FormatNumber(kLeadTimeBuckets[i]), "\"} ", m.lead_time_buckets[i], "\n");
  }
  absl::StrAppend(&out, "seedance_prewarm_lead_time_seconds_bucket{le=\"+Inf\"} ",
                  m.lead_time_count, "\nseedance_prewarm_lead_time_seconds_sum ",
                  absl::StrFormat("%.6f", m.lead_time_sum_s),
                  "\nseedance_prewarm_lead_time_seconds_count ", m.lead_time_count, "\n");
  return out;
}

class HttpMetrics : public MetricsEndpoint {
 public:
  explicit HttpMetrics(std::function<std::string()> text) : text_(std::move(text)) {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(text_(), "text/plain; version=0.0.4");
    });
  }
  ~HttpMetrics() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  absl::Status Listen(const std::string& host, int port) {
    port_ =
        port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
    if (port_ <= 0) {
      return absl::UnavailableError(
          absl::StrCat("--metrics-port: cannot listen on ", host, ":", port));
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return absl::OkStatus();
  }
  int port() const override { return port_; }

 private:
  std::function<std::string()> text_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& host, int port, std::function<std::string()> text) {
  auto m = std::make_unique<HttpMetrics>(std::move(text));
  if (absl::Status st = m->Listen(host, port); !st.ok()) return st;
  return std::unique_ptr<MetricsEndpoint>(std::move(m));
}

absl::StatusOr<PodView> ViewOfPod(const Json& pod) {
  if (!pod.is_object() || !pod.contains("uid") || !pod["uid"].is_string()) {
    return absl::DataLossError("a pod of the API without a string \"uid\"");
  }
  PodView v;
  v.uid = pod["uid"].get<std::string>();
  v.node = StringOr(pod, "node");
  v.phase = StringOr(pod, "phase");
  auto a = pod.find("annotations");
  if (a == pod.end() || !a->is_object()) return v;
  for (const auto& [k, value] : a->items()) {
    if (!value.is_string()) continue;
    if (k == kPrewarmAnnotation) v.prewarm = value.get<std::string>();
    if (k.starts_with(kPrewarmStatusPrefix)) v.status_annotations[k] = value.get<std::string>();
  }
  return v;
}

bool WantsPrewarm(const PodView& pod, const std::string& node) {
  return pod.phase == "Bound" && pod.node == node && pod.prewarm.has_value();
}

Json StatusPatch(const std::vector<FetchResult>& results, const absl::Status& parse_error,
                 double lead_time_s, const std::string& node) {
  int64_t hits = 0, bytes = 0;
  std::vector<const FetchResult*> failed;
  for (const FetchResult& r : results) {
    hits += r.hit ? 1 : 0;
    bytes += r.bytes_fetched;
    if (!r.status.ok()) failed.push_back(&r);
  }
  const bool ready = parse_error.ok() && failed.empty();
  Json p = Json::object();
  p[kPrewarmStatus] = ready ? "Ready" : "Failed";
  p[kPrewarmObjects] = absl::StrCat(results.size());
  p[kPrewarmHits] = absl::StrCat(hits);
  p[kPrewarmBytes] = absl::StrCat(bytes);
  p[kPrewarmNode] = node;
  p[kPrewarmLeadTime] = ready ? Json(absl::StrFormat("%.3f", lead_time_s)) : Json(nullptr);
  if (ready) {
    p[kPrewarmError] = nullptr;
    return p;
  }
  std::string error;
  if (!parse_error.ok()) {
    error = absl::StrCat(kPrewarmAnnotation, ": ", parse_error.message());
  } else {
    error = absl::StrCat(failed.size(), " of ", results.size(), " object(s) failed");
    for (const FetchResult* r : failed) {
      absl::StrAppend(&error, "; ", std::string(api::StatusCodeName(r->status.code())), ": ",
                      r->status.message());
    }
  }
  p[kPrewarmError] = base::Clip(error, kMaxPrewarmErrorBytes);
  return p;
}

absl::StatusOr<std::unique_ptr<PrewarmAgent>> PrewarmAgent::Create(PrewarmAgentOptions options,
                                                                   NodeCache* cache) {
  if (absl::Status st = CheckOptions(options); !st.ok()) return st;
  if (cache == nullptr) return absl::InvalidArgumentError("no node cache");
  return std::unique_ptr<PrewarmAgent>(new Agent(std::move(options), cache));
}

absl::Status PrewarmAgent::CheckOptions(const PrewarmAgentOptions& options) {
  if (options.node.empty()) return absl::InvalidArgumentError("--node: a node name is required");
  if (!api::IsDnsSubdomain(options.node)) {
    return absl::InvalidArgumentError(absl::StrCat("--node: ", base::Clip(options.node, 80),
                                                   " is not a node name (a DNS-1123 subdomain)"));
  }
  if (!(options.watch_timeout_s >= 1 && options.watch_timeout_s <= 300)) {
    return absl::InvalidArgumentError("watch timeout: must be in 1..300 s");
  }
  if (options.parallel_pods < 1 || options.parallel_pods > 64) {
    return absl::InvalidArgumentError("parallel pods: must be in 1..64");
  }
  // The client's own checks (URL, token file), once, before anything runs.
  return api::Client::Create(WithTimeout(options.client, 30)).status();
}

absl::StatusOr<PrewarmWaitResult> WaitForPrewarm(const api::ClientOptions& client_options,
                                                 const std::string& uid, double timeout_s,
                                                 double watch_timeout_s) {
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(timeout_s));
  absl::StatusOr<api::Client> client =
      api::Client::Create(WithTimeout(client_options, watch_timeout_s + 15));
  if (!client.ok()) return client.status();
  const std::string path = absl::StrCat("/v1/pods/", api::UrlEncode(uid));
  auto settled = [](const PodView& v, PrewarmWaitResult* out) {
    out->annotations = v.status_annotations;
    out->no_list = !v.prewarm.has_value();
    auto s = v.status_annotations.find(kPrewarmStatus);
    const bool done =
        s != v.status_annotations.end() && (s->second == "Ready" || s->second == "Failed");
    out->ready = out->no_list || (done && s->second == "Ready");
    return out->no_list || done;
  };
  // A server that cannot be reached (restarting, a follower without a leader: 503) is asked
  // again until the deadline; anything else is the answer.
  double wait_s = 0.5;
  auto retry = [&](const absl::Status& st) {
    const double left_s = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (!(absl::IsUnavailable(st) || absl::IsDeadlineExceeded(st)) || left_s <= 0) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait_s, left_s)));
    wait_s = std::min(wait_s * 2, 5.0);
    return true;
  };
  PrewarmWaitResult out;
  while (true) {
    // The pod now, then its changes from that revision on (a 410 starts over from a GET).
    absl::StatusOr<Json> pod = client->CallObject("GET", path, {"uid"});
    if (!pod.ok() && retry(pod.status())) continue;
    if (!pod.ok()) return pod.status();
    absl::StatusOr<PodView> v = ViewOfPod(*pod);
    if (!v.ok()) return v.status();
    if (settled(*v, &out)) return out;
    int64_t since = pod->value("revision", int64_t{0});
    while (true) {
      const double left_s = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left_s <= 0) {
        return absl::DeadlineExceededError(absl::StrCat("pod ", uid, ": no prewarm status after ",
                                                        base::FormatNumber(timeout_s), " s"));
      }
      absl::StatusOr<Json> reply = client->CallObject(
          "GET", WatchPath(since, std::max(1.0, std::min(watch_timeout_s, left_s))),
          {"events", "revision"});
      if (!reply.ok() && (api::HttpStatusOf(reply.status()) == 410 || retry(reply.status()))) {
        break;
      }
      if (!reply.ok()) return reply.status();
      for (const Json& e : (*reply)["events"]) {
        auto obj = e.find("object");
        if (obj == e.end() || !obj->is_object() || StringOr(*obj, "uid") != uid) continue;
        if (StringOr(e, "type") == "PodDeleted") {
          return absl::NotFoundError(absl::StrCat("pod ", uid, " was deleted while waiting"));
        }
        absl::StatusOr<PodView> ev = ViewOfPod(*obj);
        if (ev.ok() && settled(*ev, &out)) return out;
      }
      since = std::max(since, reply->value("revision", since));
    }
  }
}

}  // namespace seedance::nodeagent
