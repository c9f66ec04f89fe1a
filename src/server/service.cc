#include "seedance/server/service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/api/api.h"
#include "seedance/base/check.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "seedance/base/thread_name.h"
#include "seedance/policy/manager.h"
#include "seedance/policy/policy.h"
#include "seedance/sched/frag.h"

namespace seedance::server {

namespace {

double MonotonicS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Reply Unavailable(std::string_view why) {
  return ErrorReply(absl::UnavailableError(std::string(why)));
}

// The stored pods decoded (PodFromJson), on up to hardware_concurrency threads in contiguous
// slices; result i belongs to order[i].
std::vector<absl::StatusOr<sched::PodInfo>> DecodePods(
    const std::vector<const store::PodRecord*>& order, const core::ClusterState& state) {
  std::vector<absl::StatusOr<sched::PodInfo>> out(order.size(), absl::UnknownError("not decoded"));
  auto decode = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      out[i] = PodFromJson(Json::parse(order[i]->spec_json, nullptr, false), state);
    }
  };
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  if (threads == 1 || order.size() < 4096) {
    decode(0, order.size());
    return out;
  }
  std::vector<std::thread> pool;
  const size_t slice = (order.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    pool.emplace_back(decode, std::min(order.size(), t * slice),
                      std::min(order.size(), (t + 1) * slice));
  }
  decode(0, std::min(order.size(), slice));
  for (std::thread& th : pool) th.join();
  return out;
}

}  // namespace

Reply ErrorReply(const absl::Status& st) { return {api::HttpStatusFor(st), api::ErrorBody(st)}; }

void Service::Context::NoteSubmitted(const std::string& uid) { service.submitted_at_[uid] = now_s; }

void Service::Context::PutObject(std::string kind, std::string key, std::string json) {
  service.pending_objects_.push_back({std::move(kind), std::move(key), std::move(json), 0});
}

void Service::Context::DeleteObject(std::string kind, std::string key) {
  // A put staged earlier in the batch goes too: the commit applies deletions before puts.
  std::erase_if(service.pending_objects_, [&](const store::ObjectRecord& rec) {
    return rec.kind == kind && rec.key == key;
  });
  service.pending_object_erases_.emplace_back(std::move(kind), std::move(key));
}

void Service::Context::DeleteObjects(std::string kind, std::string prefix) {
  // Puts staged earlier in the batch go too: the commit applies deletions before puts.
  std::erase_if(service.pending_objects_, [&](const store::ObjectRecord& rec) {
    return rec.kind == kind && rec.key.starts_with(prefix);
  });
  service.pending_object_deletes_.emplace_back(std::move(kind), std::move(prefix));
}

std::vector<store::ObjectRecord> Service::TakeLoadedObjects(const std::string& kind) {
  auto it = loaded_objects_.find(kind);
  if (it == loaded_objects_.end()) return {};
  std::vector<store::ObjectRecord> out = std::move(it->second);
  loaded_objects_.erase(it);
  return out;
}

Service::Service(ServiceOptions options)
    : options_(std::move(options)), metrics_(std::make_unique<Metrics>()) {}

Service::~Service() { Shutdown(); }

double Service::Now() const { return MonotonicS(); }

absl::StatusOr<std::unique_ptr<Service>> Service::Start(ServiceOptions options,
                                                        std::unique_ptr<store::Store> store) {
  std::unique_ptr<Service> s(new Service(std::move(options)));
  s->leading_ = !s->options_.follower;
  // Every input is checked before the state directory is opened (or created), so a refused
  // start leaves nothing behind.
  absl::StatusOr<std::unique_ptr<sched::Scheduler>> sc =
      sched::Scheduler::Create(s->options_.scheduler);
  if (!sc.ok()) return sc.status();
  s->scheduler_ = std::move(*sc);
  // A default policy that cannot be built (fgd without its target workload) would make every
  // pod it serves an error: refuse to start instead.
  if (absl::Status built = s->scheduler_->BuildDefaultProfile(); !built.ok()) {
    const std::string& policy = s->options_.scheduler.default_profile.policy;
    return absl::InvalidArgumentError(absl::StrCat(
        "--placement ", policy, ": ", built.message(),
        policy == "fgd" ? "; give --oracle-pods FILE (a pod CSV of the expected workload)" : ""));
  }
  if (absl::Status p = s->StartPolicies(); !p.ok()) return p;
  if (store) {
    s->store_ = std::move(store);
  } else {
    absl::StatusOr<std::unique_ptr<store::Store>> st = store::Store::Open(s->options_.state_dir);
    if (!st.ok()) return st.status();
    s->store_ = std::move(*st);
  }
  std::string stored_policy;
  if (absl::Status r = s->Recover(&stored_policy); !r.ok()) return r;
  if (absl::Status p = s->ApplyStoredPolicy(stored_policy); !p.ok()) return p;
  s->UpdateGauges();  // the recovered state, before the first batch
  s->loop_ = std::thread([p = s.get()] {
    base::NameThisThread("service-loop");
    p->Loop();
  });
  s->ready_ = true;
  return s;
}

absl::Status Service::Recover(std::string* policy_text) {
  absl::StatusOr<store::Snapshot> snap = store_->Load();
  if (!snap.ok()) return snap.status();
  *policy_text = snap->policy_text;
  loaded_objects_.clear();
  for (store::ObjectRecord& rec : snap->objects) loaded_objects_[rec.kind].push_back(std::move(rec));
  ++load_generation_;
  const std::string& where = store_->path();
  for (const store::NodeRecord& rec : snap->nodes) {
    Json j = Json::parse(rec.spec_json, nullptr, false);
    absl::StatusOr<core::NodeSpec> spec = NodeFromJson(j);
    if (!spec.ok()) {
      return absl::DataLossError(absl::StrCat(where, ": node '", rec.name,
                                              "' cannot be read back: ", spec.status().message()));
    }
    if (absl::Status a = scheduler_->PutNode(std::move(*spec)); !a.ok()) {
      return absl::DataLossError(
          absl::StrCat(where, ": node '", rec.name, "' cannot be restored: ", a.message()));
    }
    if (rec.cordoned) (void)scheduler_->CordonNode(rec.name, true);
  }
  const double now = Now();
  // Bound pods first, so that the pending ones cannot take their GPUs; then pending pods in
  // submission order (revision order is arrival order for pods never placed).
  std::vector<const store::PodRecord*> order;
  for (const store::PodRecord& rec : snap->pods) order.push_back(&rec);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    const bool pa = a->phase == "Pending", pb = b->phase == "Pending";
    return pa != pb ? pb : a->revision < b->revision;
  });
  // Decoding the stored JSON is most of a restart's work and needs only the (now complete,
  // read-only) node table: it runs on every core; restoring stays in order on this thread.
  std::vector<absl::StatusOr<sched::PodInfo>> pods = DecodePods(order, scheduler_->state());
  for (size_t i = 0; i < order.size(); ++i) {
    if (!pods[i].ok()) {
      return absl::DataLossError(absl::StrCat(
          where, ": pod ", order[i]->uid, " cannot be read back: ", pods[i].status().message()));
    }
    if (absl::Status a = scheduler_->RestorePod(std::move(*pods[i]), now); !a.ok()) {
      return absl::DataLossError(
          absl::StrCat(where, ": pod ", order[i]->uid, " cannot be restored: ", a.message()));
    }
  }
  (void)scheduler_->TakeChanges();  // restoring is not a change
  revision_ = snap->revision;
  metrics_->revision->Set(static_cast<double>(snap->revision));
  return absl::OkStatus();
}

absl::Status Service::Preload(const std::vector<core::NodeSpec>& nodes) {
  Reply r = Run([&nodes](Context& c) -> Finisher {
    for (const core::NodeSpec& n : nodes) {
      if (absl::Status st = c.scheduler.PutNode(n); !st.ok()) {
        return [st] { return ErrorReply(st); };
      }
    }
    return [] { return Reply{200, "{}"}; };
  });
  if (r.status == 200) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--nodes: ", r.body));
}

Reply Service::Run(Operation op) {
  auto promise = std::make_shared<std::promise<Reply>>();
  std::future<Reply> reply = promise->get_future();
  RunAsync(std::move(op), [promise](Reply r) { promise->set_value(std::move(r)); });
  return reply.get();
}

void Service::RunAsync(Operation op, Done done) {
  {
    base::MutexLock lock(mu_);
    if (!stopping_) {
      inbox_.emplace_back(std::move(op), std::move(done));
      cv_.notify_one();
      return;
    }
  }
  done(Unavailable("the server is shutting down"));
}

void Service::Shutdown() {
  {
    base::MutexLock lock(mu_);
    if (stopping_ && !loop_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  ready_ = false;
  std::vector<std::pair<Operation, Service::Done>> left;
  {
    base::MutexLock lock(mu_);
    left.swap(inbox_);
  }
  for (auto& [op, done] : left) done(Unavailable("the server is shutting down"));
  watch_cv_.notify_all();
}

void Service::Loop() {
  std::vector<std::pair<Operation, Service::Done>> batch;
  while (true) {
    {
      base::MutexLock lock(mu_);
      const std::optional<double> wake = scheduler_->NextWakeup();
      const double until = std::min(wake.value_or(1e300), last_tick_s_ + options_.tick_s);
      const double wait = std::max(0.0, until - Now());
      lock.WaitFor(cv_, std::chrono::duration<double>(std::min(wait, 3600.0)),
                   [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                     return stopping_ || !inbox_.empty() || !reloads_.empty();
                   });
      if (stopping_) return;
      if (!reloads_.empty()) {
        std::vector<std::pair<bool, std::promise<absl::Status>>> reloads;
        reloads.swap(reloads_);
        lock.Unlock();
        const absl::Status st = Rebuild(reloads.back().first);  // the latest request wins
        for (auto& [lead, done] : reloads) done.set_value(st);
        continue;
      }
      const size_t take = std::min<size_t>(inbox_.size(), options_.max_batch);
      batch.assign(std::make_move_iterator(inbox_.begin()),
                   std::make_move_iterator(inbox_.begin() + static_cast<ptrdiff_t>(take)));
      inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(take));
    }
    RunBatch(batch);
    batch.clear();
  }
}

void Service::RunBatch(std::vector<std::pair<Operation, Service::Done>>& batch) {
  if (!leading_.load()) return RunFollowerBatch(batch);
  const double now = Now();
  // Every decision of this batch is made under one policy, even if a reload lands meanwhile.
  batch_policy_ = policies_->Current();
  SyncQueues(now);
  if (now - last_tick_s_ >= options_.tick_s) Tick(now);
  Context ctx{*scheduler_, *this, now};
  std::vector<Finisher> finishers;
  finishers.reserve(batch.size());
  for (auto& [op, done] : batch) finishers.push_back(op(ctx));
  scheduler_->ExpireAssumptions(now);
  const auto cycles_start = std::chrono::steady_clock::now();
  if (scheduler_->RunCycles(now) > 0) {
    metrics_->cycle_duration->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cycles_start).count());
  }

  std::vector<WatchEvent> events;
  store::Batch commit = BuildCommit(&events);
  if (pending_policy_text_) {
    commit.policy_text = std::move(pending_policy_text_);
    pending_policy_text_.reset();
    if (commit.revision == 0) commit.revision = revision_.load();
  }
  StageObjects(commit);
  absl::Status committed = absl::OkStatus();
  if (!commit.empty()) {
    const double t0 = Now();
    committed = store_->Commit(commit);
    metrics_->commit_duration->Observe(Now() - t0);
  }
  metrics_->batch_size->Observe(static_cast<double>(batch.size()));
  if (!committed.ok()) return FailBatch(batch, committed);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].second(finishers[i]());
  Publish(std::move(events));
  UpdateGauges();
}

void Service::FailBatch(std::vector<std::pair<Operation, Service::Done>>& batch,
                        const absl::Status& committed) {
  // The in-memory state is ahead of the store: nothing of this batch may be acknowledged.
  for (auto& [op, done] : batch) {
    done(ErrorReply(absl::UnavailableError(
        absl::StrCat("the state could not be made durable: ", committed.message()))));
  }
  // A replicated store stays usable (another replica may lead now): rebuild from what it holds
  // and stop deciding. Otherwise the process cannot go on as if it were durable.
  SEEDANCE_CHECK(store_->reloadable())
      << "state commit failed; restart recovers the last durable state: " << committed.message();
  std::fprintf(stderr, "seedance server: commit refused (%s); following from now on\n",
               std::string(committed.message()).c_str());
  commit_failed_ = true;
  if (absl::Status st = Rebuild(false); !st.ok()) {
    std::fprintf(stderr, "seedance server: %s\n", std::string(st.message()).c_str());
  }
  commit_failed_ = true;  // Rebuild clears it; the caller must still step down
}

void Service::RunFollowerBatch(std::vector<std::pair<Operation, Service::Done>>& batch) {
  last_tick_s_ = Now();  // a follower runs no rules: the loop sleeps until an operation comes
  Context ctx{*scheduler_, *this, last_tick_s_};
  std::vector<Finisher> finishers;
  finishers.reserve(batch.size());
  for (auto& [op, done] : batch) finishers.push_back(op(ctx));
  if (!scheduler_->TakeChanges().empty() || pending_policy_text_ || !pending_objects_.empty() ||
      !pending_object_deletes_.empty() || !pending_object_erases_.empty()) {
    // A write slipped past the HTTP check while this service was being demoted: refuse the
    // batch and put the state back as the store has it.
    pending_policy_text_.reset();
    pending_objects_.clear();
    pending_object_deletes_.clear();
    pending_object_erases_.clear();
    for (auto& [op, done] : batch) {
      done(Unavailable("this replica is not the leader; ask GET /v1/leader"));
    }
    if (absl::Status st = Rebuild(false); !st.ok()) {
      std::fprintf(stderr, "seedance server: %s\n", std::string(st.message()).c_str());
    }
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i].second(finishers[i]());
}

absl::Status Service::Reload(bool lead) {
  std::promise<absl::Status> done;
  std::future<absl::Status> result = done.get_future();
  {
    base::MutexLock lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    reloads_.emplace_back(lead, std::move(done));
  }
  cv_.notify_one();
  return result.get();
}

absl::Status Service::Rebuild(bool lead) {
  leading_ = false;
  ready_ = false;
  absl::StatusOr<std::unique_ptr<sched::Scheduler>> sc =
      sched::Scheduler::Create(options_.scheduler);
  if (!sc.ok()) return sc.status();
  scheduler_ = std::move(*sc);
  queues_policy_ = nullptr;
  queues_config_ = {};
  submitted_at_.clear();
  batch_pod_json_.clear();
  pending_policy_text_.reset();
  pending_objects_.clear();
  pending_object_deletes_.clear();
  pending_object_erases_.clear();
  std::string stored_policy;
  if (absl::Status r = Recover(&stored_policy); !r.ok()) return r;
  if (absl::Status p = ApplyStoredPolicy(stored_policy); !p.ok()) return p;
  batch_policy_ = policies_->Current();
  SyncQueues(Now());
  (void)scheduler_->TakeChanges();
  {
    // The events in memory were published by another life of this service: a watcher is served
    // from the store from now on, which has every event in order.
    base::MutexLock lock(watch_mu_);
    recent_.clear();
  }
  UpdateGauges();
  commit_failed_ = false;
  leading_ = lead;
  ready_ = true;
  watch_cv_.notify_all();
  return absl::OkStatus();
}

void Service::SetLeaderInfo(LeaderInfo info) {
  base::MutexLock lock(leader_mu_);
  leader_info_ = std::move(info);
}

LeaderInfo Service::leader_info() const {
  base::MutexLock lock(leader_mu_);
  return leader_info_;
}

void Service::ObserveBound(const std::string& uid, double now) {
  auto it = submitted_at_.find(uid);
  if (it == submitted_at_.end()) return;
  metrics_->scheduling_duration->Observe(now - it->second);
  submitted_at_.erase(it);
}

const std::string* Service::BatchPodJson(const std::string& uid) const {
  auto it = batch_pod_json_.find(uid);
  return it == batch_pod_json_.end() ? nullptr : &it->second;
}

void Service::StageObjects(store::Batch& commit) {
  if (pending_objects_.empty() && pending_object_deletes_.empty() &&
      pending_object_erases_.empty()) {
    return;
  }
  if (commit.revision == 0) commit.revision = revision_.load();
  // Deletions first: an operation that deletes a prefix and then puts under it keeps the put.
  for (auto& [kind, prefix] : pending_object_deletes_) {
    commit.delete_object_prefixes.emplace_back(std::move(kind), std::move(prefix));
  }
  for (auto& [kind, key] : pending_object_erases_) {
    commit.delete_objects.emplace_back(std::move(kind), std::move(key));
  }
  for (store::ObjectRecord& rec : pending_objects_) {
    rec.revision = commit.revision;
    commit.put_objects.push_back(std::move(rec));
  }
  pending_objects_.clear();
  pending_object_deletes_.clear();
  pending_object_erases_.clear();
}

store::Batch Service::BuildCommit(std::vector<WatchEvent>* events) {
  store::Batch b;
  batch_pod_json_.clear();
  std::vector<sched::Change> changes = scheduler_->TakeChanges();
  if (changes.empty()) return b;
  int64_t rev = revision_.load();
  std::set<std::string> nodes_put, pods_put;
  const core::ClusterState& state = scheduler_->state();
  const sched::PodLedger& ledger = scheduler_->ledger();
  const double now = Now();
  for (const sched::Change& c : changes) {
    ++rev;
    Json object;
    switch (c.kind) {
      case sched::Change::kNodeAdded:
      case sched::Change::kNodeUpdated: {
        const int n = state.FindNode(c.key);
        if (n < 0) continue;  // removed later in the batch
        object = NodeToJson(state.node(n));
        object["cordoned"] = state.cordoned(n);
        nodes_put.insert(c.key);
        break;
      }
      case sched::Change::kNodeDeleted:
        object = {{"name", c.key}};
        nodes_put.erase(c.key);
        b.delete_nodes.push_back(c.key);
        break;
      case sched::Change::kPodDeleted:
        batch_pod_json_.erase(c.key);
        object = {{"uid", c.key}};
        pods_put.erase(c.key);
        b.delete_pods.push_back(c.key);
        submitted_at_.erase(c.key);
        break;
      default: {
        const sched::PodInfo* pod = ledger.Find(c.key);
        if (!pod) continue;
        (void)scheduler_->SetPodRevision(c.key, rev);
        if (c.kind != sched::Change::kPodAdded && c.kind != sched::Change::kPodUnbound) {
          // The pod as it ends this batch: the event, the stored record and the reply share it.
          std::string text = PodJsonText(*pod, state);
          const std::string type(sched::ChangeKindName(c.kind));
          std::string event = absl::StrCat("{\"revision\":", rev, ",\"type\":\"", type,
                                           "\",\"object\":", text, "}");
          b.events.push_back({rev, type, event});
          events->push_back({rev, std::move(event)});
          batch_pod_json_[c.key] = std::move(text);
          pods_put.insert(c.key);
          if (c.kind == sched::Change::kPodBound) ObserveBound(c.key, now);
          continue;
        }
        batch_pod_json_.erase(c.key);  // no longer the pod's state at the end of the batch
        pods_put.insert(c.key);
        // Added: the pod as submitted (Pending, nowhere); Unbound: as it is now.
        const std::string type(sched::ChangeKindName(c.kind));
        std::string event = absl::StrCat(
            "{\"revision\":", rev, ",\"type\":\"", type, "\",\"object\":",
            PodJsonText(*pod, state, c.kind == sched::Change::kPodAdded, rev), "}");
        b.events.push_back({rev, type, event});
        events->push_back({rev, std::move(event)});
        continue;
      }
    }
    object["revision"] = rev;
    Json event = {{"revision", rev},
                  {"type", std::string(sched::ChangeKindName(c.kind))},
                  {"object", object}};
    std::string text = base::DumpJson(event, -1);
    b.events.push_back({rev, std::string(sched::ChangeKindName(c.kind)), text});
    events->push_back({rev, std::move(text)});
  }
  for (const std::string& name : nodes_put) {
    const int n = state.FindNode(name);
    b.put_nodes.push_back(
        {name, base::DumpJson(NodeToJson(state.node(n)), -1), state.cordoned(n), rev});
  }
  for (const std::string& uid : pods_put) {
    const sched::PodInfo* p = ledger.Find(uid);
    if (!p) continue;
    auto cached = batch_pod_json_.find(uid);
    std::string text = cached != batch_pod_json_.end() ? cached->second : PodJsonText(*p, state);
    b.put_pods.push_back(
        {p->uid, p->ns, p->name, std::move(text), std::string(sched::PodPhaseName(p->phase)),
         p->phase == sched::PodPhase::kPending ? std::string() : state.node(p->placement.node).name,
         "", p->revision});
  }
  b.revision = rev;
  revision_ = rev;
  metrics_->revision->Set(static_cast<double>(rev));
  return b;
}

static std::shared_ptr<const std::string> SseOf(const WatchEvent& e) {
  return std::make_shared<const std::string>(
      absl::StrCat("id: ", e.revision, "\ndata: ", e.json, "\n\n"));
}

void Service::Publish(std::vector<WatchEvent> events) {
  if (events.empty()) return;
  for (WatchEvent& e : events) e.sse = SseOf(e);  // before the lock: the streams wait on it
  if (events.size() > 1) {
    std::string block;
    for (const WatchEvent& e : events) block += *e.sse;
    events.front().batch_sse = std::make_shared<const std::string>(std::move(block));
    events.front().batch_last = events.back().revision;
  }
  {
    base::MutexLock lock(watch_mu_);
    for (WatchEvent& e : events) recent_.push_back(std::move(e));
    while (recent_.size() > static_cast<size_t>(options_.watch_memory)) recent_.pop_front();
    if (publish_hook_) publish_hook_();
  }
  watch_cv_.notify_all();
}

void Service::SetPublishHook(std::function<void()> hook) {
  base::MutexLock lock(watch_mu_);
  publish_hook_ = std::move(hook);
}

absl::StatusOr<std::vector<WatchEvent>> Service::Watch(int64_t since, size_t limit,
                                                       double timeout_s) {
  std::vector<WatchEvent> out;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  base::MutexLock lock(watch_mu_);
  while (true) {
    if (!recent_.empty() && recent_.front().revision <= since + 1) {
      auto it = std::lower_bound(recent_.begin(), recent_.end(), since + 1,
                                 [](const WatchEvent& e, int64_t r) { return e.revision < r; });
      for (; it != recent_.end() && out.size() < limit; ++it) out.push_back(*it);
      if (!out.empty()) return out;
    } else if (since < revision_.load()) {
      // Older than memory: from the store (which refuses what it no longer keeps).
      lock.Unlock();
      if (since + 1 < store_->oldest_event_revision()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "revision ", since, " is older than the oldest retained event (",
            store_->oldest_event_revision(), "); list again and watch from its revision"));
      }
      absl::StatusOr<std::vector<store::EventRecord>> old = store_->EventsSince(since, limit);
      if (!old.ok()) return old.status();
      for (store::EventRecord& e : *old) out.push_back({e.revision, std::move(e.object_json)});
      if (!out.empty()) return out;
      lock.Lock();
    }
    if (!ready_.load() || lock.WaitUntil(watch_cv_, deadline) == std::cv_status::timeout) {
      return out;
    }
  }
}

absl::StatusOr<std::vector<std::shared_ptr<const std::string>>> Service::WatchSse(
    int64_t since, size_t max_bytes, int64_t* last) {
  std::vector<std::shared_ptr<const std::string>> out;
  size_t bytes = 0;
  {
    base::MutexLock lock(watch_mu_);
    if (!recent_.empty() && recent_.front().revision <= since + 1) {
      auto it = std::lower_bound(recent_.begin(), recent_.end(), since + 1,
                                 [](const WatchEvent& e, int64_t r) { return e.revision < r; });
      while (it != recent_.end() && (out.empty() || bytes < max_bytes)) {
        if (it->batch_sse && (out.empty() || bytes + it->batch_sse->size() <= max_bytes)) {
          bytes += it->batch_sse->size();
          out.push_back(it->batch_sse);
          *last = it->batch_last;
          while (it != recent_.end() && it->revision <= *last) ++it;
          continue;
        }
        bytes += it->sse->size();
        out.push_back(it->sse);
        *last = it->revision;
        ++it;
      }
      return out;
    }
    if (since >= revision_.load()) return out;
  }
  // Older than memory: from the store, rendered here (a reconnecting watcher catching up).
  absl::StatusOr<std::vector<WatchEvent>> old = Watch(since, 1000, 0);
  if (!old.ok()) return old.status();
  for (const WatchEvent& e : *old) {
    if (!out.empty() && bytes >= max_bytes) break;
    out.push_back(SseOf(e));
    bytes += out.back()->size();
    *last = e.revision;
  }
  return out;
}

absl::Status Service::StartPolicies() {
  policy::ManagerOptions mo;
  mo.on_reload = [m = metrics_.get()](const absl::Status& st,
                                      const std::shared_ptr<const policy::Policy>&) {
    m->policy_reloads->Add({{"result", st.ok() ? "ok" : "failed"}}).Increment();
  };
  absl::StatusOr<std::unique_ptr<policy::PolicyManager>> pm = policy::PolicyManager::Start(
      options_.policy_path, policy::ServerMetricNames(), std::move(mo));
  if (!pm.ok()) return pm.status();
  policies_ = std::move(*pm);
  use_policy_profiles_ = !options_.policy_path.empty();
  return absl::OkStatus();
}

absl::Status Service::ApplyStoredPolicy(const std::string& stored_text) {
  if (options_.policy_path.empty() && !stored_text.empty() && stored_text != applied_policy_text_) {
    // The policy last PUT over the API, as acknowledged.
    if (absl::Status st = policies_->Reload(stored_text, "PUT /v1/policy"); !st.ok()) {
      return absl::DataLossError(
          absl::StrCat(store_->path(), ": the stored policy is refused: ", st.message()));
    }
    applied_policy_text_ = stored_text;
    use_policy_profiles_ = true;
  }
  scheduler_->SetProfileSelector([this](const sched::PodInfo& pod) { return ProfileOf(pod); });
  return absl::OkStatus();
}

absl::Status Service::ReplacePolicy(const std::string& text) {
  if (absl::Status st = policies_->Reload(text, "PUT /v1/policy"); !st.ok()) return st;
  use_policy_profiles_ = true;
  batch_policy_ = policies_->Current();
  pending_policy_text_ = text;
  SyncQueues(Now());
  return absl::OkStatus();
}

void Service::SyncQueues(double now_s) {
  if (!batch_policy_ || batch_policy_ == queues_policy_) return;
  sched::QueueConfig config;
  config.preemption = batch_policy_->preemption;
  for (const policy::QueueBinding& q : batch_policy_->queues) {
    config.queues.push_back(q.spec);
    for (const std::string& ns : q.namespaces) config.namespace_queue[ns] = q.spec.name;
  }
  queues_policy_ = batch_policy_;
  // A reload that leaves the queues as they were changes nothing for waiting pods.
  if (config == queues_config_) return;
  queues_config_ = config;
  // ParsePolicy checked the tree and the namespaces, so this is not expected to be refused; if
  // it were, tenancy stays off rather than half on.
  if (absl::Status st = scheduler_->SetQueues(std::move(config), now_s); !st.ok()) {
    std::fprintf(stderr, "seedance server: the policy's queues were refused (%s); no queues\n",
                 std::string(st.message()).c_str());
    (void)scheduler_->SetQueues({}, now_s);
  }
}

sched::ProfileSpec Service::ProfileOf(const sched::PodInfo& pod) const {
  if (!use_policy_profiles_ || !batch_policy_) return options_.scheduler.default_profile;
  const policy::PlacementProfile& p = batch_policy_->ProfileFor(pod.ns, pod.labels, pod.priority);
  return {p.name, p.policy, p.options, p.weights};
}

std::map<std::string, double> Service::LiveMetrics(double now_s) {
  const core::ClusterState& s = scheduler_->state();
  const sched::SchedulingQueue& q = scheduler_->queue();
  const double cap = static_cast<double>(s.gpu_capacity_milli());
  const double alloc = static_cast<double>(s.gpu_allocated_milli());
  int cordoned = 0;
  for (int n = 0; n < s.num_nodes(); ++n) cordoned += s.alive(n) && s.cordoned(n) ? 1 : 0;
  const int64_t bound = scheduler_->attempts_scheduled();
  if (now_s > last_rate_s_) {
    bind_rate_ = static_cast<double>(bound - last_bound_count_) / (now_s - last_rate_s_);
  }
  last_bound_count_ = bound;
  last_rate_s_ = now_s;
  // Fragmentation against the typical shapes of the pods the server holds (FGD's measure).
  std::vector<core::PodSpec> pods;
  pods.reserve(scheduler_->ledger().size());
  scheduler_->ledger().ForEach([&pods, &s](const sched::PodInfo& p) {
    core::PodSpec spec;
    spec.shape = p.shape;
    spec.shape.gpu_model_mask = s.PodModelMask(p.gpu_spec, p.device, p.shape.num_gpu > 0);
    pods.push_back(std::move(spec));
  });
  double frag = 0;
  if (!pods.empty() && cap > alloc) {
    const sched::TargetWorkload typical = sched::TypicalShapes(sched::CountShapes(pods));
    double frag_milli = 0;
    for (int n = 0; n < s.num_nodes(); ++n) {
      if (s.alive(n)) frag_milli += sched::NodeFragScore(sched::NodeResources::Of(s, n), typical);
    }
    frag = frag_milli / (cap - alloc);
  }
  metrics_->fragmentation_ratio->Set(frag);
  return {
      {"gpu_free_pct", cap > 0 ? 100.0 * (cap - alloc) / cap : 0.0},
      {"gpu_alloc_pct", cap > 0 ? 100.0 * alloc / cap : 0.0},
      {"pending_pods", static_cast<double>(scheduler_->ledger().count(sched::PodPhase::kPending))},
      {"unschedulable_pods", static_cast<double>(q.unschedulable_size())},
      {"nodes", static_cast<double>(s.num_live_nodes())},
      {"cordoned_nodes", static_cast<double>(cordoned)},
      {"fragmentation_ratio", frag},
      {"bind_rate_per_s", bind_rate_}};
}

void Service::ApplyActions(double now_s) {
  std::vector<policy::Action> actions = policies_->Evaluate(LiveMetrics(now_s), now_s);
  for (const policy::Action& a : actions) {
    if (a.kind == policy::Action::kCordon || a.kind == policy::Action::kDrain) {
      if (!scheduler_->CordonNode(a.target, true).ok()) continue;
      if (a.kind == policy::Action::kDrain) {
        const int n = scheduler_->state().FindNode(a.target);
        std::vector<std::string> uids;
        for (const sched::PodInfo* p : scheduler_->ledger().PodsOnNode(n)) uids.push_back(p->uid);
        for (const std::string& uid : uids) (void)scheduler_->Evict(uid, now_s);
      }
    }
  }
  for (const auto& [name, raised] : policies_->Alerts()) {
    metrics_->alerts->Add({{"alert", name}}).Set(raised ? 1 : 0);
  }
}

void Service::Tick(double now_s) {
  last_tick_s_ = now_s;
  ApplyActions(now_s);
}

void Service::UpdateGauges() {
  const sched::SchedulingQueue& q = scheduler_->queue();
  metrics_->pending_active->Set(static_cast<double>(q.active_size()));
  metrics_->pending_backoff->Set(static_cast<double>(q.backoff_size()));
  metrics_->pending_unschedulable->Set(static_cast<double>(q.unschedulable_size()));
  const core::ClusterState& s = scheduler_->state();
  metrics_->gpu_milli_allocated->Set(static_cast<double>(s.gpu_allocated_milli()));
  metrics_->gpu_milli_free->Set(
      static_cast<double>(s.gpu_capacity_milli() - s.gpu_allocated_milli()));
  metrics_->nodes->Set(static_cast<double>(s.num_live_nodes()));
  for (policy::PolicyState st : {policy::PolicyState::kLoaded, policy::PolicyState::kReloading,
                                 policy::PolicyState::kActive, policy::PolicyState::kFailed}) {
    metrics_->policy_state_family->Add({{"state", std::string(policy::PolicyStateName(st))}})
        .Set(policies_->state() == st ? 1 : 0);
  }
  metrics_->pods_bound->Set(
      static_cast<double>(scheduler_->ledger().count(sched::PodPhase::kBound)));
  // Attempt counters mirror the scheduler's own (set, not incremented, so they cannot drift).
  auto bump = [](prometheus::Counter* c, int64_t to) {
    const double d = static_cast<double>(to) - c->Value();
    if (d > 0) c->Increment(d);
  };
  bump(metrics_->attempts_scheduled, scheduler_->attempts_scheduled());
  bump(metrics_->attempts_unschedulable, scheduler_->attempts_unschedulable());
  bump(metrics_->attempts_error, scheduler_->attempts_error());
  bump(metrics_->preemptions, scheduler_->preemptions());
  if (const sched::QueueTree* tree = scheduler_->queue_tree()) {
    const std::vector<sched::Resources> shares = tree->FairShares();
    for (int i = 0; i < static_cast<int>(tree->size()); ++i) {
      const std::string& name = tree->spec(i).name;
      const double used = tree->usage(i)[sched::kQueueGpus];
      const double guaranteed = tree->spec(i).guaranteed[sched::kQueueGpus];
      auto set = [&](const char* kind, double v) {
        metrics_->queue_gpus->Add({{"queue", name}, {"kind", kind}}).Set(v);
      };
      set("used", used);
      set("guaranteed", guaranteed);
      set("fair_share", shares[i][sched::kQueueGpus]);
      set("pending", tree->pending(i)[sched::kQueueGpus]);
      set("borrowed", std::max(0.0, used - guaranteed));
    }
  }
}

}  // namespace seedance::server
