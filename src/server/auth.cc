#include "seedance/server/auth.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "seedance/api/api.h"
#include "seedance/base/text.h"

namespace seedance::server {
namespace {

constexpr std::string_view kBearer = "Bearer ";

bool SameSecret(std::string_view given, const std::string& want) {
  return given.size() == want.size() &&
         CRYPTO_memcmp(given.data(), want.data(), want.size()) == 0;
}

std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 64)); }

absl::Status LineError(std::string_view source, int line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(source), ":", line, ": ", what));
}

}  // namespace

absl::StatusOr<std::vector<TenantToken>> ParseTenantTokens(std::string_view text,
                                                           std::string_view source) {
  std::vector<TenantToken> out;
  std::unordered_map<std::string, int> token_line, tenant_line, ns_line;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() != 3) {
      return LineError(source, line_no,
                       absl::StrCat("expected TOKEN,TENANT,NAMESPACE[;NAMESPACE...] (got ",
                                    f.size(), " fields)"));
    }
    TenantToken t;
    t.token = std::string(absl::StripAsciiWhitespace(f[0]));
    t.tenant = std::string(absl::StripAsciiWhitespace(f[1]));
    if (t.token.size() < 16) {
      return LineError(source, line_no, "field 'token': must be at least 16 characters");
    }
    if (!api::IsDnsLabel(t.tenant)) {
      return LineError(source, line_no,
                       absl::StrCat("field 'tenant': '", Shown(t.tenant),
                                    "' is not a DNS-1123 label"));
    }
    for (absl::string_view ns : absl::StrSplit(f[2], ';')) {
      const std::string name(absl::StripAsciiWhitespace(ns));
      if (!api::IsDnsLabel(name)) {
        return LineError(source, line_no,
                         absl::StrCat("field 'namespaces': '", Shown(name),
                                      "' is not a DNS-1123 label"));
      }
      if (auto [it, fresh] = ns_line.emplace(name, line_no); !fresh) {
        return LineError(source, line_no,
                         absl::StrCat("field 'namespaces': '", name,
                                      "' already belongs to the tenant of line ", it->second));
      }
      t.namespaces.push_back(name);
    }
    if (auto [it, fresh] = token_line.emplace(t.token, line_no); !fresh) {
      return LineError(source, line_no,
                       absl::StrCat("field 'token': the same token as line ", it->second));
    }
    if (auto [it, fresh] = tenant_line.emplace(t.tenant, line_no); !fresh) {
      return LineError(source, line_no,
                       absl::StrCat("field 'tenant': '", t.tenant, "' is already on line ",
                                    it->second));
    }
    out.push_back(std::move(t));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": no tenants (expected TOKEN,TENANT,NAMESPACES lines)"));
  }
  return out;
}

bool Caller::Sees(std::string_view ns) const {
  if (kind != kTenant) return true;
  return std::find(namespaces->begin(), namespaces->end(), ns) != namespaces->end();
}

Authenticator::Authenticator(std::string admin_token, std::vector<TenantToken> tenants)
    : admin_token_(std::move(admin_token)), tenants_(std::move(tenants)) {}

Caller Authenticator::Identify(std::string_view authorization) const {
  Caller c;
  if (open()) {
    c.kind = Caller::kAdmin;
    return c;
  }
  if (!authorization.starts_with(kBearer)) return c;
  const std::string_view given = authorization.substr(kBearer.size());
  // Every configured token is compared, so the time does not tell which one (nearly) matched.
  bool admin = !admin_token_.empty() && SameSecret(given, admin_token_);
  const TenantToken* tenant = nullptr;
  for (const TenantToken& t : tenants_) {
    if (SameSecret(given, t.token)) tenant = &t;
  }
  if (admin) {
    c.kind = Caller::kAdmin;
  } else if (tenant != nullptr) {
    c.kind = Caller::kTenant;
    c.tenant = tenant->tenant;
    c.namespaces = &tenant->namespaces;
  }
  return c;
}

}  // namespace seedance::server
