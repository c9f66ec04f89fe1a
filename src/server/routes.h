// The REST API v1 routes (docs/api.md): each decodes its request on an I/O thread, runs one
// Service operation on the loop thread (Service::RunAsync) and hands the reply to `done`. Every
// route declares who may call it (http_core.h, Access); the server counts each reply under the
// route's name.
#pragma once

#include <memory>

#include "http_core.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server {

void RegisterRoutes(Router& r, Service& service, const HttpOptions& options);
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
