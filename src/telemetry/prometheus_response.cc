#include "prometheus_response.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"

namespace seedance::telemetry::internal {
namespace {

using nlohmann::json;

// Paths in messages: base/json_path.h ("$.data.result[3].value[1]").
std::string Child(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
std::string Index(std::string_view path, size_t i) { return base::JsonPathIndex(path, i); }

class ReplyReader {
 public:
  explicit ReplyReader(std::string_view where) : where_(where) {}

  absl::Status Bad(const std::string& path, const std::string& what) const {
    return absl::DataLossError(absl::StrCat(where_, ": ", path, ": ", what));
  }
  // `v` of `kind`, else the one JSON reader's "PATH: must be ... (got X)" (base/json_fields.h),
  // as DataLoss: the peer's reply is broken, not the caller's input.
  absl::Status Kind(const json& v, const std::string& path, base::JsonKind kind) const {
    const absl::Status st = base::CheckJsonKind(v, path, kind);
    if (st.ok()) return st;
    return absl::DataLossError(absl::StrCat(where_, ": ", std::string(st.message())));
  }

  // Parses `body` and checks the envelope: {"status": "success", "data": {"resultType":
  // `type`, "result": [...]}}. On success *result points into *doc.
  absl::Status Envelope(std::string_view body, const char* type, json* doc,
                        const json** result) const {
    if (body.size() > kMaxPrometheusResponseBytes) {
      return Bad("$", absl::StrCat("reply of ", body.size(), " bytes is over the ",
                                   kMaxPrometheusResponseBytes >> 20, " MiB limit"));
    }
    if (base::JsonNestingDepth(body, kMaxPrometheusJsonDepth) > kMaxPrometheusJsonDepth) {
      return Bad("$", absl::StrCat("nested deeper than ", kMaxPrometheusJsonDepth, " levels"));
    }
    *doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (doc->is_discarded()) return Bad("$", "not JSON (not a Prometheus API reply)");
    if (!doc->is_object()) return Bad("$", "must be an object (not a Prometheus API reply)");
    auto status = doc->find("status");
    if (status == doc->end()) return Bad("$.status", "missing (not a Prometheus API reply)");
    if (absl::Status st = Kind(*status, "$.status", base::JsonKind::kString); !st.ok()) return st;
    if (status->get_ref<const std::string&>() != "success") {
      std::string msg = absl::StrCat("expected \"success\", got \"",
                                     base::Clip(status->get_ref<const std::string&>()), "\"");
      const std::string err = PrometheusErrorMessage(body);
      if (!err.empty()) absl::StrAppend(&msg, ": ", err);
      return Bad("$.status", msg);
    }
    auto data = doc->find("data");
    if (data == doc->end()) return Bad("$.data", "missing");
    if (absl::Status st = Kind(*data, "$.data", base::JsonKind::kObject); !st.ok()) return st;
    auto rtype = data->find("resultType");
    if (rtype == data->end()) return Bad("$.data.resultType", "missing");
    if (absl::Status st = Kind(*rtype, "$.data.resultType", base::JsonKind::kString); !st.ok()) {
      return st;
    }
    if (rtype->get_ref<const std::string&>() != type) {
      return Bad("$.data.resultType",
                 absl::StrCat("expected \"", type, "\", got \"",
                              base::Clip(rtype->get_ref<const std::string&>()), "\""));
    }
    auto res = data->find("result");
    if (res == data->end()) return Bad("$.data.result", "missing");
    if (absl::Status st = Kind(*res, "$.data.result", base::JsonKind::kArray); !st.ok()) return st;
    *result = &*res;
    return absl::OkStatus();
  }

  // {"metric": {"label": "value", ...}}: labels must be strings.
  absl::Status Labels(const json& series, const std::string& path, PromLabels* out) const {
    if (absl::Status st = Kind(series, path, base::JsonKind::kObject); !st.ok()) return st;
    auto m = series.find("metric");
    if (m == series.end()) return absl::OkStatus();  // a series without labels
    if (absl::Status st = Kind(*m, Child(path, "metric"), base::JsonKind::kObject); !st.ok()) {
      return st;
    }
    for (auto it = m->begin(); it != m->end(); ++it) {
      const std::string at = Child(Child(path, "metric"), it.key());
      if (absl::Status st = Kind(it.value(), at, base::JsonKind::kString); !st.ok()) return st;
      (*out)[it.key()] = it.value().get<std::string>();
    }
    return absl::OkStatus();
  }

  // [unix_time, "value"].
  absl::Status Point(const json& pt, const std::string& path, double* t, double* v) const {
    if (!pt.is_array() || pt.size() != 2) return Bad(path, "expected [time, \"value\"]");
    if (!pt[0].is_number()) return Bad(Index(path, 0), "expected a number (Unix time)");
    *t = pt[0].get<double>();
    if (!std::isfinite(*t)) return Bad(Index(path, 0), "expected a finite Unix time");
    if (!pt[1].is_string()) return Bad(Index(path, 1), "expected a string holding a number");
    const std::string& s = pt[1].get_ref<const std::string&>();
    if (s == "NaN" || s == "+Inf" || s == "-Inf" || s == "Inf") {
      *v = std::nan("");
      return absl::OkStatus();
    }
    if (!absl::SimpleAtod(s, v)) {
      return Bad(Index(path, 1), absl::StrCat("expected a number, got \"", base::Clip(s), "\""));
    }
    if (!std::isfinite(*v)) *v = std::nan("");
    return absl::OkStatus();
  }

 private:
  std::string where_;
};

}  // namespace

absl::StatusOr<PromVector> ParseQueryResponse(std::string_view body, std::string_view where) {
  ReplyReader r(where);
  json doc;
  const json* result = nullptr;
  if (absl::Status s = r.Envelope(body, "vector", &doc, &result); !s.ok()) return s;
  PromVector out;
  out.reserve(result->size());
  for (size_t i = 0; i < result->size(); ++i) {
    const std::string path = Index("$.data.result", i);
    const json& series = (*result)[i];
    PromSample s;
    if (absl::Status st = r.Labels(series, path, &s.metric); !st.ok()) return st;
    auto value = series.find("value");
    if (value == series.end()) return r.Bad(Child(path, "value"), "missing");
    double t = 0;
    if (absl::Status st = r.Point(*value, Child(path, "value"), &t, &s.value); !st.ok()) {
      return st;
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<PromVector>> ParseRangeResponse(std::string_view body,
                                                           std::string_view where, double start,
                                                           double end, double step) {
  ReplyReader r(where);
  const double span = (end - start) / step;
  if (!(step > 0) || !(span >= 0 && span < 2147483648.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(where), ": bad range (start ", base::FormatNumber(start), ", end ",
                     base::FormatNumber(end), ", step ", base::FormatNumber(step), ")"));
  }
  json doc;
  const json* result = nullptr;
  if (absl::Status s = r.Envelope(body, "matrix", &doc, &result); !s.ok()) return s;
  const size_t steps = static_cast<size_t>(std::llround(span)) + 1;
  std::vector<PromVector> out(steps);
  for (size_t i = 0; i < result->size(); ++i) {
    const std::string path = Index("$.data.result", i);
    const json& series = (*result)[i];
    PromLabels labels;
    if (absl::Status st = r.Labels(series, path, &labels); !st.ok()) return st;
    auto values = series.find("values");
    const std::string values_path = Child(path, "values");
    if (values == series.end()) return r.Bad(values_path, "missing");
    if (absl::Status st = r.Kind(*values, values_path, base::JsonKind::kArray); !st.ok()) {
      return st;
    }
    for (size_t k = 0; k < values->size(); ++k) {
      double t = 0, v = 0;
      if (absl::Status st = r.Point((*values)[k], Index(values_path, k), &t, &v); !st.ok()) {
        return st;
      }
      const double pos = std::round((t - start) / step);
      if (!(pos >= 0 && pos < static_cast<double>(steps))) continue;  // off the range
      out[static_cast<size_t>(pos)].push_back({labels, v});
    }
  }
  return out;
}

std::string PrometheusErrorMessage(std::string_view body) {
  if (body.size() > kMaxPrometheusResponseBytes ||
      base::JsonNestingDepth(body, kMaxPrometheusJsonDepth) > kMaxPrometheusJsonDepth) {
    return "";
  }
  const json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return "";
  auto err = doc.find("error");
  if (err == doc.end() || !err->is_string()) return "";
  return base::Clip(err->get_ref<const std::string&>(), 200);
}

}  // namespace seedance::telemetry::internal
