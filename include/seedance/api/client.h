// The HTTP client of the client commands (`seedance get|apply|delete|explain|cordon`), over
// cpp-httplib. One Client talks to one server (--server URL, or SEEDANCE_SERVER, default
// http://127.0.0.1:7070) with an optional bearer token read from a file (--token-file, or
// SEEDANCE_TOKEN_FILE). The token is never printed or put in a message; credentials in a URL
// are refused and shown redacted. Every call has a total deadline (connect + send + reply) and
// a cap on the reply's size.
//
// Errors: a bad URL or token file is InvalidArgument (or the reader's code, e.g. NotFound);
// a server that cannot be reached or does not answer is Unavailable / DeadlineExceeded; a reply
// over the cap ResourceExhausted; a non-2xx reply is the status its error body names (code,
// message, field: FieldOf works on it) with the HTTP status attached (HttpStatusOf).
//
// A client keeps its connection open between calls (HTTP keep-alive) and opens it again when the
// server closed it.
//
// Thread-safety: one Client per thread.
#ifndef SEEDANCE_API_CLIENT_H_
#define SEEDANCE_API_CLIENT_H_

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace httplib {
class Client;
}

namespace seedance::api {

inline constexpr std::string_view kDefaultServer = "http://127.0.0.1:7070";

struct ClientOptions {
  std::string url;         // "" = $SEEDANCE_SERVER, else kDefaultServer
  std::string token_file;  // "" = $SEEDANCE_TOKEN_FILE, else no token
  std::string ca_file;     // https: CA bundle to trust ("" = the system's)
  double timeout_s = 30;   // total deadline of one call
  size_t max_reply_bytes = size_t{256} << 20;
};

// A parsed --server URL: http or https, a host, an optional port and nothing else (a trailing
// "/" is allowed). `display` is the URL as it may be printed.
struct ServerUrl {
  std::string scheme, host;
  int port = 0;
  std::string display;
};
absl::StatusOr<ServerUrl> ParseServerUrl(std::string_view url);

class Client {
 public:
  static absl::StatusOr<Client> Create(ClientOptions options);
  static absl::StatusOr<Client> Create(std::string url, std::string token_file);

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // METHOD PATH (path with its query, already escaped), with `body` as application/json when
  // not empty. Returns the reply's JSON (null for an empty 2xx reply).
  absl::StatusOr<nlohmann::json> Call(std::string_view method, std::string_view path,
                                      const std::string& body = "");
  // Call, for a reply that must be a JSON object holding every key of `keys` (not null):
  // anything else (an empty 2xx, an array, another service's JSON) is DataLoss naming the call.
  absl::StatusOr<nlohmann::json> CallObject(std::string_view method, std::string_view path,
                                            std::initializer_list<std::string_view> keys,
                                            const std::string& body = "");
  // The server as it may be printed.
  const std::string& server() const { return url_.display; }
  // The bearer-token file a client uses: `flag` when given, else $SEEDANCE_TOKEN_FILE, else ""
  // (none). Create resolves it so; commands use it to keep their outputs off that file.
  static std::string TokenFileOf(const std::string& flag);

 private:
  // "METHOD URL/PATH", how errors name a call.
  std::string Where(std::string_view method, std::string_view path) const;
  Client() = default;

  ServerUrl url_;
  std::string token_;
  ClientOptions options_;
  std::unique_ptr<httplib::Client> http_;
  // Holds each call to its deadline (client.cc): one thread per client, started by its first
  // call, not one per call. Declared after http_, so that it stops first.
  struct Watchdog;
  std::unique_ptr<Watchdog> watchdog_;
};

// Percent-encodes a query parameter value or a path segment.
std::string UrlEncode(std::string_view s);

}  // namespace seedance::api

#endif  // SEEDANCE_API_CLIENT_H_
