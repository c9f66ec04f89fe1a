// The REST API v1 routes (docs/api.md): each decodes its request on the HTTP thread, runs one
// Service operation on the loop thread and writes the reply.
#pragma once

#include "httplib.h"
#include "seedance/server/http.h"
#include "seedance/server/service.h"

namespace seedance::server {

void RegisterRoutes(httplib::Server& h, Service& service, const HttpOptions& options,
                    const Authenticator& auth);
// GET and PUT /v1/policy (policy_routes.cc).
void RegisterPolicyRoutes(httplib::Server& h, Service& service);

}  // namespace seedance::server
