// A client of slurmrestd (Slurm's REST API, OpenAPI v0.0.38 as in Slurm 22.05): submit, cancel,
// list jobs and nodes. docs/slurm.md.
//
// Authentication is JWT (auth/jwt): every request carries X-SLURM-USER-NAME and
// X-SLURM-USER-TOKEN. The token comes from RestOptions::token or from a file (what
// `scontrol token` prints, SLURM_JWT=..., or the bare token). The file is read again whenever a
// reply may mean a refused token - 401 or 403, or the 500s Slurm 22.05 gives instead (error 5005
// on a submit; "Unspecified error", errno -1, on a GET) - and the request is sent once more if
// the token changed, so a token renewed by cron is picked up without a restart or a failure.
//
// Thread-safety: every method is thread-safe; up to `connections` requests run at once, each on
// its own kept-alive connection.
#ifndef SEEDANCE_SLURM_REST_H_
#define SEEDANCE_SLURM_REST_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/slurm/objects.h"

namespace httplib {
class Client;
}

namespace seedance::slurm {

struct RestOptions {
  std::string url;                      // http://HOST:PORT of slurmrestd
  std::string api_version = "v0.0.38";  // the path's /slurm/<version>/
  std::string user = "root";            // X-SLURM-USER-NAME: the user jobs run as
  std::string token;                    // X-SLURM-USER-TOKEN; or:
  std::string token_file;               // a file holding it (read again after a refusal)
  std::string gpu_type_prefix = "g";    // gres.conf's per-GPU Type: g0, g1, ...
  double timeout_s = 10;
  int connections = 8;
};

class RestClient {
 public:
  // InvalidArgument for a URL that is not http://HOST:PORT, a bad version, no token; NotFound /
  // PermissionDenied for a token file that cannot be read. Nothing is sent.
  static absl::StatusOr<std::unique_ptr<RestClient>> Create(RestOptions options);
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // The job id. FailedPrecondition with Slurm's own message for a job Slurm refuses (unknown
  // partition, GRES not available), Unauthenticated for a refused token (the message says why
  // when the token shows it: expired when, not a JWT, which user), Unavailable (slurmrestd cannot
  // be reached or timed out, or a GET's 500 that may be either slurmctld down or the token: the
  // message names both).
  absl::StatusOr<int64_t> Submit(const JobSpec& spec);
  absl::Status Cancel(int64_t job_id);
  absl::StatusOr<std::vector<Job>> Jobs();
  absl::StatusOr<std::vector<Node>> Nodes();
  // Names of the partitions.
  absl::StatusOr<std::vector<std::string>> Partitions();
  const RestOptions& options() const { return options_; }

 private:
  explicit RestClient(RestOptions options);
  struct Reply {
    int status = 0;
    std::string body;
  };
  absl::StatusOr<Reply> Call(const char* method, const std::string& path, const std::string& body,
                             std::string_view what);
  absl::StatusOr<Reply> CallOnce(const char* method, const std::string& path,
                                 const std::string& body, std::string_view what);
  std::unique_ptr<httplib::Client> Take() ABSL_LOCKS_EXCLUDED(mu_);
  void Give(std::unique_ptr<httplib::Client> c) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ReloadToken() ABSL_LOCKS_EXCLUDED(mu_);
  std::string Token() ABSL_LOCKS_EXCLUDED(mu_);
  // The status for a reply that still speaks of a refused token after any reload.
  absl::Status TokenError(const Reply& r, std::string_view what);

  RestOptions options_;
  std::string base_;  // /slurm/v0.0.38
  base::Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<httplib::Client>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // connections made and not dropped, idle or in use
  std::string token_ ABSL_GUARDED_BY(mu_);
};

// What a Slurm JWT says of itself (read, not verified: only slurmctld holds the key).
struct TokenClaims {
  int64_t expires_unix_s = 0;  // "exp"
  std::string user;            // "sun", Slurm's user-name claim
};
// InvalidArgument for a token that is not a JWT or has no integer "exp".
absl::StatusOr<TokenClaims> DecodeToken(std::string_view token);

}  // namespace seedance::slurm

#endif  // SEEDANCE_SLURM_REST_H_
