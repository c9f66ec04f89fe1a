// libFuzzer target: any bytes as a federation member file, or as a member's GET /v1/cluster reply
// (what the front reads from the network), must give a checked value or an InvalidArgument, never
// a crash. The first byte picks which; the rest is the text. Oracles: an accepted member file
// holds 1..kMaxMembers members with unique names and prices in range; an accepted summary has
// no negative figure.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/federation/config.h"
#include "seedance/federation/placement.h"

namespace federation = seedance::federation;

namespace {

void CheckConfig(const federation::FederationConfig& c) {
  SEEDANCE_CHECK(!c.members.empty() && c.members.size() <= federation::kMaxMembers)
      << "member file accepted with " << c.members.size() << " members";
  std::set<std::string> names;
  for (const federation::MemberConfig& m : c.members) {
    SEEDANCE_CHECK(names.insert(m.name).second) << "member name '" << m.name << "' accepted twice";
    SEEDANCE_CHECK(std::isfinite(m.prices.cpu_hour) && m.prices.cpu_hour >= 0 &&
                   std::isfinite(m.prices.egress_gb) && m.prices.egress_gb >= 0)
        << "member " << m.name << " accepted with a price out of range";
    for (const auto& [model, usd] : m.prices.gpu_hour) {
      SEEDANCE_CHECK(std::isfinite(usd) && usd >= 0 && usd <= federation::kMaxPriceUsd)
          << "member " << m.name << " accepted GPU price " << usd << " for " << model;
    }
  }
  SEEDANCE_CHECK(c.lost_after_s > 0 && c.lost_after_s <= federation::kMaxLostAfterS)
      << "lost_after accepted as " << c.lost_after_s << " s";
}

void CheckSummary(const federation::ClusterSummary& s) {
  SEEDANCE_CHECK(s.nodes >= 0 && s.free.cpu_milli >= 0 && s.free.whole_gpus >= 0 &&
                 s.largest_free.whole_gpus >= 0 && s.pending_pods >= 0)
      << "summary of " << s.cluster << " accepted with a negative figure";
  for (const federation::ModelRoom& m : s.gpu_models) {
    SEEDANCE_CHECK(m.nodes >= 0 && m.free.gpu_milli >= 0 && m.largest_free.cpu_milli >= 0)
        << "model " << m.gpu_model << " accepted with a negative figure";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    if (auto c = federation::ParseFederationConfig(text, "fuzz.yaml"); c.ok()) CheckConfig(*c);
  } else {
    if (auto s = federation::ParseClusterSummary(text); s.ok()) CheckSummary(*s);
  }
  return 0;
}
