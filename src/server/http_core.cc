#include "http_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/text.h"

namespace seedance::server {

bool Request::has_param(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (k == key) return true;
  }
  return false;
}

std::string Request::get_param_value(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (k == key) return v;
  }
  return "";
}

std::string_view AccessName(Access a) {
  switch (a) {
    case Access::kAnyone:
      return "anyone";
    case Access::kReader:
      return "reader";
    case Access::kClusterRead:
      return "cluster-read";
    case Access::kTenant:
      return "tenant";
    case Access::kAdmin:
      return "admin";
  }
  return "?";
}

namespace {

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    out.emplace_back(path.substr(start, slash == std::string_view::npos ? path.npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

bool IsNodeNameSegment(std::string_view s) {
  if (s.empty() || s.size() > 253 || !absl::ascii_isalnum(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool IsUidSegment(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
  });
}

// Whether `path` matches the pattern's segments; the placeholders' segments appended to *groups.
bool Match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
           std::vector<std::string>* groups) {
  if (pattern.size() != path.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "{name}" || pattern[i] == "{uid}") {
      if (!(pattern[i] == "{name}" ? IsNodeNameSegment(path[i]) : IsUidSegment(path[i]))) {
        return false;
      }
      groups->push_back(path[i]);
    } else if (pattern[i] != path[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

void Router::Add(std::string method, std::string pattern, std::string name, Access access,
                 Handler handler, bool blocking) {
  std::vector<std::string> segments = Segments(pattern);
  routes_.push_back(Route{std::move(method), std::move(pattern), std::move(name), access,
                          std::move(handler), blocking, std::move(segments)});
}

const Route* Router::Find(std::string_view method, const std::string& path,
                          std::vector<std::string>* matches, std::string* allow) const {
  allow->clear();
  const std::vector<std::string> segments = Segments(path);
  for (const Route& r : routes_) {
    matches->assign(1, path);
    if (!Match(r.segments, segments, matches)) continue;
    if (r.method == method) return &r;
    absl::StrAppend(allow, allow->empty() ? "" : ", ", r.method, r.method == "GET" ? ", HEAD" : "");
  }
  return nullptr;
}

AccessCheck Authorize(Access access, const Caller& caller, const Authenticator& auth,
                      std::string_view path) {
  if (auth.open() || access == Access::kAnyone || caller.admin()) return {};
  const bool anonymous = caller.kind == Caller::kAnonymous;
  const bool reads_need_token = auth.has_tenants();
  const bool read = access == Access::kReader || access == Access::kClusterRead;
  if (anonymous && (!read || reads_need_token)) {
    return {401, reads_need_token
                     ? "this server has tenants: every /v1/ call needs \"Authorization: Bearer "
                       "TOKEN\" (a tenant's or the administrator's)"
                     : "this call needs \"Authorization: Bearer TOKEN\" (the server's "
                       "--token-file)"};
  }
  if (caller.tenant_caller() && (access == Access::kClusterRead || access == Access::kAdmin)) {
    return {403, absl::StrCat("tenant '", caller.tenant, "' may not use ", base::Clip(path, 100),
                              ": nodes, the policy, the watch stream, deployments, node groups "
                              "and the extender are the administrator's")};
  }
  return {};
}

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Decode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out->push_back(plus_is_space && c == '+' ? ' ' : c);
    }
  }
  return true;
}

}  // namespace

bool ParseTarget(std::string_view target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* params) {
  if (target.empty() || target[0] != '/') return false;
  const size_t q = target.find('?');
  if (!Decode(target.substr(0, q), false, path)) return false;
  params->clear();
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string k, v;
    if (!Decode(pair.substr(0, eq), true, &k)) return false;
    if (eq != std::string_view::npos && !Decode(pair.substr(eq + 1), true, &v)) return false;
    params->emplace_back(std::move(k), std::move(v));
  }
  return true;
}

}  // namespace seedance::server
