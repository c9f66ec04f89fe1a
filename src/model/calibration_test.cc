#include "seedance/model/calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "seedance/trace/csv_reader.h"

namespace seedance::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kOpHeader[] =
    "time_stats.attn_pre_proj.median,time_stats.mlp_up_proj.median,time_stats.add.median,"
    "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
    "num_tensor_parallel_workers\n";

std::string ProfilePath(const std::string& gpu, const std::string& file) {
  return trace::DataDir() + "/llm-traces/vidur-profiling/" + gpu + "/" + file;
}

#define REQUIRE_DATA(path)                                          \
  if (!std::filesystem::exists(path)) {                             \
    if (trace::DataRequired()) FAIL() << "missing data " << (path); \
    GTEST_SKIP() << "public data not found: " << (path);            \
  }

TEST(ProfileCsvTest, ParsesOperatorRowsIntoPerWorkerShapes) {
  const std::string text = std::string(kOpHeader) +
                           "0.1,0.2,0.01,32,8,4096,14336,128256,True,16,2\n"
                           "\n"
                           "0.3,0.4,0.02,32,8,4096,14336,128256,False,64,1\n";
  absl::StatusOr<Profile> p = ParseProfileCsv(text, "ops.csv");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->collective);
  ASSERT_EQ(p->samples.size(), 6u);
  const ProfileSample& qkv = p->samples[0];
  EXPECT_EQ(qkv.op, "attn_pre_proj");
  EXPECT_EQ(qkv.line, 2);
  EXPECT_EQ(qkv.m, 16);
  EXPECT_EQ(qkv.k, 4096);
  EXPECT_EQ(qkv.n, (16 + 2 * 4) * 128);  // 32/2 query heads + 2 * 8/2 kv heads per worker
  EXPECT_DOUBLE_EQ(qkv.measured_s, 0.1e-3);
  EXPECT_EQ(p->samples[1].n, 2 * 14336 / 2);  // gated: gate and up fused
  EXPECT_EQ(p->samples[2].op_class, OpClass::kElementwise);
  EXPECT_EQ(p->samples[4].line, 4);
  EXPECT_EQ(p->samples[4].n, 14336);  // not gated
}

TEST(ProfileCsvTest, ParsesAllReduceRows) {
  const std::string text =
      ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node\n"
      "0,0.05,0,8,1048576,all_reduce,8\n"
      "1,0.50,0,16,1048576,all_reduce,8\n";
  absl::StatusOr<Profile> p = ParseProfileCsv(text, "ar.csv");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->collective);
  ASSERT_EQ(p->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(p->samples[0].bytes, 2.0 * 1048576);  // FP16 elements
  EXPECT_TRUE(IsIntraNode(p->samples[0]));
  EXPECT_FALSE(IsIntraNode(p->samples[1]));
}

// The one CSV dialect (seedance/trace/csv_table.h): the same profile with a byte order mark,
// quoted fields and header names, CRLF, blank lines and columns that are not read.
TEST(ProfileCsvTest, ReadsTheSharedCsvDialect) {
  const std::string plain =
      ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node\n"
      "0,0.05,0,8,1048576,all_reduce,8\n"
      "1,0.50,0,16,1048576,all_reduce,8\n";
  const std::string dialect =
      "\xEF\xBB\xBF\"\",\"time_stats.all_reduce.median\", rank ,num_workers,size,collective,"
      "devices_per_node\r\n"
      "\r\n"
      "\"0\",\"0.05\",0, 8 ,1048576,\"all_reduce\",8\r\n"
      "  \n"
      "1,0.50,0,16,\"1048576\",all_reduce,8\r\n";
  absl::StatusOr<Profile> a = ParseProfileCsv(plain, "plain.csv");
  absl::StatusOr<Profile> b = ParseProfileCsv(dialect, "dialect.csv");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->samples.size(), a->samples.size());
  for (size_t i = 0; i < a->samples.size(); ++i) {
    EXPECT_EQ(b->samples[i].num_workers, a->samples[i].num_workers) << i;
    EXPECT_EQ(b->samples[i].bytes, a->samples[i].bytes) << i;
    EXPECT_EQ(b->samples[i].measured_s, a->samples[i].measured_s) << i;
  }
  EXPECT_EQ(b->samples[0].line, 3);
  EXPECT_EQ(b->samples[1].line, 5);
}

TEST(ProfileCsvTest, BadInputNamesFileLineAndField) {
  struct Case {
    const char* name;
    std::string text;
    const char* want;
  };
  const Case cases[] = {
      {"missing column", "time_stats.add.median,n_head\n1,2\n", "bad.csv:1: field 'n_kv_head'"},
      {"not a number", std::string(kOpHeader) + "0.1,x,0.01,32,8,4096,14336,128256,True,16,2\n",
       "bad.csv:2: field 'time_stats.mlp_up_proj.median': expected a number (got 'x')"},
      {"negative", std::string(kOpHeader) + "0.1,0.2,0.01,32,8,4096,14336,128256,True,-3,2\n",
       "bad.csv:2: field 'num_tokens'"},
      {"short row", std::string(kOpHeader) + "\n0.1,0.2\n",
       "bad.csv:3: field 'time_stats.add.median': row has 2 fields, header has 11"},
      {"bad bool", std::string(kOpHeader) + "0.1,0.2,0.01,32,8,4096,14336,128256,maybe,16,2\n",
       "bad.csv:2: field 'use_gated_mlp'"},
      {"no timing column",
       "n_head,n_kv_head,n_embd,n_expanded_embd,num_tokens,"
       "num_tensor_parallel_workers\n",
       "bad.csv:1: field 'time_stats.<op>.median'"},
      {"empty", "", "bad.csv:1: empty file: expected a header row"},
      {"duplicate column", "time_stats.add.median,n_head,n_head\n",
       "bad.csv:1: field 'n_head': duplicate header"},
      {"quoted bad value after CRLF and a blank line",
       std::string(",time_stats.all_reduce.median,num_workers,size,devices_per_node\r\n") +
           "0,0.05,8,1024,8\r\n\r\n1,0.05,\"x\",1024,8\r\n",
       "bad.csv:4: field 'num_workers': expected a number (got 'x')"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Profile> p = ParseProfileCsv(c.text, "bad.csv");
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(p.status().message().find(c.want), std::string::npos)
        << c.name << ": " << p.status().message();
  }
  EXPECT_EQ(ReadProfileCsv("/nonexistent/x.csv").status().code(), absl::StatusCode::kNotFound);
}

// Samples the model itself generates with known constants: the fit must recover them.
TEST(CalibrationTest, FitRecoversKnownConstants) {
  const GpuSpec gpu = *LookupGpu("a100-80g");
  CostModelParams truth;
  truth.eta_compute = 0.6;
  truth.eta_memory = 0.9;
  truth.gemm_overhead_s = 7e-6;
  truth.allreduce_latency_s = 50e-6;
  truth.allreduce_efficiency = 0.5;
  truth.allreduce_small_latency_s = 10e-6;
  truth.allreduce_small_efficiency = 0.1;
  std::vector<ProfileSample> samples;
  for (int64_t t : {1, 8, 64, 256, 1024, 4096}) {
    for (int64_t n : {1024, 4096, 11008}) {
      ProfileSample s;
      s.op_class = OpClass::kGemm;
      s.m = t;
      s.k = 4096;
      s.n = n;
      s.measured_s = PredictSeconds(s, gpu, truth);
      samples.push_back(s);
    }
  }
  for (double mb : {0.01, 0.1, 1.0, 4.0, 16.0, 64.0, 128.0}) {
    ProfileSample s;
    s.op_class = OpClass::kAllReduce;
    s.bytes = mb * 1e6;
    s.num_workers = s.devices_per_node = 8;
    s.measured_s = PredictSeconds(s, gpu, truth);
    samples.push_back(s);
  }
  CostModelParams fit = FitAllReduce(samples, gpu, FitGemm(samples, gpu, CostModelParams{}));
  EXPECT_NEAR(fit.eta_compute, 0.6, 0.01);
  EXPECT_NEAR(fit.eta_memory, 0.9, 0.015);
  EXPECT_NEAR(fit.gemm_overhead_s, 7e-6, 0.2e-6);
  EXPECT_NEAR(fit.allreduce_efficiency, 0.5, 0.01);
  EXPECT_LT(MapePct(samples, gpu, fit), 0.5);
  EXPECT_GT(MapePct(samples, gpu, CostModelParams{}), 5.0);  // the fit really moved something
}

class VidurProfileTest : public ::testing::TestWithParam<const char*> {};

// Done-when: MAPE <= 12% on the projection GEMM medians, <= 8% on the (intra-node) all-reduces,
// with the constants built into DefaultParamsFor.
TEST_P(VidurProfileTest, BuiltInConstantsMeetTheErrorTargets) {
  const std::string gpu_dir = GetParam();
  const GpuSpec gpu = *LookupGpu(gpu_dir == "a100" ? "a100-80g" : "h100");
  const std::string ops = ProfilePath(gpu_dir, "Llama-2-7b-hf_mlp.csv");
  const std::string ar = ProfilePath(gpu_dir, "dgx_all_reduce.csv");
  REQUIRE_DATA(ops);
  absl::StatusOr<Profile> p = ReadProfileCsv(ops);
  ASSERT_TRUE(p.ok()) << p.status();
  const CheckResult r = CheckProfile(*p, gpu);
  EXPECT_EQ(r.rows, 4 * 1044);
  EXPECT_LE(r.mape_pct, 12.0);
  // Element-wise kernels (norms, RoPE, activation, add, embedding): not a done-when figure, but
  // they are part of every step.
  const auto elementwise = Filter(
      p->samples, [](const ProfileSample& s) { return s.op_class == OpClass::kElementwise; });
  EXPECT_EQ(elementwise.size(), 6u * 1044);
  EXPECT_LE(MapePct(elementwise, gpu, DefaultParamsFor(gpu)), 12.0);
  absl::StatusOr<Profile> a = ReadProfileCsv(ar);
  ASSERT_TRUE(a.ok()) << a.status();
  const CheckResult ra = CheckProfile(*a, gpu);
  EXPECT_GT(ra.rows, 2900);
  EXPECT_LE(ra.mape_pct, 8.0);
}

// Held out: fit on tensor-parallel degrees 1 and 2, predict the (different) per-worker shapes of
// TP 4 and 8; and fit on one GPU, predict the other from the datasheet ratios alone.
TEST_P(VidurProfileTest, GemmFitHoldsOnHeldOutShapesAndGpus) {
  const std::string gpu_dir = GetParam();
  const std::string other_dir = gpu_dir == "a100" ? "h100" : "a100";
  const GpuSpec gpu = *LookupGpu(gpu_dir == "a100" ? "a100-80g" : "h100");
  const GpuSpec other = *LookupGpu(other_dir == "a100" ? "a100-80g" : "h100");
  const std::string ops = ProfilePath(gpu_dir, "Llama-2-7b-hf_mlp.csv");
  REQUIRE_DATA(ops);
  const Profile p = *ReadProfileCsv(ops);
  const Profile q = *ReadProfileCsv(ProfilePath(other_dir, "Llama-2-7b-hf_mlp.csv"));
  const auto train = Filter(
      p.samples, [](const ProfileSample& s) { return IsProjection(s) && s.num_workers <= 2; });
  const auto test = Filter(
      p.samples, [](const ProfileSample& s) { return IsProjection(s) && s.num_workers > 2; });
  const CostModelParams fit = FitGemm(train, gpu, CostModelParams{});
  EXPECT_LE(MapePct(test, gpu, fit), 12.0);
  const CostModelParams full = FitGemm(p.samples, gpu, CostModelParams{});
  EXPECT_LE(MapePct(Filter(q.samples, IsProjection), other, full), 12.0);
  // Physically meaningful constants: fractions of the datasheet peaks, microsecond overheads.
  for (const CostModelParams& c : {fit, full}) {
    EXPECT_GT(c.eta_compute, 0.5);
    EXPECT_LT(c.eta_compute, 1.0);
    EXPECT_GT(c.eta_memory, 0.5);
    EXPECT_LT(c.eta_memory, 1.0);
    EXPECT_LT(c.gemm_overhead_s, 20e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, VidurProfileTest, ::testing::Values("a100", "h100"));

// The profile reader's meaning checks (the ProfileCsvTest cases above cover the parse itself).
TEST(ProfileCsvMeaningTest, RejectsDuplicateColumnsAndImpossibleShapes) {
  const std::string header =
      "time_stats.mlp_up_proj.median,n_head,n_kv_head,n_embd,n_expanded_embd,num_tokens,"
      "num_tensor_parallel_workers\n";
  struct Case {
    const char* name;
    std::string text;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"duplicate", "n_head,n_head,time_stats.add.median\n1,2,3\n",
       "p.csv:1: field 'n_head': duplicate header"},
      {"narrow embedding", header + "0.2,64,8,32,14336,16,1\n", "p.csv:2: field 'n_embd'"},
      {"nan time", header + "nan,32,8,4096,14336,16,1\n",
       "p.csv:2: field 'time_stats.mlp_up_proj.median'"},
      {"inf time", header + "inf,32,8,4096,14336,16,1\n",
       "p.csv:2: field 'time_stats.mlp_up_proj.median'"},
      {"negative tokens", header + "0.2,32,8,4096,14336,-16,1\n", "p.csv:2: field 'num_tokens'"},
  };
  for (const Case& c : cases) {
    auto p = ParseProfileCsv(c.text, "p.csv");
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.want)) << c.name;
  }
  EXPECT_TRUE(ParseProfileCsv(header + "0.2,32,8,4096,14336,16,1\n", "p.csv").ok());
}

TEST(ProfileCsvMeaningTest, ReadNamesTheOsError) {
  auto p = ReadProfileCsv("/");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("/"));
  EXPECT_THAT(std::string(p.status().message()), Not(HasSubstr("empty file")));
}

}  // namespace
}  // namespace seedance::model
