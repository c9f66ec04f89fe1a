// The REST API v1 routes (docs/api.md): each decodes its request on an I/O thread, runs one
// Service operation on the loop thread (Service::RunAsync) and hands the reply to `done`. Every
// route declares who may call it (http_core.h, Access); the server counts each reply under the
// route's name.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "http_core.h"
#include "seedance/federation/front.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server {

void RegisterRoutes(Router& r, Service& service, const HttpOptions& options);
// GET /healthz, /readyz and /metrics (with `more_metrics`' text after the service's, when set):
// every server has them, a federation front too.
void RegisterCommonRoutes(Router& r, Service& service, std::function<std::string()> more_metrics);
// A federation front's API (federation_routes.cc, docs/federation.md): the pod routes answered
// by `front`, GET /v1/cluster (the members added up) and GET /v1/federation/members.
void RegisterFederationRoutes(Router& r, federation::Front& front);
// ?limit= of a list (default 500, at most 5000).
inline constexpr int kDefaultPageSize = 500;
inline constexpr int kMaxPageSize = 5000;
absl::StatusOr<int> PageSize(const Request& req);
// 403 for a tenant naming a namespace that is not its own.
absl::Status CheckNamespace(const Caller& caller, const std::string& ns);
// The two endings of a route's operation: the error body of `st`, or `body` with `status`
// (routes.cc; shared by the route files).
Service::Finisher Fail(absl::Status st);
Service::Finisher Ok(int status, Json body);
// POST /k8s/extender/v1/{filter,prioritize,bind,preempt} (extender_routes.cc); `api` (may be
// null: bind then fails with a message) creates the Bindings.
void RegisterExtenderRoutes(Router& r, Service& service,
                            std::shared_ptr<k8s::ApiServerClient> api);
// /v1/experiments: A/B experiments, their events and reports (experiment_routes.cc).
void RegisterExperimentRoutes(Router& r, Service& service, const HttpOptions& options);
// GET and PUT /v1/policy (policy_routes.cc).
void RegisterPolicyRoutes(Router& r, Service& service);

}  // namespace seedance::server
