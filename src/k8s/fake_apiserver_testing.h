// A fake Kubernetes API server for tests (no kube-apiserver can run on the machines Seedance is
// developed on). It serves, on 127.0.0.1 and a free port, the calls Seedance makes, with the
// request and reply shapes of the real one (read from the upstream source, k8s.io/kubernetes at
// v1.29):
//   PATCH /api/v1/namespaces/{ns}/pods/{name}, Content-Type application/merge-patch+json
//     (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go): 200 and the patched
//     v1.Pod.
//   POST /api/v1/namespaces/{ns}/pods/{name}/binding, a v1.Binding (pkg/registry/core/pod/
//     storage/storage.go, BindingREST.Create): 201 and metav1.Status{status: Success}; 409 with
//     a metav1.Status (reason Conflict) when the pod is bound already.
//   GET /api/v1/{nodes,pods} (pkg/registry/generic/registry/store.go List): a v1.NodeList /
//     v1.PodList with metadata.resourceVersion; with watch=1 a stream of one event per line
//     (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go: {"type","object"}). A
//     fieldSelector is recorded (FieldSelector) but not applied: tests give each list what the
//     selector would leave.
// It records every PATCH and POST so a test can check what was sent and in which order.
#ifndef SEEDANCE_K8S_FAKE_APISERVER_TESTING_H_
#define SEEDANCE_K8S_FAKE_APISERVER_TESTING_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/mutex.h"

namespace seedance::k8s::testing {

class FakeApiServer {
 public:
  struct Call {
    std::string method, path, content_type;
    nlohmann::json body;
  };

  FakeApiServer() {
    http_.Patch(R"(/api/v1/namespaces/([a-z0-9.-]+)/pods/([a-z0-9.-]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  Record(req);
                  nlohmann::json pod = {{"apiVersion", "v1"},
                                        {"kind", "Pod"},
                                        {"metadata",
                                         {{"name", req.matches[2].str()},
                                          {"namespace", req.matches[1].str()},
                                          {"resourceVersion", "2"}}}};
                  pod.merge_patch(nlohmann::json::parse(req.body));
                  res.status = 200;
                  res.set_content(pod.dump(), "application/json");
                });
    http_.Post(
        R"(/api/v1/namespaces/([a-z0-9.-]+)/pods/([a-z0-9.-]+)/binding)",
        [this](const httplib::Request& req, httplib::Response& res) {
          Record(req);
          base::MutexLock lock(mu_);
          if (req.matches[2].str() == refuse_ || !bound_.insert(req.matches[2].str()).second) {
            res.status = 409;
            res.set_content(
                Status(409, "Conflict", "pod " + refuse_ + " is already assigned to node x"),
                "application/json");
            return;
          }
          res.status = 201;
          res.set_content(nlohmann::json({{"kind", "Status"},
                                          {"apiVersion", "v1"},
                                          {"metadata", nlohmann::json::object()},
                                          {"status", "Success"},
                                          {"code", 201}})
                              .dump(),
                          "application/json");
        });
    // GET /api/v1/{nodes,pods}: the list (pkg/registry/generic/registry/store.go List: a v1.
    // NodeList/PodList with metadata.resourceVersion); with watch=1 a stream of one event per line
    // (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go: {"type","object"}).
    http_.Get(
        R"(/api/v1/(nodes|pods))", [this](const httplib::Request& req, httplib::Response& res) {
          const std::string kind = req.matches[1].str();
          {
            base::MutexLock lock(mu_);
            selectors_[kind] = req.get_param_value("fieldSelector");
          }
          if (req.get_param_value("watch") != "1") {
            base::MutexLock lock(mu_);
            nlohmann::json list = {{"apiVersion", "v1"},
                                   {"kind", kind == "nodes" ? "NodeList" : "PodList"},
                                   {"metadata", {{"resourceVersion", std::to_string(revision_)}}},
                                   {"items", lists_[kind]}};
            res.set_content(list.dump(), "application/json");
            return;
          }
          res.set_chunked_content_provider(
              "application/json", [this, kind](size_t, httplib::DataSink& sink) {
                base::MutexLock lock(mu_);
                auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                  return stopping_ || !events_[kind].empty();
                };
                lock.WaitFor(cv_, std::chrono::milliseconds(50), ready);
                if (stopping_) {
                  sink.done();
                  return true;
                }
                while (!events_[kind].empty()) {
                  const std::string line = events_[kind].front().dump() + "\n";
                  events_[kind].pop_front();
                  if (!sink.write(line.data(), line.size())) return false;
                }
                return true;
              });
        });
    http_.set_tcp_nodelay(true);
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::yield();  // polls readiness
  }
  ~FakeApiServer() {
    {
      base::MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    http_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void RefuseBinding(const std::string& pod) {
    base::MutexLock lock(mu_);
    refuse_ = pod;
  }
  // The next list of `kind` ("nodes" or "pods").
  void SetList(const std::string& kind, nlohmann::json items) {
    base::MutexLock lock(mu_);
    lists_[kind] = std::move(items);
    ++revision_;
  }
  // One watch event for `kind`'s open watches.
  void Push(const std::string& kind, const std::string& type, nlohmann::json object) {
    {
      base::MutexLock lock(mu_);
      object["metadata"]["resourceVersion"] = std::to_string(++revision_);
      events_[kind].push_back({{"type", type}, {"object", std::move(object)}});
    }
    cv_.notify_all();
  }
  // The fieldSelector of the last list or watch of `kind` ("" = none).
  std::string FieldSelector(const std::string& kind) {
    base::MutexLock lock(mu_);
    return selectors_[kind];
  }
  std::vector<Call> TakeCalls() {
    base::MutexLock lock(mu_);
    return std::exchange(calls_, {});
  }

 private:
  static std::string Status(int code, const std::string& reason, const std::string& message) {
    return nlohmann::json({{"kind", "Status"},
                           {"apiVersion", "v1"},
                           {"metadata", nlohmann::json::object()},
                           {"status", "Failure"},
                           {"message", message},
                           {"reason", reason},
                           {"code", code}})
        .dump();
  }
  void Record(const httplib::Request& req) {
    base::MutexLock lock(mu_);
    calls_.push_back({req.method, req.path, req.get_header_value("Content-Type"),
                      nlohmann::json::parse(req.body, nullptr, false)});
  }

  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
  base::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::string refuse_ ABSL_GUARDED_BY(mu_);
  // A pod is bound once; binding it again is a Conflict.
  std::set<std::string> bound_ ABSL_GUARDED_BY(mu_);
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 100;
  std::map<std::string, nlohmann::json> lists_ ABSL_GUARDED_BY(mu_) = {
      {"nodes", nlohmann::json::array()}, {"pods", nlohmann::json::array()}};
  std::map<std::string, std::deque<nlohmann::json>> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> selectors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace seedance::k8s::testing

#endif  // SEEDANCE_K8S_FAKE_APISERVER_TESTING_H_
