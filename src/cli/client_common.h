// What the client commands over the REST API share (client_cmd.cc, experiment_cmd.cc): the
// connection flags with a deadline, the client, the exit status of a failed call, `-o` as kubectl
// reads it, and printing a reply as a table, JSON or YAML.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "seedance/api/client.h"
#include "seedance/base/io.h"

namespace seedance::cli {

inline constexpr char kExitFooter[] =
    "Exit status: 0 ok, 1 I/O or runtime failure, 2 usage or input error.";
inline constexpr char kServerNote[] =
    "The server is --server URL, else $SEEDANCE_SERVER, else http://127.0.0.1:7070; the bearer\n"
    "token is read from --token-file FILE, else $SEEDANCE_TOKEN_FILE (it is never printed).\n"
    "A 4xx reply exits 2; a server that cannot be reached or a 5xx reply exits 1.\n";

// The connection flags (commands.h) and each request's deadline.
struct ClientFlags : ConnectionFlags {
  double timeout_s = 30;
};
void AddClientFlags(CLI::App* app, ClientFlags* f);
absl::StatusOr<api::Client> MakeClient(const ClientFlags& f);

// Prints the failure and returns the exit status: a 4xx reply is the caller's mistake (2), a 5xx
// reply or an unreachable server a runtime failure (1); otherwise by the status code.
int ClientFail(const absl::Status& s);

// -o: kubectl's `-o json|yaml|wide|table` names a format (these commands print to standard
// output); any other value is an output FILE as in the other commands, with --format or the
// file's extension choosing the format.
struct OutFlags {
  std::string output;
  std::string format;
};
void AddOutFlags(CLI::App* app, OutFlags* f, const std::vector<std::string>& formats);

struct Output {
  std::string path = "-";
  std::string format;
  std::shared_ptr<base::OutputFile> file;  // opened by ResolveOut when path is a FILE
};
// The output -o and --format ask for. A FILE is checked against the inputs (the token and CA
// files) and opened now, before any request, as every command's outputs are.
absl::StatusOr<Output> ResolveOut(const OutFlags& f, const std::vector<std::string>& formats,
                                  const ClientFlags& client);
absl::Status Emit(const Output& out, const std::string& text);
// json and yaml: the JSON header of `schema`, then `fields`; otherwise `table`.
absl::Status Print(const Output& out, const std::string& schema, const nlohmann::json& fields,
                   const std::string& table);

// A reply's field for a table cell: strings made safe for a terminal, numbers and booleans as
// JSON, `fallback` for anything else.
std::string Str(const nlohmann::json& j, const char* key, const std::string& fallback = "-");
int64_t Int(const nlohmann::json& j, const char* key);
// A pod UID as the API takes it (1-64 letters, digits and '-'): checked before any request.
absl::Status CheckUid(const std::string& uid);

// Columns padded to their widest cell, three spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows);

}  // namespace seedance::cli
