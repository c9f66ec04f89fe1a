// Deployments of `seedance server --deployments FILE` (docs/autoscale.md, "Live"): replica sets
// of pods whose replica count the container autoscaler sets from metrics read from Prometheus.
//
// Every period of a deployment the controller runs one instant query per metric against
// Prometheus, hands the values to the deployment's autoscaler (seedance/autoscale: hpa, seed or
// predictive) and makes the pods match its answer: pod k of deployment NS/NAME is named
// NAME-k and annotated seedance.io/deployment = NAME and seedance.io/replica = k; missing ones
// are submitted, those with k >= replicas deleted (highest first). The pods are ordinary pods
// in the durable state, so after a restart the controller finds them again (and reconciles
// them); the replica count starts at the file's `replicas` and the first decision comes at once.
//
// A query that fails (Prometheus down, no series) skips that period's decision and is counted
// in seedance_autoscaler_errors_total; the pods are still reconciled. GET /v1/deployments
// shows each deployment's state and last decision.
//
// Thread-safety: Start and the destructor from one thread; StatusJson from any thread.
#ifndef SEEDANCE_SERVER_DEPLOYMENTS_H_
#define SEEDANCE_SERVER_DEPLOYMENTS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "seedance/api/api.h"
#include "seedance/autoscale/autoscaler.h"
#include "seedance/server/service.h"

namespace seedance::server {

inline constexpr char kDeploymentAnnotation[] = "seedance.io/deployment";
inline constexpr char kReplicaAnnotation[] = "seedance.io/replica";

// One metric of an hpa deployment: `query` is summed over its series and divided by the replica
// count, against `target_per_replica` (the HPA's AverageValue target).
struct DeploymentMetric {
  std::string name;
  std::string query;
  double target_per_replica = 0;
};

struct DeploymentSpec {
  std::string name;  // DNS-1123; pods are NAME-0, NAME-1, ...
  std::string ns = "default";
  api::PodRequest pod;  // the template (its name is replaced)
  int replicas = 1;     // to start with, when no pod of it exists yet
  double period_s = 15;
  // "period": "adaptive": engine::PeriodController sets each next period from the load's
  // volatility and the SLA margin (docs/clock.md), between min and max_period_s, starting at
  // period_s.
  bool adaptive_period = false;
  double min_period_s = 2, max_period_s = 30;
  autoscale::Mode mode = autoscale::Mode::kHpa;
  autoscale::HpaOptions hpa;
  autoscale::SeedOptions seed;
  autoscale::PredictiveOptions predictive;
  std::vector<DeploymentMetric> metrics;              // hpa
  std::string cpu_query, latency_query, error_query;  // seed: 0..1, seconds, 0..1
  std::string rate_query;                             // predictive: requests/s
};

struct DeploymentsConfig {
  std::string prometheus_url;  // http://HOST:PORT
  double query_timeout_s = 5;
  std::vector<DeploymentSpec> deployments;
};

// Decodes a deployments file (JSON; docs/autoscale.md has the schema). InvalidArgument naming
// `file` and the JSON path, e.g. "d.json: $.deployments[0].autoscale.mode: 'x' is not one of
// hpa, seed, predictive".
absl::StatusOr<DeploymentsConfig> ParseDeploymentsConfig(std::string_view text,
                                                         std::string_view file);

class DeploymentController {
 public:
  // Connects to Prometheus (InvalidArgument for a bad URL), makes each deployment's autoscaler
  // and starts the loop.
  static absl::StatusOr<std::unique_ptr<DeploymentController>> Start(Service& service,
                                                                     DeploymentsConfig config);
  ~DeploymentController();
  // GET /v1/deployments: {"deployments": [{name, namespace, mode, replicas, pods, period_s,
  // last_decision: {time, recommendation, replicas, reason, score, inputs}, decisions, errors,
  // last_error}]}.
  std::string StatusJson() const;

  struct State;

 private:
  explicit DeploymentController(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_DEPLOYMENTS_H_
