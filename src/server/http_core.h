// What the REST API's routes see of HTTP (http.cc serves them on an event loop): a parsed request,
// a reply handed back once (from any thread) through `Done`, and a table of routes in which every
// route declares who may call it (docs/api.md, "Who may call what").
//
// Thread-safety: a Router is filled before serving and read-only after; a handler runs on an I/O
// thread and must not block (hand work to Service::RunAsync, or mark the route `blocking`).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/server/auth.h"
#include "seedance/server/service.h"

namespace seedance::server {

struct Request {
  std::string method;  // GET, POST, ... (HEAD is served as GET without the body)
  std::string path;    // percent-decoded, without the query
  std::vector<std::pair<std::string, std::string>> params;  // the query, decoded, in order
  std::vector<std::string> matches;                         // the route pattern's groups; [0]: path
  std::string body;
  Caller caller;

  bool has_param(std::string_view key) const;
  // The first value of `key` ("" when absent).
  std::string get_param_value(std::string_view key) const;
};

// A reply body written over time (server-sent events, a long poll). The connection calls Next on
// its I/O thread until `done`; when Next returns no data and not done it waits until *wake_at or
// until Service publishes new events, whichever comes first.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  struct Piece {
    std::string data;
    bool done = false;
    // Written after data as they are (shared with other streams, never copied).
    std::vector<std::shared_ptr<const std::string>> parts = {};
  };
  virtual Piece Next(std::chrono::steady_clock::time_point* wake_at) = 0;
};

struct Response {
  Response() = default;
  Response(const Reply& r) : status(r.status), body(r.body) {}  // NOLINT: a JSON reply
  Response(int status, std::string body, std::string content_type = "application/json")
      : status(status), body(std::move(body)), content_type(std::move(content_type)) {}
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  bool close = false;                                        // Connection: close after it
  std::shared_ptr<BodyStream> stream;  // set: the body is written by the stream (chunked)
};

// Hands the reply back; call exactly once, from any thread.
using Done = std::function<void(Response)>;
using Handler = std::function<void(Request&, Done)>;

// Who may call a route. A server without any token is open: every caller counts as the
// administrator. The table in docs/api.md lists every route's level.
enum class Access {
  kAnyone,      // no token ever (health, readiness, metrics, the leader)
  kReader,      // a read: anonymous unless the server has tenants; a tenant sees its own objects
  kClusterRead, // a read of cluster-wide objects: anonymous unless the server has tenants; a
                // tenant is refused (403)
  kTenant,      // a change to a tenant's own objects: the administrator's or a tenant's token
  kAdmin,       // a change to the cluster (nodes, the policy, the extender): the administrator
};
std::string_view AccessName(Access a);

struct Route {
  std::string method;
  // The path; a segment "{name}" matches a node name ([A-Za-z0-9][A-Za-z0-9._-]{0,252}) and
  // "{uid}" a pod UID ([0-9a-f-]{1,64}); each is a group of the match.
  std::string pattern;
  std::string name;           // the `route` label of seedance_http_requests_total
  Access access = Access::kAdmin;
  Handler handler;
  bool blocking = false;      // runs on the blocking pool (it waits on other servers)
  std::vector<std::string> segments;  // the pattern split at '/'
};

class Router {
 public:
  void Add(std::string method, std::string pattern, std::string name, Access access,
           Handler handler, bool blocking = false);
  // The route for method and path (matches: the path, then each placeholder's segment), or
  // null; *allow: the methods of the routes that have the path, for a 405's Allow header ("GET,
  // HEAD, PUT"; HEAD wherever GET is served), empty for an unknown path.
  const Route* Find(std::string_view method, const std::string& path,
                    std::vector<std::string>* matches, std::string* allow) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// Whether `caller` may call a route of level `access`: 0, or 401 or 403 with the message.
struct AccessCheck {
  int status = 0;
  std::string message;
};
AccessCheck Authorize(Access access, const Caller& caller, const Authenticator& auth,
                      std::string_view path);

// Splits a request target ("/a%20b?x=1&y") into the decoded path and query parameters ('+' in
// the query is a space). False for a target that is not origin-form or has a bad escape.
bool ParseTarget(std::string_view target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* params);

}  // namespace seedance::server
