#include "seedance/cache/trace.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::cache {
namespace {

using ::testing::HasSubstr;

std::string OracleRecord(uint32_t time, uint64_t id, uint32_t size, int64_t next) {
  std::string r(24, '\0');
  std::memcpy(r.data(), &time, 4);
  std::memcpy(r.data() + 4, &id, 8);
  std::memcpy(r.data() + 12, &size, 4);
  std::memcpy(r.data() + 16, &next, 8);
  return r;
}

TEST(TraceTest, ReadsOracleGeneralRecords) {
  const std::string data = OracleRecord(7, 42, 4096, 1) + OracleRecord(8, 42, 4096, -1);
  auto t = ParseTrace(data, "t.bin", TraceFormat::kOracleGeneral);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].time, 7);
  EXPECT_EQ((*t)[0].id, 42u);
  EXPECT_EQ((*t)[0].size, 4096);
  EXPECT_EQ((*t)[0].next_access_vtime, 1);
  EXPECT_EQ((*t)[1].next_access_vtime, kNeverAgain);
}

TEST(TraceTest, ATruncatedOracleGeneralRecordNamesTheFileAndRecord) {
  const std::string data = OracleRecord(7, 42, 4096, 1) + std::string(10, 'x');
  auto t = ParseTrace(data, "t.bin", TraceFormat::kOracleGeneral);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "t.bin: record 2: truncated record (10 of 24 bytes)");
  auto bad = ParseTrace(OracleRecord(1, 2, 3, -5), "t.bin", TraceFormat::kOracleGeneral);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("t.bin: record 1: next_access"));
}

TEST(TraceTest, ReadsBigEndianCache2kKeys) {
  auto t =
      ParseTrace(std::string("\x00\x00\x01\x02\xff\xff\xff\xff", 8), "k", TraceFormat::kCache2k);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].id, 258u);
  EXPECT_EQ((*t)[1].id, 0xffffffffu);
  EXPECT_EQ((*t)[1].time, 1);
  auto cut = ParseTrace(std::string("\x00\x00\x01\x02\x01", 5), "k", TraceFormat::kCache2k);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().message(), "k: record 2: truncated record (1 of 4 bytes)");
}

TEST(TraceTest, ReadsTxtAndLirsIdsAndSkipsLirsStars) {
  auto txt = ParseTrace("5\n\n6\r\n", "a.txt", TraceFormat::kTxt);
  ASSERT_TRUE(txt.ok());
  ASSERT_EQ(txt->size(), 2u);
  EXPECT_EQ((*txt)[1].id, 6u);
  auto lirs = ParseTrace("5\n*\n6\n", "a.trace", TraceFormat::kLirs);
  ASSERT_TRUE(lirs.ok());
  EXPECT_EQ(lirs->size(), 2u);
  auto bad = ParseTrace("5\n*\n", "a.txt", TraceFormat::kTxt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "a.txt:2: field 'id': expected a non-negative integer (got '*')");
}

TEST(TraceTest, ExpandsArcLisRunsOfBlocks) {
  auto t = ParseTrace("10 3 0 1\n20 1 0 2\n", "o.lis", TraceFormat::kLis);
  ASSERT_TRUE(t.ok());
  std::vector<uint64_t> ids;
  for (const Request& r : *t) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{10, 11, 12, 20}));
  auto bad = ParseTrace("10 3 0 1\n10 x 0 0\n", "o.lis", TraceFormat::kLis);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("o.lis:2: field 'n_blocks'"));
  EXPECT_FALSE(ParseTrace("10\n", "o.lis", TraceFormat::kLis).ok());
}

TEST(TraceTest, ReadsCsvThroughTheTableScanner) {
  auto t = ParseTrace("version,time,op,size,lbn\n1,5,R,4096,77\n", "c.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].time, 5);
  EXPECT_EQ((*t)[0].id, 77u);
  EXPECT_EQ((*t)[0].size, 4096);
  auto bad = ParseTrace("version,time,op,size,lbn\n1,5,R,4k,77\n", "c.csv", TraceFormat::kCsv);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "c.csv:2: field 'size': expected an integer (got '4k')");
  auto missing = ParseTrace("time,size\n1,2\n", "c.csv", TraceFormat::kCsv);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("field 'lbn'"));
}

TEST(TraceTest, AMissingFileNamesThePath) {
  auto t = ReadTrace("/nonexistent/x.bin", TraceFormat::kOracleGeneral);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/nonexistent/x.bin"));
}

TEST(TraceTest, DecompressesZstdXzAndGzipByTheirMagic) {
  const std::string text = "1\n2\n3\n";
  std::string zst(ZSTD_compressBound(text.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), text.data(), text.size(), 1));
  std::string xz(text.size() + 128, '\0');
  size_t xz_len = 0;
  ASSERT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr,
                                    reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                    reinterpret_cast<uint8_t*>(xz.data()), &xz_len, xz.size()),
            LZMA_OK);
  xz.resize(xz_len);
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string gz(256, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = text.size();
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = gz.size();
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz.resize(gz.size() - z.avail_out);
  deflateEnd(&z);
  for (const std::string& packed : {zst, xz, gz}) {
    auto out = MaybeDecompress(packed, "p");
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, text);
    auto cut = MaybeDecompress(packed.substr(0, packed.size() - 3), "p.cut");
    ASSERT_FALSE(cut.ok());
    EXPECT_THAT(std::string(cut.status().message()), HasSubstr("p.cut: corrupt"));
  }
  EXPECT_EQ(*MaybeDecompress(text, "plain"), text);
}

TEST(TraceTest, ComputesNextAccessTimes) {
  std::vector<Request> t = {{.id = 1}, {.id = 2}, {.id = 1}};
  ComputeNextAccess(&t);
  EXPECT_EQ(t[0].next_access_vtime, 2);
  EXPECT_EQ(t[1].next_access_vtime, kNeverAgain);
  EXPECT_EQ(t[2].next_access_vtime, kNeverAgain);
}

TEST(TraceTest, ParsesFormatNames) {
  EXPECT_EQ(*ParseTraceFormat("oracleGeneral"), TraceFormat::kOracleGeneral);
  EXPECT_EQ(*ParseTraceFormat("LIS"), TraceFormat::kLis);
  EXPECT_FALSE(ParseTraceFormat("vscsi").ok());
}

}  // namespace
}  // namespace seedance::cache
