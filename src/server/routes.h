// The REST API v1 routes (docs/api.md): each decodes its request on the HTTP thread, runs one
// Service operation on the loop thread and writes the reply.
#pragma once

#include <memory>

#include "httplib.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server {

// Writes `r` as the JSON reply.
void Send(httplib::Response& res, const Reply& r);

void RegisterRoutes(httplib::Server& h, Service& service, const HttpOptions& options,
                    const Authenticator& auth);
// POST /k8s/extender/v1/{filter,prioritize,bind,preempt} (extender_routes.cc); `api` (may be
// null: bind then fails with a message) creates the Bindings.
void RegisterExtenderRoutes(httplib::Server& h, Service& service,
                            std::shared_ptr<k8s::ApiServerClient> api);
// GET and PUT /v1/policy (policy_routes.cc).
void RegisterPolicyRoutes(httplib::Server& h, Service& service);

}  // namespace seedance::server
