#include "seedance/ha/replica.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "etcd_client.h"
#include "nlohmann/json.hpp"
#include "seedance/base/mutex.h"

namespace seedance::ha {

namespace {

using Json = nlohmann::json;

double SteadyS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string DefaultId() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device rd;
  return absl::StrFormat("%s-%d-%08x", host, ::getpid(), rd());
}

class ReplicaImpl final : public Replica {
 public:
  ReplicaImpl(ReplicaOptions o, std::unique_ptr<Leadership> leadership,
              std::unique_ptr<EtcdStore> store, std::unique_ptr<EtcdClient> election,
              std::unique_ptr<EtcdClient> keepalive)
      : options_(std::move(o)),
        margin_s_(std::max(0.5, options_.lease_ttl_s / 5)),
        leadership_(std::move(leadership)),
        owned_store_(std::move(store)),
        store_(owned_store_.get()),
        election_(std::move(election)),
        keepalive_(std::move(keepalive)) {
    if (options_.id.empty()) options_.id = DefaultId();
  }
  ~ReplicaImpl() override { Stop(); }

  std::unique_ptr<store::Store> TakeStore() override { return std::move(owned_store_); }

  void Start(server::Service* service, const std::string& url,
             std::function<void()> on_lead) override {
    service_ = service;
    url_ = url;
    on_lead_ = std::move(on_lead);
    Publish("", "", 0);
    keepalive_thread_ = std::thread([this] { KeepAliveLoop(); });
    main_thread_ = std::thread([this] { MainLoop(); });
  }

  void Stop() override {
    {
      base::MutexLock lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (main_thread_.joinable()) main_thread_.join();
    if (keepalive_thread_.joinable()) keepalive_thread_.join();
    leadership_->create_revision = 0;
    if (const int64_t lease = lease_.exchange(0); lease != 0) (void)election_->LeaseRevoke(lease);
  }

 private:
  // Sleeps up to `s` seconds; false once Stop was called.
  bool Sleep(double s) {
    base::MutexLock lock(mu_);
    return !lock.WaitFor(cv_, std::chrono::duration<double>(s),
                         [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
  }

  void Publish(const std::string& leader_id, const std::string& leader_url, int64_t term) {
    server::LeaderInfo info;
    info.replicated = true;
    info.self_id = options_.id;
    info.self_url = url_;
    info.leader_id = leader_id;
    info.leader_url = leader_url;
    info.term = term;
    service_->SetLeaderInfo(std::move(info));
  }

  void KeepAliveLoop() {
    while (Sleep(options_.lease_ttl_s / 3)) {
      const int64_t lease = lease_.load();
      if (lease == 0) continue;
      const double sent = SteadyS();
      absl::StatusOr<int64_t> ttl = keepalive_->LeaseKeepAlive(lease);
      if (ttl.ok()) {
        const double until = sent + static_cast<double>(*ttl) - margin_s_;
        if (lease_.load() == lease) leadership_->valid_until_s = until;
      } else if (ttl.status().code() == absl::StatusCode::kNotFound) {
        lost_lease_ = lease;
      }
    }
  }

  void MainLoop() {
    while (Sleep(options_.poll_s)) Step();
    if (leading_) StepDown("stopping");
  }

  void Step() {
    const int64_t lease = lease_.load();
    if (lease == 0 || lost_lease_.load() == lease) {
      if (leading_) StepDown("the lease was lost");
      lease_ = 0;
      Grant();
      return;
    }
    if (leading_) {
      if (service_->commit_failed())
        StepDown("a commit failed");
      else if (SteadyS() >= leadership_->valid_until_s.load()) {
        StepDown("no keepalive answered before the local deadline");
      }
      return;
    }
    Follow(lease);
  }

  void Grant() {
    const double sent = SteadyS();
    absl::StatusOr<int64_t> id =
        election_->LeaseGrant(static_cast<int64_t>(std::ceil(options_.lease_ttl_s)));
    if (!id.ok()) {
      Note(absl::StrCat("cannot grant a lease: ", id.status().message()));
      return;
    }
    leadership_->valid_until_s = sent + options_.lease_ttl_s - margin_s_;
    lease_ = *id;
  }

  void Follow(int64_t lease) {
    // A read first: the campaign (a write through etcd's log) only while no replica leads.
    absl::StatusOr<RangeResult> cur = election_->Range(store_->leader_key(), "");
    if (!cur.ok()) {
      Note(absl::StrCat("reading the leader key: ", cur.status().message()));
      return;
    }
    if (cur->kvs.empty()) return Campaign(lease);
    Observe(cur->kvs[0], lease);
  }

  void Campaign(int64_t lease) {
    const std::string value = Json({{"id", options_.id}, {"url", url_}}).dump();
    absl::StatusOr<TxnResult> r =
        election_->Txn({{TxnCompare::kCreate, store_->leader_key(), 0, ""}},
                       {{TxnOp::kPut, store_->leader_key(), value, "", lease}},
                       {{TxnOp::kRange, store_->leader_key(), "", "", 0}});
    if (!r.ok()) {
      Note(absl::StrCat("campaign: ", r.status().message()));
      return;
    }
    if (r->succeeded) return Lead(r->revision);
    if (!r->ranges.empty() && !r->ranges[0].empty()) Observe(r->ranges[0][0], lease);
  }

  // Another replica leads (or this one does and the campaign's reply was lost): note who, and
  // bring the read view up to date.
  void Observe(const KeyValue& kv, int64_t lease) {
    Json j = Json::parse(kv.value, nullptr, false);
    const std::string id = j.is_object() && j["id"].is_string() ? j["id"].get<std::string>() : "";
    const std::string url =
        j.is_object() && j["url"].is_string() ? j["url"].get<std::string>() : "";
    if (kv.lease == lease && id == options_.id) return Lead(kv.create_revision);
    Publish(id, url, kv.create_revision);
    absl::StatusOr<bool> moved = store_->Refresh();
    if (!moved.ok()) {
      Note(absl::StrCat("reading the state: ", moved.status().message()));
      return;
    }
    stale_ = stale_ || *moved;
    if (stale_ && SteadyS() - last_reload_s_ >= options_.follower_reload_s) {
      last_reload_s_ = SteadyS();
      stale_ = false;
      if (absl::Status st = service_->Reload(false); !st.ok()) Note(std::string(st.message()));
    }
  }

  void Lead(int64_t term) {
    leadership_->create_revision = term;
    leading_ = true;
    absl::Status st = store_->PrepareToLead();
    if (st.ok()) st = service_->Reload(true);
    if (!st.ok()) return StepDown(absl::StrCat("cannot take over: ", st.message()));
    Publish(options_.id, url_, term);
    if (on_lead_) on_lead_();
    std::fprintf(stderr, "seedance server: leading (term %lld, revision %lld)\n",
                 static_cast<long long>(term), static_cast<long long>(service_->revision()));
  }

  void StepDown(const std::string& why) {
    leadership_->create_revision = 0;  // the store refuses every commit from now on
    leading_ = false;
    std::fprintf(stderr, "seedance server: no longer leading: %s\n", why.c_str());
    if (const int64_t lease = lease_.exchange(0); lease != 0) (void)election_->LeaseRevoke(lease);
    Publish("", "", 0);
    (void)store_->Refresh();
    if (absl::Status st = service_->Reload(false); !st.ok()) Note(std::string(st.message()));
    last_reload_s_ = SteadyS();
  }

  // Transient trouble: said once per kind of message, not once per poll.
  void Note(const std::string& msg) {
    if (msg == last_note_) return;
    last_note_ = msg;
    std::fprintf(stderr, "seedance server: %s\n", msg.c_str());
  }

  ReplicaOptions options_;
  const double margin_s_;
  std::unique_ptr<Leadership> leadership_;
  std::unique_ptr<EtcdStore> owned_store_;
  EtcdStore* store_;
  std::unique_ptr<EtcdClient> election_, keepalive_;
  server::Service* service_ = nullptr;
  std::string url_;
  std::function<void()> on_lead_;

  base::Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread keepalive_thread_, main_thread_;
  std::atomic<int64_t> lease_{0}, lost_lease_{0};
  bool leading_ = false;  // main thread only
  bool stale_ = false;
  double last_reload_s_ = 0;
  std::string last_note_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> Replica::Open(ReplicaOptions o) {
  if (!(o.lease_ttl_s >= 2 && o.lease_ttl_s <= 3600)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lease-ttl: must be 2s..1h (etcd's smallest lease is 2 s), got ", o.lease_ttl_s));
  }
  absl::StatusOr<std::vector<EtcdEndpoint>> eps = ParseEtcdUrl(o.store.url, "--store");
  if (!eps.ok()) return eps.status();
  auto leadership = std::make_unique<Leadership>();
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(o.store, leadership.get());
  if (!store.ok()) return store.status();
  EtcdClientOptions co;
  co.request_timeout_s = o.lease_ttl_s / 3;
  auto election = EtcdClient::New(*eps, co);
  auto keepalive = EtcdClient::New(*eps, co);
  return std::unique_ptr<Replica>(new ReplicaImpl(std::move(o), std::move(leadership),
                                                  std::move(*store), std::move(election),
                                                  std::move(keepalive)));
}

}  // namespace seedance::ha
