// The federation front's state (front.h), shared by front.cc (the API's operations and the
// queue) and front_members.cc (the member threads: polls, watches, lost members, reconciling).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "nlohmann/json.hpp"
#include "seedance/api/async_client.h"
#include "seedance/api/client.h"
#include "seedance/base/mutex.h"
#include "seedance/federation/front.h"

namespace seedance::federation {

using Json = nlohmann::json;

// A member's copy of a pod that the front gave up on (its member was lost): deleted from the
// member once it answers again. `uid` may be empty when the member's UID is unknown (a dispatch
// whose reply was lost): it is then found by name and the front-uid label.
struct Withdrawn {
  std::string member, uid;
};

// The front's record of one pod. Persisted: uid, request, member, member_uid, gpu_model,
// withdrawn, submitted_unix_ns, ended; the rest is what members said and is read again after a
// restart.
struct Record {
  std::string uid;
  api::PodRequest request;
  std::string member;      // "" = waiting at the front
  std::string member_uid;  // the member's UID of its copy
  std::string gpu_model;   // the model the pod was priced on ("" = none)
  std::vector<Withdrawn> withdrawn;
  int64_t submitted_unix_ns = 0;
  // The pod ended on its member (deleted there, or gone from it when it was reconciled): phase
  // "Deleted", never placed again, kept until it is deleted at the front.
  bool ended = false;
  // Not persisted.
  std::string phase = "Pending";     // the member's phase; "Unknown" while the member is lost
  Json pod;                          // the member's last pod JSON (null: none yet)
  int64_t pod_revision = 0;          // the member revision `pod` is from
  double dispatched_s = 0;           // when it was placed on `member` (State::Now; 0: restored)
  std::vector<std::string> reasons;  // why it waits at the front (one per member)
  bool over_quota = false;           // it waits for its quota (reasons[0] says which)
  bool reserved = false;             // a dispatch under way holds its quota (copies only)
};

// What pods ask of a quota (config.h: QuotaLimit's resources).
struct QuotaUse {
  int64_t gpus = 0, gpu_milli = 0, cpu_milli = 0, memory_mib = 0;
};
// A quota's resources one by one, in QuotaLimit's order: the name, the limit (none: not
// limited) and `use`'s value.
struct QuotaResource {
  const char* name;
  std::optional<int64_t> limit;
  int64_t value;
};
std::array<QuotaResource, 4> QuotaResources(const QuotaLimit& limit, const QuotaUse& use);

std::string RecordJson(const Record& r);
// Debits a pod placed on `model` (its CPU, memory and GPUs) from a member's summary until the
// next poll says what is really free; largest_free is left as it is (no node is known).
void Reserve(ClusterSummary& s, const api::PodRequest& req, const std::string& model);
absl::StatusOr<Record> ParseRecord(const std::string& key, const std::string& json);

struct Member {
  MemberConfig config;
  // Every call to the member but the watch's long polls (one connection of its own): answered
  // on State::loop's thread.
  std::unique_ptr<api::AsyncClient> client;
  std::thread poller, watcher;
  // Guarded by State::mu.
  bool have_summary = false;
  ClusterSummary summary;
  bool lost = false;
  bool reconcile = true;  // reconcile when it next answers (at start, after being lost)
  double last_ok_s = 0;
  int64_t polls = 0;  // GET /v1/cluster calls made, answered or not
  // What the front placed here since the oldest poll still under way was sent (by sequence):
  // debited from `summary` at once, and again from a reply to a poll sent before it, so that a
  // reply on its way while pods were placed does not give their room back.
  struct Debit {
    uint64_t seq = 0;
    api::PodRequest request;
    std::string model;
  };
  std::vector<Debit> debits;
  uint64_t debit_seq = 0;
  // Decisions under way (by id): a pod sent here whose answer has not come back. Debited from
  // the views the next decisions see, so that concurrent dispatches do not offer the same room
  // twice; dropped when the answer comes (a pod taken is then one of `debits`).
  std::map<uint64_t, Debit> holds;
  uint64_t hold_seq = 0;
  std::string last_error;
  std::unordered_map<std::string, std::string> by_member_uid;  // member UID -> front UID
  // Watch events for member UIDs not yet recorded (a dispatch whose reply is on its way).
  std::unordered_map<std::string, std::pair<int64_t, Json>> early;
};

struct Front::State {
  FrontOptions options;
  Persist persist;
  // The members' calls run here; declared before `members` so that it outlives their clients.
  std::unique_ptr<api::ClientLoop> loop = std::make_unique<api::ClientLoop>();
  std::vector<std::unique_ptr<Member>> members;

  mutable base::Mutex mu;
  std::condition_variable cv;  // the threads' sleeps; notified on Stop and on queue work
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool started = false;
  std::map<std::string, Record> records ABSL_GUARDED_BY(mu);     // by front UID
  std::map<std::string, std::string> names ABSL_GUARDED_BY(mu);  // "ns/name" -> UID
  std::deque<std::string> queue ABSL_GUARDED_BY(mu);    // UIDs waiting at the front, oldest first
  std::set<std::string> in_flight ABSL_GUARDED_BY(mu);  // UIDs being dispatched now
  std::map<std::string, std::string> gangs ABSL_GUARDED_BY(mu);  // "ns/gang" -> member
  std::unique_ptr<WeightedRotation> rotation ABSL_GUARDED_BY(mu);
  int64_t dispatched ABSL_GUARDED_BY(mu) = 0;
  int64_t redispatched ABSL_GUARDED_BY(mu) = 0;
  int64_t refusals ABSL_GUARDED_BY(mu) = 0;
  int64_t left_pending ABSL_GUARDED_BY(mu) = 0;  // taken by a member, left pending there
  int64_t submitting ABSL_GUARDED_BY(mu) = 0;  // SubmitAsync, DeleteAsync not yet answered
  // Quotas (options.config.quotas, by index): each namespace's quota, set at Create; what the
  // counted records use (placed on a member, not ended); what dispatches under way reserved.
  std::map<std::string, int, std::less<>> quota_of;
  std::vector<QuotaUse> quota_used ABSL_GUARDED_BY(mu);
  std::vector<QuotaUse> quota_reserved ABSL_GUARDED_BY(mu);
  std::thread queue_thread;

  double Now() const;
  // Pods waiting at the front (no member).
  int64_t Waiting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  int MemberIndex(const std::string& name) const;
  // The views placement sees, `refused` marking members left out of this decision.
  std::vector<MemberView> Views(const std::map<int, std::string>& refused) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The front's answer for a record: the member's pod with the front's UID and the cluster.
  Json PodView(const Record& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Applies a member's pod JSON (a reply or a watch event) to the record it belongs to.
  void ApplyMemberPod(Member& m, Record& r, const Json& pod, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // A member's copy of a pod: the member's index, the model priced there, its reply.
  struct Placed {
    int member = -1;
    std::string model;
    Json pod;
  };
  // Dispatch's steps: the member placement chooses (members in `refused` left out, a gang kept
  // where its first pod went); the record takes a member's copy; a copy deleted from its member
  // (remembered as withdrawn when the member does not answer).
  // A chosen member holds the pod's room (`*hold`: the hold's id) until Answered.
  Decision Choose(const Record& r, const PodAsk& ask, const std::string& gang_key,
                  std::map<int, std::string>& refused, uint64_t* hold);
  // The record takes `p`; the hold of its decision (0: none left) becomes a debit.
  void Take(Record& r, const Placed& p, const std::string& gang_key, uint64_t hold);
  // Deletes a copy from its member, then `then` (on the loop's thread).
  void Withdraw(Record& r, const Placed& p, std::function<void()> then);
  // Places `r` (in in_flight, not in records' member; a copy, not yet installed) on a member or
  // leaves it waiting with the reasons, then calls `done` on the loop's thread (or the caller's,
  // when no member is asked). `r` must live until then. No lock held.
  void DispatchAsync(Record& r, std::function<void()> done);
  // DispatchAsync, waited for; never on the loop's thread.
  void Dispatch(Record& r);
  // DispatchAsync's steps: one decision and its member's answer, and the end.
  struct Dispatching;
  void Attempt(const std::shared_ptr<Dispatching>& d);
  void Answered(const std::shared_ptr<Dispatching>& d, int member, uint64_t hold,
                const std::string& model, absl::StatusOr<Json> reply);
  void EndDispatch(const std::shared_ptr<Dispatching>& d);
  // Installs a dispatched record (after it was persisted), replacing the one under its UID, and
  // moves the quota use from the old to the new.
  void Install(Record r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Quotas. A record counts against its namespace's quota while it is placed on a member and
  // not ended. ReserveQuota holds the record's ask for a dispatch (r.reserved) or returns why
  // it must wait ("" when it may go, or has no quota); ReleaseQuota gives the hold back (a no-op
  // without one). Count adds (+1) or removes (-1) a record's use. SetEnded marks a record ended.
  std::string ReserveQuota(Record& r);
  void ReleaseQuota(Record& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void Count(const Record& r, int sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SetEnded(Record& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Marks the members `r` withdrew copies from (a lost member, or a dispatch without a reply
  // that may have created one) for reconciling at their next answer, which deletes the copies.
  void ArmReconcile(const Record& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The queue thread: dispatches waiting pods as members change.
  void QueueLoop();
  // Member threads (front_members.cc).
  void PollLoop(Member& m);
  void WatchLoop(Member& m);
  // A long poll's events applied to the records of `m`; the front UIDs of pods deleted there
  // go to `ended`.
  void ApplyEvents(Member& m, const Json& events, std::vector<std::string>* ended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void MarkLost(Member& m);
  void Reconcile(Member& m);
  // Marks the records of `uids` ended (persisted), e.g. from a member's PodDeleted events.
  void EndRecords(const std::vector<std::string>& uids);
  absl::Status PersistRecords(const std::vector<Record>& records);
  // persist, waited for.
  absl::Status PersistNow(std::vector<std::pair<std::string, std::string>> puts,
                          std::vector<std::string> deletes);
  // SubmitAsync's end, once the record's commit is done (`st`): the record installed and the
  // reply made, or the submission undone.
  FrontReply FinishSubmit(Record& r, const std::string& key, const absl::Status& st);
  // DeleteAsync's end: the record removed once its deletion is durable (`st`), or the error.
  FrontReply FinishDelete(const std::string& uid, int index, const std::string& member_uid,
                          const absl::Status& st);
};

}  // namespace seedance::federation
