// Who a request comes from: the administrator (the --token-file token), a tenant (a token of
// --tenant-tokens, docs/server.md "Tenants") or nobody; and what each may see.
//
// Tenant token file: one tenant per line, "TOKEN,TENANT,NAMESPACE[;NAMESPACE...]". Blank lines
// and lines starting with '#' are skipped. Tokens are at least 16 characters and unique; tenant
// names are unique DNS-1123 labels; every namespace is a DNS-1123 label and belongs to one tenant
// only. A tenant's token can submit, read, explain and delete pods of its namespaces and read its
// own queues; nodes, the policy, the watch stream and other tenants' objects are the
// administrator's (403, or 404 where even existence must not leak).
//
// Thread-safety: Authenticator is immutable after construction; Identify may be called from any
// thread.
#ifndef SEEDANCE_SERVER_AUTH_H_
#define SEEDANCE_SERVER_AUTH_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::server {

struct TenantToken {
  std::string token;
  std::string tenant;
  std::vector<std::string> namespaces;
};

// Parses a tenant token file's text; `source` names it in errors ("FILE:LINE: what"), which
// never quote a token.
absl::StatusOr<std::vector<TenantToken>> ParseTenantTokens(std::string_view text,
                                                           std::string_view source);

struct Caller {
  enum Kind { kAnonymous, kAdmin, kTenant };
  Kind kind = kAnonymous;
  std::string tenant;  // kTenant
  const std::vector<std::string>* namespaces = nullptr;  // kTenant: owned by the Authenticator

  bool admin() const { return kind == kAdmin; }
  bool tenant_caller() const { return kind == kTenant; }
  // May this caller see objects of namespace `ns`? (Everyone but a tenant sees everything.)
  bool Sees(std::string_view ns) const;
};

class Authenticator {
 public:
  Authenticator() = default;
  Authenticator(std::string admin_token, std::vector<TenantToken> tenants);

  // No token configured at all: everything is open (and every caller counts as the admin).
  bool open() const { return admin_token_.empty() && tenants_.empty(); }
  // Tenant tokens configured: reads need a token too.
  bool has_tenants() const { return !tenants_.empty(); }
  // The caller of an "Authorization" header value. Compares in time independent of where a
  // token differs.
  Caller Identify(std::string_view authorization) const;
  const std::vector<TenantToken>& tenants() const { return tenants_; }

 private:
  std::string admin_token_;
  std::vector<TenantToken> tenants_;
};

}  // namespace seedance::server

#endif  // SEEDANCE_SERVER_AUTH_H_
