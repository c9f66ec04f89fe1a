#include "seedance/k8s/informer.h"

#include <cctype>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_fields.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::k8s {
namespace {

using json = nlohmann::json;

constexpr int kPageSize = 500;
// One watch event line, at most (a pod with its managedFields is a few KiB).
constexpr size_t kMaxLine = size_t{16} << 20;

std::unique_ptr<httplib::Client> NewClient(const ApiServerOptions& o, int read_timeout_s) {
  auto c = std::make_unique<httplib::Client>(o.url);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(static_cast<time_t>(o.timeout_s), 0);
  c->set_read_timeout(read_timeout_s, 0);
  if (!o.ca_file.empty()) c->set_ca_cert_path(o.ca_file.c_str());
  return c;
}

httplib::Headers Headers(const ApiServerOptions& o) {
  httplib::Headers h = {{"Accept", "application/json"}, {"User-Agent", "seedance-informer"}};
  if (!o.token.empty()) h.emplace("Authorization", "Bearer " + o.token);
  return h;
}

// Percent-encoding of a query value (continue tokens are base64 with '=', '+', '/').
std::string QueryEscape(const std::string& v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

ObjectEvent::Type TypeOf(const std::string& t) {
  return t == "DELETED"    ? ObjectEvent::Type::kDeleted
         : t == "MODIFIED" ? ObjectEvent::Type::kModified
                           : ObjectEvent::Type::kAdded;
}

}  // namespace

struct Informer::Http {
  std::unique_ptr<httplib::Client> list, watch;
};

Informer::Informer(ApiServerOptions api, std::string resource, EventSink sink)
    : api_(std::move(api)),
      resource_(std::move(resource)),
      sink_(std::move(sink)),
      http_(std::make_unique<Http>()) {
  http_->list = NewClient(api_, static_cast<int>(api_.timeout_s) + 1);
}

Informer::~Informer() = default;

void Informer::Stop() {
  stop_ = true;
  base::MutexLock lock(mu_);
  if (http_->watch) http_->watch->stop();
}

InformerStats Informer::stats() const {
  base::MutexLock lock(mu_);
  return stats_;
}

void Informer::Error(const std::string& what) {
  base::MutexLock lock(mu_);
  ++stats_.errors;
  stats_.last_error = what;
}

bool Informer::Decode(const json& object, ObjectEvent* event) {
  std::vector<Unknown> unknown;  // decoded as far as it goes; the sink decides
  const absl::Status st = resource_ == "nodes" ? DecodeNode(object, "$", &event->node, &unknown)
                                               : DecodePod(object, "$", &event->pod, &unknown);
  if (st.ok()) return true;
  base::MutexLock lock(mu_);
  ++stats_.undecodable;
  stats_.last_error = absl::StrCat(resource_, ": ", st.message());
  return false;
}

std::string Informer::Selector() const {
  return field_selector.empty() ? "" : absl::StrCat("&fieldSelector=", QueryEscape(field_selector));
}

bool Informer::List(std::string* resource_version) {
  std::vector<ObjectEvent> events;
  std::string token;
  do {
    std::string path = absl::StrCat("/api/v1/", resource_, "?limit=", kPageSize, Selector());
    if (!token.empty()) absl::StrAppend(&path, "&continue=", QueryEscape(token));
    auto r = http_->list->Get(path, Headers(api_));
    if (!r || r->status != 200) {
      Error(absl::StrCat("list ", resource_, ": ",
                         r ? absl::StrCat("HTTP ", r->status) : httplib::to_string(r.error())));
      return false;
    }
    const json list = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      Error(absl::StrCat("list ", resource_, ": not a list"));
      return false;
    }
    for (const json& item : list["items"]) {
      ObjectEvent e;
      if (Decode(item, &e)) events.push_back(std::move(e));
    }
    const json& meta = list.value("metadata", json::object());
    *resource_version = base::StringField(meta, "resourceVersion");
    token = base::StringField(meta, "continue");
  } while (!token.empty() && !stop_);
  {
    base::MutexLock lock(mu_);
    ++stats_.lists;
    stats_.events += static_cast<int64_t>(events.size());
  }
  sink_(std::move(events), /*relisted=*/true);
  return true;
}

bool Informer::Watch(std::string* resource_version) {
  {
    base::MutexLock lock(mu_);
    if (stop_) return true;
    http_->watch = NewClient(api_, watch_timeout_s + 30);
    ++stats_.watches;
  }
  const std::string path = absl::StrCat(
      "/api/v1/", resource_, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", watch_timeout_s,
      "&resourceVersion=", QueryEscape(*resource_version), Selector());
  std::string buffer;
  bool gone = false, broken = false;
  auto handle_line = [&](const std::string& line) {
    const json ev = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!ev.is_object() || !ev.contains("object") || !ev["object"].is_object()) return;
    const std::string type = base::StringField(ev, "type");
    const json& object = ev["object"];
    if (type == "ERROR") {
      gone = base::IntField(object, "code") == 410;
      if (!gone)
        Error(
            absl::StrCat("watch ", resource_, ": ", base::StringField(object, "message", "error")));
      broken = true;
      return;
    }
    if (object.contains("metadata") && object["metadata"].is_object()) {
      const std::string rv = base::StringField(object["metadata"], "resourceVersion");
      if (!rv.empty()) *resource_version = rv;
    }
    if (type == "BOOKMARK") return;
    ObjectEvent e;
    e.type = TypeOf(type);
    if (!Decode(object, &e)) return;
    {
      base::MutexLock lock(mu_);
      ++stats_.events;
    }
    std::vector<ObjectEvent> one;
    one.push_back(std::move(e));
    sink_(std::move(one), /*relisted=*/false);
  };
  auto r = http_->watch->Get(path, Headers(api_), [&](const char* data, size_t n) {
    buffer.append(data, n);
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      handle_line(buffer.substr(0, nl));
      buffer.erase(0, nl + 1);
      if (broken) return false;
    }
    return !stop_ && buffer.size() <= kMaxLine;
  });
  if (stop_) return true;
  if (gone) return false;
  if (broken) return false;
  if (!r) {
    // The stream ended without a reply status (cut, or our own read timeout): list again.
    Error(absl::StrCat("watch ", resource_, ": ", httplib::to_string(r.error())));
    return false;
  }
  if (r->status == 410) return false;
  if (r->status != 200) {
    Error(absl::StrCat("watch ", resource_, ": HTTP ", r->status));
    return false;
  }
  return true;  // the server ended the watch (timeoutSeconds): resume from resource_version
}

void Informer::Run() {
  std::string rv;
  bool listed = false;
  while (!stop_) {
    if (!listed) listed = List(&rv);
    if (listed && !stop_) listed = Watch(&rv);
    if (!listed && !stop_) {
      // Wait before trying again, waking early on Stop.
      for (double waited = 0; waited < retry_s && !stop_; waited += 0.05) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
}

}  // namespace seedance::k8s
