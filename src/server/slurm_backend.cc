#include "seedance/server/slurm_backend.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::server {

namespace {

using JsonValue = nlohmann::json;  // server::Json is the ordered one
using Clock = std::chrono::steady_clock;
constexpr char kJobPrefix[] = "seedance-";
// Refused connects in a row before a node counts as lost.
constexpr int kProbeFailures = 2;

struct Task {
  std::string uid, node;
  std::vector<int> gpus;
  slurm::JobSpec spec;
  std::string error;  // set when the pod cannot become a job (no script)
};

// What became of a submission (the job id, or why not), applied by BindLoop.
struct Result {
  Task task;
  absl::StatusOr<int64_t> job;
};

// What a placement is, to compare a submission's pod with the ledger's.
std::vector<int> GpusOfPod(const sched::PodInfo& p) {
  std::vector<int> out;
  for (int8_t g : p.placement.gpu_ids()) out.push_back(g);
  return out;
}

std::string Annotation(const std::map<std::string, std::string>& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? std::string() : it->second;
}

// slurmd accepts connections on its port: false when refused or not answered in `timeout_ms`.
bool SlurmdAnswers(const std::string& address, int port, int timeout_ms) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (port <= 0 || inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) return true;  // unknown
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    ok = poll(&p, 1, timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
         err == 0;
  }
  close(fd);
  return ok;
}

// The pod of a PodAssumed event (docs/api.md's pod object): what MakeTask reads.
absl::StatusOr<sched::PodInfo> PodOfEvent(const JsonValue& obj) {
  sched::PodInfo p;
  try {
    p.uid = obj.at("uid").get<std::string>();
    p.name = obj.value("name", "");
    p.ns = obj.value("namespace", "");
    p.shape.cpu_milli = obj.value("cpu_milli", int64_t{0});
    p.shape.memory_mib = obj.value("memory_mib", int64_t{0});
    p.shape.num_gpu = obj.value("num_gpu", 0);
    p.shape.gpu_milli = obj.value("gpu_milli", 0);
    for (const JsonValue& g : obj.value("gpus", JsonValue::array())) {
      const int index = g.at("index").get<int>();
      if (index < 0 || index >= core::kMaxGpusPerNode ||
          p.placement.num_gpus >= core::kMaxGpusPerNode) {
        return absl::InvalidArgumentError("gpu index out of range");
      }
      p.placement.gpus[p.placement.num_gpus++] = static_cast<int8_t>(index);
    }
    p.annotations = obj.value("annotations", std::map<std::string, std::string>{});
  } catch (const JsonValue::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  p.phase = sched::PodPhase::kAssumed;
  return p;
}

// Nodes whose state Seedance cannot read get the taint Kubernetes' node controller gives a node
// whose Ready condition is Unknown, after the grace below (its node-monitor-grace-period is 40 s).
constexpr std::string_view kUnreachableTaint = "node.kubernetes.io/unreachable";
constexpr std::chrono::seconds kNodesUnknownAfter{10};

}  // namespace

struct SlurmBackend::State {
  State(Service& s, SlurmBackendOptions opt) : service(s), o(std::move(opt)) {}
  Service& service;
  SlurmBackendOptions o;
  std::unique_ptr<slurm::RestClient> rest;
  std::atomic<bool> stopping{false};
  int64_t watch_from = 0;
  prometheus::Counter* submits_ok = nullptr;
  prometheus::Counter* submits_failed = nullptr;
  prometheus::Histogram* submit_duration = nullptr;

  base::Mutex mu;
  std::condition_variable cv;
  std::deque<Task> tasks ABSL_GUARDED_BY(mu);
  std::vector<Result> results ABSL_GUARDED_BY(mu);  // submitted, not yet applied
  std::unordered_set<std::string> in_flight ABSL_GUARDED_BY(mu);  // uids queued or being submitted
  // Jobs Seedance bound, alive as far as known, both ways.
  std::unordered_map<int64_t, std::string> job_uid ABSL_GUARDED_BY(mu);
  std::unordered_map<std::string, int64_t> uid_job ABSL_GUARDED_BY(mu);
  SlurmBackendStats stats ABSL_GUARDED_BY(mu);
  Clock::time_point last_log ABSL_GUARDED_BY(mu){};
  int64_t unlogged ABSL_GUARDED_BY(mu) = 0;

  // Loop thread only (inside operations).
  std::map<std::string, core::NodeSpec> known;  // nodes learned from Slurm
  std::set<std::string> cordoned;               // cordoned because Slurm or the probe said so
  std::map<std::string, int32_t> node_shards ABSL_GUARDED_BY(mu);
  // Poller thread only.
  std::map<std::string, int> probe_failures;
  std::optional<Clock::time_point> nodes_failing_since;  // the node listing fails since then
  bool nodes_unknown = false;  // known nodes carry kUnreachableTaint (set by MarkNodesUnknown)

  void Log(const std::string& line);
  bool Sleep(double seconds);
  void Enqueue(Task t);
  // The job for a placed pod on `node` (its GPUs as gpu:<prefix>i:1 or shards).
  Task MakeTask(const sched::PodInfo& pod, const std::string& node);
  void Track(int64_t job, const std::string& uid);
  void Untrack(const std::string& uid);
  // Operations (loop thread).
  void ApplyNodes(Service::Context& c, const std::vector<slurm::Node>& nodes,
                  const std::set<std::string>& unanswered, std::vector<int64_t>* cancel);
  void EndPod(Service::Context& c, const std::string& uid, bool requeue, const std::string& why);
  // Slurm's nodes cannot be read: every known node gets kUnreachableTaint (nothing new is placed
  // there) until a listing succeeds and ApplyNodes puts them back as Slurm shows them.
  void MarkNodesUnknown(Service::Context& c);
  // A node was lost: its bound pods' jobs are to be cancelled and the pods requeued (or ended).
  void EndJobsOn(Service::Context& c, const std::string& node, const std::string& why,
                 std::vector<int64_t>* cancel);
  void Reconcile(Service::Context& c, const std::vector<slurm::Job>& jobs);
  // Threads.
  void WatchLoop();
  void OnEvent(const WatchEvent& e);  // a PodAssumed is submitted, a PodDeleted cancelled
  void Resync();                      // every Assumed pod queued for submission
  void SubmitLoop();
  void PollLoop();
  void PollNodes();
  void PollJobs();
  void Record(Service::Context& c, const Result& r, std::vector<int64_t>* cancel,
              std::vector<Task>* again);
  void BindLoop();  // applies the submissions' results, all that arrived, in one operation
};

void SlurmBackend::State::Log(const std::string& line) {
  base::MutexLock lock(mu);
  const Clock::time_point now = Clock::now();
  if (now - last_log < std::chrono::seconds(1)) {
    ++unlogged;
    return;
  }
  std::fprintf(stderr, "seedance server: %s%s\n", base::ForTerminal(line).c_str(),
               unlogged > 0 ? absl::StrCat(" (and ", unlogged, " more)").c_str() : "");
  last_log = now;
  unlogged = 0;
}

bool SlurmBackend::State::Sleep(double seconds) {
  base::MutexLock lock(mu);
  lock.WaitFor(cv, std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)),
              [&] { return stopping.load(); });
  return !stopping;
}

void SlurmBackend::State::Enqueue(Task t) {
  {
    base::MutexLock lock(mu);
    if (uid_job.contains(t.uid) || !in_flight.insert(t.uid).second) return;
    tasks.push_back(std::move(t));
  }
  cv.notify_all();
}

void SlurmBackend::State::Track(int64_t job, const std::string& uid) {
  base::MutexLock lock(mu);
  job_uid[job] = uid;
  uid_job[uid] = job;
}

void SlurmBackend::State::Untrack(const std::string& uid) {
  base::MutexLock lock(mu);
  auto it = uid_job.find(uid);
  if (it == uid_job.end()) return;
  job_uid.erase(it->second);
  uid_job.erase(it);
}

Task SlurmBackend::State::MakeTask(const sched::PodInfo& pod, const std::string& node) {
  Task t;
  t.uid = pod.uid;
  t.node = node;
  t.gpus = GpusOfPod(pod);
  slurm::JobSpec& s = t.spec;
  s.name = kJobPrefix + pod.uid;
  s.node = node;
  int32_t shards = 0;
  {
    base::MutexLock lock(mu);
    auto it = node_shards.find(node);
    if (it != node_shards.end()) shards = it->second;
  }
  absl::StatusOr<std::string> gres =
      slurm::GresFor(pod.placement.gpu_ids(), pod.shape.gpu_milli, shards, o.rest.gpu_type_prefix);
  if (gres.ok()) {
    s.gres = *gres;
  } else {
    t.error = absl::StrCat("slurm: ", gres.status().message());
  }
  s.script = Annotation(pod.annotations, kSlurmScript);
  if (s.script.empty() && t.error.empty()) {
    t.error =
        absl::StrCat("slurm: the pod has no ", kSlurmScript, " annotation (its batch script)");
  }
  s.partition = Annotation(pod.annotations, kSlurmPartition);
  if (s.partition.empty()) s.partition = o.partition;
  int64_t limit = 0;
  if (absl::SimpleAtoi(Annotation(pod.annotations, kSlurmTimeLimit), &limit)) {
    s.time_limit_min = limit;
  }
  s.cwd = Annotation(pod.annotations, kSlurmWorkdir);
  if (s.cwd.empty()) s.cwd = o.workdir;
  s.standard_output = Annotation(pod.annotations, kSlurmOutput);
  if (s.standard_output.empty()) s.standard_output = o.output;
  s.cpus = (pod.shape.cpu_milli + 999) / 1000;
  s.memory_mib = pod.shape.memory_mib;
  s.comment = absl::StrCat("seedance pod ", pod.ns, "/", pod.name, " ", pod.uid);
  s.environment = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                   {"SEEDANCE_POD_UID", pod.uid},
                   {"SEEDANCE_POD", absl::StrCat(pod.ns, "/", pod.name)},
                   {"SEEDANCE_NODE", node},
                   {"SEEDANCE_GPUS", absl::StrJoin(t.gpus, ",")}};
  return t;
}

// ------------------------------------------------------------------------------ operations

void SlurmBackend::State::EndPod(Service::Context& c, const std::string& uid, bool requeue,
                                 const std::string& why) {
  Untrack(uid);
  const sched::PodInfo* p = c.scheduler.ledger().Find(uid);
  if (p == nullptr) return;
  if (!requeue) {
    (void)c.scheduler.DeletePod(uid, c.now_s);
    return;
  }
  (void)c.scheduler.SetAnnotation(uid, kSlurmJobId, "");
  (void)c.scheduler.SetAnnotation(uid, kSlurmError, why);
  (void)c.scheduler.Evict(uid, c.now_s);
}

void SlurmBackend::State::EndJobsOn(Service::Context& c, const std::string& node,
                                    const std::string& why, std::vector<int64_t>* cancel) {
  const int idx = c.scheduler.state().FindNode(node);
  std::vector<std::string> uids;
  for (const sched::PodInfo* p : c.scheduler.ledger().PodsOnNode(idx)) {
    if (p->phase != sched::PodPhase::kBound) continue;
    int64_t job = 0;
    if (absl::SimpleAtoi(Annotation(p->annotations, kSlurmJobId), &job)) cancel->push_back(job);
    uids.push_back(p->uid);
  }
  for (const std::string& uid : uids) {
    EndPod(c, uid, o.resubmit_lost,
           absl::StrCat("slurm: node ", node, " lost (", why, ")",
                        o.resubmit_lost ? "; requeued" : ""));
    base::MutexLock lock(mu);
    ++(o.resubmit_lost ? stats.requeued : stats.failed);
  }
}

void SlurmBackend::State::MarkNodesUnknown(Service::Context& c) {
  for (auto& [name, spec] : known) {
    core::NodeSpec tainted = spec;
    tainted.taints.push_back(
        {std::string(kUnreachableTaint), "", std::string(core::kTaintNoSchedule)});
    if (absl::Status st = c.scheduler.PutNode(tainted); !st.ok()) {
      Log(absl::StrCat("slurm: node ", name, ": ", st.message()));
      continue;
    }
    spec = std::move(tainted);  // differs from what Slurm shows: the next listing puts it back
  }
}

void SlurmBackend::State::ApplyNodes(Service::Context& c, const std::vector<slurm::Node>& nodes,
                                     const std::set<std::string>& unanswered,
                                     std::vector<int64_t>* cancel) {
  std::set<std::string> listed;
  for (const slurm::Node& n : nodes) {
    if (!o.partition.empty() &&
        std::find(n.partitions.begin(), n.partitions.end(), o.partition) == n.partitions.end()) {
      continue;
    }
    listed.insert(n.name);
    core::NodeSpec spec = slurm::ToNodeSpec(n, o.gpu_model);
    auto k = known.find(n.name);
    if (k == known.end() || !(k->second == spec)) {
      if (absl::Status st = c.scheduler.PutNode(spec); !st.ok()) {
        Log(absl::StrCat("slurm: node ", n.name, ": ", st.message()));
        continue;
      }
      known[n.name] = spec;
    }
    std::string why = n.Unavailability();
    const bool probe_lost = unanswered.contains(n.name);
    if (probe_lost) why = absl::StrCat("slurmd at ", n.address, ":", n.port, " does not answer");
    if (!why.empty() && cordoned.insert(n.name).second) {
      (void)c.scheduler.CordonNode(n.name, true);
      Log(absl::StrCat("slurm: node ", n.name, " unavailable: ", why));
      base::MutexLock lock(mu);
      ++stats.nodes_unavailable;
    }
    if (n.Lost() || probe_lost) EndJobsOn(c, n.name, why, cancel);
    if (why.empty() && cordoned.erase(n.name) > 0) (void)c.scheduler.CordonNode(n.name, false);
  }
  for (auto it = known.begin(); it != known.end();) {
    if (listed.contains(it->first)) {
      ++it;
      continue;
    }
    (void)c.scheduler.DeleteNode(it->first, /*drain=*/true);
    cordoned.erase(it->first);
    it = known.erase(it);
  }
}

void SlurmBackend::State::Reconcile(Service::Context& c, const std::vector<slurm::Job>& jobs) {
  std::unordered_map<std::string, const slurm::Job*> by_name;
  std::unordered_map<int64_t, const slurm::Job*> by_id;
  for (const slurm::Job& j : jobs) {
    if (absl::StartsWith(j.name, kJobPrefix)) by_name[j.name] = &j;
    by_id[j.id] = &j;
  }
  std::vector<const sched::PodInfo*> assumed, bound;
  c.scheduler.ledger().ForEach([&](const sched::PodInfo& p) {
    if (p.phase == sched::PodPhase::kAssumed) assumed.push_back(&p);
    if (p.phase == sched::PodPhase::kBound) bound.push_back(&p);
  });
  std::vector<std::string> ended;
  for (const sched::PodInfo* p : bound) {
    int64_t id = 0;
    auto j = absl::SimpleAtoi(Annotation(p->annotations, kSlurmJobId), &id) ? by_id.find(id)
                                                                            : by_id.end();
    if (j != by_id.end() && j->second->phase == slurm::JobPhase::kActive) {
      Track(id, p->uid);
    } else {
      ended.push_back(p->uid);  // ended while Seedance was away (or never was a job)
    }
  }
  for (const std::string& uid : ended) (void)c.scheduler.DeletePod(uid, c.now_s);
  std::vector<std::string> to_bind;
  for (const sched::PodInfo* p : assumed) {
    auto j = by_name.find(kJobPrefix + p->uid);
    if (j != by_name.end() && j->second->phase == slurm::JobPhase::kActive) {
      (void)c.scheduler.SetAnnotation(p->uid, kSlurmJobId, absl::StrCat(j->second->id));
      Track(j->second->id, p->uid);
      to_bind.push_back(p->uid);
    } else {
      Enqueue(MakeTask(*p, c.scheduler.state().node(p->placement.node).name));
    }
  }
  for (const std::string& uid : to_bind) (void)c.scheduler.Bind(uid);
}

// ---------------------------------------------------------------------------------- threads

void SlurmBackend::State::Resync() {
  service.Run([this](Service::Context& c) -> Service::Finisher {
    c.scheduler.ledger().ForEach([&](const sched::PodInfo& p) {
      if (p.phase == sched::PodPhase::kAssumed) {
        Enqueue(MakeTask(p, c.scheduler.state().node(p.placement.node).name));
      }
    });
    return [] { return Reply{200, "{}"}; };
  });
}

void SlurmBackend::State::OnEvent(const WatchEvent& e) {
  const JsonValue j = JsonValue::parse(e.json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  const std::string type = base::StringField(j, "type");
  auto obj = j.find("object");
  if ((type != "PodAssumed" && type != "PodDeleted") || obj == j.end() || !obj->is_object()) {
    return;
  }
  if (type == "PodAssumed") {
    // The event's pod (spec, placement, annotations) is all a job needs.
    absl::StatusOr<sched::PodInfo> pod = PodOfEvent(*obj);
    if (pod.ok()) Enqueue(MakeTask(*pod, base::StringField(*obj, "node")));
    return;
  }
  const std::string uid = obj->value("uid", "");
  int64_t job = 0;
  {
    base::MutexLock lock(mu);
    auto it = uid_job.find(uid);
    if (it == uid_job.end()) return;  // not a job, or one that ended (EndPod untracked it)
    job = it->second;
  }
  Untrack(uid);
  (void)rest->Cancel(job);
  base::MutexLock lock(mu);
  ++stats.cancelled;
}

void SlurmBackend::State::WatchLoop() {
  int64_t since = watch_from;
  while (!stopping) {
    absl::StatusOr<std::vector<WatchEvent>> events = service.Watch(since, 4096, 0.5);
    if (!events.ok()) {
      // Fell too far behind the event log: what was missed is in the ledger.
      if (!Sleep(0.5)) return;
      since = service.revision();
      Resync();
      continue;
    }
    for (const WatchEvent& e : *events) {
      since = e.revision;
      OnEvent(e);
    }
  }
}

void SlurmBackend::State::SubmitLoop() {
  while (true) {
    Task t;
    {
      base::MutexLock lock(mu);
      lock.Wait(cv, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || !tasks.empty(); });
      if (stopping) return;
      t = std::move(tasks.front());
      tasks.pop_front();
    }
    absl::Status refused = absl::FailedPreconditionError(t.error);
    Result r{std::move(t), std::move(refused)};
    if (r.task.error.empty()) {
      const Clock::time_point t0 = Clock::now();
      r.job = rest->Submit(r.task.spec);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      submit_duration->Observe(s);
      base::MutexLock lock(mu);
      stats.submit_ms_total += 1000 * s;
    }
    (r.job.ok() ? submits_ok : submits_failed)->Increment();
    if (!r.job.ok()) {
      Log(absl::StrCat("pod ", r.task.uid, " stays pending: ", r.job.status().message()));
    }
    {
      base::MutexLock lock(mu);
      ++(r.job.ok() ? stats.submitted : stats.submit_errors);
      results.push_back(std::move(r));
    }
    cv.notify_all();
  }
}

void SlurmBackend::State::Record(Service::Context& c, const Result& r, std::vector<int64_t>* cancel,
                                 std::vector<Task>* again) {
  const Task& t = r.task;
  const sched::PodInfo* p = c.scheduler.ledger().Find(t.uid);
  const bool assumed = p != nullptr && p->phase == sched::PodPhase::kAssumed;
  const bool same = assumed && c.scheduler.state().node(p->placement.node).name == t.node &&
                    GpusOfPod(*p) == t.gpus;
  // Placed anew meanwhile (its assumption expired): the new placement needs its own job.
  if (assumed && !same) {
    again->push_back(MakeTask(*p, c.scheduler.state().node(p->placement.node).name));
  }
  if (!same) {
    if (r.job.ok()) cancel->push_back(*r.job);  // nobody waits for this job any more
    return;
  }
  if (!r.job.ok()) {
    const std::string why(r.job.status().message());
    (void)c.scheduler.SetAnnotation(t.uid, kSlurmError, why);
    (void)c.scheduler.Forget(t.uid, c.now_s, why);
    return;
  }
  (void)c.scheduler.SetAnnotation(t.uid, kSlurmJobId, absl::StrCat(*r.job));
  (void)c.scheduler.SetAnnotation(t.uid, kSlurmError, "");
  (void)c.scheduler.Bind(t.uid);
  Track(*r.job, t.uid);
}

void SlurmBackend::State::BindLoop() {
  while (true) {
    std::vector<Result> batch;
    {
      base::MutexLock lock(mu);
      lock.Wait(cv,
                [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || !results.empty(); });
      if (stopping) return;
      batch.assign(std::make_move_iterator(results.begin()),
                   std::make_move_iterator(results.end()));
      results.clear();
    }
    // Every outcome that arrived meanwhile in one operation (one commit).
    std::vector<int64_t> cancel;
    std::vector<Task> again;
    service.Run([&](Service::Context& c) -> Service::Finisher {
      for (const Result& r : batch) Record(c, r, &cancel, &again);
      return [] { return Reply{200, "{}"}; };
    });
    {
      base::MutexLock lock(mu);
      for (const Result& r : batch) in_flight.erase(r.task.uid);
    }
    for (Task& t : again) Enqueue(std::move(t));
    for (int64_t job : cancel) (void)rest->Cancel(job);
  }
}

void SlurmBackend::State::PollNodes() {
  absl::StatusOr<std::vector<slurm::Node>> nodes = rest->Nodes();
  if (!nodes.ok()) {
    Log(std::string(nodes.status().message()));
    const Clock::time_point now = Clock::now();
    if (!nodes_failing_since) nodes_failing_since = now;
    if (!nodes_unknown && now - *nodes_failing_since >= kNodesUnknownAfter) {
      nodes_unknown = true;
      service.Run([&](Service::Context& c) -> Service::Finisher {
        MarkNodesUnknown(c);
        return [] { return Reply{200, "{}"}; };
      });
      Log(absl::StrCat("slurm: nodes unknown: Slurm's nodes could not be listed for ",
                       kNodesUnknownAfter.count(), " s; tainted ", std::string(kUnreachableTaint),
                       ":NoSchedule until they can"));
    }
    return;
  }
  if (nodes_unknown) Log("slurm: nodes listed again; the unreachable taint is lifted");
  nodes_failing_since.reset();
  nodes_unknown = false;
  std::set<std::string> unanswered;
  {
    base::MutexLock lock(mu);
    for (const slurm::Node& n : *nodes) node_shards[n.name] = n.shards_per_gpu;
  }
  for (const slurm::Node& n : *nodes) {
    if (!o.probe_slurmd) break;
    int& failures = probe_failures[n.name];
    failures = SlurmdAnswers(n.address, n.port, 500) ? 0 : failures + 1;
    if (failures >= kProbeFailures) unanswered.insert(n.name);
  }
  std::vector<int64_t> cancel;
  service.Run([&](Service::Context& c) -> Service::Finisher {
    ApplyNodes(c, *nodes, unanswered, &cancel);
    return [] { return Reply{200, "{}"}; };
  });
  for (int64_t job : cancel) (void)rest->Cancel(job);
}

void SlurmBackend::State::PollJobs() {
  absl::StatusOr<std::vector<slurm::Job>> jobs = rest->Jobs();
  if (!jobs.ok()) {
    Log(std::string(jobs.status().message()));
    return;
  }
  std::vector<std::pair<std::string, const slurm::Job*>> ended;
  {
    base::MutexLock lock(mu);
    for (const slurm::Job& j : *jobs) {
      if (j.phase == slurm::JobPhase::kActive) continue;
      auto it = job_uid.find(j.id);
      if (it != job_uid.end()) ended.emplace_back(it->second, &j);
    }
  }
  if (ended.empty()) return;
  service.Run([&](Service::Context& c) -> Service::Finisher {
    for (const auto& [uid, job] : ended) {
      const bool lost = job->phase == slurm::JobPhase::kNodeLost;
      EndPod(
          c, uid, lost && o.resubmit_lost,
          absl::StrCat("slurm: job ", job->id, " ", job->state, " on ", job->nodes, "; requeued"));
      base::MutexLock lock(mu);
      if (lost && o.resubmit_lost) {
        ++stats.requeued;
      } else {
        ++(job->phase == slurm::JobPhase::kSucceeded ? stats.succeeded : stats.failed);
      }
    }
    return [] { return Reply{200, "{}"}; };
  });
}

void SlurmBackend::State::PollLoop() {
  Clock::time_point next_nodes = Clock::now();
  while (!stopping) {
    if (Clock::now() >= next_nodes) {
      PollNodes();
      next_nodes =
          Clock::now() + std::chrono::microseconds(static_cast<int64_t>(o.node_poll_s * 1e6));
    }
    // slurmrestd lists every job of the last MinJobAge on each call, so a poll of a busy
    // cluster costs it (and slurmctld) real time: at most half of it goes to polling. (A
    // quarter slowed the discovery of ended jobs enough to leave GPUs idle on a loaded host.)
    const Clock::time_point t0 = Clock::now();
    PollJobs();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!Sleep(std::max(o.job_poll_s, took))) return;
  }
}

// ------------------------------------------------------------------------------------ public

absl::Status SlurmBackend::Admit(const sched::PodInfo& pod) {
  const std::string script = Annotation(pod.annotations, kSlurmScript);
  if (script.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("$.annotations: the Slurm backend needs the job's batch script in \"",
                     kSlurmScript, "\" (`seedance submit -- script.sh` sets it)"));
  }
  if (!absl::StartsWith(script, "#!")) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::JsonPathChild("$.annotations", kSlurmScript),
                     ": a batch script starts with an interpreter line such as #!/bin/bash"));
  }
  int64_t limit = 0;
  const std::string tl = Annotation(pod.annotations, kSlurmTimeLimit);
  if (!tl.empty() && (!absl::SimpleAtoi(tl, &limit) || limit < 1 || limit > 525600)) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::JsonPathChild("$.annotations", kSlurmTimeLimit),
                     ": minutes, 1..525600 (got '", base::Clip(tl, 40), "')"));
  }
  return absl::OkStatus();
}

namespace {

// The client, and Slurm's nodes as a first request with it shows them.
absl::StatusOr<std::vector<slurm::Node>> Connect(const SlurmBackendOptions& o,
                                                 std::unique_ptr<slurm::RestClient>* client) {
  if (o.submitters < 1 || o.node_poll_s <= 0 || o.job_poll_s <= 0) {
    return absl::InvalidArgumentError("slurm backend: submitters >= 1 and polls > 0 required");
  }
  slurm::RestOptions ro = o.rest;
  ro.connections = std::max(ro.connections, o.submitters + 2);
  absl::StatusOr<std::unique_ptr<slurm::RestClient>> rest = slurm::RestClient::Create(ro);
  if (!rest.ok()) return rest.status();
  absl::StatusOr<std::vector<slurm::Node>> nodes = (*rest)->Nodes();
  if (!nodes.ok()) return nodes.status();
  if (!o.partition.empty()) {
    absl::StatusOr<std::vector<std::string>> parts = (*rest)->Partitions();
    if (!parts.ok()) return parts.status();
    if (std::find(parts->begin(), parts->end(), o.partition) == parts->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--slurm-partition: Slurm has no partition '", o.partition,
                       "' (it has: ", absl::StrJoin(*parts, ", "), ")"));
    }
  }
  *client = std::move(*rest);
  return nodes;
}

}  // namespace

absl::Status SlurmBackend::Check(const SlurmBackendOptions& options) {
  std::unique_ptr<slurm::RestClient> client;
  return Connect(options, &client).status();
}

absl::StatusOr<std::unique_ptr<SlurmBackend>> SlurmBackend::Start(Service& service,
                                                                  SlurmBackendOptions options) {
  auto st = std::make_shared<State>(service, std::move(options));
  absl::StatusOr<std::vector<slurm::Node>> nodes = Connect(st->o, &st->rest);
  prometheus::Registry& r = *service.metrics().registry;
  auto& submits = prometheus::BuildCounter()
                      .Name("seedance_slurm_submits_total")
                      .Help("Jobs submitted to slurmrestd by result (ok, failed).")
                      .Register(r);
  st->submits_ok = &submits.Add({{"result", "ok"}});
  st->submits_failed = &submits.Add({{"result", "failed"}});
  st->submit_duration =
      &prometheus::BuildHistogram()
           .Name("seedance_slurm_submit_duration_seconds")
           .Help("Time of slurmrestd's POST /job/submit.")
           .Register(r)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                            0.1, 0.2, 0.5, 1, 2, 5, 10});
  if (!nodes.ok()) return nodes.status();
  absl::StatusOr<std::vector<slurm::Job>> jobs = st->rest->Jobs();
  if (!jobs.ok()) return jobs.status();
  {
    base::MutexLock lock(st->mu);
    for (const slurm::Node& n : *nodes) st->node_shards[n.name] = n.shards_per_gpu;
  }
  st->watch_from = service.revision();
  std::vector<int64_t> cancel;
  service.Run([&](Service::Context& c) -> Service::Finisher {
    st->ApplyNodes(c, *nodes, {}, &cancel);
    st->Reconcile(c, *jobs);
    return [] { return Reply{200, "{}"}; };
  });
  for (int64_t job : cancel) (void)st->rest->Cancel(job);
  std::unique_ptr<SlurmBackend> b(new SlurmBackend());
  b->state_ = st;
  b->threads_.emplace_back([st] { st->WatchLoop(); });
  b->threads_.emplace_back([st] { st->PollLoop(); });
  b->threads_.emplace_back([st] { st->BindLoop(); });
  for (int i = 0; i < st->o.submitters; ++i) b->threads_.emplace_back([st] { st->SubmitLoop(); });
  return b;
}

SlurmBackend::~SlurmBackend() {
  state_->stopping = true;
  state_->cv.notify_all();
  for (std::thread& t : threads_) t.join();
}

SlurmBackendStats SlurmBackend::stats() const {
  base::MutexLock lock(state_->mu);
  return state_->stats;
}

}  // namespace seedance::server
