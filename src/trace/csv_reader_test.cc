#include "seedance/trace/csv_reader.h"

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace seedance::trace {
namespace {

constexpr std::string_view kNodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n";
constexpr std::string_view kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";
constexpr std::string_view kShortPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";

enum class Kind { kNode, kPod };

struct ParseCase {
  std::string name;
  Kind kind;
  std::string input;
  bool want_ok;
  std::string want_substring;  // checked against the error message when !want_ok
};

std::ostream& operator<<(std::ostream& os, const ParseCase& c) { return os << c.name; }

std::string Cat(std::string_view a, std::string_view b) { return std::string(a) + std::string(b); }

// Parses c.input as its kind, returning only the status.
absl::Status ParseStatus(const ParseCase& c) {
  if (c.kind == Kind::kNode) return ParseNodeCsv(c.input, "src.csv").status();
  return ParsePodCsv(c.input, "src.csv").status();
}

class CsvParseTest : public testing::TestWithParam<ParseCase> {};

TEST_P(CsvParseTest, ReturnsExpectedStatus) {
  const ParseCase& c = GetParam();
  absl::Status status = ParseStatus(c);
  if (c.want_ok) {
    EXPECT_TRUE(status.ok()) << status;
  } else {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(std::string(status.message()).find(c.want_substring), std::string::npos)
        << "message: " << status.message() << "\nwant substring: " << c.want_substring;
  }
}

const ParseCase kCases[] = {
    // Nodes.
    {"ValidNodeFile", Kind::kNode,
     Cat(kNodeHeader, "n0,64000,262144,2,P100\nn1,96000,393216,8,G2\n"), true, ""},
    {"NodeHeaderOnly", Kind::kNode, std::string(kNodeHeader), true, ""},
    {"NodeCpuOnly", Kind::kNode, Cat(kNodeHeader, "n0,32000,262144,0,\n"), true, ""},
    {"NodeGpuWithoutModel", Kind::kNode, Cat(kNodeHeader, "n0,32000,262144,4,\n"), true, ""},
    {"NodeCrlf", Kind::kNode, "sn,cpu_milli,memory_mib,gpu,model\r\nn0,1,2,1,T4\r\n", true, ""},
    {"NodeColumnsReordered", Kind::kNode, "model,gpu,sn,memory_mib,cpu_milli\nT4,1,n0,2,1\n", true,
     ""},
    {"NodeSpacesAroundFields", Kind::kNode, " sn , cpu_milli,memory_mib,gpu,model\nn0, 1 ,2,1,T4\n",
     true, ""},
    {"NodeBlankLinesIgnored", Kind::kNode, Cat(kNodeHeader, "\nn0,1,2,1,T4\n\n  \n"), true, ""},
    {"NodeUtf8Bom", Kind::kNode, Cat("\xEF\xBB\xBF", Cat(kNodeHeader, "n0,1,2,1,T4\n")), true, ""},
    {"NodeNoFinalNewline", Kind::kNode, Cat(kNodeHeader, "n0,1,2,1,T4"), true, ""},
    {"NodeTruncatedRow", Kind::kNode, Cat(kNodeHeader, "n0,1000,2048\n"), false,
     "src.csv:2: field 'gpu': row has 3 fields, header has 5 (got 'n0,1000,2048')"},
    {"NodeExtraField", Kind::kNode, Cat(kNodeHeader, "n0,1,2,1,T4,zz\n"), false,
     "src.csv:2: field '(column 6)': row has 6 fields, header has 5 (got 'zz')"},
    {"NodeNonNumeric", Kind::kNode, Cat(kNodeHeader, "n0,abc,2,1,T4\n"), false,
     "src.csv:2: field 'cpu_milli': expected an integer (got 'abc')"},
    {"NodeTrailingGarbageInNumber", Kind::kNode, Cat(kNodeHeader, "n0,12x,2,1,T4\n"), false,
     "src.csv:2: field 'cpu_milli': expected an integer (got '12x')"},
    {"NodeEmptyNumber", Kind::kNode, Cat(kNodeHeader, "n0,1,,1,T4\n"), false,
     "src.csv:2: field 'memory_mib': expected an integer (got '')"},
    {"NodeNegativeQuantity", Kind::kNode, Cat(kNodeHeader, "n0,1,-2,1,T4\n"), false,
     "src.csv:2: field 'memory_mib': must be non-negative (got '-2')"},
    {"NodeOverflow", Kind::kNode, Cat(kNodeHeader, "n0,99999999999999999999,2,1,T4\n"), false,
     "src.csv:2: field 'cpu_milli': integer out of range (got '99999999999999999999')"},
    {"NodeTooManyGpus", Kind::kNode, Cat(kNodeHeader, "n0,1,2,17,T4\n"), false,
     "src.csv:2: field 'gpu': must be in 0..16 (got '17')"},
    {"NodeEmptyName", Kind::kNode, Cat(kNodeHeader, ",1,2,1,T4\n"), false,
     "src.csv:2: field 'sn': node name must not be empty"},
    {"NodeLineNumberCountsBlankLines", Kind::kNode,
     Cat(kNodeHeader, "n0,1,2,1,T4\n\n\nn1,x,2,1,T4\n"), false, "src.csv:5: field 'cpu_milli'"},
    {"NodeLineNumberWithCrlf", Kind::kNode,
     "sn,cpu_milli,memory_mib,gpu,model\r\nn0,1,2,1,T4\r\nn1,1,2,x,T4\r\n", false,
     "src.csv:3: field 'gpu': expected an integer (got 'x')"},
    {"NodeUnknownHeader", Kind::kNode, "sn,cpu_milli,memory_mib,gpu,model,zone\n", false,
     "src.csv:1: field 'zone': unknown header"},
    {"NodeDuplicateHeader", Kind::kNode, "sn,cpu_milli,memory_mib,gpu,model,gpu\n", false,
     "src.csv:1: field 'gpu': duplicate header (got 'gpu')"},
    {"NodeMissingHeader", Kind::kNode, "sn,cpu_milli,memory_mib,gpu\nn0,1,2,1\n", false,
     "src.csv:1: field 'model': missing required header"},
    {"NodePodHeaderIsUnknown", Kind::kNode, std::string(kPodHeader), false,
     "src.csv:1: field 'name': unknown header"},
    {"NodeEmptyFile", Kind::kNode, "", false, "src.csv:1: empty file: expected a header row"},
    {"NodeBlankOnlyFile", Kind::kNode, "\n\r\n  \n", false,
     "src.csv:1: empty file: expected a header row"},
    // The one CSV dialect (seedance/trace/csv_table.h): quotes around a field are stripped, but a
    // quoted comma still separates; an error after CRLF lines and a blank line names its line.
    {"NodeQuotedFields", Kind::kNode,
     "\"sn\",cpu_milli,memory_mib,gpu,model\n\"n0\", \"1\",2,1,\"T4\"\n", true, ""},
    {"NodeQuotedCommaSplits", Kind::kNode, Cat(kNodeHeader, "\"n0,x\",1,2,1,T4\n"), false,
     "src.csv:2: field '(column 6)': row has 6 fields, header has 5 (got 'T4')"},
    {"NodeQuotedBadValueAfterCrlfAndBlankLine", Kind::kNode,
     "sn,cpu_milli,memory_mib,gpu,model\r\nn0,1,2,1,T4\r\n\r\nn1,\"x\",2,1,T4\r\n", false,
     "src.csv:4: field 'cpu_milli': expected an integer (got 'x')"},

    // Pods.
    {"ValidFullPodFile", Kind::kPod,
     Cat(kPodHeader,
         "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
         "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
         "openb-pod-0002,88000,327680,8,1000,,Burstable,Failed,10034615,10035454,10034615\n"
         "openb-pod-0003,8000,30517,0,0,,BE,Running,11811762,11827364,11811762\n"),
     true, ""},
    {"ShortPodVariant", Kind::kPod, Cat(kShortPodHeader, "p0,1000,0,1,250\np1,1000,512,0,0\n"),
     true, ""},
    {"PodHeaderOnly", Kind::kPod, std::string(kPodHeader), true, ""},
    {"PodGpuSpecWithBar", Kind::kPod,
     Cat(kPodHeader, "p0,1,2,1,1000,V100M16|V100M32,LS,Running,0,10,0\n"), true, ""},
    {"PodCrlf", Kind::kPod, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\np0,1,2,1,500\r\n\r\n",
     true, ""},
    {"PodEmptyScheduledTime", Kind::kPod,
     Cat(kPodHeader, "p0,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"), true, ""},
    {"PodTruncatedRow", Kind::kPod, Cat(kPodHeader, "p0,1,2,1,1000,,LS\n"), false,
     "src.csv:2: field 'pod_phase': row has 7 fields, header has 11"},
    {"PodNonNumeric", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,one,1000\n"), false,
     "src.csv:2: field 'num_gpu': expected an integer (got 'one')"},
    {"PodNegativeCpu", Kind::kPod, Cat(kShortPodHeader, "p0,-1,2,1,1000\n"), false,
     "src.csv:2: field 'cpu_milli': must be non-negative (got '-1')"},
    {"PodGpuMilliOver1000", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,1,1500\n"), false,
     "src.csv:2: field 'gpu_milli': must be in 0..1000 (got '1500')"},
    {"PodMultiGpuPartial", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,2,500\n"), false,
     "src.csv:2: field 'gpu_milli': must be 1000 when num_gpu is 2 (got '500')"},
    {"PodNoGpuWithGpuMilli", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,0,500\n"), false,
     "src.csv:2: field 'gpu_milli': must be 0 when num_gpu is 0 (got '500')"},
    {"PodGpuWithZeroMilli", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,1,0\n"), false,
     "src.csv:2: field 'gpu_milli': must be > 0 when num_gpu is 1 (got '0')"},
    {"PodNumGpuOverflowsInt32", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,4294967296,1000\n"), false,
     "src.csv:2: field 'num_gpu': must be in 0..2147483647"},
    {"PodBadTime", Kind::kPod, Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,soon,10,0\n"), false,
     "src.csv:2: field 'creation_time': expected non-negative seconds (got 'soon')"},
    {"PodNegativeTime", Kind::kPod, Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,0,-10,0\n"), false,
     "src.csv:2: field 'deletion_time': must be non-negative seconds (got '-10')"},
    {"PodNanTime", Kind::kPod, Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,0,10,nan\n"), false,
     "src.csv:2: field 'scheduled_time': expected non-negative seconds (got 'nan')"},
    {"PodHugeFloatTime", Kind::kPod, Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,1e300,10,0\n"),
     false, "src.csv:2: field 'creation_time': time out of range (got '1e300')"},
    {"PodEmptyName", Kind::kPod, Cat(kShortPodHeader, " ,1,2,1,1000\n"), false,
     "src.csv:2: field 'name': pod name must not be empty"},
    {"PodMissingRequiredHeader", Kind::kPod, "name,cpu_milli,memory_mib,num_gpu\np0,1,2,0\n", false,
     "src.csv:1: field 'gpu_milli': missing required header"},
    {"PodUnknownHeader", Kind::kPod, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,owner\n", false,
     "src.csv:1: field 'owner': unknown header"},
    {"PodDuplicateHeader", Kind::kPod, "name,name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", false,
     "src.csv:1: field 'name': duplicate header"},
    {"PodEmptyHeaderName", Kind::kPod, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,\n", false,
     "src.csv:1: field '': unknown header"},
    {"PodEmptyFile", Kind::kPod, "", false, "src.csv:1: empty file: expected a header row"},
    {"PodBinaryValueIsEscaped", Kind::kPod, Cat(kShortPodHeader, "p0,\x01\x7f,2,1,1000\n"), false,
     "src.csv:2: field 'cpu_milli': expected an integer (got '\\x01\\x7f')"},
    {"PodDeletionBeforeCreation", Kind::kPod,
     Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,100,50,100\n"), false,
     "src.csv:2: field 'deletion_time': must not be before creation_time (100) (got '50')"},
    {"PodDeletionAtCreation", Kind::kPod,
     Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,100,100,100\n"), true, ""},
    // Names are unique within a file; the error names both lines.
    {"NodeDuplicateName", Kind::kNode,
     Cat(kNodeHeader, "n0,1,2,1,T4\nn1,1,2,1,T4\n\nn0,1,2,1,T4\n"), false,
     "src.csv:5: field 'sn': duplicate node name (first at line 2) (got 'n0')"},
    {"NodeNamesDifferingInCaseAreDistinct", Kind::kNode,
     Cat(kNodeHeader, "n0,1,2,1,T4\nN0,1,2,1,T4\n"), true, ""},
    {"PodDuplicateName", Kind::kPod, Cat(kShortPodHeader, "p0,1,2,0,0\np0,1,2,1,500\n"), false,
     "src.csv:3: field 'name': duplicate pod name (first at line 2) (got 'p0')"},
    {"PodDuplicateAfterQuoteStripping", Kind::kPod,
     Cat(kShortPodHeader, "p0,1,2,0,0\n\"p0\",1,2,0,0\n"), false,
     "src.csv:3: field 'name': duplicate pod name (first at line 2)"},
    {"PodHugeValueIsClipped", Kind::kPod,
     Cat(kShortPodHeader, "p0," + std::string(100000, '9') + ",2,0,0\n"), false,
     "src.csv:2: field 'cpu_milli': integer out of range (got '9999999999"},
};

INSTANTIATE_TEST_SUITE_P(Table, CsvParseTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<ParseCase>& info) {
                           return info.param.name;
                         });

TEST(CsvReaderTest, NodeFieldsAreFilled) {
  auto nodes = ParseNodeCsv(Cat(kNodeHeader, "n0,64000,262144,2,P100\nn1,32000,1024,0,\n"), "x");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "n0");
  EXPECT_EQ((*nodes)[0].cpu_milli, 64000);
  EXPECT_EQ((*nodes)[0].memory_mib, 262144);
  EXPECT_EQ((*nodes)[0].num_gpus, 2);
  EXPECT_EQ((*nodes)[0].gpu_model, "P100");
  EXPECT_EQ((*nodes)[1].num_gpus, 0);
  EXPECT_EQ((*nodes)[1].gpu_model, "");
}

TEST(CsvReaderTest, PodFieldsAreFilled) {
  auto pods = ParsePodCsv(
      Cat(kPodHeader, "p0,6000,12288,1,460,V100M16|V100M32,LS,Running,427061,12902960,427062\n"),
      "x");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  const core::PodSpec& p = (*pods)[0];
  EXPECT_EQ(p.name, "p0");
  EXPECT_EQ(p.shape, (core::PodShape{.cpu_milli = 6000,
                                     .memory_mib = 12288,
                                     .num_gpu = 1,
                                     .gpu_milli = 460,
                                     .gpu_model_mask = 0}));
  EXPECT_EQ(p.gpu_spec, "V100M16|V100M32");
  EXPECT_EQ(p.qos, "LS");
  EXPECT_EQ(p.priority, 3);
  EXPECT_EQ(p.creation_s, 427061);
  EXPECT_EQ(p.deletion_s, 12902960);
  EXPECT_EQ(p.scheduled_s, 427062);
}

TEST(CsvReaderTest, ShortPodVariantGetsDefaultTimesAndPriority) {
  auto pods = ParsePodCsv(Cat(kShortPodHeader, "p0,1000,0,2,1000\n"), "x");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].shape.num_gpu, 2);
  EXPECT_EQ((*pods)[0].gpu_spec, "");
  EXPECT_EQ((*pods)[0].qos, "");
  EXPECT_EQ((*pods)[0].priority, 1);
  EXPECT_EQ((*pods)[0].creation_s, 0);
  EXPECT_EQ((*pods)[0].deletion_s, -1);
  EXPECT_EQ((*pods)[0].scheduled_s, -1);
}

TEST(CsvReaderTest, QosMapsToPriority) {
  struct Row {
    std::string qos;
    int32_t want_priority;
  };
  const Row rows[] = {{"LS", 3}, {"Guaranteed", 2}, {"Burstable", 1},
                      {"BE", 0}, {"", 1},           {"Other", 1}};
  for (const Row& r : rows) {
    auto pods = ParsePodCsv(
        Cat("name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos\n", "p0,1,1,0,0," + r.qos + "\n"),
        "x");
    ASSERT_TRUE(pods.ok()) << pods.status();
    EXPECT_EQ((*pods)[0].priority, r.want_priority) << "qos '" << r.qos << "'";
  }
}

TEST(CsvReaderTest, EmptyTimesTakeDefaultsAndFloatsRoundDown) {
  auto pods = ParsePodCsv(Cat(kPodHeader,
                              "p0,1,2,0,0,,BE,Pending,,12.9,\n"
                              "p1,1,2,0,0,,BE,Pending,7.0,,3\n"),
                          "x");
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ((*pods)[0].creation_s, 0);
  EXPECT_EQ((*pods)[0].deletion_s, 12);
  EXPECT_EQ((*pods)[0].scheduled_s, -1);
  EXPECT_EQ((*pods)[1].creation_s, 7);
  EXPECT_EQ((*pods)[1].deletion_s, -1);
  EXPECT_EQ((*pods)[1].scheduled_s, 3);
}

TEST(CsvReaderTest, QuotedFieldsAreUnquoted) {
  auto pods = ParsePodCsv(
      "\"name\",cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
      "\"p0\",\"1\",2,1,1000,\"T4|P100\"\n",
      "x");
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ((*pods)[0].name, "p0");
  EXPECT_EQ((*pods)[0].shape.cpu_milli, 1);
  EXPECT_EQ((*pods)[0].gpu_spec, "T4|P100");
}

TEST(CsvReaderTest, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = "/nonexistent/seedance/nodes.csv";
  auto nodes = ReadNodeCsv(path);
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(nodes.status().message()).find(path + ": cannot open: "), std::string::npos)
      << nodes.status();
  auto pods = ReadPodCsv(path);
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kNotFound);
}

TEST(CsvReaderTest, HugeValuesAreClippedInMessages) {
  auto pods =
      ParsePodCsv(Cat(kShortPodHeader, "p0," + std::string(2 << 20, 'x') + ",2,0,0\n"), "x");
  ASSERT_FALSE(pods.ok());
  EXPECT_LT(pods.status().message().size(), 400u) << pods.status().message().substr(0, 400);
}

TEST(CsvReaderTest, DirectoryIsAnErrorNamingThePath) {
  const std::string dir = testing::TempDir();
  auto nodes = ReadNodeCsv(dir);
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kInvalidArgument) << nodes.status();
  EXPECT_NE(std::string(nodes.status().message()).find("is a directory"), std::string::npos)
      << nodes.status();
}

TEST(CsvReaderTest, PodLinesCountEveryLineOfTheFile) {
  std::vector<int64_t> lines;
  auto pods =
      ParsePodCsv(Cat(kShortPodHeader, "p0,1,2,0,0\n\n\np1,1,2,0,0\r\np2,1,2,0,0"), "x", &lines);
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(lines, (std::vector<int64_t>{2, 5, 6}));
}

struct GpuSpecCase {
  std::string name;
  std::string gpu_spec;
  std::string want;  // "" = no warning
};

class GpuSpecWarningTest : public testing::TestWithParam<GpuSpecCase> {};

TEST_P(GpuSpecWarningTest, WarnsWithLineAboutModelsTheClusterLacks) {
  const GpuSpecCase& c = GetParam();
  auto pods = ParsePodCsv(Cat(kPodHeader, "p0,1,2,1,1000,,LS,Running,0,10,0\np1,1,2,1,1000," +
                                              c.gpu_spec + ",LS,Running,0,10,0\n"),
                          "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.status();
  const std::vector<std::string> warnings =
      UnknownGpuModelWarnings(*pods, {2, 3}, "pods.csv", {"T4", "P100"});
  if (c.want.empty()) {
    EXPECT_TRUE(warnings.empty()) << warnings[0];
  } else {
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(c.want), std::string::npos) << warnings[0];
  }
}

const GpuSpecCase kGpuSpecCases[] = {
    {"EmptySpecAcceptsAnyModel", "", ""},
    {"KnownModel", "T4", ""},
    {"KnownModels", "T4|P100", ""},
    {"UnknownModelCanNeverBePlaced", "H100",
     "pods.csv:3: field 'gpu_spec': 'H100' is not a GPU model of the cluster (T4, P100); the pod "
     "can never be placed"},
    {"OneUnknownAmongKnown", "T4|H100",
     "pods.csv:3: field 'gpu_spec': 'H100' is not a GPU model of the cluster (T4, P100); the pod "
     "uses only the other models it names"},
    {"ModelNamesAreCaseSensitive", "t4", "'t4' is not a GPU model"},
    {"ControlCharactersAreEscaped", "\x1b[31m", "'\\x1b[31m'"},
};

INSTANTIATE_TEST_SUITE_P(Table, GpuSpecWarningTest, testing::ValuesIn(kGpuSpecCases),
                         [](const testing::TestParamInfo<GpuSpecCase>& info) {
                           return info.param.name;
                         });

TEST(GpuSpecWarningTest, CountsTheWarningsBeyondTheLimit) {
  std::vector<core::PodSpec> pods(5);
  for (core::PodSpec& p : pods) p.gpu_spec = "H100";
  const std::vector<std::string> warnings =
      UnknownGpuModelWarnings(pods, {2, 3, 4, 5, 6}, "pods.csv", {"T4"}, 2);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[1].find("pods.csv:3:"), std::string::npos) << warnings[1];
  EXPECT_EQ(warnings[2], "pods.csv: 3 more pods name GPU models the cluster lacks");
}

// The public trace itself (not copied into the repository).
class TraceDataTest : public testing::Test {
 protected:
  void SetUp() override {
    csv_dir_ = DataDir() + "/alibaba-gpu-v2023/csv";
    if (!std::filesystem::exists(csv_dir_ + "/openb_pod_list_default.csv")) {
      if (DataRequired()) {
        FAIL() << "trace data missing under " << csv_dir_ << " and SEEDANCE_REQUIRE_DATA=1";
      }
      GTEST_SKIP() << "trace data not found under " << csv_dir_
                   << "; set SEEDANCE_DATA_DIR to run this test";
    }
  }
  std::string csv_dir_;
};

TEST_F(TraceDataTest, DefaultPodListAndGpuNodesHavePublishedCounts) {
  auto pods = ReadPodCsv(csv_dir_ + "/openb_pod_list_default.csv");
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(pods->size(), 8152u);

  auto nodes = ReadNodeCsv(csv_dir_ + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->size(), 1213u);
  int64_t gpus = 0;
  for (const core::NodeSpec& n : *nodes) gpus += n.num_gpus;
  EXPECT_EQ(gpus, 6212);
}

TEST_F(TraceDataTest, EveryShippedCsvParses) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(csv_dir_)) {
    const std::string path = entry.path().string();
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".csv") continue;
    ++files;
    if (file.starts_with("openb_node_list_")) {
      EXPECT_TRUE(ReadNodeCsv(path).ok()) << ReadNodeCsv(path).status();
    } else {
      EXPECT_TRUE(ReadPodCsv(path).ok()) << ReadPodCsv(path).status();
    }
  }
  EXPECT_GT(files, 2);
}

}  // namespace
}  // namespace seedance::trace
