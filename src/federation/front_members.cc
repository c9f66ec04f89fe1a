// The federation front's member threads (front.h): GET /v1/cluster polls (capacity and health),
// the watch of the pods the front put on each member, lost members and their return.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "front_state.h"
#include "seedance/api/client.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/text.h"
#include "seedance/federation/front.h"

namespace seedance::federation {
namespace {

// Waits `seconds` or until the front stops; false when it stops.
bool Sleep(Front::State& s, double seconds) {
  base::MutexLock lock(s.mu);
  // Only Stop ends a sleep early: State::cv is also notified for the queue (by every poll), and
  // waking the other members' threads with it made them poll at once, which notified again.
  lock.WaitFor(s.cv, std::chrono::duration<double>(seconds),
               [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) { return s.stopping; });
  return !s.stopping;
}

bool Stopping(Front::State& s) {
  base::MutexLock lock(s.mu);
  return s.stopping;
}

// Every pod of a member, through the paginated list (null: a call failed, `error` says why).
std::optional<std::vector<Json>> ListMemberPods(api::AsyncClient& client, std::string* error) {
  std::vector<Json> pods;
  std::string cont;
  for (int page = 0; page < 100000; ++page) {
    std::string path = "/v1/pods?limit=5000";
    if (!cont.empty()) path += "&continue=" + api::UrlEncode(cont);
    absl::StatusOr<Json> r = client.CallAndWait("GET", path);
    if (!r.ok() || !r->is_object() || !(*r)["items"].is_array()) {
      *error = r.ok() ? "GET /v1/pods: not a list" : std::string(r.status().message());
      return std::nullopt;
    }
    for (Json& p : (*r)["items"]) pods.push_back(std::move(p));
    const Json& next = (*r)["continue"];
    if (!next.is_string()) return pods;
    cont = next.get<std::string>();
  }
  return pods;
}

std::string FrontUidOf(const Json& pod) {
  const auto labels = pod.find("labels");
  if (labels == pod.end() || !labels->is_object()) return "";
  const auto it = labels->find(std::string(kFrontUidLabel));
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

void Front::State::PollLoop(Member& m) {
  while (!Stopping(*this)) {
    uint64_t sent = 0;  // the debits this reply cannot know of come after it
    {
      base::MutexLock lock(mu);
      sent = m.debit_seq;
    }
    absl::StatusOr<Json> reply = m.client->CallAndWait("GET", "/v1/cluster");
    absl::StatusOr<ClusterSummary> summary = reply.ok()
                                                 ? ParseClusterSummary(reply->dump())
                                                 : absl::StatusOr<ClusterSummary>(reply.status());
    bool reconcile = false, lose = false;
    {
      base::MutexLock lock(mu);
      ++m.polls;
      if (summary.ok()) {
        if (m.lost) {
          std::cerr << "federation: member " << m.config.name << " answers again\n";
        }
        m.summary = std::move(*summary);
        std::erase_if(m.debits, [&](const Member::Debit& d) { return d.seq <= sent; });
        for (const Member::Debit& d : m.debits) Reserve(m.summary, d.request, d.model);
        m.have_summary = true;
        m.lost = false;
        m.last_ok_s = Now();
        m.last_error.clear();
        reconcile = m.reconcile;
        m.reconcile = false;
        cv.notify_all();  // the queue tries again with the new room
      } else {
        m.last_error = std::string(summary.status().message());
        lose = Now() - m.last_ok_s >= options.config.lost_after_s;
      }
    }
    if (reconcile) Reconcile(m);
    if (lose) MarkLost(m);
    if (!Sleep(*this, options.refresh_s)) return;
  }
}

void Front::State::MarkLost(Member& m) {
  std::vector<Record> moved;
  {
    base::MutexLock lock(mu);
    if (!m.lost) {
      std::cerr << "federation: member " << m.config.name << " is lost (no answer for "
                << options.config.lost_after_s << " s: " << base::Clip(m.last_error, 200) << ")\n";
    }
    m.lost = true;
    m.reconcile = true;
    for (auto& [uid, r] : records) {
      // An ended pod ("Deleted") stays as it is, so that it is not placed again.
      if (r.member != m.config.name || in_flight.count(uid) || r.phase == "Deleted") continue;
      // Only pods known to be pending move: one restored without the member's answer yet may
      // well run there (front.h: placed pods read Unknown until the member answers).
      if (r.phase == "Pending") {
        Record c = r;
        c.withdrawn.push_back({m.config.name, c.member_uid});
        c.member.clear();
        c.member_uid.clear();
        c.pod = nullptr;
        c.pod_revision = 0;
        c.phase = "Pending";
        in_flight.insert(uid);
        moved.push_back(std::move(c));
      } else {
        r.phase = "Unknown";
      }
    }
  }
  if (moved.empty()) return;
  const absl::Status st = PersistRecords(moved);
  base::MutexLock lock(mu);
  for (Record& c : moved) {
    in_flight.erase(c.uid);
    if (!st.ok()) continue;  // tried again at the next failed poll
    const auto it = records.find(c.uid);
    if (it == records.end()) continue;
    m.by_member_uid.erase(it->second.member_uid);
    ++redispatched;
    Install(std::move(c));
  }
  // A gang none of whose pods is placed there any more may go elsewhere as a whole.
  std::set<std::string> placed;
  for (const auto& [uid, r] : records) {
    if (r.member == m.config.name && !r.request.gang.empty()) {
      placed.insert(absl::StrCat(r.request.ns, "/", r.request.gang));
    }
  }
  std::erase_if(gangs,
                [&](const auto& g) { return g.second == m.config.name && !placed.count(g.first); });
  cv.notify_all();
}

// The member answers (at start, or after it was lost): its copies of the front's pods are
// matched with the records. A copy no record points to (withdrawn from a lost member, or left by
// a dispatch the front never acknowledged) is deleted; a record whose copy is gone ended there
// (a member's state is durable: a pod it no longer has was deleted on it); the others take the
// member's state.
void Front::State::Reconcile(Member& m) {
  const double started = Now();
  std::string error;
  std::optional<std::vector<Json>> pods = ListMemberPods(*m.client, &error);
  if (!pods) {
    base::MutexLock lock(mu);
    m.reconcile = true;
    return;
  }
  std::vector<std::string> orphans;
  std::set<std::string> seen;
  {
    base::MutexLock lock(mu);
    for (const Json& pod : *pods) {
      const std::string front_uid = FrontUidOf(pod);
      if (front_uid.empty()) continue;  // not the front's
      const std::string uid = base::StringField(pod, "uid");
      const auto it = records.find(front_uid);
      if (it != records.end() && it->second.member == m.config.name &&
          it->second.member_uid == uid) {
        ApplyMemberPod(m, it->second, pod, base::IntField(pod, "revision"));
        seen.insert(front_uid);
      } else if (!in_flight.count(front_uid)) {
        orphans.push_back(uid);
      }
    }
  }
  bool ok = true;
  for (const std::string& uid : orphans) {
    absl::StatusOr<Json> r = m.client->CallAndWait("DELETE", "/v1/pods/" + uid);
    if (!r.ok() && api::HttpStatusOf(r.status()) != 404) ok = false;
  }
  std::vector<Record> changed;
  {
    base::MutexLock lock(mu);
    for (auto& [uid, r] : records) {
      if (in_flight.count(uid)) continue;  // armed again when it is installed
      const bool had_withdrawn =
          std::any_of(r.withdrawn.begin(), r.withdrawn.end(),
                      [&](const Withdrawn& w) { return w.member == m.config.name; });
      // Only records the list could have seen: placed there before it started.
      const bool gone =
          r.member == m.config.name && !seen.count(uid) && !r.ended && r.dispatched_s < started;
      if (!(had_withdrawn && ok) && !gone) continue;
      Record c = r;
      if (ok) {
        std::erase_if(c.withdrawn, [&](const Withdrawn& w) { return w.member == m.config.name; });
      }
      if (gone) {
        c.ended = true;
        c.phase = "Deleted";
      }
      in_flight.insert(uid);
      changed.push_back(std::move(c));
    }
  }
  const absl::Status st = PersistRecords(changed);
  base::MutexLock lock(mu);
  for (Record& c : changed) {
    in_flight.erase(c.uid);
    const auto it = records.find(c.uid);
    if (!st.ok() || it == records.end()) continue;
    it->second.withdrawn = std::move(c.withdrawn);
    if (c.ended) SetEnded(it->second);
  }
  if (!ok || !st.ok()) m.reconcile = true;
  cv.notify_all();
}

void Front::State::EndRecords(const std::vector<std::string>& uids) {
  std::vector<Record> ended;
  {
    base::MutexLock lock(mu);
    for (const std::string& uid : uids) {
      const auto it = records.find(uid);
      if (it == records.end() || it->second.ended || in_flight.count(uid)) continue;
      Record c = it->second;
      c.ended = true;
      c.phase = "Deleted";
      ended.push_back(std::move(c));
    }
  }
  if (!PersistRecords(ended).ok()) return;  // the next reconcile finds them gone again
  base::MutexLock lock(mu);
  for (const Record& c : ended) {
    const auto it = records.find(c.uid);
    if (it == records.end()) continue;
    SetEnded(it->second);
  }
  cv.notify_all();  // the queue may place a pod its quota held back
}

void Front::State::WatchLoop(Member& m) {
  api::ClientOptions co;
  co.url = m.config.url;
  co.token_file = m.config.token_file;
  co.timeout_s = options.watch_timeout_s + options.call_timeout_s;
  absl::StatusOr<api::Client> client = api::Client::Create(co);
  if (!client.ok()) return;  // Create checked the same options
  int64_t since = -1;        // -1: from now (the poller reconciles what came before)
  const std::string timeout =
      absl::StrCat(static_cast<int64_t>(std::ceil(options.watch_timeout_s)), "s");
  while (!Stopping(*this)) {
    bool away = false;
    {
      base::MutexLock lock(mu);
      away = m.lost || !m.have_summary;
    }
    if (away) {
      since = -1;
      if (!Sleep(*this, options.refresh_s)) return;
      continue;
    }
    std::string path = "/v1/watch?format=json&timeout=" + timeout;
    if (since >= 0) path += "&since=" + std::to_string(since);
    absl::StatusOr<Json> r = client->Call("GET", path);
    if (!r.ok() || !r->is_object() || !(*r)["events"].is_array()) {
      if (r.ok() || api::HttpStatusOf(r.status()) == 410) {
        since = -1;
        base::MutexLock lock(mu);
        m.reconcile = true;  // events were missed: the poller reconciles
      }
      if (!Sleep(*this, options.refresh_s)) return;
      continue;
    }
    since = base::IntField(*r, "revision", since);
    std::vector<std::string> ended;
    {
      base::MutexLock lock(mu);
      ApplyEvents(m, (*r)["events"], &ended);
    }
    if (!ended.empty()) EndRecords(ended);
    if (!(*r)["events"].empty() && !Sleep(*this, options.watch_batch_s)) return;
  }
}

void Front::State::ApplyEvents(Member& m, const Json& events, std::vector<std::string>* ended) {
  for (const Json& e : events) {
    const std::string type = base::StringField(e, "type");
    if (type.rfind("Pod", 0) != 0 || !e.contains("object") || !e["object"].is_object()) continue;
    const Json& pod = e["object"];
    const std::string member_uid = base::StringField(pod, "uid");
    const int64_t rev = base::IntField(e, "revision");
    const auto it = m.by_member_uid.find(member_uid);
    if (it == m.by_member_uid.end()) {
      if (FrontUidOf(pod).empty() || type == "PodDeleted") continue;
      if (m.early.size() > 100000) m.early.clear();
      m.early[member_uid] = {rev, pod};
      continue;
    }
    const auto rec = records.find(it->second);
    if (rec == records.end()) continue;
    if (type == "PodDeleted") {
      ended->push_back(rec->first);  // ended on the member
      continue;
    }
    ApplyMemberPod(m, rec->second, pod, rev);
  }
}

// ---------------------------------------------------------------------------------- reports

namespace {

// USD per hour of the pods placed on a member, at its prices.
double CostRate(const MemberConfig& c, const Record& r) {
  const api::PodRequest& q = r.request;
  double usd = c.prices.cpu_hour * static_cast<double>(q.cpu_milli) / 1000;
  if (q.num_gpu > 0) {
    const std::optional<double> gpu = c.prices.GpuHour(r.gpu_model);
    usd += gpu.value_or(0) * q.num_gpu * q.gpu_milli / 1000.0;
  }
  return usd;
}

Json RoomJson(const Room& r) {
  return {{"nodes", r.nodes},
          {"capacity",
           {{"cpu_milli", r.capacity.cpu_milli},
            {"memory_mib", r.capacity.memory_mib},
            {"num_gpus", r.capacity.num_gpus}}},
          {"free",
           {{"cpu_milli", r.free.cpu_milli},
            {"memory_mib", r.free.memory_mib},
            {"gpu_milli", r.free.gpu_milli},
            {"whole_gpus", r.free.whole_gpus}}},
          {"largest_free",
           {{"cpu_milli", r.largest_free.cpu_milli},
            {"memory_mib", r.largest_free.memory_mib},
            {"whole_gpus", r.largest_free.whole_gpus}}}};
}

void AddRoom(Room& to, const Room& r) {
  to.nodes += r.nodes;
  to.capacity.cpu_milli += r.capacity.cpu_milli;
  to.capacity.memory_mib += r.capacity.memory_mib;
  to.capacity.num_gpus += r.capacity.num_gpus;
  to.free.cpu_milli += r.free.cpu_milli;
  to.free.memory_mib += r.free.memory_mib;
  to.free.gpu_milli += r.free.gpu_milli;
  to.free.whole_gpus += r.free.whole_gpus;
  to.largest_free.cpu_milli = std::max(to.largest_free.cpu_milli, r.largest_free.cpu_milli);
  to.largest_free.memory_mib = std::max(to.largest_free.memory_mib, r.largest_free.memory_mib);
  to.largest_free.whole_gpus = std::max(to.largest_free.whole_gpus, r.largest_free.whole_gpus);
}

struct MemberCounts {
  std::map<std::string, int64_t> phases;
  double cost_rate = 0;
};

std::map<std::string, MemberCounts> CountByMember(const std::map<std::string, Record>& records,
                                                  const std::vector<std::unique_ptr<Member>>& ms) {
  std::map<std::string, MemberCounts> out;
  for (const auto& m : ms) out[m->config.name];
  for (const auto& [uid, r] : records) {
    if (r.member.empty()) continue;
    MemberCounts& c = out[r.member];
    ++c.phases[r.phase];
    if (r.phase == "Bound" || r.phase == "Assumed") {
      for (const auto& m : ms) {
        if (m->config.name == r.member) c.cost_rate += CostRate(m->config, r);
      }
    }
  }
  return out;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    out += ch == '\n' ? 'n' : ch;
  }
  return out;
}

}  // namespace

FrontReply Front::Members() const {
  const State& s = *state_;
  base::MutexLock lock(s.mu);
  const std::map<std::string, MemberCounts> counts = CountByMember(s.records, s.members);
  Json items = Json::array();
  const double now = s.Now();
  for (const auto& m : s.members) {
    const MemberCounts& c = counts.at(m->config.name);
    Json j = {{"name", m->config.name},
              {"region", m->config.region},
              {"state", m->lost           ? "lost"
                        : m->have_summary ? "ready"
                                          : "unknown"},
              {"seconds_since_answer", now - m->last_ok_s},
              {"polls", m->polls},
              {"last_error", m->last_error.empty() ? Json(nullptr) : Json(m->last_error)},
              {"pods", c.phases},
              {"cost_usd_per_hour", c.cost_rate}};
    if (m->have_summary) {
      Json sum = RoomJson(m->summary);
      sum["backend"] = m->summary.backend;
      sum["cluster"] = m->summary.cluster;
      sum["pending_pods"] = m->summary.pending_pods;
      j["summary"] = std::move(sum);
    } else {
      j["summary"] = nullptr;
    }
    items.push_back(std::move(j));
  }
  Json quotas = Json::array();
  for (size_t q = 0; q < s.options.config.quotas.size(); ++q) {
    const QuotaConfig& c = s.options.config.quotas[q];
    Json limit = Json::object(), used = Json::object();
    for (const auto& [name, l, u] : QuotaResources(c.limit, s.quota_used[q])) {
      if (l) limit[name] = *l;
      used[name] = u;
    }
    quotas.push_back(
        {{"name", c.name}, {"namespaces", c.namespaces}, {"limit", limit}, {"used", used}});
  }
  return {200, Json{{"members", std::move(items)},
                    {"quotas", std::move(quotas)},
                    {"waiting_pods", s.Waiting()},
                    {"policy", PolicyName(s.options.policy)}}
                   .dump()};
}

FrontReply Front::Cluster() const {
  const State& s = *state_;
  base::MutexLock lock(s.mu);
  Room all;
  std::map<std::string, Room> models;
  std::map<std::string, const ModelRoom*> kinds;  // a model's kind and memory, as first seen
  int64_t cordoned = 0, pending = s.Waiting();
  for (const auto& m : s.members) {
    if (m->lost || !m->have_summary) continue;
    AddRoom(all, m->summary);
    cordoned += m->summary.cordoned_nodes;
    pending += m->summary.pending_pods;
    for (const ModelRoom& r : m->summary.gpu_models) {
      AddRoom(models[r.gpu_model], r);
      kinds.emplace(r.gpu_model, &r);
    }
  }
  Json by_model = Json::array();
  for (const auto& [model, r] : models) {
    Json j = {{"gpu_model", model},
              {"device_type", kinds.at(model)->npu ? "npu" : "gpu"},
              {"device_memory_mib", kinds.at(model)->device_memory_mib}};
    j.update(RoomJson(r));
    by_model.push_back(std::move(j));
  }
  Json j = {{"cluster", s.options.name}, {"backend", "federation"}};
  j.update(RoomJson(all));
  j["cordoned_nodes"] = cordoned;
  j["gpu_models"] = std::move(by_model);
  j["pending_pods"] = pending;
  return {200, j.dump()};
}

std::string Front::MetricsText() const {
  const State& s = *state_;
  base::MutexLock lock(s.mu);
  const std::map<std::string, MemberCounts> counts = CountByMember(s.records, s.members);
  std::string out =
      "# HELP seedance_federation_member_up 1 while the member answers GET /v1/cluster, 0 once "
      "lost.\n# TYPE seedance_federation_member_up gauge\n";
  for (const auto& m : s.members) {
    absl::StrAppend(&out, "seedance_federation_member_up{member=\"", Escape(m->config.name), "\"} ",
                    m->lost ? 0 : 1, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP seedance_federation_member_polls_total GET /v1/cluster calls to the "
                  "member, one per --federation-refresh.\n"
                  "# TYPE seedance_federation_member_polls_total counter\n");
  for (const auto& m : s.members) {
    absl::StrAppend(&out, "seedance_federation_member_polls_total{member=\"",
                    Escape(m->config.name), "\"} ", m->polls, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP seedance_federation_member_free_gpus Whole GPUs free on the member.\n"
                  "# TYPE seedance_federation_member_free_gpus gauge\n");
  for (const auto& m : s.members) {
    absl::StrAppend(&out, "seedance_federation_member_free_gpus{member=\"", Escape(m->config.name),
                    "\"} ", m->summary.free.whole_gpus, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP seedance_federation_member_pending_pods Pods pending on the member.\n"
                  "# TYPE seedance_federation_member_pending_pods gauge\n");
  for (const auto& m : s.members) {
    absl::StrAppend(&out, "seedance_federation_member_pending_pods{member=\"",
                    Escape(m->config.name), "\"} ", m->summary.pending_pods, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP seedance_federation_member_cost_usd_per_hour What the front's placed "
                  "pods cost per hour on the member, at its prices.\n"
                  "# TYPE seedance_federation_member_cost_usd_per_hour gauge\n");
  for (const auto& [name, c] : counts) {
    absl::StrAppend(&out, "seedance_federation_member_cost_usd_per_hour{member=\"", Escape(name),
                    "\"} ", c.cost_rate, "\n");
  }
  if (!s.options.config.quotas.empty()) {
    absl::StrAppend(&out,
                    "# HELP seedance_federation_quota_used What the front's placed pods of a "
                    "quota's namespaces use across members, by resource.\n"
                    "# TYPE seedance_federation_quota_used gauge\n");
  }
  for (size_t q = 0; q < s.options.config.quotas.size(); ++q) {
    const QuotaConfig& c = s.options.config.quotas[q];
    for (const auto& [name, limit, v] : QuotaResources(c.limit, s.quota_used[q])) {
      absl::StrAppend(&out, "seedance_federation_quota_used{quota=\"", Escape(c.name),
                      "\",resource=\"", name, "\"} ", v, "\n");
    }
  }
  absl::StrAppend(&out,
                  "# HELP seedance_federation_waiting_pods Pods no member can take now.\n"
                  "# TYPE seedance_federation_waiting_pods gauge\n"
                  "seedance_federation_waiting_pods ",
                  s.Waiting(), "\n",
                  "# HELP seedance_federation_dispatches_total Pods sent to a member.\n"
                  "# TYPE seedance_federation_dispatches_total counter\n"
                  "seedance_federation_dispatches_total ",
                  s.dispatched, "\n",
                  "# HELP seedance_federation_redispatches_total Pods taken back from a lost "
                  "member.\n# TYPE seedance_federation_redispatches_total counter\n"
                  "seedance_federation_redispatches_total ",
                  s.redispatched, "\n",
                  "# HELP seedance_federation_refusals_total Dispatches a member refused or did "
                  "not answer.\n# TYPE seedance_federation_refusals_total counter\n"
                  "seedance_federation_refusals_total ",
                  s.refusals, "\n",
                  "# HELP seedance_federation_left_pending_total Dispatches a member took but "
                  "its scheduler left pending.\n"
                  "# TYPE seedance_federation_left_pending_total counter\n"
                  "seedance_federation_left_pending_total ",
                  s.left_pending, "\n");
  return out;
}

}  // namespace seedance::federation
