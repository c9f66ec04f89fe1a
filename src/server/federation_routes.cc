// A federation front's routes (docs/federation.md): the pod API of one server, answered by
// federation::Front across the member clusters. Decoding and the caller's rights are checked
// here exactly as the one-cluster routes check them. Submissions run on the I/O threads (the
// front calls members asynchronously); deletions and explain, which may wait on the front,
// run on the blocking pool.
#include "absl/strings/str_cat.h"
#include "routes.h"
#include "seedance/api/api.h"

namespace seedance::server {
namespace {

Response FromFront(federation::FrontReply r) { return Response(r.status, std::move(r.body)); }

std::function<bool(const std::string&)> Sees(const Caller& caller) {
  return [caller](const std::string& ns) { return caller.Sees(ns); };
}

void PostPod(federation::Front& front, Request& req, Done done) {
  absl::StatusOr<api::PodRequest> pr = api::ParsePodRequest(req.body);
  if (!pr.ok()) return done(ErrorReply(pr.status()));
  if (absl::Status st = CheckNamespace(req.caller, pr->ns); !st.ok()) {
    return done(ErrorReply(st));
  }
  // Decided here (an I/O thread); the member call and the commit answer later.
  front.SubmitAsync(
      *pr, [done = std::move(done)](federation::FrontReply r) { done(FromFront(std::move(r))); });
}

void ListPods(federation::Front& front, Request& req, Done done) {
  const std::string phase = req.get_param_value("phase");
  const std::string ns = req.get_param_value("namespace");
  if (!phase.empty() && phase != "Pending" && phase != "Assumed" && phase != "Bound" &&
      phase != "Unknown" && phase != "Deleted") {
    return done(ErrorReply(
        absl::InvalidArgumentError("phase: must be Pending, Assumed, Bound, Unknown or Deleted")));
  }
  absl::StatusOr<int> limit = PageSize(req);
  if (!limit.ok()) return done(ErrorReply(limit.status()));
  if (!ns.empty()) {
    if (absl::Status st = CheckNamespace(req.caller, ns); !st.ok()) return done(ErrorReply(st));
  }
  done(FromFront(front.List(phase, ns, req.get_param_value("continue"), *limit, Sees(req.caller))));
}

}  // namespace

void RegisterFederationRoutes(Router& r, federation::Front& front) {
  using A = Access;
  const std::string pod = "/v1/pods/{uid}";
  auto& f = front;
  r.Add("POST", "/v1/pods", "create_pod", A::kTenant,
        [&f](Request& req, Done done) { PostPod(f, req, std::move(done)); });
  r.Add("GET", "/v1/pods", "list_pods", A::kReader,
        [&f](Request& req, Done done) { ListPods(f, req, std::move(done)); });
  r.Add("GET", pod, "get_pod", A::kReader, [&f](Request& req, Done done) {
    done(FromFront(f.Get(req.matches[1], Sees(req.caller))));
  });
  r.Add(
      "DELETE", pod, "delete_pod", A::kTenant,
      [&f](Request& req, Done done) {
        f.DeleteAsync(
            req.matches[1], Sees(req.caller),
            [done = std::move(done)](federation::FrontReply r) { done(FromFront(std::move(r))); });
      },
      /*blocking=*/true);
  r.Add(
      "GET", pod + "/explain", "explain_pod", A::kReader,
      [&f](Request& req, Done done) {
        done(FromFront(f.Explain(req.matches[1], Sees(req.caller))));
      },
      /*blocking=*/true);
  r.Add("GET", "/v1/cluster", "get_cluster", A::kClusterRead,
        [&f](Request&, Done done) { done(FromFront(f.Cluster())); });
  r.Add("GET", "/v1/federation/members", "list_members", A::kClusterRead,
        [&f](Request&, Done done) { done(FromFront(f.Members())); });
}

}  // namespace seedance::server
