// The node agent's prewarm loop (issue 40 item 4; docs/cache.md, "The node-local cache"): it
// watches the server's pods (GET /v1/watch long polls, docs/api.md#watch), and for every pod
// bound to its node whose annotation `seedance.io/prewarm` lists objects, makes them local and
// verified through NodeCache::Prewarm (pinned under the pod's uid), then records the outcome on
// the pod with PATCH /v1/pods/{uid}/annotations:
//   prewarm.seedance.io/status      "Ready" (every object local and verified) or "Failed"
//   prewarm.seedance.io/error       on Failed: what failed, naming the URL and the reason
//   prewarm.seedance.io/objects     "N" objects, prewarm.seedance.io/hits "H" already local
//   prewarm.seedance.io/bytes       bytes fetched for this pod
//   prewarm.seedance.io/lead-time-s seconds from the agent seeing the pod bound to the outcome
//   prewarm.seedance.io/node        the node that prewarmed
// A pod that is deleted, unbound or moved off the node has its pins dropped (NodeCache::Unpin).
// `seedance node-agent prewarm-wait` (WaitForPrewarm) is the init-container step that blocks on
// the status.
//
// Restarts: the agent keeps nothing on disk of its own. On start (and after a 410 from the
// watch) it lists the node's pods and prewarms every bound pod with a list again: objects already
// local are hits (and get pinned again), interrupted downloads resume from NodeCache's partials;
// the status is written again only when it changes.
//
// Errors: Create: InvalidArgument for bad options (no node, a bad server URL or token file).
// Run returns OK after Stop; the server being unreachable is retried (with a growing wait, up to
// retry_max_s), never fatal. WaitForPrewarm: see there.
//
// Thread-safety: Run on one thread; Stop, metrics() and PrometheusText() from any thread.
#ifndef SEEDANCE_CACHE_PREWARM_AGENT_H_
#define SEEDANCE_CACHE_PREWARM_AGENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"
#include "seedance/nodeagent/node_cache.h"

namespace seedance::nodeagent {

// The pod annotation a pod's author writes: a JSON array of {"url", "sha256", "size"}
// (ParsePrewarmList).
inline constexpr char kPrewarmAnnotation[] = "seedance.io/prewarm";
// What the agent writes (PATCH /v1/pods/{uid}/annotations accepts keys under this prefix only).
inline constexpr char kPrewarmStatusPrefix[] = "prewarm.seedance.io/";
inline constexpr char kPrewarmStatus[] = "prewarm.seedance.io/status";
inline constexpr char kPrewarmError[] = "prewarm.seedance.io/error";
inline constexpr char kPrewarmObjects[] = "prewarm.seedance.io/objects";
inline constexpr char kPrewarmHits[] = "prewarm.seedance.io/hits";
inline constexpr char kPrewarmBytes[] = "prewarm.seedance.io/bytes";
inline constexpr char kPrewarmLeadTime[] = "prewarm.seedance.io/lead-time-s";
inline constexpr char kPrewarmNode[] = "prewarm.seedance.io/node";
// The longest prewarm.seedance.io/error the agent writes (bytes; longer messages are clipped).
inline constexpr size_t kMaxPrewarmErrorBytes = 2048;

struct PrewarmAgentOptions {
  // The node whose pods this agent prewarms (required; a node name of the server).
  std::string node;
  // The server (url, token_file: the administrator's token, which the annotation route needs).
  // timeout_s is ignored: each call's deadline comes from watch_timeout_s.
  api::ClientOptions client;
  // Each watch long poll waits this long for events before it is asked again (also the most a
  // Stop waits for the watch to notice). 1..300 s.
  double watch_timeout_s = 30;
  // After a failed call to the server: wait retry_min_s, doubling up to retry_max_s.
  double retry_min_s = 0.5;
  double retry_max_s = 30;
  // Pods prewarmed at once (each Prewarm fetches up to NodeCacheOptions::max_concurrent objects).
  int parallel_pods = 2;
  // One line per decision and outcome (null: silent).
  std::function<void(const std::string&)> log;
};

// Counters since Create.
struct PrewarmAgentMetrics {
  int64_t pods_ready = 0;      // prewarms that ended Ready
  int64_t pods_failed = 0;     // prewarms that ended Failed
  int64_t pods_in_flight = 0;  // prewarms running or queued now
  int64_t unpinned = 0;        // pods whose pins were dropped (deleted, unbound, moved)
  int64_t relists = 0;         // full lists of the node's pods (start, 410)
  int64_t server_errors = 0;   // failed calls to the server (each retried)
  // Lead time (bind seen -> Ready), over the prewarms that made a pod Ready (not those that found
  // it Ready already, after a restart): count, sum, max, and a histogram with kLeadTimeBuckets
  // upper bounds (cumulative counts, as Prometheus has them).
  int64_t lead_time_count = 0;
  double lead_time_sum_s = 0;
  double lead_time_max_s = 0;
  std::vector<int64_t> lead_time_buckets;
};
inline constexpr double kLeadTimeBuckets[] = {0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800};

// What the agent makes of one pod object of the API (a list item or a watch event's object).
struct PodView {
  std::string uid;
  std::string node;                                       // "" while Pending
  std::string phase;                                      // Pending, Assumed, Bound
  std::optional<std::string> prewarm;                     // seedance.io/prewarm, when set
  std::map<std::string, std::string> status_annotations;  // the prewarm.seedance.io/ keys
};
// DataLoss when `pod` is not an object with a string uid (not a pod of this API).
absl::StatusOr<PodView> ViewOfPod(const nlohmann::json& pod);
// True for a pod whose objects this agent must prewarm: bound to `node`, with a prewarm list.
bool WantsPrewarm(const PodView& pod, const std::string& node);

// The annotations recorded for a finished prewarm (the merge patch's body): Ready when every
// result is OK, else Failed with an error naming how many objects failed and each one's reason
// (clipped to kMaxPrewarmErrorBytes). `parse_error` (a bad seedance.io/prewarm) makes it Failed
// with that message and no results. Keys it does not set this time are null (removed).
nlohmann::json StatusPatch(const std::vector<FetchResult>& results, const absl::Status& parse_error,
                           double lead_time_s, const std::string& node);

class PrewarmAgent {
 public:
  // REQUIRES: cache outlives the agent. Errors: CheckOptions's.
  static absl::StatusOr<std::unique_ptr<PrewarmAgent>> Create(PrewarmAgentOptions options,
                                                              NodeCache* cache);
  // The options' checks alone (node name, limits, the server URL and token file), so a caller can
  // refuse bad flags before it opens the cache: InvalidArgument, or the token file's error.
  static absl::Status CheckOptions(const PrewarmAgentOptions& options);
  virtual ~PrewarmAgent() = default;
  // Lists and watches until Stop; returns OK then, once the watch returned and every prewarm in
  // flight finished (a prewarm is not interrupted: its downloads run to their end or stall).
  virtual absl::Status Run() = 0;
  // Asks Run to return (any thread; also before Run).
  virtual void Stop() = 0;
  virtual PrewarmAgentMetrics metrics() const = 0;
  // The agent's and the cache's counters in the Prometheus text format (version 0.0.4).
  virtual std::string PrometheusText() const = 0;

 protected:
  PrewarmAgent() = default;
};

// GET /metrics in the Prometheus text format, served on HOST:PORT (port 0 = any free
// port) from its own thread until destroyed; any other path is 404. Unavailable when the address
// cannot be bound (naming it). Thread-safety: `text` is called from the serving thread.
class MetricsEndpoint {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& host, int port,
                                                                std::function<std::string()> text);
  virtual ~MetricsEndpoint() = default;
  virtual int port() const = 0;  // the port bound

 protected:
  MetricsEndpoint() = default;
};

// `seedance node-agent prewarm-wait`: blocks until the pod's prewarm status is Ready or Failed
// (or the pod has no seedance.io/prewarm annotation: nothing to wait for).
struct PrewarmWaitResult {
  bool ready = false;  // Ready, or no prewarm list
  bool no_list = false;
  std::map<std::string, std::string> annotations;  // the pod's prewarm.seedance.io/ keys
};
// A server that cannot be reached, or answers 503, is asked again (waits of 0.5 s doubling to
// 5 s) until timeout_s. Errors: NotFound (no such pod, or it was deleted while waiting),
// DeadlineExceeded (timeout_s passed first), the client's errors (Unavailable when the server
// was still unreachable at the deadline; a refusal such as 401 at once).
absl::StatusOr<PrewarmWaitResult> WaitForPrewarm(const api::ClientOptions& client,
                                                 const std::string& uid, double timeout_s,
                                                 double watch_timeout_s = 30);

}  // namespace seedance::nodeagent

#endif  // SEEDANCE_CACHE_PREWARM_AGENT_H_
