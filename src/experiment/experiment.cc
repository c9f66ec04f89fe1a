#include "seedance/experiment/experiment.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"

namespace seedance::experiment {

namespace {

using Json = nlohmann::json;
using base::JsonError;
using base::JsonPathChild;
using base::JsonPathIndex;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([a-z0-9-]*[a-z0-9])? up to `max`; `extra` adds characters allowed inside.
bool IsName(std::string_view s, size_t max, std::string_view extra) {
  if (s.empty() || s.size() > max || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return IsLowerAlnum(c) || c == '-' || extra.find(c) != std::string_view::npos;
  });
}

bool IsMetricName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  auto word = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!word(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return word(c) || (c >= '0' && c <= '9') || c == '.'; });
}

absl::Status ReadVariants(const Json* v, ExperimentSpec* spec) {
  const std::string at = "$.variants";
  if (v == nullptr) return JsonError("$", "missing required key \"variants\"");
  if (absl::Status s = base::CheckJsonKind(*v, at, base::JsonKind::kArray); !s.ok()) return s;
  if (v->size() < 2 || v->size() > static_cast<size_t>(kMaxVariants)) {
    return JsonError(
        at, absl::StrCat("must hold 2..", kMaxVariants, " variants (got ", v->size(), ")"));
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string vi = JsonPathIndex(at, i);
    base::JsonFields<Json> f((*v)[i], vi);
    VariantSpec var;
    f.String("name", &var.name, /*required=*/true, 63);
    f.Number("weight", &var.weight, 0, 1e9);
    f.String("precision_plan", &var.precision_plan, false, 4096);
    if (f.ok() && f.Member("weight") == nullptr) f.Fail("", "missing required key \"weight\"");
    f.NoOthers();
    if (!f.ok()) return f.status();
    if (!IsName(var.name, 63, "._")) {
      return JsonError(JsonPathChild(vi, "name"),
                       absl::StrCat("must be lower-case letters, digits, '-', '.' or '_', "
                                    "starting and ending with a letter or digit (got ",
                                    base::QuoteForMessage(var.name), ")"));
    }
    if (!(var.weight > 0)) {
      return JsonError(JsonPathChild(vi, "weight"), "must be a number above 0 (got 0)");
    }
    if (spec->VariantIndex(var.name) >= 0) {
      return JsonError(JsonPathChild(vi, "name"),
                       absl::StrCat("variant \"", var.name, "\" is named twice"));
    }
    spec->variants.push_back(std::move(var));
  }
  return absl::OkStatus();
}

absl::Status ReadMetrics(const Json* v, ExperimentSpec* spec) {
  const std::string at = "$.metrics";
  if (v == nullptr) return JsonError("$", "missing required key \"metrics\"");
  if (absl::Status s = base::CheckJsonKind(*v, at, base::JsonKind::kArray); !s.ok()) return s;
  if (v->empty() || v->size() > static_cast<size_t>(kMaxMetrics)) {
    return JsonError(at,
                     absl::StrCat("must hold 1..", kMaxMetrics, " metrics (got ", v->size(), ")"));
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string mi = JsonPathIndex(at, i);
    base::JsonFields<Json> f((*v)[i], mi);
    MetricSpec m;
    std::string direction;
    f.String("name", &m.name, /*required=*/true, 64);
    f.String("direction", &direction, /*required=*/true, 16);
    f.NoOthers();
    if (!f.ok()) return f.status();
    if (!IsMetricName(m.name)) {
      return JsonError(JsonPathChild(mi, "name"),
                       absl::StrCat("must be a letter or '_' followed by letters, digits, '_' "
                                    "or '.', at most 64 (got ",
                                    base::QuoteForMessage(m.name), ")"));
    }
    if (direction == "increase") {
      m.direction = Direction::kIncrease;
    } else if (direction != "decrease") {
      return JsonError(JsonPathChild(mi, "direction"),
                       absl::StrCat("must be \"increase\" or \"decrease\" (got ",
                                    base::QuoteForMessage(direction), ")"));
    }
    if (spec->MetricIndex(m.name) >= 0) {
      return JsonError(JsonPathChild(mi, "name"),
                       absl::StrCat("metric \"", m.name, "\" is named twice"));
    }
    spec->metrics.push_back(std::move(m));
  }
  return absl::OkStatus();
}

// The metric values of one event's member `key` ("metrics" or "covariates").
absl::Status ReadValues(const Json* v, const std::string& at, const ExperimentSpec& spec,
                        std::vector<MetricValue>* out) {
  if (v == nullptr) return absl::OkStatus();
  if (absl::Status s = base::CheckJsonKind(*v, at, base::JsonKind::kObject); !s.ok()) return s;
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string p = JsonPathChild(at, it.key());
    const int m = spec.MetricIndex(it.key());
    if (m < 0) {
      return JsonError(
          p, absl::StrCat(
                 "unknown metric ", base::QuoteForMessage(it.key()), " (the experiment's metrics: ",
                 [&] {
                   std::string names;
                   for (const MetricSpec& ms : spec.metrics) {
                     absl::StrAppend(&names, names.empty() ? "" : ", ", ms.name);
                   }
                   return names;
                 }(),
                 ")"));
    }
    double x = 0;
    if (absl::Status s =
            base::ReadJsonNumber(&it.value(), p, -kMaxMetricValue, kMaxMetricValue, &x);
        !s.ok()) {
      return s;
    }
    out->push_back({m, x});
  }
  return absl::OkStatus();
}

absl::StatusOr<Event> ReadEvent(const Json& j, const std::string& at, const ExperimentSpec& spec) {
  base::JsonFields<Json> f(j, at);
  Event e;
  std::string variant;
  f.String("session", &e.session, /*required=*/true, kMaxSessionBytes);
  f.String("variant", &variant, /*required=*/true, 63);
  f.String("stop", &e.stop_reason, false, 1024);
  const Json* metrics = f.Member("metrics");
  const Json* covariates = f.Member("covariates");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (std::any_of(e.session.begin(), e.session.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return JsonError(JsonPathChild(at, "session"), "must not hold control characters");
  }
  e.variant = spec.VariantIndex(variant);
  if (e.variant < 0) {
    return JsonError(JsonPathChild(at, "variant"),
                     absl::StrCat("unknown variant ", base::QuoteForMessage(variant)));
  }
  if (absl::Status s = ReadValues(metrics, JsonPathChild(at, "metrics"), spec, &e.metrics);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadValues(covariates, JsonPathChild(at, "covariates"), spec, &e.covariates);
      !s.ok()) {
    return s;
  }
  if (e.metrics.empty() && e.stop_reason.empty()) {
    return JsonError(at, "must carry \"metrics\" (at least one) or a \"stop\" reason");
  }
  return e;
}

// SplitMix64's finaliser.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string_view DirectionName(Direction d) {
  return d == Direction::kIncrease ? "increase" : "decrease";
}

int ExperimentSpec::VariantIndex(std::string_view name) const {
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int ExperimentSpec::MetricIndex(std::string_view name) const {
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status CheckExperimentName(std::string_view name) {
  if (IsName(name, 63, "")) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("experiment name ", base::QuoteForMessage(name),
                   ": must be a DNS-1123 label (lower-case letters, digits and '-', at most 63)"));
}

absl::StatusOr<ExperimentSpec> ParseExperimentSpec(const Json& body) {
  base::JsonFields<Json> f(body, "$");
  ExperimentSpec spec;
  f.String("control", &spec.control, /*required=*/true, 63);
  f.Number("mde", &spec.mde, 1e-6, 10);
  f.Number("alpha", &spec.alpha, 1e-6, 0.5);
  f.Number("power", &spec.power, 0.5, 0.999);
  f.String("deployment", &spec.deployment, false, 253);
  const Json* variants = f.Member("variants");
  const Json* metrics = f.Member("metrics");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (absl::Status s = ReadVariants(variants, &spec); !s.ok()) return s;
  if (absl::Status s = ReadMetrics(metrics, &spec); !s.ok()) return s;
  if (spec.control_index() < 0) {
    return JsonError("$.control", absl::StrCat("must name one of the variants (got ",
                                               base::QuoteForMessage(spec.control), ")"));
  }
  return spec;
}

Json SpecToJson(const ExperimentSpec& spec) {
  Json variants = Json::array(), metrics = Json::array();
  for (const VariantSpec& v : spec.variants) {
    Json j = {{"name", v.name}, {"weight", v.weight}};
    if (!v.precision_plan.empty()) j["precision_plan"] = v.precision_plan;
    variants.push_back(std::move(j));
  }
  for (const MetricSpec& m : spec.metrics) {
    metrics.push_back({{"name", m.name}, {"direction", DirectionName(m.direction)}});
  }
  Json j = {{"control", spec.control}, {"variants", variants}, {"metrics", metrics},
            {"mde", spec.mde},         {"alpha", spec.alpha},  {"power", spec.power}};
  if (!spec.deployment.empty()) j["deployment"] = spec.deployment;
  return j;
}

uint64_t AssignmentHash(std::string_view experiment, std::string_view session) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto feed = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
  };
  feed(experiment);
  feed("\x1f");
  feed(session);
  return Mix(h);
}

int AssignVariant(const ExperimentSpec& spec, std::string_view experiment,
                  std::string_view session) {
  SEEDANCE_CHECK(!spec.variants.empty()) << "an experiment without variants";
  double total = 0;
  for (const VariantSpec& v : spec.variants) total += v.weight;
  // The top 53 bits as a point in [0, 1).
  const double u =
      static_cast<double>(AssignmentHash(experiment, session) >> 11) * 0x1.0p-53 * total;
  double acc = 0;
  for (size_t i = 0; i + 1 < spec.variants.size(); ++i) {
    acc += spec.variants[i].weight;
    if (u < acc) return static_cast<int>(i);
  }
  return static_cast<int>(spec.variants.size()) - 1;
}

absl::StatusOr<std::vector<Event>> ParseEvents(const Json& body, const ExperimentSpec& spec,
                                               size_t max_events) {
  base::JsonFields<Json> f(body, "$");
  const Json* events = f.Member("events");
  f.NoOthers();
  if (!f.ok()) return f.status();
  if (events == nullptr) return JsonError("$", "missing required key \"events\"");
  if (absl::Status s = base::CheckJsonKind(*events, "$.events", base::JsonKind::kArray); !s.ok()) {
    return s;
  }
  if (events->empty() || events->size() > max_events) {
    return JsonError("$.events", absl::StrCat("must hold 1..", max_events, " events (got ",
                                              events->size(), ")"));
  }
  std::vector<Event> out;
  out.reserve(events->size());
  for (size_t i = 0; i < events->size(); ++i) {
    absl::StatusOr<Event> e = ReadEvent((*events)[i], JsonPathIndex("$.events", i), spec);
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  return out;
}

std::string EventsToJson(const std::vector<Event>& events, const ExperimentSpec& spec) {
  Json list = Json::array();
  for (const Event& e : events) {
    Json j = {{"session", e.session}, {"variant", spec.variants[e.variant].name}};
    auto values = [&](const std::vector<MetricValue>& vs) {
      Json o = Json::object();
      for (const MetricValue& v : vs) o[spec.metrics[v.metric].name] = v.value;
      return o;
    };
    if (!e.metrics.empty()) j["metrics"] = values(e.metrics);
    if (!e.covariates.empty()) j["covariates"] = values(e.covariates);
    if (!e.stop_reason.empty()) j["stop"] = e.stop_reason;
    list.push_back(std::move(j));
  }
  return base::DumpJson(Json{{"events", list}}, -1);
}

}  // namespace seedance::experiment
