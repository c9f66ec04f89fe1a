// The federation front's member file (docs/federation.md): the Seedance servers a front places
// pods across, where they are, what they cost, and how long one may stay silent.
//
//   members:
//     - name: cheap                    # a DNS label, unique in the file (required)
//       url: "http://10.0.0.5:7070"    # http(s)://HOST:PORT of the member's server (required)
//       token_file: t                  # its bearer token; relative to the file's folder
//       region: eu-west                # a DNS label
//       weight: 2                      # > 0, default 1: the static-weights policy's share
//       prices:                        # USD (required)
//         gpu_hour: {V100M16: 1.2, default: 2.0}   # per GPU-hour, by model; `default`: others
//         cpu_hour: 0.02                           # per core-hour (default 0)
//         egress_gb: 0.05                          # per GB of a pod's data brought in (default 0)
//       labels: {tier: spot}           # Kubernetes label syntax
//   lost_after: 30s                    # a member silent this long is lost (default 30 s)
//   quotas:                            # limits across every member, by namespace (optional)
//     - name: vision                   # a DNS label, unique
//       namespaces: [vision, vision-dev]   # each in one quota at most
//       limit: {gpus: 24, gpu_milli: 24000, cpu_milli: 256000, memory_mib: 1048576}
//
// The file is YAML read as JSON by api::ParseYamlDocument and checked field by field by the one
// JSON field reader (base/json_fields.h); durations are base::ParseDuration's (a bare number is
// seconds), URLs api::ParseServerUrl's with the port required. Every refusal is InvalidArgument
// "FILE:LINE:COL: PATH: message", e.g.
//   members.yaml:8:29: $.members[0].prices.gpu_hour.V100M16: must be a number in 0..1000000
//   (got -1)
// Reading the file is the only I/O of this library; the token file is not read here.
//
// Thread-safety: pure functions over plain values.
#ifndef SEEDANCE_FEDERATION_CONFIG_H_
#define SEEDANCE_FEDERATION_CONFIG_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::federation {

// The most a price may be, in USD per unit; more is taken for a typo.
inline constexpr double kMaxPriceUsd = 1e6;
// Most members in one file.
inline constexpr size_t kMaxMembers = 1000;
// lost_after when the file says nothing, and its bounds.
inline constexpr double kDefaultLostAfterS = 30;
inline constexpr double kMaxLostAfterS = 86400;
// The key of gpu_hour that prices every model without an entry of its own.
inline constexpr std::string_view kDefaultPriceKey = "default";

struct Prices {
  // USD per GPU-hour by GPU model, as the member's nodes name it ("V100M16").
  std::map<std::string, double> gpu_hour;
  std::optional<double> gpu_hour_default;
  double cpu_hour = 0;   // USD per core-hour
  double egress_gb = 0;  // USD per GB of data brought in from another region

  // The price of one GPU-hour of `model`: its own entry, else an entry that names the same model
  // of the hardware catalog (hw::CanonicalName: "V100" prices "V100M16"), else the default;
  // nullopt when there is none.
  std::optional<double> GpuHour(std::string_view model) const;
  bool operator==(const Prices&) const = default;
};

struct MemberConfig {
  std::string name;
  std::string url;         // as written; checked by api::ParseServerUrl
  std::string token_file;  // "" = none; a relative path is joined to the file's folder
  std::string region;      // "" = none
  double weight = 1;
  Prices prices;
  std::map<std::string, std::string> labels;
  int line = 0;  // where the member starts in the file
  bool operator==(const MemberConfig&) const = default;
};

// A tenant's limit over all members together: the pods of its namespaces that the front has
// placed (on any member, pending there or running, until they end) may not ask more than this.
// A resource left out is not limited. gpus counts whole GPUs (pods with gpu_milli 1000),
// gpu_milli every GPU share, fractions included (as the policy file's queues count them).
struct QuotaLimit {
  std::optional<int64_t> gpus, gpu_milli, cpu_milli, memory_mib;
  bool operator==(const QuotaLimit&) const = default;
};
struct QuotaConfig {
  std::string name;
  std::vector<std::string> namespaces;
  QuotaLimit limit;
  bool operator==(const QuotaConfig&) const = default;
};
// Most quotas in one file.
inline constexpr size_t kMaxQuotas = 1000;

struct FederationConfig {
  std::vector<MemberConfig> members;  // in file order (kFirstToAdmit's order)
  std::vector<QuotaConfig> quotas;    // in file order
  double lost_after_s = kDefaultLostAfterS;
  bool operator==(const FederationConfig&) const = default;
};

// Parses and checks a member file; `source` names it in messages and anchors relative token
// files (its folder). At least one member, names DNS labels and unique, URLs
// http(s)://HOST:PORT, prices finite in [0, kMaxPriceUsd], gpu_hour with a `default` or at least
// one model, weights in (0, 1e6], lost_after in (0, kMaxLostAfterS] seconds; quotas named by
// unique DNS labels, each with at least one namespace (a DNS label, in no other quota) and a
// limit of integers in [0, 2^40].
[[nodiscard]] absl::StatusOr<FederationConfig> ParseFederationConfig(std::string_view text,
                                                                     std::string_view source);
// Reads `path` (base::ReadInput, kind kConfig) and parses it.
[[nodiscard]] absl::StatusOr<FederationConfig> LoadFederationConfig(const std::string& path);

}  // namespace seedance::federation

#endif  // SEEDANCE_FEDERATION_CONFIG_H_
