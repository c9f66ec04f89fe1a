// libFuzzer target for the REST API's request decoders: arbitrary bytes as a POST /v1/pods body,
// a PUT /v1/nodes/{name} body, a `seedance apply -f` file, and the experiments' PUT and events
// bodies (seedance_experiment's decoders, as the server runs them after ParseJsonBody). Nothing may
// crash, hang or throw; oracles: an accepted pod round-trips through PodRequestToJson, every error
// is InvalidArgument or ResourceExhausted with a well-formed error body, and every accepted apply
// object's body is accepted again by its decoder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "seedance/api/api.h"
#include "seedance/base/check.h"
#include "seedance/base/text.h"
#include "seedance/experiment/experiment.h"

namespace api = seedance::api;

namespace {

void CheckError(const absl::Status& s) {
  SEEDANCE_CHECK(s.code() == absl::StatusCode::kInvalidArgument ||
                 s.code() == absl::StatusCode::kResourceExhausted)
      << "unexpected code " << static_cast<int>(s.code()) << ": " << s.message();
  SEEDANCE_CHECK(nlohmann::json::accept(api::ErrorBody(s))) << "error body is not JSON";
  const int http = api::HttpStatusFor(s);
  SEEDANCE_CHECK(http == 400 || http == 413) << "HTTP " << http;
}

// An experiment's definition and events: accepted bodies round-trip, and the analysis of
// accepted events reports without crashing; refusals are InvalidArgument.
void FuzzExperiment(std::string_view text) {
  namespace ex = seedance::experiment;
  absl::StatusOr<nlohmann::ordered_json> body = api::ParseJsonBody(text);
  if (!body.ok()) return CheckError(body.status());
  const nlohmann::json j(*body);
  absl::StatusOr<ex::ExperimentSpec> spec = ex::ParseExperimentSpec(j);
  if (spec.ok()) {
    absl::StatusOr<ex::ExperimentSpec> again = ex::ParseExperimentSpec(ex::SpecToJson(*spec));
    SEEDANCE_CHECK(again.ok() && ex::SpecToJson(*again) == ex::SpecToJson(*spec))
        << "experiment spec does not round-trip";
  } else {
    CheckError(spec.status());
  }
  static const ex::ExperimentSpec kSpec = *ex::ParseExperimentSpec(nlohmann::json::parse(
      R"({"control": "a", "variants": [{"name": "a", "weight": 1}, {"name": "b", "weight": 2}],
          "metrics": [{"name": "latency_ms", "direction": "decrease"},
                      {"name": "quality", "direction": "increase"}]})"));
  absl::StatusOr<std::vector<ex::Event>> events = ex::ParseEvents(j, kSpec, 1000);
  if (!events.ok()) return CheckError(events.status());
  const std::string canonical = ex::EventsToJson(*events, kSpec);
  absl::StatusOr<std::vector<ex::Event>> again =
      ex::ParseEvents(nlohmann::json::parse(canonical), kSpec, 1000);
  SEEDANCE_CHECK(again.ok() && ex::EventsToJson(*again, kSpec) == canonical)
      << "events do not round-trip";
  ex::Experiment x("fuzz", kSpec);
  x.Apply(*events);
  SEEDANCE_CHECK(nlohmann::json::accept(x.Report().dump())) << "report is not JSON";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<api::PodRequest> pod = api::ParsePodRequest(text);
  if (pod.ok()) {
    absl::StatusOr<api::PodRequest> again =
        api::ParsePodRequest(seedance::base::DumpJson(api::PodRequestToJson(*pod)));
    SEEDANCE_CHECK(again.ok() && *again == *pod) << "pod does not round-trip";
  } else {
    CheckError(pod.status());
  }

  absl::StatusOr<api::NodeRequest> node = api::DecodeNodeRequest("node-1", text);
  if (node.ok()) {
    SEEDANCE_CHECK(node->spec.name == "node-1") << "node name is not the path's";
    SEEDANCE_CHECK(node->spec.num_gpus >= 0 && node->spec.num_gpus <= 16) << node->spec.num_gpus;
  } else {
    CheckError(node.status());
  }

  absl::StatusOr<std::vector<api::ApplyObject>> objs = api::ParseApplyFile(text, "fuzz.yaml");
  if (objs.ok()) {
    for (const api::ApplyObject& o : *objs) {
      if (o.kind == api::ApplyObject::kPod) {
        SEEDANCE_CHECK(api::ParsePodRequest(o.body_json).ok()) << o.body_json;
      } else {
        SEEDANCE_CHECK(api::DecodeNodeRequest(o.name, o.body_json).ok()) << o.body_json;
      }
    }
  } else {
    SEEDANCE_CHECK(objs.status().code() == absl::StatusCode::kInvalidArgument)
        << objs.status().message();
  }
  FuzzExperiment(text);
  return 0;
}
