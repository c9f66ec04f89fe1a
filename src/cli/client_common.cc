// The helpers every client command shares (client_common.h).
#include "client_common.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "seedance/api/api.h"
#include "seedance/base/build_info.h"
#include "seedance/base/text.h"
#include "yaml-cpp/yaml.h"

namespace seedance::cli {

using Json = nlohmann::json;

namespace {

using OJson = nlohmann::ordered_json;

// The files the command reads, which -o FILE must never name (docs/cli.md).
std::vector<base::NamedPath> ClientInputs(const ClientFlags& c) {
  return {{"--token-file", api::Client::TokenFileOf(c.token_file)}, {"--ca-file", c.ca_file}};
}

// A string that YAML would read back as something else (a number, a boolean, null) or that
// cannot be a plain scalar is double-quoted.
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::set<std::string> kReserved = {"null", "Null",  "NULL",  "~",     "true", "True",
                                                  "TRUE", "false", "False", "FALSE", "yes",  "no",
                                                  "on",   "off",   "y",     "n"};
  if (kReserved.contains(s)) return true;
  double d = 0;
  if (absl::SimpleAtod(s, &d)) return true;
  const char c = s.front();
  if (std::isspace(static_cast<unsigned char>(c)) ||
      std::isspace(static_cast<unsigned char>(s.back()))) {
    return true;
  }
  return std::string("-?:,[]{}#&*!|>'\"%@`").find(c) != std::string::npos ||
         s.find(": ") != std::string::npos || s.find(" #") != std::string::npos;
}

void EmitYaml(YAML::Emitter& out, const OJson& j) {
  if (j.is_object()) {
    if (j.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key;
      const std::string key = base::SanitizeUtf8(k);
      if (NeedsQuotes(key)) {
        out << YAML::DoubleQuoted << key;
      } else {
        out << key;
      }
      out << YAML::Value;
      EmitYaml(out, v);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    if (j.empty()) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      return;
    }
    out << YAML::BeginSeq;
    for (const OJson& v : j) EmitYaml(out, v);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    const std::string s = base::SanitizeUtf8(j.get<std::string>());
    if (NeedsQuotes(s)) {
      out << YAML::DoubleQuoted << s;
    } else {
      out << s;
    }
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

std::string ToYaml(const OJson& j) {
  YAML::Emitter out;
  out.SetIndent(2);
  EmitYaml(out, j);
  return std::string(out.c_str()) + "\n";
}

// The document for -o json|yaml: the JSON header, then `fields` (an object's keys, or "items").
OJson Document(const std::string& schema, const Json& fields) {
  OJson doc = base::JsonHeader(schema);
  for (const auto& [k, v] : fields.items()) {
    if (!doc.contains(k)) doc[k] = OJson::parse(v.dump());
  }
  return doc;
}

}  // namespace

void AddClientFlags(CLI::App* app, ClientFlags* f) {
  AddConnectionFlags(app, f);
  AddDuration(app, "--timeout", &f->timeout_s, 1, base::Closed(0.001, 86400),
              "Total deadline of each request");
}

absl::StatusOr<api::Client> MakeClient(const ClientFlags& f) {
  api::ClientOptions o = ClientOptionsOf(f);
  o.timeout_s = f.timeout_s;
  return api::Client::Create(std::move(o));
}

// Prints the failure and returns the exit status: a 4xx reply is the caller's mistake (2), a 5xx
// reply or an unreachable server a runtime failure (1); otherwise by the status code.
int ClientFail(const absl::Status& s) {
  const int rc = Fail(s);
  const int http = api::HttpStatusOf(s);
  if (http >= 400 && http < 500) return kExitUsage;
  if (http >= 500) return kExitFailure;
  return rc;
}

void AddOutFlags(CLI::App* app, OutFlags* f, const std::vector<std::string>& formats) {
  app->add_option("-o,--output", f->output,
                  "Output format (" + absl::StrJoin(formats, "|") +
                      ", as kubectl's -o) or a FILE to write ('-' = standard output)")
      ->type_name("FORMAT|FILE");
  app->add_option("--format", f->format,
                  "Output format: " + absl::StrJoin(formats, ", ") + " (default: table)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(formats));
}

// The output -o and --format ask for. A FILE is checked against the inputs and opened now,
// before any request, as every command's outputs are.
absl::StatusOr<Output> ResolveOut(const OutFlags& f, const std::vector<std::string>& formats,
                                  const ClientFlags& client) {
  Output out;
  for (const std::string& name : formats) {
    if (f.output == name) {
      if (!f.format.empty() && f.format != name) {
        return absl::InvalidArgumentError(
            absl::StrCat("-o ", name, " and --format ", f.format, " disagree; give one"));
      }
      out.format = name;
      return out;
    }
  }
  OutputFlags flags{f.output, f.format};
  absl::StatusOr<std::string> format = ResolveFormat(flags, formats);
  if (!format.ok()) return format.status();
  out.format = *format;
  if (!f.output.empty()) out.path = f.output;
  if (out.path == "-") return out;
  if (absl::Status st = base::CheckOutputsDistinct(ClientInputs(client), {{"-o", out.path}});
      !st.ok()) {
    return st;
  }
  absl::StatusOr<std::unique_ptr<base::OutputFile>> file = base::OutputFile::Open(out.path);
  if (!file.ok()) return file.status();
  out.file = std::move(*file);
  return out;
}

absl::Status Emit(const Output& out, const std::string& text) {
  if (!out.file) return base::WriteStdout(text);
  absl::Status st = out.file->Write(text);
  return st.ok() ? out.file->Commit() : st;
}

// ---------------------------------------------------------------------------------- printing

std::string Str(const Json& j, const char* key, const std::string& fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const Json& v = j[key];
  if (v.is_string()) return base::ForTerminal(v.get<std::string>());
  if (v.is_null()) return fallback;
  if (v.is_number() || v.is_boolean()) return v.dump();
  return fallback;
}

int64_t Int(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].is_number_integer() ? j[key].get<int64_t>()
                                    : static_cast<int64_t>(j[key].get<double>());
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

absl::Status Print(const Output& out, const std::string& schema, const Json& fields,
                   const std::string& table) {
  if (out.format == "json") return Emit(out, base::DumpJson(Document(schema, fields), 2) + "\n");
  if (out.format == "yaml") return Emit(out, ToYaml(Document(schema, fields)));
  return Emit(out, table);
}

absl::Status CheckUid(const std::string& uid) {
  bool ok = !uid.empty() && uid.size() <= 64;
  for (char c : uid) ok &= absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-';
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("UID '", base::ForTerminal(base::Clip(uid)),
                                                 "': a pod UID is 1-64 letters, digits and '-' "
                                                 "(see `seedance get pods`)"));
}

}  // namespace seedance::cli
