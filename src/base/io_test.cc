// The one reader and writer against real special files: a FIFO and a character device made with
// mknod in a temporary directory, symlinks, a full device and inputs that never end.
#include "seedance/base/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

namespace fs = std::filesystem;

class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/seedance_io_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    SetInputLimitOverride(0);
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Spit(const std::string& p, const std::string& text) { std::ofstream(p) << text; }
  // Names in the directory other than `keep`: leftover temporary files.
  size_t Entries() const {
    size_t n = 0;
    for (auto& e : fs::directory_iterator(dir_)) n += e.path().filename().string()[0] == '.';
    return n;
  }
  std::string dir_;
};

TEST_F(IoTest, RegularFileIsReplacedWhole) {
  Spit(Path("out.json"), "old");
  ASSERT_TRUE(WriteOutput(Path("out.json"), "new contents").ok());
  EXPECT_EQ(Slurp(Path("out.json")), "new contents");
  EXPECT_EQ(Entries(), 0u);
}

TEST_F(IoTest, UncommittedOutputLeavesTargetAndNoTemporary) {
  Spit(Path("out.json"), "old");
  {
    auto out = OutputFile::Open(Path("out.json"));
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE((*out)->Write("half").ok());
  }
  EXPECT_EQ(Slurp(Path("out.json")), "old");
  EXPECT_EQ(Entries(), 0u);
}

TEST_F(IoTest, SymlinkIsFollowedAndKept) {
  Spit(Path("real.txt"), "old");
  fs::create_symlink("real.txt", Path("link.txt"));
  ASSERT_TRUE(WriteOutput(Path("link.txt"), "new").ok());
  EXPECT_TRUE(fs::is_symlink(Path("link.txt")));
  EXPECT_EQ(Slurp(Path("real.txt")), "new");
}

TEST_F(IoTest, FifoIsWrittenThroughNotReplaced) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  // No reader: refused at Open, and the FIFO is still a FIFO.
  auto none = OutputFile::Open(Path("fifo"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no process is reading"), std::string::npos);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(Path("fifo").c_str(), O_RDONLY);
    char buf[64];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
  });
  absl::Status s;
  for (int i = 0; i < 2000; ++i) {  // poll until the reader has opened its end
    s = WriteOutput(Path("fifo"), "through the pipe");
    if (s.code() != absl::StatusCode::kUnavailable) break;
    std::this_thread::yield();
  }
  reader.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, "through the pipe");
  struct stat st;
  ASSERT_EQ(::stat(Path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(IoTest, CharacterDeviceIsWrittenThroughNotReplaced) {
  if (::mknod(Path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod needs CAP_MKNOD";
  }
  ASSERT_TRUE(WriteOutput(Path("null"), "discarded").ok());
  struct stat st;
  ASSERT_EQ(::stat(Path("null").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(Entries(), 0u);
}

TEST_F(IoTest, FullDeviceFailsWithTheOsError) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  absl::Status s = WriteOutput("/dev/full", std::string(1 << 16, 'x'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s;
}

TEST_F(IoTest, DescriptorAliasOfAPipeIsWrittenThrough) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string alias = "/proc/self/fd/" + std::to_string(fds[1]);
  ASSERT_TRUE(WriteOutput(alias, "via the alias").ok());
  ::close(fds[1]);
  char buf[64];
  const ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "via the alias");
}

TEST_F(IoTest, NameAtNameMaxIsWritten) {
  const std::string name(255 - 5, 'n');
  ASSERT_TRUE(WriteOutput(Path(name + ".json"), "{}").ok());
  EXPECT_EQ(Slurp(Path(name + ".json")), "{}");
  EXPECT_EQ(Entries(), 0u);
}

TEST_F(IoTest, MissingDirectoryAndDirectoryTargetAreErrors) {
  EXPECT_EQ(OutputFile::Open(Path("nope/out.json")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(OutputFile::Open(dir_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(IoTest, OutputThatNamesAnInputIsRefused) {
  Spit(Path("in.csv"), "x");
  fs::create_symlink("in.csv", Path("alias.csv"));
  absl::Status s = CheckOutputsDistinct({{"--pods", Path("in.csv")}}, {{"-o", Path("alias.csv")}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--pods"), std::string::npos);
  EXPECT_TRUE(CheckOutputsDistinct({{"--pods", Path("in.csv")}}, {{"-o", Path("o.csv")}}).ok());
}

TEST_F(IoTest, ReaderRefusesDirectoriesAndEndlessDevices) {
  auto d = ReadInput(dir_, InputKind::kConfig);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos);
  SetInputLimitOverride(1 << 20);
  auto z = ReadInput("/dev/zero", InputKind::kTrace);
  EXPECT_EQ(z.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(z.status().message().find("limit"), std::string::npos);
  EXPECT_EQ(ReadInput(Path("missing"), InputKind::kTrace).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(IoTest, ReaderReadsRegularFilesAndFifos) {
  Spit(Path("a.txt"), "hello");
  EXPECT_EQ(*ReadInput(Path("a.txt"), InputKind::kConfig), "hello");
  ASSERT_EQ(::mkfifo(Path("in.fifo").c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = ::open(Path("in.fifo").c_str(), O_WRONLY);
    ASSERT_EQ(::write(fd, "piped", 5), 5);
    ::close(fd);
  });
  auto got = ReadInput(Path("in.fifo"), InputKind::kConfig);
  writer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "piped");
}

TEST_F(IoTest, BearerTokenIsTheFirstLineStrippedAndNeverShown) {
  Spit(Path("token"), "  0123456789abcdef-secret \nsecond line\n");
  absl::StatusOr<std::string> got = ReadBearerToken(Path("token"), "--token-file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "0123456789abcdef-secret");

  Spit(Path("short"), "tooshort-secret\n0123456789abcdef0123\n");  // 15 characters first
  got = ReadBearerToken(Path("short"), "--kube-token-file");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "--kube-token-file " + Path("short") +
                                        ": the token must be at least 16 characters on the "
                                        "file's first line");

  got = ReadBearerToken(Path("missing"), "--token-file");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(IoTest, BearerTokenAcceptsTheFirstLineOnly) {
  struct Case {
    const char* name;
    std::string text;
    BearerTokenOptions options;
    std::string want;
  };
  const std::string t16 = "0123456789abcdef";
  const BearerTokenOptions slurm{1, "SLURM_JWT="};
  const Case cases[] = {
      {"bare, no newline", t16, {}, t16},
      {"trailing newline", t16 + "\n", {}, t16},
      {"CRLF", t16 + "\r\n", {}, t16},
      {"surrounding blanks", " \t" + t16 + " \t\r\n", {}, t16},
      {"later lines ignored", t16 + "\nsecond line\n\n", {}, t16},
      {"exactly the maximum", std::string(kMaxBearerTokenBytes, 'x') + "\n", {}, ""},
      {"short where allowed", "t0ken\n", {1, ""}, "t0ken"},
      {"prefix removed", "SLURM_JWT=eyJ.a.b\n", slurm, "eyJ.a.b"},
      {"prefix optional", "eyJ.a.b\n", slurm, "eyJ.a.b"},
      {"prefix with CRLF", "SLURM_JWT=eyJ.a.b\r\n", slurm, "eyJ.a.b"},
      {"prefix only at the start", "xSLURM_JWT=eyJ\n", slurm, "xSLURM_JWT=eyJ"},
      {"no prefix option keeps it", "SLURM_JWT=0123456789\n", {}, "SLURM_JWT=0123456789"},
  };
  for (const Case& c : cases) {
    Spit(Path("t"), c.text);
    absl::StatusOr<std::string> got = ReadBearerToken(Path("t"), "--token-file", c.options);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(*got, c.want.empty() ? std::string(kMaxBearerTokenBytes, 'x') : c.want) << c.name;
  }
}

TEST_F(IoTest, BearerTokenRefusalsNameTheFileNotTheToken) {
  struct Case {
    const char* name;
    std::string text;
    BearerTokenOptions options;
    std::string why;  // after "FLAG PATH: "
  };
  const BearerTokenOptions slurm{1, "SLURM_JWT="};
  const Case cases[] = {
      {"empty", "", {}, "no token: the file is empty"},
      {"only blanks", " \n\r\n\t\n", {}, "no token: the file is empty"},
      {"empty, with a prefix", "\n", slurm,
       "no token: the file is empty (expected SLURM_JWT=TOKEN or the bare token)"},
      {"blank first line",
       "\nsecret-0123456789abcdef\n",
       {},
       "no token on the first line (it is blank); the token must be the file's first line"},
      {"blank first line, CRLF",
       "\r\nsecret-0123456789abcdef\r\n",
       {},
       "no token on the first line (it is blank); the token must be the file's first line"},
      {"prefix and nothing", "SLURM_JWT=\nsecret-0123456789\n", slurm, "no token after SLURM_JWT="},
      {"space inside",
       "secret-0123456789 secret-abcdef\n",
       {},
       "the first line must hold one token (no spaces or control characters inside)"},
      {"control inside",
       "secret-0123456789\x01secret\n",
       {},
       "the first line must hold one token (no spaces or control characters inside)"},
      {"DEL inside",
       "secret-0123456789\x7fsecret\n",
       {},
       "the first line must hold one token (no spaces or control characters inside)"},
      {"too long",
       std::string(kMaxBearerTokenBytes + 1, 's') + "\n",
       {},
       "the token is longer than 4096 bytes"},
      {"too short",
       "secret-01234567\n",
       {},  // 15 characters
       "the token must be at least 16 characters on the file's first line"},
      {"too short after the prefix", "SLURM_JWT=secret\n", BearerTokenOptions{7, "SLURM_JWT="},
       "the token must be at least 7 characters on the file's first line"},
  };
  for (const Case& c : cases) {
    Spit(Path("t"), c.text);
    absl::StatusOr<std::string> got = ReadBearerToken(Path("t"), "--token-file", c.options);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(got.status().message(), "--token-file " + Path("t") + ": " + c.why) << c.name;
    EXPECT_EQ(std::string(got.status().message()).find("secret"), std::string::npos) << c.name;
  }
}

TEST_F(IoTest, BearerTokenReadErrorsNameTheFlagAndTheFile) {
  absl::StatusOr<std::string> got = ReadBearerToken(Path("missing"), "--slurm-token-file");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(got.status().message()).rfind("--slurm-token-file: " + Path("missing"), 0),
            0u)
      << got.status();
  got = ReadBearerToken(dir_, "--token-file");  // a directory
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(got.status().message()).rfind("--token-file: " + dir_, 0), 0u)
      << got.status();
}

}  // namespace
}  // namespace seedance::base
