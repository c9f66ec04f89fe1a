// docs/openapi.yaml parses as YAML, is OpenAPI 3.0, and has every route docs/api.md documents
// (each "### METHOD /path" heading) with that method.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace {

std::string SourceDir() {
  const char* dir = std::getenv("SEEDANCE_SOURCE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : SEEDANCE_DOCS_SOURCE_DIR;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OpenApiTest, ListsEveryRouteOfApiMd) {
  const std::string md = ReadFile(SourceDir() + "/docs/api.md");
  ASSERT_FALSE(md.empty()) << "docs/api.md missing (SEEDANCE_SOURCE_DIR=" << SourceDir() << ")";
  YAML::Node spec;
  ASSERT_NO_THROW(spec = YAML::LoadFile(SourceDir() + "/docs/openapi.yaml"));
  ASSERT_TRUE(spec["openapi"]);
  EXPECT_EQ(spec["openapi"].as<std::string>().rfind("3.0", 0), 0u);
  ASSERT_TRUE(spec["paths"].IsMap());
  int routes = 0;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    // "### METHOD /path" (std::regex trips gcc 12's -Wmaybe-uninitialized under ASan).
    if (line.rfind("### ", 0) != 0) continue;
    const size_t space = line.find(' ', 4);
    if (space == std::string::npos) continue;
    std::string method = line.substr(4, space - 4);
    if (method != "GET" && method != "PUT" && method != "POST" && method != "DELETE" &&
        method != "PATCH") {
      continue;
    }
    const size_t end = line.find_first_of(" `?", space + 1);
    const std::string path =
        line.substr(space + 1, end == std::string::npos ? end : end - space - 1);
    if (path.empty() || path[0] != '/') continue;
    const std::string shown = method;
    ++routes;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const YAML::Node entry = spec["paths"][path];
    ASSERT_TRUE(entry.IsDefined() && entry.IsMap()) << path << " is not in docs/openapi.yaml";
    EXPECT_TRUE(entry[method].IsDefined()) << shown << " " << path << " missing in openapi.yaml";
    EXPECT_TRUE(entry[method]["responses"].IsMap()) << shown << " " << path;
  }
  EXPECT_GE(routes, 17) << "docs/api.md documents fewer routes than issue 12 has";
}

}  // namespace
