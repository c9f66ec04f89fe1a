#include "seedance/cache/trace.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "seedance/trace/csv_reader.h"

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
  EXPECT_EQ((*t)[0].time, 7'000'000);  // seconds, kept in microseconds
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
  auto t = ParseTrace("version,time,op,size,lbn\n1,5,R,4096,77\n1,5.25,R,1,1\n", "c.csv",
                      TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].time, 5'000'000);  // seconds, kept in microseconds
  EXPECT_EQ((*t)[1].time, 5'250'000);
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
  std::string bz2(text.size() + 600, '\0');
  unsigned bz2_len = bz2.size();
  ASSERT_EQ(BZ2_bzBuffToBuffCompress(bz2.data(), &bz2_len, const_cast<char*>(text.data()),
                                     text.size(), 9, 0, 0),
            BZ_OK);
  bz2.resize(bz2_len);
  for (const std::string& packed : {zst, xz, gz, bz2}) {
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
  EXPECT_EQ(*ParseTraceFormat("Tencent-CBS"), TraceFormat::kTencentCbs);
  for (TraceFormat f :
       {TraceFormat::kOracleGeneral, TraceFormat::kCsv, TraceFormat::kTxt, TraceFormat::kLis,
        TraceFormat::kLirs, TraceFormat::kCache2k, TraceFormat::kVscsi, TraceFormat::kMsr,
        TraceFormat::kSystor, TraceFormat::kTencentCbs, TraceFormat::kTencentPhoto}) {
    EXPECT_EQ(*ParseTraceFormat(TraceFormatName(f)), f) << TraceFormatName(f);
  }
  auto bad = ParseTraceFormat("parquet");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown trace format 'parquet'; expected one of oracleGeneral, csv, txt, lis, lirs, "
            "cache2k, vscsi, msr, systor, tencent-cbs, tencent-photo");
}

TEST(TraceTest, OnlyTheIdOnlyFormatsLackTimeAndSizes) {
  for (TraceFormat f :
       {TraceFormat::kTxt, TraceFormat::kLis, TraceFormat::kLirs, TraceFormat::kCache2k}) {
    EXPECT_FALSE(TraceHasTime(f)) << TraceFormatName(f);
    EXPECT_FALSE(TraceHasSizes(f)) << TraceFormatName(f);
  }
  for (TraceFormat f :
       {TraceFormat::kOracleGeneral, TraceFormat::kCsv, TraceFormat::kVscsi, TraceFormat::kMsr,
        TraceFormat::kSystor, TraceFormat::kTencentCbs, TraceFormat::kTencentPhoto}) {
    EXPECT_TRUE(TraceHasTime(f)) << TraceFormatName(f);
    EXPECT_TRUE(TraceHasSizes(f)) << TraceFormatName(f);
  }
}

TEST(TraceDeathTest, AnUnknownFormatValueIsABug) {
  EXPECT_DEATH(TraceFormatName(static_cast<TraceFormat>(99)), "unknown TraceFormat 99");
}

TEST(TraceTest, TellsTheFormatFromTheFileName) {
  const std::vector<std::pair<std::string, TraceFormat>> cases = {
      {"d/cloudPhysicsIO.oracleGeneral.bin", TraceFormat::kOracleGeneral},
      {"x.oracleGeneral.zst", TraceFormat::kOracleGeneral},
      {"arc/OLTP.lis.zst", TraceFormat::kLis},
      {"/data/lirs/gli.trace.gz", TraceFormat::kLirs},
      {"cache2k/web07.trace.xz", TraceFormat::kCache2k},
      {"cloudPhysicsIO.vscsi", TraceFormat::kVscsi},
      {"cloudPhysicsIO.csv", TraceFormat::kCsv},
      {"cloudPhysicsIO.txt", TraceFormat::kTxt},
      {"snia-samples/msr-cambridge1-sample.csv", TraceFormat::kMsr},
      {"systor17-traces-sample.csv.gz", TraceFormat::kSystor},
      {"tencent-cbs-cloud_storage-sample.bz2", TraceFormat::kTencentCbs},
      {"tencent-photo-cloud_photos-sample.bz2", TraceFormat::kTencentPhoto},
  };
  for (const auto& [path, want] : cases) {
    auto got = TraceFormatFromPath(path);
    ASSERT_TRUE(got.ok()) << path << ": " << got.status();
    EXPECT_EQ(*got, want) << path;
  }
  for (const char* path : {"other/gli.trace", "trace.bin", "noext"}) {
    auto got = TraceFormatFromPath(path);
    ASSERT_FALSE(got.ok()) << path;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("tencent-photo")) << path;
  }
}

// One vscsi record of version 1 (32 bytes) or 2 (40 bytes), as trace.h lays them out.
std::string VscsiRecord(int version, uint32_t len, uint64_t lbn, uint64_t ts) {
  std::string r(version == 1 ? 32 : 40, '\0');
  const uint16_t ver = static_cast<uint16_t>(version << 8);
  const uint16_t cmd = 0x28;
  if (version == 1) {
    std::memcpy(r.data() + 4, &len, 4);
    std::memcpy(r.data() + 12, &cmd, 2);
    std::memcpy(r.data() + 14, &ver, 2);
  } else {
    std::memcpy(r.data(), &cmd, 2);
    std::memcpy(r.data() + 2, &ver, 2);
    std::memcpy(r.data() + 8, &len, 4);
  }
  std::memcpy(r.data() + 16, &lbn, 8);
  std::memcpy(r.data() + 24, &ts, 8);
  return r;
}

TEST(TraceTest, ReadsBothVscsiVersions) {
  for (int version : {1, 2}) {
    const std::string data =
        VscsiRecord(version, 4096, 77, 5'000'001) + VscsiRecord(version, 512, 78, 6'000'000);
    auto t = ParseTrace(data, "v.vscsi", TraceFormat::kVscsi);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_EQ(t->size(), 2u);
    EXPECT_EQ((*t)[0].id, 77u);
    EXPECT_EQ((*t)[0].size, 4096);
    EXPECT_EQ((*t)[0].time, 5'000'001);  // microseconds, as recorded
    EXPECT_EQ((*t)[1].id, 78u);
    auto cut = ParseTrace(data + "xyz", "v.vscsi", TraceFormat::kVscsi);
    ASSERT_FALSE(cut.ok());
    EXPECT_THAT(std::string(cut.status().message()), HasSubstr("v.vscsi: record 3: truncated"));
  }
  EXPECT_TRUE(ParseTrace("", "e.vscsi", TraceFormat::kVscsi)->empty());
}

TEST(TraceTest, RejectsRecordsThatAreNotVscsi) {
  auto junk = ParseTrace(std::string(64, 'x'), "j.vscsi", TraceFormat::kVscsi);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().message(),
            "j.vscsi: record 1: not a vscsi trace (no version 1 or 2 record header)");
  std::string mixed = VscsiRecord(1, 1, 1, 1) + VscsiRecord(1, 1, 1, 1) + VscsiRecord(1, 1, 1, 1);
  mixed[2 * 32 + 15] = 3;  // record 3 claims version 3
  auto m = ParseTrace(mixed, "m.vscsi", TraceFormat::kVscsi);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "m.vscsi: record 3: version 3 in a version 1 trace");
}

TEST(TraceTest, ReadsMsrCambridgeBlocksPerDisk) {
  auto t = ParseTrace(
      "128166385295514663,hm,0,Write,9056014336,2048,2833\n"
      "128166385295514878,hm,2,Read,1024,512,2617\n",
      "m.csv", TraceFormat::kMsr);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].time, 12816638529551466);  // 100 ns ticks / 10
  EXPECT_EQ((*t)[0].id, 9056014336u / 512);
  EXPECT_EQ((*t)[0].size, 2048);
  EXPECT_EQ((*t)[1].id, (uint64_t{2} << 40) | 2);
  auto bad = ParseTrace("1,hm,0,Erase,0,512,1\n", "m.csv", TraceFormat::kMsr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "m.csv:1: field 'type': expected Read or Write (got 'Erase')");
  auto few = ParseTrace("1,hm,0,Read\n", "m.csv", TraceFormat::kMsr);
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(std::string(few.status().message()), HasSubstr("m.csv:1: 4 fields, expected 7"));
  auto disk = ParseTrace("1,hm,99999999,Read,0,1,1\n", "m.csv", TraceFormat::kMsr);
  ASSERT_FALSE(disk.ok());
  EXPECT_THAT(std::string(disk.status().message()), HasSubstr("m.csv:1: field 'disk'"));
}

TEST(TraceTest, ReadsSystorWithItsHeader) {
  auto t = ParseTrace(
      "Timestamp,Response,IOType,LUN,Offset,Size\n"
      "1455591804.310701999,0.006475000,R,0,203468398592,32768\n"
      "1455591805,,W,3,512,4096\n",
      "s.csv", TraceFormat::kSystor);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].time, 1455591804310701);  // digits past the microsecond dropped
  EXPECT_EQ((*t)[0].id, 203468398592u / 512);
  EXPECT_EQ((*t)[0].size, 32768);
  EXPECT_EQ((*t)[1].time, 1455591805000000);
  EXPECT_EQ((*t)[1].id, (uint64_t{3} << 40) | 1);
  auto bad = ParseTrace("Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0,R,0,0,1\n-1,0,R,0,0,1\n",
                        "s.csv", TraceFormat::kSystor);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "s.csv:3: field 'Timestamp': expected non-negative decimal seconds (got '-1')");
  auto io = ParseTrace("Timestamp,Response,IOType,LUN,Offset,Size\n1,0,X,0,0,1\n", "s.csv",
                       TraceFormat::kSystor);
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.status().message(), "s.csv:2: field 'IOType': expected R or W (got 'X')");
}

TEST(TraceTest, ReadsTencentCbsSectorsPerVolume) {
  auto t = ParseTrace("1538323200,4247200,128,1,1058\n", "c", TraceFormat::kTencentCbs);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].time, 1538323200000000);
  EXPECT_EQ((*t)[0].id, (uint64_t{1058} << 40) | 4247200);
  EXPECT_EQ((*t)[0].size, 128 * 512);
  auto bad = ParseTrace("1538323200,4247200,128,2,1058\n", "c", TraceFormat::kTencentCbs);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "c:1: field 'is_write': expected 0 or 1 (got '2')");
}

TEST(TraceTest, ReadsTencentPhotosAsRenditions) {
  auto t = ParseTrace(
      "20160201164604 085abb02a06850729bb01479466420d9e102d325 5 m 12903 1 PHONE 1\n"
      "20160201164605 085abb02a06850729bb01479466420d9e102d325 5 c 2000 1 PHONE 1\n"
      "20160201164606 085abb02a06850729bb01479466420d9e102d325 5 m 12903 0 PC 3\n",
      "p", TraceFormat::kTencentPhoto);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].time, 1454345164000000);  // 2016-02-01 16:46:04 UTC
  EXPECT_EQ((*t)[0].size, 12903);
  EXPECT_NE((*t)[0].id, (*t)[1].id);  // another spec: another object
  EXPECT_EQ((*t)[0].id, (*t)[2].id);
  auto md5 = ParseTrace("20160201164604 xyz 5 m 1 1 PC 1\n", "p", TraceFormat::kTencentPhoto);
  ASSERT_FALSE(md5.ok());
  EXPECT_EQ(md5.status().message(),
            "p:1: field 'md5': expected at least 16 hex digits (got 'xyz')");
  auto time = ParseTrace("20161301164604 085abb02a06850729bb0 5 m 1 1 PC 1\n", "p",
                         TraceFormat::kTencentPhoto);
  ASSERT_FALSE(time.ok());
  EXPECT_THAT(std::string(time.status().message()), HasSubstr("p:1: field 'time'"));
}

// The shipped samples (../shared/data/cache-traces): every reader reads its own in full.
class ShippedTraceTest : public ::testing::Test {
 protected:
  // The path of `file` under cache-traces/, or "" (the test is skipped) when absent.
  std::string Path(const std::string& file) {
    const std::string path = trace::DataDir() + "/cache-traces/" + file;
    if (std::filesystem::exists(path)) return path;
    if (trace::DataRequired()) ADD_FAILURE() << path << " missing and SEEDANCE_REQUIRE_DATA=1";
    return "";
  }
};

TEST_F(ShippedTraceTest, ReadsTheSniaSamples) {
  const std::vector<std::tuple<std::string, TraceFormat, size_t>> cases = {
      {"snia-samples/msr-cambridge1-sample.csv", TraceFormat::kMsr, 1000},
      {"snia-samples/systor17-traces-sample.csv.gz", TraceFormat::kSystor, 999},
      {"snia-samples/systor17-additional-sample.csv.gz", TraceFormat::kSystor, 999},
      {"snia-samples/tencent-cbs-cloud_storage-sample.bz2", TraceFormat::kTencentCbs, 50000},
      {"snia-samples/tencent-photo-cloud_photos-sample.bz2", TraceFormat::kTencentPhoto, 10000},
  };
  for (const auto& [file, format, requests] : cases) {
    const std::string path = Path(file);
    if (path.empty()) GTEST_SKIP() << file << " not found; set SEEDANCE_DATA_DIR";
    EXPECT_EQ(*TraceFormatFromPath(path), format) << file;
    auto t = ReadTrace(path, format);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->size(), requests) << file;
    std::set<uint64_t> ids;
    for (const Request& r : *t) ids.insert(r.id);
    EXPECT_GT(ids.size(), 1u) << file;
    EXPECT_GT(t->front().time, 1'000'000'000'000'000) << file << ": microseconds since 1970";
  }
}

TEST_F(ShippedTraceTest, TheCloudPhysicsVscsiIsTheCsvsTrace) {
  const std::string vscsi = Path("libcachesim-cloudphysics/cloudPhysicsIO.vscsi");
  const std::string csv = Path("libcachesim-cloudphysics/cloudPhysicsIO.csv");
  if (vscsi.empty() || csv.empty()) GTEST_SKIP() << "cloudPhysicsIO not found";
  auto v = ReadTrace(vscsi, TraceFormat::kVscsi);
  auto c = ReadTrace(csv, TraceFormat::kCsv);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(v->size(), 113872u);
  ASSERT_EQ(c->size(), v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    ASSERT_EQ((*v)[i].id, (*c)[i].id) << i;
    ASSERT_EQ((*v)[i].size, (*c)[i].size) << i;
    // The csv's time is the vscsi microseconds rounded down to seconds.
    ASSERT_EQ((*v)[i].time / 1'000'000 * 1'000'000, (*c)[i].time) << i;
  }
}

}  // namespace
}  // namespace seedance::cache
