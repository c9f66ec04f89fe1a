// GET and PUT /v1/policy (docs/api.md, docs/policy.md).
#include <string>

#include "absl/strings/str_cat.h"
#include "routes.h"
#include "seedance/base/text.h"
#include "seedance/policy/manager.h"
#include "seedance/policy/policy.h"

namespace seedance::server {

namespace {

Json PolicyStatus(policy::PolicyManager& m) {
  std::shared_ptr<const policy::Policy> p = m.Current();
  Json profiles = Json::array();
  for (const policy::PlacementProfile& pr : p->profiles) {
    profiles.push_back({{"name", pr.name}, {"policy", pr.policy}});
  }
  Json alerts = Json::object();
  for (const auto& [name, raised] : m.Alerts()) alerts[name] = raised;
  const std::string err = m.last_error();
  return {{"state", std::string(policy::PolicyStateName(m.state()))},
          {"generation", m.generation()},
          {"source", p->source},
          {"path", m.path().empty() ? Json(nullptr) : Json(m.path())},
          {"last_error", err.empty() ? Json(nullptr) : Json(err)},
          {"reloads_ok", m.reloads_ok()},
          {"reloads_failed", m.reloads_failed()},
          {"profiles", profiles},
          {"default_profile", p->default_profile},
          {"rules", p->rules.size()},
          {"alerts", alerts},
          {"text", p->text}};
}

}  // namespace

void RegisterPolicyRoutes(Router& r, Service& s) {
  r.Add("GET", "/v1/policy", "get_policy", Access::kClusterRead, [&s](Request&, Done done) {
    done(Reply{200, base::DumpJson(PolicyStatus(*s.policies()), -1)});
  });
  r.Add("PUT", "/v1/policy", "put_policy", Access::kAdmin, [&s](Request& req, Done done) {
    s.RunAsync(
        [text = std::move(req.body)](Service::Context& c) -> Service::Finisher {
          absl::Status st = c.service.ReplacePolicy(text);
          if (!st.ok()) return [st] { return ErrorReply(st); };
          Service& svc = c.service;
          return [&svc] { return Reply{200, base::DumpJson(PolicyStatus(*svc.policies()), -1)}; };
        },
        std::move(done));
  });
}

}  // namespace seedance::server
