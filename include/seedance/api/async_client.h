// An asynchronous HTTP client of one Seedance server, over Boost.Beast: many calls in flight on
// a pool of keep-alive connections, every one of them driven by one ClientLoop thread, so that a
// caller with thousands of calls a second to its peers (the federation front and its members)
// holds no thread per call and wakes once per event, not once per call.
//
// The same URLs, token, deadline and reply cap as the blocking Client (client.h), and the same
// errors for the same failures (client_internal.h): a non-2xx reply is the status its error body
// names with the HTTP status attached (HttpStatusOf); no complete reply within the deadline
// (connect, send and reply together) is DeadlineExceeded; no connection or no complete reply
// Unavailable; a reply over the cap ResourceExhausted; a 2xx that is not JSON DataLoss.
//
// Connections: an idle one is reused (newest first) while it is younger than `idle_s` and its
// peer has not closed it; at most `max_connections` are open and calls beyond them wait, oldest
// first. A call that fails on a reused connection before any byte of the reply came back is made
// once more on a new connection when that cannot run it twice: the request did not leave (a
// write error) or its method is idempotent (GET, HEAD, PUT, DELETE). A POST is never repeated.
// https verifies the server's certificate and name against ClientOptions::ca_file or the
// system's store.
//
// Thread-safety: Call, CallAndWait and Close may be called from any thread. `done` runs on the
// loop's thread and must not block. CallAndWait must not be called from the loop's thread.
#ifndef SEEDANCE_API_ASYNC_CLIENT_H_
#define SEEDANCE_API_ASYNC_CLIENT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"

namespace seedance::api {

// One thread running the event loop of the AsyncClients made on it. Stop (or the destructor)
// waits for the calls under way: Close their clients first so that it does not wait long.
class ClientLoop {
 public:
  ClientLoop();
  ~ClientLoop();
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;
  void Stop();
  // Whether the caller is the loop's thread.
  bool InLoop() const;

 private:
  friend class AsyncClient;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class AsyncClient {
 public:
  using Done = std::function<void(absl::StatusOr<nlohmann::json>)>;
  struct Limits {
    size_t max_connections = 64;
    double idle_s = 2;  // below the server's keep-alive wait (5 s by default)
  };

  // Checks the options as Client::Create does (URL, token file, timeout).
  static absl::StatusOr<std::unique_ptr<AsyncClient>> Create(ClientOptions options,
                                                             ClientLoop& loop, Limits limits);
  static absl::StatusOr<std::unique_ptr<AsyncClient>> Create(ClientOptions options,
                                                             ClientLoop& loop) {
    return Create(std::move(options), loop, Limits{});
  }
  // Closes (below).
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  // METHOD PATH (already escaped) with `body` as application/json when not empty; `done` gets
  // the reply's JSON (null for an empty 2xx) or the error, exactly once.
  void Call(std::string_view method, std::string_view path, std::string body, Done done);
  // Call, waited for.
  absl::StatusOr<nlohmann::json> CallAndWait(std::string_view method, std::string_view path,
                                             std::string body = "");
  // Fails the calls not yet answered (Unavailable) and closes every connection; later calls
  // fail at once.
  void Close();
  // The server as it may be printed.
  const std::string& server() const;

 private:
  struct Impl;
  explicit AsyncClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
  ClientLoop* loop_ = nullptr;
};

}  // namespace seedance::api

#endif  // SEEDANCE_API_ASYNC_CLIENT_H_
