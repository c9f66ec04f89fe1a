// docs/openapi.yaml parses as YAML, is OpenAPI 3.0, and has every route docs/api.md documents
// (each "### METHOD /path" heading) with that method.
#include <cstdlib>
#include <fstream>
#include <regex>
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
  const std::regex heading(R"(^### (GET|PUT|POST|DELETE|PATCH) (/[^ \n`?]*))");
  int routes = 0;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, heading)) continue;
    ++routes;
    std::string method = m[1];
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string path = m[2];
    const YAML::Node entry = spec["paths"][path];
    ASSERT_TRUE(entry.IsDefined() && entry.IsMap()) << path << " is not in docs/openapi.yaml";
    EXPECT_TRUE(entry[method].IsDefined()) << m[1] << " " << path << " missing in openapi.yaml";
    EXPECT_TRUE(entry[method]["responses"].IsMap()) << m[1] << " " << path;
  }
  EXPECT_GE(routes, 17) << "docs/api.md documents fewer routes than issue 12 has";
}

}  // namespace
