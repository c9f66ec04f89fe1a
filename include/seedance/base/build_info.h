// What this binary is (version, commit, build type, compiler) and how it was invoked, for
// `seedance version` and for the header every JSON output carries.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace seedance::base {

struct BuildInfo {
  std::string version;     // the project version, e.g. "0.2.0"
  std::string commit;      // git commit at configure time, or "unknown"
  std::string build_type;  // CMAKE_BUILD_TYPE
  std::string compiler;    // compiler id and version
  bool invariant_checks = true;  // SEEDANCE_CHECK is on in every build
};
const BuildInfo& GetBuildInfo();

// Records argv for JsonHeader; the CLI calls it first thing in main(). Credentials in URL
// arguments (scheme://user:pass@host) are replaced by "<redacted>". Not thread-safe.
void SetCommandLine(int argc, const char* const* argv);
const std::vector<std::string>& CommandLine();

// {"schema_version": SCHEMA_VERSION, "seedance_version": "...", "command_line": [...]}: the first
// keys of every JSON document the CLI writes. `schema_version` names the document's schema and
// its revision, e.g. "simulate/v1" (docs/cli.md lists them).
nlohmann::ordered_json JsonHeader(const std::string& schema_version);

}  // namespace seedance::base
