// Lists and watches one kind of object (nodes or pods) on the Kubernetes API server, the way
// client-go's reflector does, and hands every change to a sink in order:
//   list   GET /api/v1/RESOURCE?limit=500[&continue=TOKEN]  (a v1.NodeList / v1.PodList; pages
//          followed), then the sink gets every object with relisted = true: whatever it holds
//          that is not in that list is gone;
//   watch  GET /api/v1/RESOURCE?watch=1&resourceVersion=RV&allowWatchBookmarks=true&
//          timeoutSeconds=N: one JSON event per line, {"type": ADDED | MODIFIED | DELETED |
//          BOOKMARK | ERROR, "object": ...}; the watch resumes from the last resourceVersion
//          seen when the server ends it, and lists again after an ERROR event with code 410
//          (Gone: that resourceVersion is too old) or a broken connection.
// Objects are decoded by objects.h; one that does not decode is skipped and counted (its JSON
// path and message are kept for the log), never fatal.
//
// Thread-safety: Run blocks its calling thread; Stop may be called from any thread.
#ifndef SEEDANCE_K8S_INFORMER_H_
#define SEEDANCE_K8S_INFORMER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "seedance/base/mutex.h"
#include "seedance/k8s/apiserver.h"
#include "seedance/k8s/objects.h"

namespace seedance::k8s {

struct ObjectEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  Node node;  // resource "nodes"
  Pod pod;    // resource "pods"
};

// events: in order; relisted: they are a whole list (the sink reconciles against it).
using EventSink = std::function<void(std::vector<ObjectEvent> events, bool relisted)>;

struct InformerStats {
  int64_t lists = 0, watches = 0, events = 0, undecodable = 0, errors = 0;
  std::string last_error;
};

class Informer {
 public:
  // resource: "nodes" or "pods".
  Informer(ApiServerOptions api, std::string resource, EventSink sink);
  ~Informer();
  // Lists and watches until Stop. Waits retry_s between failed attempts.
  void Run();
  void Stop();
  InformerStats stats() const;

  double retry_s = 1;
  int watch_timeout_s = 300;
  // A field selector for both list and watch, e.g. "spec.nodeName=gpu-7" (a node's own pods, as
  // the kubelet watches them); empty = every object.
  std::string field_selector;

 private:
  std::string Selector() const;  // "&fieldSelector=..." or ""
  bool List(std::string* resource_version);
  // false: list again (410 Gone or a broken stream).
  bool Watch(std::string* resource_version);
  bool Decode(const nlohmann::json& object, ObjectEvent* event);
  void Error(const std::string& what);

  struct Http;
  ApiServerOptions api_;
  std::string resource_;
  EventSink sink_;
  std::unique_ptr<Http> http_;  // ->watch is replaced (Run) and stopped (Stop) under mu_
  std::atomic<bool> stop_{false};
  mutable base::Mutex mu_;
  InformerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace seedance::k8s

#endif  // SEEDANCE_K8S_INFORMER_H_
