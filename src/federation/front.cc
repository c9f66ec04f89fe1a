// The federation front's API operations, its records and its queue (front.h). The member
// threads are in front_members.cc.
#include "seedance/federation/front.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "front_state.h"
#include "seedance/base/check.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/base/thread_name.h"
#include "seedance/base/uuid.h"

namespace seedance::federation {
namespace {

int64_t UnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

FrontReply Error(const absl::Status& st) { return {api::HttpStatusFor(st), api::ErrorBody(st)}; }
FrontReply Reply(int status, const Json& j) { return {status, j.dump()}; }

absl::Status NotFound(const std::string& uid) {
  return absl::NotFoundError(absl::StrCat("pod '", uid, "' not found"));
}

// The pod as placement sees it: its request and what its annotations say of its duration and
// data (front.h).
PodAsk AskOf(const api::PodRequest& request) {
  PodAsk ask;
  ask.request = request;
  const auto get = [&](std::string_view key) -> const std::string* {
    const auto it = request.annotations.find(std::string(key));
    return it == request.annotations.end() ? nullptr : &it->second;
  };
  if (const std::string* d = get(kExpectedDurationAnnotation)) {
    if (absl::StatusOr<double> s =
            base::ParseDuration(*d, "expected-duration", 1, base::Positive(1e9));
        s.ok()) {
      ask.expected_duration_s = *s;
    }
  }
  if (const std::string* r = get(kDataRegionAnnotation)) ask.data_region = *r;
  if (const std::string* g = get(kDataGbAnnotation)) {
    double gb = 0;
    if (absl::SimpleAtod(*g, &gb) && gb >= 0 && gb < 1e9) ask.data_gb = gb;
  }
  return ask;
}

}  // namespace

// A member's free room after it took `req` on `model` (until its next GET /v1/cluster says
// better): the cached summary must not offer the same room twice between two polls. Which node
// took it is not known, so the largest free on one node only falls to what is free in all.
void Reserve(ClusterSummary& s, const api::PodRequest& req, const std::string& model) {
  const auto take = [](int64_t& v, int64_t d) { v = std::max<int64_t>(0, v - d); };
  const bool whole = req.num_gpu > 1 || (req.num_gpu == 1 && req.gpu_milli == 1000);
  auto apply = [&](Room& r) {
    take(r.free.cpu_milli, req.cpu_milli);
    take(r.free.memory_mib, req.memory_mib);
    take(r.free.gpu_milli, int64_t{req.num_gpu} * req.gpu_milli);
    if (whole) take(r.free.whole_gpus, req.num_gpu);
    r.largest_free.cpu_milli = std::min(r.largest_free.cpu_milli, r.free.cpu_milli);
    r.largest_free.memory_mib = std::min(r.largest_free.memory_mib, r.free.memory_mib);
    r.largest_free.whole_gpus = std::min(r.largest_free.whole_gpus, r.free.whole_gpus);
  };
  apply(s);
  for (ModelRoom& m : s.gpu_models) {
    if (m.gpu_model == model) apply(m);
  }
}

// ---------------------------------------------------------------------------------- records

std::string RecordJson(const Record& r) {
  Json withdrawn = Json::array();
  for (const Withdrawn& w : r.withdrawn)
    withdrawn.push_back({{"member", w.member}, {"uid", w.uid}});
  Json j = {{"uid", r.uid},
            {"request", api::PodRequestToJson(r.request)},
            {"member", r.member},
            {"member_uid", r.member_uid},
            {"gpu_model", r.gpu_model},
            {"withdrawn", std::move(withdrawn)},
            {"submitted_unix_ns", r.submitted_unix_ns},
            {"ended", r.ended}};
  return j.dump();
}

absl::StatusOr<Record> ParseRecord(const std::string& key, const std::string& json) {
  const auto bad = [&](const std::string& why) {
    return absl::DataLossError(
        absl::StrCat("federation record '", base::Clip(key, 80), "': ", why));
  };
  Json j = Json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("request") || !j["request"].is_object()) {
    return bad("not a record object");
  }
  absl::StatusOr<api::PodRequest> req = api::ParsePodRequest(j["request"].dump());
  if (!req.ok()) return bad(std::string(req.status().message()));
  Record r;
  r.uid = key;
  r.request = std::move(*req);
  // Written by RecordJson; read leniently all the same (a field of another type is not given).
  r.member = base::StringField(j, "member");
  r.member_uid = base::StringField(j, "member_uid");
  r.gpu_model = base::StringField(j, "gpu_model");
  r.submitted_unix_ns = base::IntField(j, "submitted_unix_ns");
  r.ended = base::BoolField(j, "ended");
  if (r.ended) r.phase = "Deleted";
  if (const auto it = j.find("withdrawn"); it != j.end() && it->is_array()) {
    for (const Json& w : *it) {
      if (w.is_object()) {
        r.withdrawn.push_back({base::StringField(w, "member"), base::StringField(w, "uid")});
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------- state

double Front::State::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t Front::State::Waiting() const {
  int64_t n = 0;
  for (const auto& [uid, r] : records) n += r.member.empty() ? 1 : 0;
  return n;
}

int Front::State::MemberIndex(const std::string& name) const {
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i]->config.name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<MemberView> Front::State::Views(const std::map<int, std::string>& refused) const {
  std::vector<MemberView> views;
  views.reserve(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = *members[i];
    ClusterSummary summary = m.summary;
    for (const auto& [id, h] : m.holds) Reserve(summary, h.request, h.model);
    MemberView v = ViewOf(m.config, std::move(summary), m.lost);
    if (const auto it = refused.find(static_cast<int>(i)); it != refused.end()) {
      v.refused = it->second;
    } else if (!m.have_summary && !m.lost) {
      v.refused = "no answer to GET /v1/cluster yet";
    }
    views.push_back(std::move(v));
  }
  return views;
}

Json Front::State::PodView(const Record& r) const {
  Json j;
  if (r.pod.is_object()) {
    j = r.pod;
  } else {
    j = Json(api::PodRequestToJson(r.request));
    j["node"] = nullptr;
    j["gpus"] = Json::array();
    j["numa_node"] = nullptr;
    j["created_unix_ns"] = r.submitted_unix_ns;
  }
  j["uid"] = r.uid;
  j["phase"] = r.phase;
  j["cluster"] = r.member.empty() ? Json(nullptr) : Json(r.member);
  j["member_uid"] = r.member_uid.empty() ? Json(nullptr) : Json(r.member_uid);
  return j;
}

void Front::State::ApplyMemberPod(Member& m, Record& r, const Json& pod, int64_t revision) {
  (void)m;
  if (!pod.is_object() || revision < r.pod_revision || r.ended) return;
  r.pod = pod;
  r.pod_revision = revision;
  if (const auto it = pod.find("phase"); it != pod.end() && it->is_string()) {
    r.phase = it->get<std::string>();
  }
}

void Front::State::ArmReconcile(const Record& r) {
  for (const Withdrawn& w : r.withdrawn) {
    if (const int i = MemberIndex(w.member); i >= 0) members[i]->reconcile = true;
  }
}

void Front::State::Install(Record r) {
  const std::string uid = r.uid;
  ArmReconcile(r);
  if (const auto old = records.find(uid); old != records.end()) Count(old->second, -1);
  r.reserved = false;  // a stored record holds no reservation (ReleaseQuota gave it back)
  Count(r, +1);
  if (!r.member.empty()) {
    const int i = MemberIndex(r.member);
    if (i >= 0) {
      Member& m = *members[i];
      m.by_member_uid[r.member_uid] = uid;
      if (const auto e = m.early.find(r.member_uid); e != m.early.end()) {
        ApplyMemberPod(m, r, e->second.second, e->second.first);
        m.early.erase(e);
      }
    }
  } else {
    queue.push_back(uid);
  }
  records[uid] = std::move(r);
}

namespace {

QuotaUse UseOf(const api::PodRequest& q) {
  QuotaUse u;
  u.gpus = q.num_gpu > 0 && q.gpu_milli >= 1000 ? q.num_gpu : 0;
  u.gpu_milli = int64_t{q.num_gpu} * q.gpu_milli;
  u.cpu_milli = q.cpu_milli;
  u.memory_mib = q.memory_mib;
  return u;
}

}  // namespace

std::array<QuotaResource, 4> QuotaResources(const QuotaLimit& limit, const QuotaUse& use) {
  return {{{"gpus", limit.gpus, use.gpus},
           {"gpu_milli", limit.gpu_milli, use.gpu_milli},
           {"cpu_milli", limit.cpu_milli, use.cpu_milli},
           {"memory_mib", limit.memory_mib, use.memory_mib}}};
}

namespace {

void Add(QuotaUse& to, const QuotaUse& u, int sign) {
  to.gpus += sign * u.gpus;
  to.gpu_milli += sign * u.gpu_milli;
  to.cpu_milli += sign * u.cpu_milli;
  to.memory_mib += sign * u.memory_mib;
}

}  // namespace

void Front::State::Count(const Record& r, int sign) {
  if (r.member.empty() || r.ended) return;
  const auto q = quota_of.find(r.request.ns);
  if (q == quota_of.end()) return;
  Add(quota_used[q->second], UseOf(r.request), sign);
  const QuotaUse& u = quota_used[q->second];
  SEEDANCE_CHECK(u.gpus >= 0 && u.gpu_milli >= 0 && u.cpu_milli >= 0 && u.memory_mib >= 0)
      << "quota '" << options.config.quotas[q->second].name << "' counts a negative use";
}

void Front::State::SetEnded(Record& r) {
  Count(r, -1);
  r.ended = true;
  r.phase = "Deleted";
}

std::string Front::State::ReserveQuota(Record& r) {
  const auto q = quota_of.find(r.request.ns);
  if (q == quota_of.end() || r.reserved) return "";
  const QuotaConfig& c = options.config.quotas[q->second];
  const QuotaUse ask = UseOf(r.request);
  base::MutexLock lock(mu);
  QuotaUse held = quota_used[q->second];
  Add(held, quota_reserved[q->second], +1);
  const std::array<QuotaResource, 4> used = QuotaResources(c.limit, held);
  const std::array<QuotaResource, 4> wants = QuotaResources(c.limit, ask);
  for (size_t i = 0; i < used.size(); ++i) {
    const auto& [name, limit, in_use] = used[i];
    if (limit && wants[i].value > 0 && in_use + wants[i].value > *limit) {
      return absl::StrCat("quota '", c.name, "' (across members) is full: ", name, " ", in_use,
                          " in use + ", wants[i].value, " > limit ", *limit);
    }
  }
  Add(quota_reserved[q->second], ask, +1);
  r.reserved = true;
  return "";
}

void Front::State::ReleaseQuota(Record& r) {
  if (!r.reserved) return;
  Add(quota_reserved[quota_of.at(r.request.ns)], UseOf(r.request), -1);
  r.reserved = false;
}

Decision Front::State::Choose(const Record& r, const PodAsk& ask, const std::string& gang_key,
                              std::map<int, std::string>& refused, uint64_t* hold) {
  base::MutexLock lock(mu);
  const auto g = gang_key.empty() ? gangs.end() : gangs.find(gang_key);
  if (g != gangs.end()) {
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i]->config.name != g->second && !refused.count(static_cast<int>(i))) {
        refused[static_cast<int>(i)] = absl::StrCat("the gang's pods are on ", g->second);
      }
    }
  }
  const std::vector<MemberView> views = Views(refused);
  Policy policy{options.policy, rotation.get()};
  Decision d;
  if (!gang_key.empty() && g == gangs.end() && r.request.gang_min > 1) {
    std::vector<PodAsk> gang(static_cast<size_t>(r.request.gang_min), ask);
    d = DecideGang(gang, views, policy);
  } else {
    d = Decide(ask, views, policy);
  }
  if (d.member >= 0) {
    Member& m = *members[d.member];
    *hold = ++m.hold_seq;
    m.holds[*hold] = {*hold, r.request, d.gpu_models.empty() ? "" : d.gpu_models[0]};
  }
  return d;
}

void Front::State::Take(Record& r, const Placed& p, const std::string& gang_key, uint64_t hold) {
  Member& m = *members[p.member];
  r.member = m.config.name;
  r.member_uid = p.pod["uid"].get<std::string>();
  r.gpu_model = p.model;
  r.reasons.clear();
  r.pod = p.pod;
  r.pod_revision = base::IntField(p.pod, "revision");
  r.phase = base::StringField(p.pod, "phase", "Pending");
  r.dispatched_s = Now();
  base::MutexLock lock(mu);
  m.holds.erase(hold);
  Reserve(m.summary, r.request, p.model);
  m.debits.push_back({++m.debit_seq, r.request, p.model});
  if (!gang_key.empty()) gangs.emplace(gang_key, m.config.name);
  ++dispatched;
}

void Front::State::Withdraw(Record& r, const Placed& p, std::function<void()> then) {
  Member& m = *members[p.member];
  std::string uid = p.pod["uid"].get<std::string>();
  m.client->Call("DELETE", "/v1/pods/" + uid, "",
                 [&r, &m, uid, then = std::move(then)](absl::StatusOr<Json> gone) {
                   // Not deleted now: remembered, and deleted when the member is reconciled.
                   if (!gone.ok() && api::HttpStatusOf(gone.status()) != 404) {
                     r.withdrawn.push_back({m.config.name, uid});
                   }
                   then();
                 });
}

// One dispatch: the members left out so far (and why), and a copy a member's scheduler left
// pending, kept while another member may place the pod (a gang's pods are left where they are:
// they pend until the gang is complete).
struct Front::State::Dispatching {
  Record* r = nullptr;
  PodAsk ask;
  std::string gang_key;
  std::map<int, std::string> refused;
  std::optional<Placed> pending;
  size_t attempts = 0;
  std::function<void()> done;
};

void Front::State::DispatchAsync(Record& r, std::function<void()> done) {
  r.over_quota = false;
  if (std::string why = ReserveQuota(r); !why.empty()) {
    r.member.clear();
    r.reasons = {std::move(why)};
    r.over_quota = true;
    return done();
  }
  auto d = std::make_shared<Dispatching>();
  d->r = &r;
  d->ask = AskOf(r.request);
  d->gang_key = r.request.gang.empty() ? "" : absl::StrCat(r.request.ns, "/", r.request.gang);
  d->done = std::move(done);
  Attempt(d);
}

void Front::State::Dispatch(Record& r) {
  std::promise<void> finished;
  std::future<void> dispatched = finished.get_future();
  DispatchAsync(r, [&finished] { finished.set_value(); });
  dispatched.wait();
}

void Front::State::Attempt(const std::shared_ptr<Dispatching>& d) {
  Record& r = *d->r;
  if (d->attempts++ > members.size()) return EndDispatch(d);
  uint64_t hold = 0;
  Decision dec = Choose(r, d->ask, d->gang_key, d->refused, &hold);
  if (dec.member < 0) {
    r.reasons = std::move(dec.reasons);
    return EndDispatch(d);
  }
  nlohmann::ordered_json body = api::PodRequestToJson(r.request);
  body["labels"][std::string(kFrontUidLabel)] = r.uid;
  std::string model = dec.gpu_models.empty() ? "" : dec.gpu_models[0];
  if (options.policy == PolicyKind::kCost && !model.empty()) body["gpu_spec"] = dec.gpu_specs[0];
  members[dec.member]->client->Call(
      "POST", "/v1/pods", body.dump(),
      [this, d, member = dec.member, hold, model = std::move(model)](absl::StatusOr<Json> reply) {
        Answered(d, member, hold, model, std::move(reply));
      });
}

void Front::State::Answered(const std::shared_ptr<Dispatching>& d, int member, uint64_t hold,
                            const std::string& model, absl::StatusOr<Json> reply) {
  Record& r = *d->r;
  // A member's reply is read leniently: a field of another type is one not given.
  if (reply.ok() && !base::StringField(*reply, "uid").empty()) {
    Placed here{member, model, *std::move(reply)};
    if (base::StringField(here.pod, "phase") != "Pending" || !d->gang_key.empty()) {
      auto take = [this, d, here, hold] {
        Take(*d->r, here, d->gang_key, hold);
        d->done();
      };
      if (!d->pending) return take();
      const Placed pending = *std::exchange(d->pending, std::nullopt);
      return Withdraw(r, pending, std::move(take));
    }
    {
      base::MutexLock lock(mu);
      members[member]->holds.erase(hold);
      ++left_pending;
    }
    d->refused[member] = "took the pod but its scheduler left it pending";
    if (d->pending) return Withdraw(r, here, [this, d] { Attempt(d); });
    d->pending = std::move(here);
    return Attempt(d);
  }
  const int http = reply.ok() ? 200 : api::HttpStatusOf(reply.status());
  const std::string why =
      reply.ok() ? "an answer without a uid" : std::string(reply.status().message());
  d->refused[member] =
      absl::StrCat(http >= 400 && http < 500 ? "refused: " : "unreachable: ", base::Clip(why, 300));
  // Without a reply the member may have created the pod: remembered, removed when it answers
  // (ArmReconcile).
  if (!reply.ok() && http == 0) r.withdrawn.push_back({members[member]->config.name, ""});
  {
    base::MutexLock lock(mu);
    members[member]->holds.erase(hold);
    ++refusals;
  }
  Attempt(d);
}

void Front::State::EndDispatch(const std::shared_ptr<Dispatching>& d) {
  Record& r = *d->r;
  if (d->pending) {
    Take(r, *d->pending, d->gang_key, /*hold=*/0);  // pending there beats waiting here
    return d->done();
  }
  r.member.clear();
  if (r.reasons.empty()) {
    for (const auto& [i, why] : d->refused) {
      r.reasons.push_back(absl::StrCat(members[i]->config.name, ": ", why));
    }
  }
  d->done();
}

absl::Status Front::State::PersistNow(std::vector<std::pair<std::string, std::string>> puts,
                                      std::vector<std::string> deletes) {
  std::promise<absl::Status> committed;
  std::future<absl::Status> outcome = committed.get_future();
  persist(std::move(puts), std::move(deletes),
          [&committed](absl::Status st) { committed.set_value(std::move(st)); });
  return outcome.get();
}

absl::Status Front::State::PersistRecords(const std::vector<Record>& recs) {
  if (recs.empty()) return absl::OkStatus();
  std::vector<std::pair<std::string, std::string>> puts;
  puts.reserve(recs.size());
  for (const Record& r : recs) puts.emplace_back(r.uid, RecordJson(r));
  return PersistNow(std::move(puts), {});
}

void Front::State::QueueLoop() {
  base::MutexLock lock(mu);
  while (!stopping) {
    lock.WaitFor(cv, std::chrono::duration<double>(options.refresh_s));
    if (stopping) break;
    std::vector<Record> batch;
    std::deque<std::string> keep;
    while (!queue.empty() && batch.size() < 512) {
      const std::string uid = std::move(queue.front());
      queue.pop_front();
      const auto it = records.find(uid);
      if (it == records.end() || !it->second.member.empty()) continue;
      if (in_flight.count(uid)) {
        keep.push_back(uid);
        continue;
      }
      in_flight.insert(uid);
      batch.push_back(it->second);
    }
    for (std::string& uid : keep) queue.push_back(std::move(uid));
    if (batch.empty()) continue;
    lock.Unlock();
    std::vector<Record> moved;
    for (Record& r : batch) {
      const size_t withdrawn = r.withdrawn.size();
      Dispatch(r);
      if (!r.member.empty() || r.withdrawn.size() != withdrawn) moved.push_back(r);
    }
    const absl::Status st = PersistRecords(moved);
    lock.Lock();
    for (Record& r : batch) {
      in_flight.erase(r.uid);
      ReleaseQuota(r);
    }
    for (Record& r : st.ok() ? moved : batch) {
      const auto it = records.find(r.uid);
      if (it == records.end()) continue;  // deleted meanwhile (Delete refuses in-flight pods)
      if (!st.ok()) {
        queue.push_back(r.uid);
        continue;
      }
      if (r.member.empty()) {
        it->second.withdrawn = r.withdrawn;
        ArmReconcile(r);
        continue;
      }
      Install(std::move(r));
    }
    if (st.ok()) {
      for (Record& r : batch) {
        const auto it = records.find(r.uid);
        if (it != records.end() && it->second.member.empty()) {
          it->second.reasons = r.reasons;
          it->second.over_quota = r.over_quota;
          queue.push_back(r.uid);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------- Front

Front::Front(std::unique_ptr<State> state) : state_(std::move(state)) {}

Front::~Front() { Stop(); }

absl::StatusOr<std::unique_ptr<Front>> Front::Create(FrontOptions options, Persist persist) {
  if (options.config.members.empty()) {
    return absl::InvalidArgumentError("a federation needs at least one member");
  }
  if (!(options.refresh_s > 0) || !(options.call_timeout_s > 0) || !(options.watch_timeout_s > 0)) {
    return absl::InvalidArgumentError("refresh, call and watch timeouts must be > 0");
  }
  auto s = std::make_unique<State>();
  std::vector<double> weights;
  for (const MemberConfig& c : options.config.members) {
    api::ClientOptions co;
    co.url = c.url;
    co.token_file = c.token_file;
    co.timeout_s = options.call_timeout_s;
    // Checked now (URL, token file) so that a bad member file is refused before anything starts.
    absl::StatusOr<std::unique_ptr<api::AsyncClient>> client =
        api::AsyncClient::Create(co, *s->loop);
    if (!client.ok()) {
      // The client names its own flag; here the value came from the member file.
      std::string why(client.status().message());
      if (why.rfind("--token-file: ", 0) == 0) why = "token_file " + why.substr(14);
      return absl::Status(client.status().code(), absl::StrCat("member ", c.name, ": ", why));
    }
    auto m = std::make_unique<Member>();
    m->config = c;
    m->client = *std::move(client);
    s->members.push_back(std::move(m));
    weights.push_back(c.weight);
  }
  s->options = std::move(options);
  s->persist = std::move(persist);
  const std::vector<QuotaConfig>& quotas = s->options.config.quotas;
  for (size_t q = 0; q < quotas.size(); ++q) {
    for (const std::string& ns : quotas[q].namespaces) s->quota_of[ns] = static_cast<int>(q);
  }
  {
    base::MutexLock lock(s->mu);
    s->rotation = std::make_unique<WeightedRotation>(std::move(weights));
    s->quota_used.assign(quotas.size(), QuotaUse{});
    s->quota_reserved.assign(quotas.size(), QuotaUse{});
  }
  return std::unique_ptr<Front>(new Front(std::move(s)));
}

absl::Status Front::Restore(const std::vector<std::pair<std::string, std::string>>& recs) {
  State& s = *state_;
  base::MutexLock lock(s.mu);
  for (const auto& [key, json] : recs) {
    absl::StatusOr<Record> r = ParseRecord(key, json);
    if (!r.ok()) return r.status();
    if (!r->member.empty() && s.MemberIndex(r->member) < 0) {
      // A member no longer in the file: its copy cannot be reached; the pod is placed again.
      r->member.clear();
      r->member_uid.clear();
    }
    if (!r->member.empty() && !r->ended) r->phase = "Unknown";  // until it is reconciled
    if (!r->request.gang.empty() && !r->member.empty()) {
      s.gangs.emplace(absl::StrCat(r->request.ns, "/", r->request.gang), r->member);
    }
    s.names[absl::StrCat(r->request.ns, "/", r->request.name)] = key;
    s.Install(std::move(*r));
  }
  return absl::OkStatus();
}

void Front::Start() {
  State& s = *state_;
  SEEDANCE_CHECK(!s.started) << "federation front started twice";
  s.started = true;
  const double now = s.Now();
  {
    base::MutexLock lock(s.mu);
    for (auto& m : s.members) m->last_ok_s = now;  // lost_after counts from the start
  }
  for (auto& m : s.members) {
    m->poller = std::thread([&s, m = m.get()] {
      base::NameThisThread("fed-poll");
      s.PollLoop(*m);
    });
    m->watcher = std::thread([&s, m = m.get()] {
      base::NameThisThread("fed-watch");
      s.WatchLoop(*m);
    });
  }
  s.queue_thread = std::thread([&s] {
    base::NameThisThread("fed-queue");
    s.QueueLoop();
  });
}

void Front::Stop() {
  State& s = *state_;
  {
    base::MutexLock lock(s.mu);
    s.stopping = true;
    // A submission under way finishes when its commit does (the store is still running).
    lock.WaitFor(s.cv, std::chrono::hours(1),
                 [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) { return s.submitting == 0; });
  }
  s.cv.notify_all();
  for (auto& m : s.members) {
    if (m->poller.joinable()) m->poller.join();
    if (m->watcher.joinable()) m->watcher.join();
  }
  if (s.queue_thread.joinable()) s.queue_thread.join();
  for (auto& m : s.members) m->client->Close();
  s.loop->Stop();
}

FrontReply Front::Submit(std::string_view body, const api::PodRequest& request) {
  (void)body;
  std::promise<FrontReply> replied;
  std::future<FrontReply> reply = replied.get_future();
  SubmitAsync(request, [&replied](FrontReply r) { replied.set_value(std::move(r)); });
  return reply.get();
}

void Front::SubmitAsync(const api::PodRequest& request, std::function<void(FrontReply)> done) {
  State& s = *state_;
  auto r = std::make_shared<Record>();
  r->uid = base::NewUuid();
  r->request = request;
  r->submitted_unix_ns = UnixNs();
  std::string key = absl::StrCat(request.ns, "/", request.name);
  {
    base::MutexLock lock(s.mu);
    if (s.stopping) return done(Error(absl::UnavailableError("the federation front is stopping")));
    if (!s.names.emplace(key, r->uid).second) {
      return done(Error(
          absl::AlreadyExistsError(absl::StrCat("pod ", base::Clip(key, 300), " already exists"))));
    }
    s.in_flight.insert(r->uid);
    ++s.submitting;
  }
  s.DispatchAsync(*r, [&s, r, key = std::move(key), done = std::move(done)]() mutable {
    std::vector<std::pair<std::string, std::string>> puts = {{r->uid, RecordJson(*r)}};
    s.persist(std::move(puts), {},
              [&s, r, key = std::move(key), done = std::move(done)](absl::Status st) {
                done(s.FinishSubmit(*r, key, st));
              });
  });
}

FrontReply Front::State::FinishSubmit(Record& r, const std::string& key, const absl::Status& st) {
  base::MutexLock lock(mu);
  in_flight.erase(r.uid);
  ReleaseQuota(r);
  if (--submitting == 0 && stopping) cv.notify_all();  // Stop waits for the last one
  if (!st.ok()) {
    names.erase(key);
    // Not acknowledged: the member's copy is an orphan, removed when the member is reconciled.
    if (const int i = MemberIndex(r.member); i >= 0) members[i]->reconcile = true;
    return Error(absl::UnavailableError(absl::StrCat("the front's state: ", st.message())));
  }
  Json view = PodView(r);
  Install(std::move(r));
  if (view["cluster"].is_null()) cv.notify_all();  // the queue places it when a member can
  return Reply(201, view);
}

FrontReply Front::Get(const std::string& uid, const std::function<bool(const std::string&)>& sees) {
  State& s = *state_;
  base::MutexLock lock(s.mu);
  const auto it = s.records.find(uid);
  if (it == s.records.end() || !sees(it->second.request.ns)) return Error(NotFound(uid));
  return Reply(200, s.PodView(it->second));
}

FrontReply Front::List(const std::string& phase, const std::string& ns, const std::string& after,
                       int limit, const std::function<bool(const std::string&)>& sees) {
  State& s = *state_;
  Json items = Json::array();
  Json next = nullptr;
  base::MutexLock lock(s.mu);
  for (auto it = s.records.upper_bound(after); it != s.records.end(); ++it) {
    const Record& r = it->second;
    if ((!phase.empty() && r.phase != phase) || (!ns.empty() && r.request.ns != ns) ||
        !sees(r.request.ns)) {
      continue;
    }
    if (static_cast<int>(items.size()) == limit) {
      next = items.back()["uid"];
      break;
    }
    items.push_back(s.PodView(r));
  }
  return Reply(200, Json{{"items", std::move(items)}, {"continue", next}});
}

FrontReply Front::Delete(const std::string& uid,
                         const std::function<bool(const std::string&)>& sees) {
  std::promise<FrontReply> replied;
  std::future<FrontReply> reply = replied.get_future();
  DeleteAsync(uid, sees, [&replied](FrontReply r) { replied.set_value(std::move(r)); });
  return reply.get();
}

void Front::DeleteAsync(const std::string& uid, const std::function<bool(const std::string&)>& sees,
                        std::function<void(FrontReply)> done) {
  State& s = *state_;
  std::string member, member_uid;
  int index = -1;
  {
    base::MutexLock lock(s.mu);
    // A dispatch under way (the queue's, a lost member's) ends within a member call or two.
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(2 * s.options.call_timeout_s);
    while (s.in_flight.count(uid) && !s.stopping && std::chrono::steady_clock::now() < until) {
      lock.WaitFor(s.cv, std::chrono::milliseconds(10));
    }
    if (s.stopping) return done(Error(absl::UnavailableError("the federation front is stopping")));
    const auto it = s.records.find(uid);
    if (it == s.records.end() || !sees(it->second.request.ns)) return done(Error(NotFound(uid)));
    if (s.in_flight.count(uid)) {
      return done(Error(absl::AbortedError("the pod is being dispatched to a member; retry")));
    }
    member = it->second.member;
    member_uid = it->second.member_uid;
    index = s.MemberIndex(member);
    if (index >= 0 && s.members[index]->lost) {
      return done(Error(absl::UnavailableError(absl::StrCat(
          "the pod is on member ", member, ", which is lost; retry when it answers"))));
    }
    s.in_flight.insert(uid);
    ++s.submitting;
  }
  auto reply = std::make_shared<std::function<void(FrontReply)>>(std::move(done));
  auto commit = [&s, uid, index, member_uid, reply] {
    s.persist({}, {uid}, [&s, uid, index, member_uid, reply](absl::Status st) {
      (*reply)(s.FinishDelete(uid, index, member_uid, st));
    });
  };
  if (index < 0) return commit();
  s.members[index]->client->Call(
      "DELETE", "/v1/pods/" + member_uid, "",
      [&s, uid, index, member, member_uid, reply, commit](absl::StatusOr<Json> r) {
        if (r.ok() || api::HttpStatusOf(r.status()) == 404) return commit();
        (*reply)(s.FinishDelete(
            uid, index, member_uid,
            absl::UnavailableError(absl::StrCat("member ", member, ": ", r.status().message()))));
      });
}

FrontReply Front::State::FinishDelete(const std::string& uid, int index,
                                      const std::string& member_uid, const absl::Status& st) {
  base::MutexLock lock(mu);
  in_flight.erase(uid);
  if (--submitting == 0 && stopping) cv.notify_all();  // Stop waits for the last one
  if (!st.ok()) return Error(st);
  const auto it = records.find(uid);
  if (it != records.end()) {
    names.erase(absl::StrCat(it->second.request.ns, "/", it->second.request.name));
    if (index >= 0) members[index]->by_member_uid.erase(member_uid);
    Count(it->second, -1);
    records.erase(it);
    cv.notify_all();  // the queue may place a pod its quota held back
  }
  return Reply(200, Json{{"uid", uid}, {"deleted", true}});
}

FrontReply Front::Explain(const std::string& uid,
                          const std::function<bool(const std::string&)>& sees) {
  State& s = *state_;
  std::string member, member_uid;
  int index = -1;
  {
    base::MutexLock lock(s.mu);
    const auto it = s.records.find(uid);
    if (it == s.records.end() || !sees(it->second.request.ns)) return Error(NotFound(uid));
    const Record& r = it->second;
    index = s.MemberIndex(r.member);
    if (index < 0) {
      const std::string message =
          r.over_quota ? absl::StrCat("waits at the front: ", absl::StrJoin(r.reasons, "; "))
                       : absl::StrCat("0/", s.members.size(),
                                      " clusters fit: ", absl::StrJoin(r.reasons, "; "));
      return Reply(200, Json{{"uid", uid},
                             {"phase", r.phase},
                             {"cluster", nullptr},
                             {"clusters_total", s.members.size()},
                             {"clusters_fit", 0},
                             {"reasons", r.reasons},
                             {"message", message}});
    }
    member = r.member;
    member_uid = r.member_uid;
    if (s.members[index]->lost) {
      return Reply(200, Json{{"uid", uid},
                             {"phase", "Unknown"},
                             {"cluster", member},
                             {"message", absl::StrCat("member ", member,
                                                      " is lost; the pod's state there is unknown "
                                                      "until it answers again")}});
    }
  }
  absl::StatusOr<Json> r =
      s.members[index]->client->CallAndWait("GET", "/v1/pods/" + member_uid + "/explain");
  if (!r.ok()) {
    return Error(absl::Status(r.status().code(),
                              absl::StrCat("member ", member, ": ", r.status().message())));
  }
  Json j = *r;
  if (!j.is_object()) j = Json::object();
  j["uid"] = uid;
  j["cluster"] = member;
  j["member_uid"] = member_uid;
  return Reply(200, j);
}

}  // namespace seedance::federation
