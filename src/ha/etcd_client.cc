#include "etcd_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::ha {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxEndpoints = 16;

absl::Status BadEndpoint(const std::string& flag, const std::string& url, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": expected etcd://HOST:PORT[,HOST:PORT...] (", why, "), got '",
                   base::ForTerminal(base::Clip(url, 200)), "'"));
}

bool HostOk(const std::string& host, bool bracketed) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [&](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
           (bracketed && (c == ':' || c == '%'));
  });
}

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

absl::StatusOr<std::string> Unb64(const Json& j, const char* field) {
  if (!j.contains(field)) return std::string();
  std::string out;
  if (!j[field].is_string() || !absl::Base64Unescape(j[field].get<std::string>(), &out)) {
    return absl::DataLossError(absl::StrCat("etcd: field '", field, "' is not base64"));
  }
  return out;
}

// A 64-bit integer field as the gateway writes it (a decimal string; absent = 0).
int64_t Int(const Json& j, const char* field) {
  if (!j.is_object() || !j.contains(field)) return 0;
  const Json& v = j[field];
  if (v.is_number_integer()) return v.get<int64_t>();
  int64_t out = 0;
  if (v.is_string() && absl::SimpleAtoi(v.get<std::string>(), &out)) return out;
  return 0;
}

absl::StatusOr<std::vector<KeyValue>> KeyValues(const Json& j) {
  std::vector<KeyValue> out;
  if (!j.is_object() || !j.contains("kvs")) return out;
  for (const Json& kv : j["kvs"]) {
    KeyValue r;
    absl::StatusOr<std::string> k = Unb64(kv, "key"), v = Unb64(kv, "value");
    if (!k.ok()) return k.status();
    if (!v.ok()) return v.status();
    r.key = std::move(*k);
    r.value = std::move(*v);
    r.create_revision = Int(kv, "create_revision");
    r.mod_revision = Int(kv, "mod_revision");
    r.lease = Int(kv, "lease");
    out.push_back(std::move(r));
  }
  return out;
}

Json OpJson(const TxnOp& op) {
  switch (op.kind) {
    case TxnOp::kPut: {
      Json p = {{"key", B64(op.key)}, {"value", B64(op.value)}};
      if (op.lease != 0) p["lease"] = std::to_string(op.lease);
      return {{"request_put", p}};
    }
    case TxnOp::kDeleteRange: {
      Json d = {{"key", B64(op.key)}};
      if (!op.range_end.empty()) d["range_end"] = B64(op.range_end);
      return {{"request_delete_range", d}};
    }
    case TxnOp::kRange: {
      Json r = {{"key", B64(op.key)}};
      if (!op.range_end.empty()) r["range_end"] = B64(op.range_end);
      return {{"request_range", r}};
    }
  }
  return {};
}

Json CompareJson(const TxnCompare& c) {
  Json j = {{"key", B64(c.key)}, {"result", "EQUAL"}};
  if (c.target == TxnCompare::kCreate) {
    j["target"] = "CREATE";
    j["create_revision"] = std::to_string(c.create_revision);
  } else {
    j["target"] = "VALUE";
    j["value"] = B64(c.value);
  }
  return j;
}

class GatewayClient final : public EtcdClient {
 public:
  GatewayClient(std::vector<EtcdEndpoint> endpoints, EtcdClientOptions options)
      : endpoints_(std::move(endpoints)), options_(options) {
    std::vector<std::string> parts;
    for (const EtcdEndpoint& e : endpoints_) parts.push_back(absl::StrCat(e.host, ":", e.port));
    url_ = absl::StrCat("etcd://", absl::StrJoin(parts, ","));
  }

  absl::StatusOr<RangeResult> Range(const std::string& key, const std::string& range_end,
                                    int64_t limit) override {
    Json req = {{"key", B64(key)}};
    if (!range_end.empty()) req["range_end"] = B64(range_end);
    if (limit > 0) req["limit"] = std::to_string(limit);
    absl::StatusOr<Json> j = Post("/v3/kv/range", req);
    if (!j.ok()) return j.status();
    RangeResult r;
    absl::StatusOr<std::vector<KeyValue>> kvs = KeyValues(*j);
    if (!kvs.ok()) return kvs.status();
    r.kvs = std::move(*kvs);
    r.revision = Int((*j)["header"], "revision");
    r.more = j->value("more", false);
    return r;
  }

  absl::StatusOr<TxnResult> Txn(const std::vector<TxnCompare>& compare,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure) override {
    Json req = {{"compare", Json::array()}, {"success", Json::array()}, {"failure", Json::array()}};
    for (const TxnCompare& c : compare) req["compare"].push_back(CompareJson(c));
    for (const TxnOp& op : success) req["success"].push_back(OpJson(op));
    for (const TxnOp& op : failure) req["failure"].push_back(OpJson(op));
    absl::StatusOr<Json> j = Post("/v3/kv/txn", req);
    if (!j.ok()) return j.status();
    TxnResult r;
    r.succeeded = j->value("succeeded", false);  // proto3 JSON leaves out false
    r.revision = Int((*j)["header"], "revision");
    if (j->contains("responses")) {
      for (const Json& resp : (*j)["responses"]) {
        if (!resp.contains("response_range")) continue;
        absl::StatusOr<std::vector<KeyValue>> kvs = KeyValues(resp["response_range"]);
        if (!kvs.ok()) return kvs.status();
        r.ranges.push_back(std::move(*kvs));
      }
    }
    return r;
  }

  absl::Status Compact(int64_t revision) override {
    return Post("/v3/kv/compaction", {{"revision", std::to_string(revision)}}).status();
  }

  absl::StatusOr<int64_t> LeaseGrant(int64_t ttl_s) override {
    absl::StatusOr<Json> j = Post("/v3/lease/grant", {{"TTL", std::to_string(ttl_s)}});
    if (!j.ok()) return j.status();
    const int64_t id = Int(*j, "ID");
    if (id == 0) return absl::UnavailableError(absl::StrCat(url_, ": lease grant without an ID"));
    return id;
  }

  absl::StatusOr<int64_t> LeaseKeepAlive(int64_t id) override {
    absl::StatusOr<Json> j = Post("/v3/lease/keepalive", {{"ID", std::to_string(id)}});
    if (!j.ok()) return j.status();
    const int64_t ttl = j->contains("result") ? Int((*j)["result"], "TTL") : 0;
    if (ttl <= 0) return absl::NotFoundError(absl::StrCat("lease ", id, " has expired"));
    return ttl;
  }

  absl::Status LeaseRevoke(int64_t id) override {
    return Post("/v3/lease/revoke", {{"ID", std::to_string(id)}}).status();
  }

  const std::string& url() const override { return url_; }

 private:
  httplib::Client& Conn(size_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!conns_[i]) {
      conns_[i] = std::make_unique<httplib::Client>(endpoints_[i].host, endpoints_[i].port);
      const auto us = [](double s) { return static_cast<time_t>(s * 1e6); };
      conns_[i]->set_connection_timeout(0, us(options_.connect_timeout_s));
      conns_[i]->set_read_timeout(0, us(options_.request_timeout_s));
      conns_[i]->set_write_timeout(0, us(options_.request_timeout_s));
      conns_[i]->set_keep_alive(true);
      conns_[i]->set_tcp_nodelay(true);  // no Nagle delay against the delayed ACK: ~40 ms a call
    }
    return *conns_[i];
  }

  // One request, on the current endpoint and then on the others until one answers.
  absl::StatusOr<Json> Post(const std::string& path, const Json& body) {
    base::MutexLock lock(mu_);
    if (conns_.empty()) conns_.resize(endpoints_.size());
    const std::string text = body.dump();
    std::string last_error;
    for (size_t attempt = 0; attempt < endpoints_.size(); ++attempt) {
      const size_t i = (current_ + attempt) % endpoints_.size();
      httplib::Result res = Conn(i).Post(path, text, "application/json");
      const std::string where = absl::StrCat(endpoints_[i].host, ":", endpoints_[i].port, path);
      if (!res) {
        last_error = absl::StrCat(where, ": ", httplib::to_string(res.error()));
        conns_[i].reset();
        continue;
      }
      Json j = Json::parse(res->body, nullptr, false);
      if (res->status != 200 || j.is_discarded() || !j.is_object() || j.contains("error")) {
        const std::string msg = j.is_object() && j.contains("message") && j["message"].is_string()
                                    ? j["message"].get<std::string>()
                                    : base::Clip(res->body, 200);
        // etcd says so when it has no leader or is stopping: another member may serve.
        if (res->status >= 500 && Int(j, "code") == 14) {
          last_error = absl::StrCat(where, ": ", msg);
          continue;
        }
        return absl::FailedPreconditionError(
            absl::StrCat(where, ": HTTP ", res->status, ": ", base::ForTerminal(msg)));
      }
      current_ = i;
      return j;
    }
    return absl::UnavailableError(absl::StrCat("etcd unreachable (", url_, "): ", last_error));
  }

  const std::vector<EtcdEndpoint> endpoints_;
  const EtcdClientOptions options_;
  std::string url_;
  base::Mutex mu_;
  std::vector<std::unique_ptr<httplib::Client>> conns_ ABSL_GUARDED_BY(mu_);
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::StatusOr<std::vector<EtcdEndpoint>> ParseEtcdUrl(const std::string& url,
                                                       const std::string& flag) {
  std::string rest = url;
  if (rest.rfind("etcd://", 0) == 0) rest = rest.substr(7);
  if (rest.empty()) return BadEndpoint(flag, url, "no endpoint");
  std::vector<EtcdEndpoint> out;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(rest, ','))) {
    const size_t colon = part.rfind(':');
    int64_t port = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(part.substr(colon + 1), &port) ||
        port < 1 || port > 65535) {
      return BadEndpoint(flag, url, "each endpoint is HOST:PORT with PORT in 1..65535");
    }
    std::string host(part.substr(0, colon));
    const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) host = host.substr(1, host.size() - 2);
    if (!HostOk(host, bracketed)) {
      return BadEndpoint(flag, url, "HOST is a name or an address, [::1] for IPv6");
    }
    out.push_back({host, static_cast<int>(port)});
  }
  if (out.size() > kMaxEndpoints) {
    return BadEndpoint(flag, url, absl::StrCat("at most ", kMaxEndpoints, " endpoints"));
  }
  return out;
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::unique_ptr<EtcdClient> EtcdClient::New(std::vector<EtcdEndpoint> endpoints,
                                            EtcdClientOptions options) {
  return std::make_unique<GatewayClient>(std::move(endpoints), options);
}

}  // namespace seedance::ha
