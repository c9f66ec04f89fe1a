// What the two HTTP clients (client.h's blocking Client, async_client.h's AsyncClient) share, so
// that a call fails with the same status and message whichever made it.
#ifndef SEEDANCE_API_CLIENT_INTERNAL_H_
#define SEEDANCE_API_CLIENT_INTERNAL_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"

namespace seedance::api::internal {

// A client's options checked and completed: the URL ($SEEDANCE_SERVER, else kDefaultServer)
// parsed, the token file ($SEEDANCE_TOKEN_FILE) read, the timeout in (0, 86400] s.
struct ClientSetup {
  ClientOptions options;
  ServerUrl url;
  std::string token;
};
absl::StatusOr<ClientSetup> SetUpClient(ClientOptions options);

// "METHOD URL/PATH", how errors name a call.
std::string CallWhere(std::string_view method, const ServerUrl& url, std::string_view path);

// A complete reply: a 2xx is its JSON (null when empty; DataLoss when not JSON or nested deeper
// than the cap), anything else the status its error body names, with the HTTP status attached.
absl::StatusOr<nlohmann::json> DecodeReply(std::string_view where, int http,
                                           const std::string& body);

// The transport failures: no connection or no complete reply (`why` says which), the deadline,
// a reply over the size cap.
absl::Status CannotReach(const ServerUrl& url, std::string_view why);
absl::Status NoReplyInTime(std::string_view where, double timeout_s);
absl::Status ReplyTooLarge(std::string_view where, size_t cap);

}  // namespace seedance::api::internal

#endif  // SEEDANCE_API_CLIENT_INTERNAL_H_
