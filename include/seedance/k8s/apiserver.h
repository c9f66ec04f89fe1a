// A small client of the Kubernetes API server: what the extender's bind needs (annotate the pod
// with the decision, then create its Binding). HTTPS with a bearer token (a service account's, or
// any), or plain HTTP (tests, `kubectl proxy`).
//
//   AnnotatePod: PATCH /api/v1/namespaces/NS/pods/NAME, Content-Type application/merge-patch+json,
//                {"metadata":{"annotations":{...}}}; 200 with the pod.
//   BindPod:     POST /api/v1/namespaces/NS/pods/NAME/binding, a v1.Binding
//                {"apiVersion":"v1","kind":"Binding","metadata":{"name","namespace","uid"},
//                 "target":{"apiVersion":"v1","kind":"Node","name":NODE}}; 201 with a
//                metav1.Status of status Success.
// A reply outside 2xx is an error carrying the API's own Status message (and its reason, e.g.
// Conflict when the pod is bound already); no reply within timeout_s is DeadlineExceeded.
//
// Thread-safety: thread-safe (calls are serialised on one keep-alive connection).
#ifndef SEEDANCE_K8S_APISERVER_H_
#define SEEDANCE_K8S_APISERVER_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace seedance::k8s {

struct ApiServerOptions {
  std::string url;        // "https://10.0.0.1:6443" or "http://127.0.0.1:8001"
  std::string token;      // bearer token; empty = none
  std::string ca_file;    // PEM bundle the server's certificate must chain to; empty = system's
  double timeout_s = 10;  // per request, connect to last byte
};

// The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
// service account's token and CA under `account_dir`. FailedPrecondition outside a pod; the
// token file's errors are base::ReadBearerToken's, under the flag "--kube-in-cluster".
[[nodiscard]] absl::StatusOr<ApiServerOptions> InClusterOptions(
    const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

class ApiServerClient {
 public:
  virtual ~ApiServerClient() = default;
  virtual absl::Status AnnotatePod(const std::string& ns, const std::string& name,
                                   const std::map<std::string, std::string>& annotations) = 0;
  virtual absl::Status BindPod(const std::string& ns, const std::string& name,
                               const std::string& uid, const std::string& node) = 0;
};

// InvalidArgument for a URL that is not http(s)://host[:port].
[[nodiscard]] absl::StatusOr<std::unique_ptr<ApiServerClient>> NewApiServerClient(
    ApiServerOptions options);

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_APISERVER_H_
