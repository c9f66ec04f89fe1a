// The live scheduler as a service: one loop thread owns a sched::Scheduler and the state store;
// any number of threads hand it operations (Run) and wait for their replies.
//
// The loop takes every operation that has arrived, applies them in arrival order, runs
// scheduling cycles for the pods that became schedulable, gives every change a revision, commits
// the whole batch to the store in one transaction (one fsync: group commit) and only then
// releases the replies and publishes the changes to watchers. So a 2xx reply means the change
// is on disk, and a crash loses only changes nobody was told about.
//
// With a replicated store (etcd, docs/ha.md) a Service is either the leader, which decides and
// commits as above, or a follower, which serves reads from the state it last loaded from the
// store and makes no decision at all (no scheduling cycle, no commit); Reload switches between
// the two by rebuilding the state from the store.
//
// Thread-safety: every public method is thread-safe.
#ifndef SEEDANCE_SERVER_SERVICE_H_
#define SEEDANCE_SERVER_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/sched/scheduler.h"
#include "seedance/server/codec.h"
#include "seedance/server/metrics.h"
#include "seedance/store/store.h"

namespace seedance::policy {
class PolicyManager;
struct Policy;
}  // namespace seedance::policy

namespace seedance::server {

struct Reply {
  int status = 200;
  std::string body;  // JSON
};
// The error body of docs/api.md for `st`, with its HTTP status.
Reply ErrorReply(const absl::Status& st);

struct ServiceOptions {
  std::string state_dir;
  sched::SchedulerOptions scheduler;
  // The policy file (empty: the built-in default, profile `default` = scheduler.default_profile).
  std::string policy_path;
  // Most operations applied in one batch (one commit).
  int max_batch = 4096;
  // Watch events kept in memory for reconnecting watchers (older ones come from the store).
  int watch_memory = 65536;
  // How often rules are evaluated and fragmentation is measured.
  double tick_s = 1.0;
  // POST /v1/pods admission beyond the API's own checks (a backend's requirements); an error
  // is the caller's 4xx and nothing is created.
  std::function<absl::Status(const sched::PodInfo&)> admit;
  // Start as a follower (a replicated store; docs/ha.md): serve reads, decide nothing.
  bool follower = false;
  // The cluster these nodes are (server/backend.h) and the backend's kind, for GET /v1/cluster.
  std::string cluster = "default";
  std::string backend = "local";
};

// Who decides, for GET /v1/leader and for sending writers to the leader (docs/ha.md).
struct LeaderInfo {
  bool replicated = false;  // false: a single server (SQLite), always the leader
  std::string self_id, self_url;
  std::string leader_id, leader_url;  // empty while no leader is known
  int64_t term = 0;                   // the leader key's create revision in etcd (0: unknown)
};

// One watch event as the API shows it.
struct WatchEvent {
  int64_t revision = 0;
  std::string json;  // {"revision", "type", "object"}
  // The server-sent-event form, "id: REV\ndata: JSON\n\n", made once when the event is
  // published and shared by every watch stream that writes it (null for events read back from
  // the store).
  std::shared_ptr<const std::string> sse = {};  // "= {}": {rev, json} initialisers stay quiet
  // On the first event of a published batch of several: the whole batch's server-sent events
  // in one block, and the batch's last revision (a stream that is at the batch's start writes
  // one buffer instead of one per event).
  std::shared_ptr<const std::string> batch_sse = {};
  int64_t batch_last = 0;
};

class Service {
 public:
  // Opens (or creates) the state, recovers everything it acknowledged, starts the loop. `store`
  // null: the SQLite store under options.state_dir; otherwise that store (etcd).
  static absl::StatusOr<std::unique_ptr<Service>> Start(ServiceOptions options,
                                                        std::unique_ptr<store::Store> store = {});
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // An operation: runs on the loop thread against the scheduler, and returns the function that
  // builds its reply once the batch's scheduling is done (so a submitted pod's reply says whether
  // it was bound). The reply is released after the batch is durable.
  struct Context;
  using Finisher = std::function<Reply()>;
  using Operation = std::function<Finisher(Context&)>;
  Reply Run(Operation op);
  // Run without waiting: `done` is called once with the reply, on the loop thread (or on the
  // calling thread when the service is shutting down). It must not block: hand the reply on.
  using Done = std::function<void(Reply)>;
  void RunAsync(Operation op, Done done);
  // Called on the loop thread after every batch that published watch events (null: none). It
  // must not block. Set it before serving and clear it before the callee goes away.
  void SetPublishHook(std::function<void()> hook);

  // ServiceOptions::admit (OK when none is set).
  absl::Status Admit(const sched::PodInfo& pod) const {
    return options_.admit ? options_.admit(pod) : absl::OkStatus();
  }

  // Nodes from a file the simulator reads, added (or updated) before serving. Durable on return.
  absl::Status Preload(const std::vector<core::NodeSpec>& nodes);

  // Events with revision > since, at most `limit`, waiting up to timeout_s for the first one.
  // FailedPrecondition (410 Gone) when `since` is older than the oldest retained event.
  absl::StatusOr<std::vector<WatchEvent>> Watch(int64_t since, size_t limit, double timeout_s);
  // The server-sent-event forms of the events after `since`, without waiting: shared, not
  // copied, so that a thousand watch streams cost a thousand writes of the same bytes. At most
  // max_bytes of them (always at least one when there is one); *last: the last one's revision
  // (unchanged when there is none). Errors as Watch's. Any thread.
  absl::StatusOr<std::vector<std::shared_ptr<const std::string>>> WatchSse(int64_t since,
                                                                           size_t max_bytes,
                                                                           int64_t* last);
  int64_t revision() const { return revision_.load(); }
  bool ready() const { return ready_.load(); }
  Metrics& metrics() { return *metrics_; }
  const std::string& cluster() const { return options_.cluster; }
  const std::string& backend() const { return options_.backend; }
  policy::PolicyManager* policies() { return policies_.get(); }
  // Inside a finisher: the pod's JSON as this batch made it durable, if the batch changed it
  // beyond adding it (saves encoding it again for the reply).
  const std::string* BatchPodJson(const std::string& uid) const;
  // Stops the loop; pending operations get 503.
  void Shutdown();

  // Rebuilds the scheduler from store().Load() between two batches and becomes the leader
  // (`lead`) or a follower. Pending operations wait for it. On failure the service is not ready
  // (503) until a later Reload succeeds.
  absl::Status Reload(bool lead);
  // True while this service decides (always, without a replicated store).
  bool leading() const { return leading_.load(); }
  // Set when a commit to a reloadable store failed: the service made itself a follower (its
  // replies were 503) and the caller should step down from leadership. Cleared by Reload.
  bool commit_failed() const { return commit_failed_.load(); }
  void SetLeaderInfo(LeaderInfo info);
  LeaderInfo leader_info() const;

  // PUT /v1/policy (loop thread, inside an operation): installs the policy (the previous one
  // stays Active when it is refused) and makes its text durable with the batch.
  absl::Status ReplacePolicy(const std::string& text);

  // What an operation sees on the loop thread.
  struct Context {
    sched::Scheduler& scheduler;
    Service& service;
    double now_s;
    // Records that `uid` was submitted now (for the submit-to-bound histogram).
    void NoteSubmitted(const std::string& uid);
    // Durable records of other subsystems (store::ObjectRecord; experiments), made durable with
    // the batch: put or replace by (kind, key); delete one by (kind, key); delete every object
    // of `kind` whose key starts with `prefix`. A follower refuses the batch (503) as for any other change.
    void PutObject(std::string kind, std::string key, std::string json);
    void DeleteObject(std::string kind, std::string key);
    void DeleteObjects(std::string kind, std::string prefix);
  };

  // Loop thread (inside an operation): the objects of `kind` the store held at the last load
  // (start or Reload), handed over once: a subsystem builds its state from them and keeps it up
  // to date from its own operations. load_generation() changes with every load, so a subsystem
  // knows that its state must be rebuilt from TakeLoadedObjects again.
  std::vector<store::ObjectRecord> TakeLoadedObjects(const std::string& kind);
  uint64_t load_generation() const { return load_generation_; }

 private:
  explicit Service(ServiceOptions options);
  absl::Status Recover(std::string* policy_text);
  // Reload's work, on the loop thread.
  absl::Status Rebuild(bool lead);
  // A follower's batch: reads only; refuses (503) the batch if any operation changed the state.
  void RunFollowerBatch(std::vector<std::pair<Operation, Done>>& batch);
  // A failed commit: every reply 503; a reloadable store makes this service a follower again.
  void FailBatch(std::vector<std::pair<Operation, Done>>& batch,
                 const absl::Status& committed);
  void Loop();
  // Applies one batch: operations, scheduling, revisions, commit; returns the replies.
  void RunBatch(std::vector<std::pair<Operation, Done>>& batch);
  // Turns the scheduler's changes into the store batch and the watch events (revisions assigned).
  store::Batch BuildCommit(std::vector<WatchEvent>* events);
  // Moves the objects the batch's operations staged into `commit`.
  void StageObjects(store::Batch& commit);
  void Publish(std::vector<WatchEvent> events);
  void ObserveBound(const std::string& uid, double now);
  void Tick(double now_s);
  // The --policy file's manager (or the built-in default), before the state is opened.
  absl::Status StartPolicies();
  // Without --policy, the policy last PUT over the API (from the store) replaces the default.
  absl::Status ApplyStoredPolicy(const std::string& stored_text);
  // The profile a pod gets under the batch's policy snapshot.
  sched::ProfileSpec ProfileOf(const sched::PodInfo& pod) const;
  void ApplyActions(double now_s);
  // Hands the batch policy's queues to the scheduler when the policy changed.
  void SyncQueues(double now_s);
  std::map<std::string, double> LiveMetrics(double now_s);
  void UpdateGauges();
  double Now() const;

  ServiceOptions options_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<policy::PolicyManager> policies_;
  // The policy every decision of the current batch uses (taken when the batch starts).
  std::shared_ptr<const policy::Policy> batch_policy_;
  std::shared_ptr<const policy::Policy> queues_policy_;  // the policy the scheduler's queues are from
  sched::QueueConfig queues_config_;                     // what the scheduler was given
  bool use_policy_profiles_ = false;  // false: --placement until a policy file or PUT
  std::optional<std::string> pending_policy_text_;
  // Objects staged by this batch's operations (Context::PutObject, DeleteObjects), in order.
  std::vector<store::ObjectRecord> pending_objects_;
  std::vector<std::pair<std::string, std::string>> pending_object_deletes_;  // (kind, prefix)
  std::vector<std::pair<std::string, std::string>> pending_object_erases_;   // (kind, key)
  // The last load's objects not yet taken, by kind; and the load counter (loop thread).
  std::map<std::string, std::vector<store::ObjectRecord>> loaded_objects_;
  uint64_t load_generation_ = 0;
  int64_t last_bound_count_ = 0;
  double last_rate_s_ = 0;
  double bind_rate_ = 0;

  base::Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<Operation, Done>> inbox_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Reload requests.
  std::vector<std::pair<bool, std::promise<absl::Status>>> reloads_ ABSL_GUARDED_BY(mu_);
  std::thread loop_;
  std::atomic<bool> leading_{true};
  std::atomic<bool> commit_failed_{false};
  std::string applied_policy_text_;  // the stored policy last installed (loop thread)
  mutable base::Mutex leader_mu_;
  LeaderInfo leader_info_ ABSL_GUARDED_BY(leader_mu_);

  std::atomic<int64_t> revision_{0};
  std::atomic<bool> ready_{false};
  std::unordered_map<std::string, double> submitted_at_;         // loop thread only
  std::unordered_map<std::string, std::string> batch_pod_json_;  // see BatchPodJson
  double last_tick_s_ = 0;

  mutable base::Mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::deque<WatchEvent> recent_ ABSL_GUARDED_BY(watch_mu_);
  std::function<void()> publish_hook_ ABSL_GUARDED_BY(watch_mu_);
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_SERVICE_H_
