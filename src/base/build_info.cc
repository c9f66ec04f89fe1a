// Build and invocation facts (build_info.h). SEEDANCE_VERSION, SEEDANCE_GIT_COMMIT and
// SEEDANCE_BUILD_TYPE come from CMake (src/base/CMakeLists.txt).
#include "seedance/base/build_info.h"

#include "seedance/base/text.h"

#ifndef SEEDANCE_VERSION
#define SEEDANCE_VERSION "unknown"
#endif
#ifndef SEEDANCE_GIT_COMMIT
#define SEEDANCE_GIT_COMMIT "unknown"
#endif
#ifndef SEEDANCE_BUILD_TYPE
#define SEEDANCE_BUILD_TYPE "unknown"
#endif

namespace seedance::base {
namespace {

// "http://user:secret@host/x" -> "http://<redacted>@host/x": credentials in a URL argument never
// reach an output document.
std::string RedactCredentials(std::string arg) {
  for (size_t scheme = arg.find("://"); scheme != std::string::npos;
       scheme = arg.find("://", scheme + 3)) {
    const size_t start = scheme + 3;
    const size_t end = arg.find_first_of("/?#", start);
    const size_t at = arg.rfind('@', end == std::string::npos ? arg.size() : end);
    if (at != std::string::npos && at >= start) arg.replace(start, at - start, "<redacted>");
  }
  return arg;
}

std::vector<std::string>& MutableCommandLine() {
  static std::vector<std::string> argv;
  return argv;
}

std::string Compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

const BuildInfo& GetBuildInfo() {
  static const BuildInfo info{SEEDANCE_VERSION, SEEDANCE_GIT_COMMIT, SEEDANCE_BUILD_TYPE,
                              Compiler(), true};
  return info;
}

void SetCommandLine(int argc, const char* const* argv) {
  auto& v = MutableCommandLine();
  v.clear();
  for (int i = 0; i < argc; ++i) {
    v.push_back(RedactCredentials(SanitizeUtf8(argv[i] == nullptr ? "" : argv[i])));
  }
}

const std::vector<std::string>& CommandLine() { return MutableCommandLine(); }

nlohmann::ordered_json JsonHeader(const std::string& schema_version) {
  nlohmann::ordered_json j;
  j["schema_version"] = schema_version;
  j["seedance_version"] = GetBuildInfo().version;
  j["command_line"] = CommandLine();
  return j;
}

}  // namespace seedance::base
