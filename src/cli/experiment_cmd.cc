// `seedance experiment create|list|get|report|stop|delete|assign|events` over the REST API
// (docs/experiments.md). Definitions and events are checked here by the decoders the server
// runs (seedance_experiment), so a file the command accepts is one the server accepts.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client_common.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"
#include "seedance/base/io.h"
#include "seedance/base/json_fields.h"
#include "seedance/base/text.h"
#include "seedance/experiment/experiment.h"

namespace seedance::cli {
namespace {

using Json = nlohmann::json;
namespace ex = experiment;

const std::vector<std::string> kFormats = {"table", "json", "yaml"};

struct ExperimentFlags {
  ClientFlags client;
  OutFlags out;
  std::string name, ns, file, session, reason;
  int batch = 1000;
};

std::string Path(const ExperimentFlags& f, const std::string& suffix = "",
                 const std::string& query = "") {
  std::string p = "/v1/experiments";
  if (!f.name.empty()) absl::StrAppend(&p, "/", api::UrlEncode(f.name), suffix);
  std::string q = query;
  if (!f.ns.empty()) absl::StrAppend(&q, q.empty() ? "" : "&", "namespace=", api::UrlEncode(f.ns));
  return q.empty() ? p : absl::StrCat(p, "?", q);
}

// The JSON document of -f FILE ('-' = standard input); errors name the file.
absl::StatusOr<Json> ReadDocument(const std::string& file, base::InputKind kind) {
  absl::StatusOr<std::string> text = base::ReadInput(file, kind);
  if (!text.ok()) return text.status();
  return base::ParseJsonDocument(*text, file == "-" ? "<stdin>" : file);
}

absl::Status InFile(const std::string& file, const absl::Status& s) {
  return absl::InvalidArgumentError(
      absl::StrCat(base::ForTerminal(file == "-" ? "<stdin>" : file), ": ", s.message()));
}

// j[key] when it is an object (or an array), else an empty one; a reference that outlives the
// range-for it is used in (a temporary from json::value would not).
const Json& Member(const Json& j, const char* key, bool array = false) {
  static const Json kObject = Json::object(), kArray = Json::array();
  const Json* m = base::JsonMember(j, key);
  if (m != nullptr && (array ? m->is_array() : m->is_object())) return *m;
  return array ? kArray : kObject;
}

// j[key], or null.
const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  const Json* m = base::JsonMember(j, key);
  return m != nullptr ? *m : kNull;
}

// A number with 4 significant digits (p-values: 3), or "-".
std::string Num(const Json& v, bool p_value = false) {
  if (!v.is_number()) return "-";
  return p_value ? absl::StrFormat("%.3g", v.get<double>())
                 : absl::StrFormat("%.4g", v.get<double>());
}

std::string ReportTable(const Json& r) {
  std::string out =
      absl::StrFormat("experiment %s/%s: %s, %d events; sessions", Str(r, "namespace"),
                      Str(r, "name"), Str(r, "state"), Int(r, "events"));
  for (const auto& [v, n] : Member(r, "sessions").items()) {
    absl::StrAppend(&out, " ", base::ForTerminal(v), "=", n.dump());
  }
  const Json& srm = Member(r, "srm");
  absl::StrAppend(&out, "\nsample ratio: p=", Num(Field(srm, "p_value")),
                  base::BoolField(srm, "mismatch") ? " MISMATCH" : " ok",
                  base::BoolField(r, "valid") ? "" : "  => RESULT VOID: do not read it", "\n");
  for (const auto& [v, why] : Member(r, "stopped_variants").items()) {
    absl::StrAppend(&out, "variant ", base::ForTerminal(v),
                    " stopped: ", why.is_string() ? base::ForTerminal(why.get<std::string>()) : "-",
                    "\n");
  }
  std::vector<std::vector<std::string>> rows = {
      {"METRIC", "VARIANT", "N", "MEAN", "DELTA", "REL", "SEQ_P", "SEQ_CI", "FIXED_P", "DECISION"}};
  for (const auto& [metric, m] : Member(r, "metrics").items()) {
    const Json& control = Member(m, "control");
    rows.push_back({base::ForTerminal(metric), Str(r, "control") + " (control)", Str(control, "n"),
                    Num(Field(control, "mean")), "", "", "", "", "", ""});
    for (const auto& [variant, a] : Member(m, "variants").items()) {
      const Json& seq = Member(a, "sequential");
      const Json& fixed = Member(a, "fixed_horizon");
      const Json& ci = Member(seq, "ci", true);
      rows.push_back(
          {"", base::ForTerminal(variant), Str(a, "n"), Num(Field(a, "mean")),
           Num(Field(a, "delta")),
           Field(a, "relative_delta").is_number()
               ? absl::StrFormat("%+.2f%%", 100 * Field(a, "relative_delta").get<double>())
               : "-",
           Num(Field(seq, "p_value"), true),
           ci.size() == 2 ? absl::StrCat("[", Num(ci[0]), ", ", Num(ci[1]), "]") : "-",
           Num(Field(fixed, "p_value"), true) + (base::BoolField(fixed, "readable") ? "" : "*"),
           Str(a, "decision")});
    }
  }
  absl::StrAppend(&out, Table(rows),
                  "SEQ: always-valid (mSPRT), read it at any time; FIXED*: the t-test before its "
                  "planned sample, not to be read\n");
  return out;
}

std::string SummaryTable(const std::vector<Json>& items) {
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "NAME", "STATE", "VARIANTS", "EVENTS", "SESSIONS"}};
  for (const Json& e : items) {
    std::string variants;
    for (const Json& v : Member(Member(e, "spec"), "variants", true)) {
      absl::StrAppend(&variants, variants.empty() ? "" : ",", Str(v, "name"));
    }
    rows.push_back({Str(e, "namespace"), Str(e, "name"), Str(e, "state"), variants,
                    Str(e, "events"), Str(e, "sessions")});
  }
  return Table(rows);
}

// One call with its reply printed as `schema` (a table made by `table`).
template <class T>
int CallAndPrint(const ExperimentFlags& f, const std::string& method, const std::string& path,
                 const std::string& body, const std::string& schema, T table) {
  if (!f.name.empty()) {
    if (absl::Status st = ex::CheckExperimentName(f.name); !st.ok()) return Fail(st);
  }
  // -o FILE must not name the -f input (a format name is not a file).
  if (!f.file.empty() && !f.out.output.empty() &&
      std::find(kFormats.begin(), kFormats.end(), f.out.output) == kFormats.end()) {
    if (absl::Status st = base::CheckOutputsDistinct({{"--file", f.file}}, {{"-o", f.out.output}});
        !st.ok()) {
      return Fail(st);
    }
  }
  absl::StatusOr<Output> out = ResolveOut(f.out, kFormats, f.client);
  if (!out.ok()) return Fail(out.status());
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  absl::StatusOr<Json> reply = client->CallObject(method, path, {}, body);
  if (!reply.ok()) return ClientFail(reply.status());
  absl::Status s = Print(*out, schema, *reply, table(*reply));
  return s.ok() ? kExitOk : Fail(s);
}

int RunCreate(const ExperimentFlags& f) {
  if (absl::Status st = ex::CheckExperimentName(f.name); !st.ok()) return Fail(st);
  absl::StatusOr<Json> doc = ReadDocument(f.file, base::InputKind::kConfig);
  if (!doc.ok()) return Fail(doc.status());
  absl::StatusOr<ex::ExperimentSpec> spec = ex::ParseExperimentSpec(*doc);
  if (!spec.ok()) return Fail(InFile(f.file, spec.status()));
  return CallAndPrint(f, "PUT", Path(f), base::DumpJson(ex::SpecToJson(*spec), -1), "experiment/v1",
                      [](const Json& e) {
                        return absl::StrCat("experiment ", Str(e, "namespace"), "/", Str(e, "name"),
                                            " ", Str(e, "state"), "\n");
                      });
}

// Posts the events of -f FILE ({"events": [...]}) in batches of --batch.
int RunEvents(const ExperimentFlags& f) {
  if (absl::Status st = ex::CheckExperimentName(f.name); !st.ok()) return Fail(st);
  absl::StatusOr<Json> doc = ReadDocument(f.file, base::InputKind::kTrace);
  if (!doc.ok()) return Fail(doc.status());
  const Json* events = base::JsonMember(*doc, "events");
  if (events == nullptr || !events->is_array()) {
    return Fail(InFile(f.file, absl::InvalidArgumentError("$.events: must be an array")));
  }
  absl::StatusOr<api::Client> client = MakeClient(f.client);
  if (!client.ok()) return ClientFail(client.status());
  int64_t sent = 0;
  for (size_t i = 0; i < events->size(); i += static_cast<size_t>(f.batch)) {
    const size_t end = std::min(events->size(), i + static_cast<size_t>(f.batch));
    Json batch = {{"events", Json(events->begin() + static_cast<std::ptrdiff_t>(i),
                                  events->begin() + static_cast<std::ptrdiff_t>(end))}};
    absl::StatusOr<Json> reply =
        client->CallObject("POST", Path(f, "/events"), {"accepted"}, base::DumpJson(batch, -1));
    if (!reply.ok()) {
      Fail(absl::Status(
          reply.status().code(),
          absl::StrCat("after ", sent, " events were accepted: ", reply.status().message())));
      return ClientFail(reply.status());
    }
    sent += static_cast<int64_t>(end - i);
  }
  absl::Status s = base::WriteStdout(absl::StrCat(sent, " events accepted\n"));
  return s.ok() ? kExitOk : Fail(s);
}

CLI::App* Sub(CLI::App* parent, const char* name, const char* help,
              const std::shared_ptr<ExperimentFlags>& f, bool named, bool out) {
  CLI::App* sub = parent->add_subcommand(name, help);
  if (named) sub->add_option("NAME", f->name, "The experiment (a DNS-1123 label)")->required();
  sub->add_option("-n,--namespace", f->ns,
                  "Namespace (default: a tenant's first, else \"default\")");
  AddClientFlags(sub, &f->client);
  if (out) AddOutFlags(sub, &f->out, kFormats);
  return sub;
}

}  // namespace

Command AddExperimentCommand(CLI::App& app) {
  auto f = std::make_shared<ExperimentFlags>();
  Command cmd;
  cmd.app = app.add_subcommand("experiment",
                               "A/B experiments on serving settings: definitions, events, reports");
  CLI::App* create =
      Sub(cmd.app, "create", "Create an experiment from -f FILE (JSON)", f, true, true);
  create->add_option("-f,--file", f->file, "The definition (docs/experiments.md; '-' = stdin)")
      ->required();
  CLI::App* list = Sub(cmd.app, "list", "List the experiments you may see", f, false, true);
  CLI::App* get = Sub(cmd.app, "get", "One experiment's definition and counts", f, true, true);
  CLI::App* report = Sub(cmd.app, "report",
                         "The experiment's report: per metric and variant, "
                         "the sequential and fixed-horizon tests",
                         f, true, true);
  CLI::App* stop = Sub(cmd.app, "stop", "Stop taking events (the report stays)", f, true, true);
  stop->add_option("--reason", f->reason, "Why (kept with the experiment)");
  CLI::App* del = Sub(cmd.app, "delete", "Delete the experiment and its events", f, true, false);
  CLI::App* assign = Sub(cmd.app, "assign", "The variant a session gets", f, true, true);
  assign->add_option("--session", f->session, "The session id")->required();
  CLI::App* events =
      Sub(cmd.app, "events", "Post the events of -f FILE in batches", f, true, false);
  events->add_option("-f,--file", f->file, "{\"events\": [...]} ('-' = stdin)")->required();
  AddInt<int>(events, "--batch", &f->batch, 1, 1000, "Events per request");
  cmd.app->footer(std::string("Examples:\n"
                              "  seedance experiment create int8-probe -f int8-probe.json\n"
                              "  seedance experiment assign int8-probe --session user-42\n"
                              "  seedance experiment report int8-probe\n"
                              "  seedance experiment stop int8-probe --reason \"shipped int8\"\n\n"
                              "A report's result is void when its sample ratio mismatches (the "
                              "sessions per variant\ndo not match the weights): it says so.\n\n") +
                  kServerNote + "\n" + kExitFooter);
  auto summary = [](const Json& e) { return SummaryTable({e}); };
  cmd.run = [=]() -> int {
    const std::string one = "experiment/v1";
    if (create->parsed()) return RunCreate(*f);
    if (list->parsed()) {
      return CallAndPrint(*f, "GET", Path(*f), "", "experiment-list/v1", [](const Json& r) {
        std::vector<Json> items;
        for (const Json& e : Member(r, "items", true)) items.push_back(e);
        return SummaryTable(items);
      });
    }
    if (get->parsed()) return CallAndPrint(*f, "GET", Path(*f), "", one, summary);
    if (report->parsed()) {
      return CallAndPrint(*f, "GET", Path(*f, "/report"), "", "experiment-report/v1", ReportTable);
    }
    if (stop->parsed()) {
      const std::string q = f->reason.empty() ? "" : "reason=" + api::UrlEncode(f->reason);
      return CallAndPrint(*f, "POST", Path(*f, "/stop", q), "", one, summary);
    }
    if (del->parsed()) {
      return CallAndPrint(*f, "DELETE", Path(*f), "", one, [](const Json& r) {
        return absl::StrCat("experiment ", Str(r, "namespace"), "/", Str(r, "name"), " deleted\n");
      });
    }
    if (assign->parsed()) {
      return CallAndPrint(*f, "GET", Path(*f, "/assign", "session=" + api::UrlEncode(f->session)),
                          "", "experiment-assignment/v1",
                          [](const Json& r) { return absl::StrCat(Str(r, "variant"), "\n"); });
    }
    if (events->parsed()) return RunEvents(*f);
    return UsageError(
        "experiment: say what to do: create, list, get, report, stop, delete, "
        "assign or events (seedance experiment --help)");
  };
  return cmd;
}

}  // namespace seedance::cli
