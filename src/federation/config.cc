#include "seedance/federation/config.h"

#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/api/client.h"
#include "seedance/api/yaml_config.h"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/hw/catalog.h"

namespace seedance::federation {

std::optional<double> Prices::GpuHour(std::string_view model) const {
  if (auto it = gpu_hour.find(std::string(model)); it != gpu_hour.end()) return it->second;
  // Only a model the catalog knows is matched by its canonical name: two unknown names never
  // meet by accident.
  if (hw::Find(model) != nullptr) {
    const std::string canonical = hw::CanonicalName(model);
    for (const auto& [name, usd] : gpu_hour) {
      if (hw::Find(name) != nullptr && hw::CanonicalName(name) == canonical) return usd;
    }
  }
  return gpu_hour_default;
}

namespace {

using Json = nlohmann::ordered_json;
using Fields = base::JsonFields<Json>;

// The longest a name, region or URL may be.
constexpr size_t kMaxUrlBytes = 2048;
constexpr double kMaxWeight = 1e6;

// `st` ("PATH: message" from a reader that records PATH its own way: api::FieldOf) as the JSON
// readers' error, so that YamlDocument::Locate finds PATH; `fallback` when it names none.
absl::Status AsJsonError(const absl::Status& st, const std::string& fallback) {
  const std::string field = api::FieldOf(st);
  std::string m(st.message());
  if (!field.empty() && m.rfind(field + ": ", 0) == 0) m.erase(0, field.size() + 2);
  return base::JsonError(field.empty() ? fallback : field, m);
}

// The URL of a member: api::ParseServerUrl's forms, with the port given.
absl::Status CheckUrl(const std::string& url, const std::string& path) {
  const std::string expected = "must be http://HOST:PORT or https://HOST:PORT";
  absl::StatusOr<api::ServerUrl> parsed = api::ParseServerUrl(url);
  if (!parsed.ok()) {
    // "--server URL: why": the why, without the flag the client's message names.
    const std::string m(parsed.status().message());
    const size_t cut = m.rfind(": ");
    return base::JsonError(
        path, absl::StrCat(expected, " (", cut == std::string::npos ? m : m.substr(cut + 2), ")"));
  }
  std::string_view authority = std::string_view(url).substr(url.find("://") + 3);
  authority = authority.substr(0, authority.find('/'));
  const size_t colon = authority.rfind(':');
  const size_t bracket = authority.rfind(']');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket)) {
    return base::JsonError(path, absl::StrCat(expected, " (the port is missing)"));
  }
  return absl::OkStatus();
}

absl::Status ReadGpuPrices(const Json& j, const std::string& path, Prices* p) {
  if (absl::Status st = base::CheckJsonKind(j, path, base::JsonKind::kObject); !st.ok()) return st;
  if (j.empty()) {
    return base::JsonError(path, "must price at least one GPU model or give a default");
  }
  for (const auto& item : j.items()) {
    const std::string at = base::JsonPathChild(path, item.key());
    if (item.key().empty()) return base::JsonError(at, "a GPU model name must not be empty");
    double usd = 0;
    if (absl::Status st = base::ReadJsonNumber(&item.value(), at, 0, kMaxPriceUsd, &usd);
        !st.ok()) {
      return st;
    }
    if (item.key() == kDefaultPriceKey) {
      p->gpu_hour_default = usd;
    } else {
      p->gpu_hour[item.key()] = usd;
    }
  }
  return absl::OkStatus();
}

absl::Status ReadPrices(const Json& j, const std::string& path, Prices* p) {
  Fields f(j, path);
  f.Number("cpu_hour", &p->cpu_hour, 0, kMaxPriceUsd);
  f.Number("egress_gb", &p->egress_gb, 0, kMaxPriceUsd);
  const Json* gpu = f.Member("gpu_hour");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (gpu == nullptr) {
    return base::JsonError(f.At("gpu_hour"),
                           "missing: USD per GPU-hour by GPU model, or a default for every model");
  }
  return ReadGpuPrices(*gpu, f.At("gpu_hour"), p);
}

absl::StatusOr<MemberConfig> ReadMember(const Json& j, const std::string& path,
                                        const std::filesystem::path& folder) {
  MemberConfig m;
  Fields f(j, path);
  f.String("name", &m.name, /*required=*/true, 63);
  f.String("url", &m.url, /*required=*/true, kMaxUrlBytes);
  f.String("token_file", &m.token_file, false, 4096);
  f.String("region", &m.region, false, 63);
  f.Number("weight", &m.weight, 0, kMaxWeight);
  const Json* prices = f.Member("prices");
  const Json* labels = f.Member("labels");
  f.NoOthers();
  if (f.ok() && !api::IsDnsLabel(m.name)) {
    f.Fail("name", "must be a DNS-1123 label (lower-case letters, digits and '-', at most 63)");
  }
  if (f.ok() && !m.region.empty() && !api::IsDnsLabel(m.region)) {
    f.Fail("region", "must be a DNS-1123 label such as eu-west");
  }
  if (f.ok() && !(m.weight > 0)) f.Fail("weight", "must be > 0");
  if (f.ok() && prices == nullptr) {
    f.Fail("prices", "missing: gpu_hour (USD per GPU-hour by model), cpu_hour, egress_gb");
  }
  if (!f.ok()) return f.status();
  if (absl::Status st = CheckUrl(m.url, f.At("url")); !st.ok()) return st;
  if (absl::Status st = ReadPrices(*prices, f.At("prices"), &m.prices); !st.ok()) return st;
  if (absl::Status st = base::ReadJsonStringMap(labels, f.At("labels"), api::kMaxLabels, &m.labels);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = api::ValidateLabels(m.labels, f.At("labels")); !st.ok()) {
    return AsJsonError(st, f.At("labels"));
  }
  if (!m.token_file.empty() && std::filesystem::path(m.token_file).is_relative()) {
    m.token_file = (folder / m.token_file).lexically_normal().string();
  }
  return m;
}

absl::StatusOr<QuotaConfig> ReadQuota(const Json& j, const std::string& path) {
  QuotaConfig q;
  Fields f(j, path);
  f.String("name", &q.name, /*required=*/true, 63);
  const Json* namespaces = f.Member("namespaces");
  const Json* limit = f.Member("limit");
  f.NoOthers();
  if (f.ok() && !api::IsDnsLabel(q.name)) f.Fail("name", "must be a DNS-1123 label");
  if (f.ok() && (namespaces == nullptr || !namespaces->is_array() || namespaces->empty())) {
    f.Fail("namespaces", "must be a non-empty list of namespaces");
  }
  if (f.ok() && limit == nullptr) {
    f.Fail("limit", "missing: at least one of gpus, gpu_milli, cpu_milli, memory_mib");
  }
  if (!f.ok()) return f.status();
  for (size_t i = 0; i < namespaces->size(); ++i) {
    const std::string at = base::JsonPathIndex(f.At("namespaces"), i);
    const Json& ns = (*namespaces)[i];
    if (!ns.is_string() || !api::IsDnsLabel(ns.get<std::string>())) {
      return base::JsonError(at, absl::StrCat("must be a namespace (a DNS-1123 label; got ",
                                              base::DescribeJson(ns), ")"));
    }
    q.namespaces.push_back(ns.get<std::string>());
  }
  Fields l(*limit, f.At("limit"));
  constexpr int64_t kMax = int64_t{1} << 40;
  for (auto [key, out] : {std::pair{"gpus", &q.limit.gpus}, {"gpu_milli", &q.limit.gpu_milli},
                          {"cpu_milli", &q.limit.cpu_milli}, {"memory_mib", &q.limit.memory_mib}}) {
    if (l.Member(key) == nullptr) continue;
    int64_t v = 0;
    l.Int(key, &v, 0, kMax);
    *out = v;
  }
  l.NoOthers();
  if (l.ok() && q.limit == QuotaLimit{}) {
    l.Fail("", "must limit at least one of gpus, gpu_milli, cpu_milli, memory_mib");
  }
  if (!l.ok()) return l.status();
  return q;
}

absl::Status ReadQuotas(const Json* quotas, const std::string& path, FederationConfig* c) {
  if (quotas == nullptr) return absl::OkStatus();
  if (!quotas->is_array() || quotas->size() > kMaxQuotas) {
    return base::JsonError(path, absl::StrCat("must be a list of at most ", kMaxQuotas,
                                              " quotas (got ", base::DescribeJson(*quotas), ")"));
  }
  std::map<std::string, std::string> owner;  // namespace -> quota
  std::set<std::string> names;
  for (size_t i = 0; i < quotas->size(); ++i) {
    const std::string at = base::JsonPathIndex(path, i);
    absl::StatusOr<QuotaConfig> q = ReadQuota((*quotas)[i], at);
    if (!q.ok()) return q.status();
    if (!names.insert(q->name).second) {
      return base::JsonError(base::JsonPathChild(at, "name"),
                             absl::StrCat("'", q->name, "' names another quota already"));
    }
    for (size_t k = 0; k < q->namespaces.size(); ++k) {
      const auto [it, added] = owner.emplace(q->namespaces[k], q->name);
      if (!added) {
        return base::JsonError(
            base::JsonPathIndex(base::JsonPathChild(at, "namespaces"), k),
            absl::StrCat("namespace '", it->first, "' is already in quota '", it->second, "'"));
      }
    }
    c->quotas.push_back(*std::move(q));
  }
  return absl::OkStatus();
}

absl::Status ReadTop(const Json& j, const std::filesystem::path& folder, FederationConfig* c) {
  Fields f(j, "$");
  const Json* members = f.Member("members");
  const Json* lost_after = f.Member("lost_after");
  const Json* quotas = f.Member("quotas");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (lost_after != nullptr) {
    const std::string at = f.At("lost_after");
    if (!lost_after->is_string() && !lost_after->is_number()) {
      return base::JsonError(at, absl::StrCat("must be a duration such as 30s or 2m (got ",
                                              base::DescribeJson(*lost_after), ")"));
    }
    const std::string text =
        lost_after->is_string() ? lost_after->get<std::string>() : lost_after->dump();
    absl::StatusOr<double> s = base::ParseDuration(text, at, 1, base::Positive(kMaxLostAfterS));
    if (!s.ok()) return AsJsonError(s.status(), at);
    c->lost_after_s = *s;
  }
  if (members == nullptr || !members->is_array() || members->empty()) {
    return base::JsonError(f.At("members"), "must be a non-empty list of members");
  }
  if (members->size() > kMaxMembers) {
    return base::JsonError(f.At("members"), absl::StrCat("at most ", kMaxMembers, " members"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < members->size(); ++i) {
    const std::string path = base::JsonPathIndex(f.At("members"), i);
    absl::StatusOr<MemberConfig> m = ReadMember((*members)[i], path, folder);
    if (!m.ok()) return m.status();
    if (!names.insert(m->name).second) {
      return base::JsonError(base::JsonPathChild(path, "name"),
                             absl::StrCat("'", m->name, "' names another member already"));
    }
    c->members.push_back(*std::move(m));
  }
  return ReadQuotas(quotas, f.At("quotas"), c);
}

}  // namespace

absl::StatusOr<FederationConfig> ParseFederationConfig(std::string_view text,
                                                       std::string_view source) {
  absl::StatusOr<api::YamlDocument> doc = api::ParseYamlDocument(text, source);
  if (!doc.ok()) return doc.status();
  FederationConfig c;
  const std::filesystem::path folder = std::filesystem::path(std::string(source)).parent_path();
  if (absl::Status st = ReadTop(doc->value(), folder, &c); !st.ok()) return doc->Locate(st);
  for (size_t i = 0; i < c.members.size(); ++i) {
    c.members[i].line = doc->PositionOf(base::JsonPathIndex("$.members", i)).line;
  }
  return c;
}

absl::StatusOr<FederationConfig> LoadFederationConfig(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  return ParseFederationConfig(*text, path == "-" ? "<stdin>" : path);
}

}  // namespace seedance::federation
