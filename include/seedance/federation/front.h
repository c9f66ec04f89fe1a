// The federation front (`seedance server --federation FILE`, docs/federation.md): one REST API
// over several member Seedance servers. A pod submitted to the front goes to one member, chosen
// by the placement policies of federation/placement.h from what each member last said of itself
// (GET /v1/cluster), and the answers name the member ("cluster": "cheap") beside its node and
// devices.
//
// The front's own record of each pod (its spec, the member holding it, the member's UID and the
// copies withdrawn from lost members) is made durable through `Persist` before a submission is
// answered; the daemon puts it in the same store as a server's state (Service objects of kind
// kRecordKind), so that a SIGKILL of the front loses no acknowledged pod. What members say of a
// pod (its phase, node, GPUs) is not persisted: it is read again from the members.
//
// Members. One thread per member polls GET /v1/cluster every refresh_s (a health check and the
// free capacity; nothing per pod) and follows the member's watch (GET /v1/watch long polls) for
// the pods the front put there. A member whose polls have all failed for lost_after is lost: the
// pods that were pending on it go back to the front's queue and are dispatched elsewhere (each
// lost copy is remembered and deleted from the member when it answers again, so that no pod
// runs twice once it is back), and its placed pods are reported with phase "Unknown" until it
// answers again. A pod the member no longer has was deleted there (a member's state is durable):
// its record ends (phase "Deleted") and it is never placed again, so that it cannot run twice.
//
// Dispatch. Submit decides on the calling thread and forwards the pod to the member
// (POST /v1/pods, with the label federation.seedance.io/front-uid and, under the cost policy,
// gpu_spec pinned to the model it was priced on and those there that cost no more); a member that
// refuses it (4xx: a Slurm member without a job script, a name taken there) or cannot be reached is
// left out and the decision is made again over the others. So is a member whose scheduler leaves
// the pod pending (the summary's fit test is necessary, not sufficient): its copy is kept while
// another member is tried, deleted if one places the pod, and kept (pending there) if none does. A
// gang's pods are not moved so: they pend until the gang is complete. A pod that fits no member
// waits at the front (phase "Pending", cluster null, explain gives one reason per member) and is
// dispatched by the front's queue thread as members' capacity changes. The pods of one gang go
// where its first pod went (the first is placed by DecideGang for gang_min copies of itself), so a
// gang is never split. Member calls are asynchronous (api::AsyncClient, one event-loop thread for
// all members): no thread waits on a member while a submission or deletion is under way. A member
// chosen for a pod holds the pod's room from the decision to the member's answer, so that
// concurrent submissions do not all see the same free room.
//
// Quotas (FederationConfig::quotas). A pod whose namespace has a quota is dispatched only if the
// quota's use (the pods of its namespaces placed on any member and not ended) plus what
// dispatches under way hold plus the pod stays within the limit; the hold is taken before the
// first member is asked and given back when the record is installed, so concurrent submissions
// never overshoot. Otherwise it waits at the front ("waits at the front: quota ...") and the
// queue tries it again as pods end or are deleted.
//
// Thread-safety: every public method is thread-safe; Submit, Delete and Explain block on member
// calls (at most call_timeout_s each).
#ifndef SEEDANCE_FEDERATION_FRONT_H_
#define SEEDANCE_FEDERATION_FRONT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/api/api.h"
#include "seedance/federation/config.h"
#include "seedance/federation/placement.h"

namespace seedance::federation {

// The store kind of the front's pod records (store::ObjectRecord::kind).
inline constexpr std::string_view kRecordKind = "federation-pod";
// The label a member's copy of a front pod carries: the front's UID.
inline constexpr std::string_view kFrontUidLabel = "federation.seedance.io/front-uid";
// What a pod may say of itself for the cost policy (PodAsk): its expected duration (a duration,
// "2h"), the region its data lies in and how many GB of it it reads.
inline constexpr std::string_view kExpectedDurationAnnotation =
    "federation.seedance.io/expected-duration";
inline constexpr std::string_view kDataRegionAnnotation = "federation.seedance.io/data-region";
inline constexpr std::string_view kDataGbAnnotation = "federation.seedance.io/data-gb";

struct FrontOptions {
  FederationConfig config;
  PolicyKind policy = PolicyKind::kCost;
  std::string name = "front";  // the front's own cluster name (GET /v1/cluster)
  double refresh_s = 1;        // GET /v1/cluster period per member
  double call_timeout_s = 5;   // one call to a member
  // One long poll of a member's watch; also how long Stop may wait for the watch threads.
  double watch_timeout_s = 2;
  // After a watch reply with events, the next long poll waits this long, so that a busy member's
  // events come a batch per request rather than one request per event.
  double watch_batch_s = 0.05;
};

// A reply of the front's API (server/federation_routes.cc serves it).
struct FrontReply {
  int status = 200;
  std::string body;  // JSON
};

class Front {
 public:
  // Makes the records durable: puts (uid, json) and deletes uids, in one commit, then calls
  // `done` once with the outcome (OK: on disk), from any thread (the daemon's: the service loop
  // after its group commit). Called from the submitting thread and the front's own threads, never
  // with the front's lock held; `done` takes that lock, so it must not run inside the call while
  // the caller waits for something `done` provides other than through the front.
  using Persist =
      std::function<void(std::vector<std::pair<std::string, std::string>> puts,
                         std::vector<std::string> deletes, std::function<void(absl::Status)> done)>;
  // Checks the options and reads the members' token files; starts nothing.
  static absl::StatusOr<std::unique_ptr<Front>> Create(FrontOptions options, Persist persist);
  ~Front();
  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  // Before Start: the records the store held (key, json). DataLoss naming the key for a record
  // that does not parse.
  absl::Status Restore(const std::vector<std::pair<std::string, std::string>>& records);
  // Starts the member threads and the queue thread. Once.
  void Start();
  // Stops and joins them. Idempotent.
  void Stop();

  // POST /v1/pods: `body` already accepted by api::ParsePodRequest as `request`. 201 with the
  // pod (the member's answer, or Pending at the front), 409 for a name taken at the front.
  FrontReply Submit(std::string_view body, const api::PodRequest& request);
  // The same without a thread waiting: the decision is made on the calling thread (no wait
  // beyond the front's lock), the member calls on the member loop's thread, then the record goes
  // to Persist and `done` gets the reply from the thread that finishes the commit (the HTTP
  // route hands it back to its connection). Stop waits for the submissions under way.
  void SubmitAsync(const api::PodRequest& request, std::function<void(FrontReply)> done);
  // GET /v1/pods/{uid}; `sees` says whether the caller may see a namespace (a tenant's view).
  FrontReply Get(const std::string& uid, const std::function<bool(const std::string&)>& sees);
  // GET /v1/pods: phase and namespace filters ("" = any), paged by UID after `after`.
  FrontReply List(const std::string& phase, const std::string& ns, const std::string& after,
                  int limit, const std::function<bool(const std::string&)>& sees);
  // DELETE /v1/pods/{uid}: deleted on its member, then at the front. 503 while the member is
  // lost (retry).
  FrontReply Delete(const std::string& uid, const std::function<bool(const std::string&)>& sees);
  // The same without a thread waiting on the member or the commit (as SubmitAsync), except
  // for a pod being dispatched by the queue or a lost member's move, which the calling thread
  // waits out (at most two member calls).
  void DeleteAsync(const std::string& uid, const std::function<bool(const std::string&)>& sees,
                   std::function<void(FrontReply)> done);
  // GET /v1/pods/{uid}/explain: the member's explanation, or one reason per member for a pod
  // waiting at the front.
  FrontReply Explain(const std::string& uid, const std::function<bool(const std::string&)>& sees);
  // GET /v1/federation/members: each member's state, summary, pods and cost rate.
  FrontReply Members() const;
  // GET /v1/cluster: the members' rooms added up (backend "federation").
  FrontReply Cluster() const;
  // Prometheus text of the per-member gauges (appended to /metrics).
  std::string MetricsText() const;

  struct State;  // front.cc

 private:
  friend class FrontTestPeer;  // test-only (front_unit_test.cc): reaches the state's invariants
  explicit Front(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace seedance::federation

#endif  // SEEDANCE_FEDERATION_FRONT_H_
