// The rewriter over every model of ONNX's own test data that the executor runs (Debian's
// libonnx-testdata: the node cases, torch's converted modules and operators, the simple models):
// the rewrite must succeed, its model must pass the loader's checks again, and its outputs on the
// case's inputs must equal the original model's (1e-4 relative to the largest output, NaN equal
// to NaN, integers exactly). "A rewrite never changes a model it cannot prove equivalent" over
// some thousand graphs no rule was written for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/rewrite.h"

namespace seedance::model {
namespace {

namespace fs = std::filesystem;

std::string TestDataRoot() {
  const char* env = std::getenv("SEEDANCE_ONNX_TESTDATA_ROOT");
  return env != nullptr ? env : "/usr/share/libonnx-testdata/data";
}

// The case's inputs, fed by position (the conformance layout names them input_N.pb).
absl::StatusOr<TensorMap> Feeds(const Graph& g, const fs::path& dir) {
  TensorMap feeds;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    absl::StatusOr<Tensor> t =
        ReadTensorFile((dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb")).string());
    if (!t.ok()) return t.status();
    feeds[g.inputs[i].name] = std::move(*t);
  }
  return feeds;
}

// "" when every output of `b` equals `a`'s, else what differs.
std::string Compare(const TensorMap& a, const TensorMap& b) {
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end()) return absl::StrCat("output ", name, " is missing");
    const Tensor& tb = it->second;
    if (ta.type() != tb.type() || ta.shape() != tb.shape()) {
      return absl::StrCat("output ", name, ": ", ta.Describe(), " became ", tb.Describe());
    }
    double scale = 0;
    for (int64_t i = 0; i < ta.size(); ++i) {
      if (std::isfinite(ta.AsDouble(i))) scale = std::max(scale, std::abs(ta.AsDouble(i)));
    }
    for (int64_t i = 0; i < ta.size(); ++i) {
      const double x = ta.AsDouble(i), y = tb.AsDouble(i);
      if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
      if (!(std::abs(x - y) <= 1e-4 * std::max(scale, 1e-30))) {
        return absl::StrCat("output ", name, " element ", i, ": ", x, " became ", y);
      }
    }
  }
  return "";
}

TEST(RewriteCorpusTest, NoRewriteChangesAnOutput) {
  const fs::path root = TestDataRoot();
  if (!fs::is_directory(root / "node")) {
    if (std::getenv("SEEDANCE_REQUIRE_DATA") != nullptr) {
      FAIL() << root << " is missing: install Debian's libonnx-testdata (tools/install_deps.sh)";
    }
    GTEST_SKIP() << root << " is missing (Debian's libonnx-testdata)";
  }
  const absl::StatusOr<RewriteTarget> cpu = ParseRewriteTarget("cpu");
  ASSERT_TRUE(cpu.ok());
  int run = 0, changed = 0;
  for (const char* part : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(root / part)) {
      const fs::path model = e.path() / "model.onnx";
      absl::StatusOr<Graph> g = LoadOnnxModel(model.string());
      if (!g.ok()) continue;  // the executor does not run it (conformance_test.cc says which)
      absl::StatusOr<TensorMap> feeds = Feeds(*g, e.path());
      if (!feeds.ok()) continue;
      absl::StatusOr<TensorMap> before = model::Run(*g, *feeds);
      if (!before.ok()) continue;
      RewriteReport report;
      absl::StatusOr<Graph> rewritten = RewriteGraph(*g, *cpu, &report);
      ASSERT_TRUE(rewritten.ok()) << model << ": " << rewritten.status();
      absl::StatusOr<std::string> bytes = SerializeOnnxModel(*rewritten);
      ASSERT_TRUE(bytes.ok()) << model << ": " << bytes.status();
      absl::StatusOr<Graph> reloaded = ParseOnnxModel(*bytes, model.string());
      ASSERT_TRUE(reloaded.ok()) << model << ": " << reloaded.status();
      absl::StatusOr<TensorMap> after = model::Run(*reloaded, *feeds);
      ASSERT_TRUE(after.ok()) << model << ": " << after.status();
      EXPECT_EQ(Compare(*before, *after), "") << model;
      ++run;
      changed += report.applied.empty() ? 0 : 1;
    }
  }
  std::printf("%d models rewritten and run, %d of them changed by a rule\n", run, changed);
  EXPECT_GT(run, 500);
  EXPECT_GT(changed, 50);
}

}  // namespace
}  // namespace seedance::model
