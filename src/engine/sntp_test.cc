#include "seedance/engine/sntp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::engine {
namespace {

using ::testing::HasSubstr;

constexpr NtpTimestamp kT1 = (3'900'000'000ULL << 32) | 0x12345678ULL;

// A valid server reply to a request sent at kT1.
NtpPacket GoodReply() {
  NtpPacket p;
  p.leap = 0;
  p.version = 4;
  p.mode = kNtpModeServer;
  p.stratum = 2;
  p.reference_id = 0x7f000001;
  p.reference_ts = kT1 - (10ULL << 32);
  p.originate_ts = kT1;
  p.receive_ts = kT1 + (1ULL << 30);  // +0.25 s
  p.transmit_ts = kT1 + (1ULL << 30) + (1ULL << 20);
  return p;
}

std::vector<uint8_t> Bytes(const NtpPacket& p) {
  const auto a = EncodeNtpPacket(p);
  return std::vector<uint8_t>(a.begin(), a.end());
}

uint32_t Code(const char* s) {
  return (uint32_t(uint8_t(s[0])) << 24) | (uint32_t(uint8_t(s[1])) << 16) |
         (uint32_t(uint8_t(s[2])) << 8) | uint32_t(uint8_t(s[3]));
}

TEST(NtpTimestampTest, UnixEpochIsNtpSeconds2208988800) {
  EXPECT_EQ(NtpFromUnixNs(0), kNtpUnixEpochOffsetS << 32);
  EXPECT_EQ(NtpFromUnixNs(500'000'000), (kNtpUnixEpochOffsetS << 32) | 0x80000000ULL);
}

TEST(NtpTimestampTest, DifferenceIsSignedAndSurvivesEraWrap) {
  const NtpTimestamp a = NtpFromUnixNs(1'000'000'000);
  const NtpTimestamp b = NtpFromUnixNs(3'500'000'000);
  EXPECT_NEAR(NtpDiffSeconds(b, a), 2.5, 1e-9);
  EXPECT_NEAR(NtpDiffSeconds(a, b), -2.5, 1e-9);
  // Just before and after the 2036 era wrap.
  const NtpTimestamp before = 0xffffffffULL << 32;
  const NtpTimestamp after = 1ULL << 32;
  EXPECT_NEAR(NtpDiffSeconds(after, before), 2.0, 1e-9);
}

TEST(NtpPacketTest, EncodeParseRoundTrip) {
  const NtpPacket p = GoodReply();
  auto parsed = ParseNtpPacket(Bytes(p));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->leap, p.leap);
  EXPECT_EQ(parsed->version, p.version);
  EXPECT_EQ(parsed->mode, p.mode);
  EXPECT_EQ(parsed->stratum, p.stratum);
  EXPECT_EQ(parsed->reference_id, p.reference_id);
  EXPECT_EQ(parsed->originate_ts, p.originate_ts);
  EXPECT_EQ(parsed->receive_ts, p.receive_ts);
  EXPECT_EQ(parsed->transmit_ts, p.transmit_ts);
  EXPECT_TRUE(ValidateSntpReply(*parsed, kT1).ok());
}

TEST(NtpPacketTest, RequestHeaderIsVersion4ModeClient) {
  const auto bytes = EncodeNtpPacket(MakeSntpRequest(kT1));
  EXPECT_EQ(bytes[0], 0x23);  // LI 0, VN 4, mode 3
}

TEST(NtpPacketTest, RejectsWrongSizes) {
  const std::vector<uint8_t> good = Bytes(GoodReply());
  struct Case {
    size_t size;
    const char* want;
  };
  for (const Case& c : {Case{0, "size 0 bytes"}, Case{47, "size 47 bytes"},
                        Case{50, "whole number of 32-bit words"}, Case{1028, "at most 1024"}}) {
    std::vector<uint8_t> b(c.size, 0);
    std::copy(good.begin(), good.begin() + std::min(c.size, good.size()), b.begin());
    auto r = ParseNtpPacket(b);
    ASSERT_FALSE(r.ok()) << c.size;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.want));
  }
  // A header followed by a 20-byte MAC is a legal length.
  std::vector<uint8_t> with_mac = good;
  with_mac.resize(68, 0);
  EXPECT_TRUE(ParseNtpPacket(with_mac).ok());
}

TEST(NtpPacketTest, RejectsVersionZeroAtParse) {
  std::vector<uint8_t> b = Bytes(GoodReply());
  b[0] = 0x04;  // LI 0, VN 0, mode 4
  auto r = ParseNtpPacket(b);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("version"));
}

// Each row breaks one field of an otherwise good reply; the status names the reason.
TEST(SntpReplyTest, RejectsEachMalformedField) {
  struct Case {
    const char* name;
    std::function<void(NtpPacket&)> mutate;
    absl::StatusCode code;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"version 2", [](NtpPacket& p) { p.version = 2; }, absl::StatusCode::kInvalidArgument,
       "field 'version': 2"},
      {"version 5", [](NtpPacket& p) { p.version = 5; }, absl::StatusCode::kInvalidArgument,
       "field 'version': 5"},
      {"mode client", [](NtpPacket& p) { p.mode = kNtpModeClient; },
       absl::StatusCode::kInvalidArgument, "field 'mode': 3"},
      {"mode broadcast", [](NtpPacket& p) { p.mode = 5; }, absl::StatusCode::kInvalidArgument,
       "field 'mode': 5"},
      {"zero transmit", [](NtpPacket& p) { p.transmit_ts = 0; }, absl::StatusCode::kInvalidArgument,
       "'transmit_timestamp': zero"},
      {"zero receive", [](NtpPacket& p) { p.receive_ts = 0; }, absl::StatusCode::kInvalidArgument,
       "'receive_timestamp': zero"},
      {"originate mismatch", [](NtpPacket& p) { p.originate_ts = kT1 + 1; },
       absl::StatusCode::kInvalidArgument, "stale or forged"},
      {"leap alarm", [](NtpPacket& p) { p.leap = 3; }, absl::StatusCode::kUnavailable,
       "unsynchronised"},
      {"stratum 16", [](NtpPacket& p) { p.stratum = 16; }, absl::StatusCode::kUnavailable,
       "field 'stratum': 16"},
      {"kod RATE",
       [](NtpPacket& p) {
         p.stratum = 0;
         p.reference_id = Code("RATE");
       },
       absl::StatusCode::kUnavailable, "kiss-o'-death 'RATE' (rate exceeded"},
      {"kod DENY",
       [](NtpPacket& p) {
         p.stratum = 0;
         p.reference_id = Code("DENY");
       },
       absl::StatusCode::kUnavailable, "kiss-o'-death 'DENY' (access denied"},
      {"kod RSTR",
       [](NtpPacket& p) {
         p.stratum = 0;
         p.reference_id = Code("RSTR");
       },
       absl::StatusCode::kUnavailable, "kiss-o'-death 'RSTR' (access restricted"},
      {"kod unknown code",
       [](NtpPacket& p) {
         p.stratum = 0;
         p.reference_id = Code("ABCD");
       },
       absl::StatusCode::kUnavailable, "'ABCD' (unknown kiss code)"},
      {"stratum 0 without a kiss code",
       [](NtpPacket& p) {
         p.stratum = 0;
         p.reference_id = 0x00ff4142;
       },
       absl::StatusCode::kInvalidArgument, "0 without a kiss code (reference id 0x00ff4142"},
      {"transmit before receive", [](NtpPacket& p) { p.transmit_ts = p.receive_ts - (1ULL << 31); },
       absl::StatusCode::kInvalidArgument, "0.5 s before the receive timestamp"},
      {"transmit an era before receive",
       [](NtpPacket& p) { p.transmit_ts = p.receive_ts - (100ULL << 32); },
       absl::StatusCode::kInvalidArgument, "100 s before the receive timestamp"},
      {"server holds the request for an hour",
       [](NtpPacket& p) { p.transmit_ts = p.receive_ts + (3600ULL << 32); },
       absl::StatusCode::kInvalidArgument, "3600 s after the receive timestamp"},
      {"zero reference", [](NtpPacket& p) { p.reference_ts = 0; }, absl::StatusCode::kUnavailable,
       "'reference_timestamp': zero"},
      {"reference in the future",
       [](NtpPacket& p) { p.reference_ts = p.transmit_ts + (5ULL << 32); },
       absl::StatusCode::kInvalidArgument, "5 s after the transmit timestamp"},
  };
  for (const Case& c : cases) {
    NtpPacket p = GoodReply();
    c.mutate(p);
    // Through the wire format, as the client sees it.
    auto parsed = ParseNtpPacket(Bytes(p));
    ASSERT_TRUE(parsed.ok()) << c.name;
    const absl::Status s = ValidateSntpReply(*parsed, kT1);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(c.want)) << c.name;
  }
}

// The boundaries of the timestamp checks are accepted: the server replies in the tick it received
// the request, or holds it exactly the longest allowed time; its reference is its transmit time.
TEST(SntpReplyTest, AcceptsBoundaryTimestamps) {
  struct Case {
    const char* name;
    std::function<void(NtpPacket&)> mutate;
  };
  const std::vector<Case> cases = {
      {"transmit == receive", [](NtpPacket& p) { p.transmit_ts = p.receive_ts; }},
      {"longest hold",
       [](NtpPacket& p) {
         p.transmit_ts = p.receive_ts + (static_cast<uint64_t>(kMaxServerHoldS) << 32);
       }},
      {"reference == transmit", [](NtpPacket& p) { p.reference_ts = p.transmit_ts; }},
      {"printable unknown kiss code is still a kiss", [](NtpPacket&) {}},
  };
  for (const Case& c : cases) {
    NtpPacket p = GoodReply();
    c.mutate(p);
    EXPECT_TRUE(ValidateSntpReply(p, kT1).ok()) << c.name << ": " << ValidateSntpReply(p, kT1);
  }
  NtpPacket kiss = GoodReply();
  kiss.stratum = 0;
  kiss.reference_id = Code("RATE");
  EXPECT_TRUE(HasKissCode(kiss));
  kiss.reference_id = 0x52415400;  // "RAT\0"
  EXPECT_FALSE(HasKissCode(kiss));
}

TEST(SntpSampleTest, OffsetAndDelayFollowRfc4330) {
  // Client 1 s behind the server, 10 ms each way, server holds 2 ms.
  const NtpTimestamp t1 = NtpFromUnixNs(100'000'000'000);
  const NtpTimestamp t2 = NtpFromUnixNs(101'010'000'000);
  const NtpTimestamp t3 = NtpFromUnixNs(101'012'000'000);
  const NtpTimestamp t4 = NtpFromUnixNs(100'022'000'000);
  auto s = SampleFromTimestamps(t1, t2, t3, t4);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->offset_s, 1.0, 1e-8);
  EXPECT_NEAR(s->delay_s, 0.020, 1e-8);
}

TEST(SntpSampleTest, RejectsNegativeDelay) {
  const NtpTimestamp t1 = NtpFromUnixNs(100'000'000'000);
  const NtpTimestamp t4 = NtpFromUnixNs(100'001'000'000);
  // Server claims to have held the request 1 s, longer than the 1 ms round trip.
  auto s =
      SampleFromTimestamps(t1, NtpFromUnixNs(100'000'000'000), NtpFromUnixNs(101'000'000'000), t4);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("negative delay"));
}

TEST(HostPortTest, ParsesNamesAddressesAndPorts) {
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(ParseHostPort("time.example", 123, &host, &port).ok());
  EXPECT_EQ(host, "time.example");
  EXPECT_EQ(port, 123);
  ASSERT_TRUE(ParseHostPort("127.0.0.1:11123", 123, &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 11123);
  ASSERT_TRUE(ParseHostPort("[::1]:999", 123, &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 999);
  ASSERT_TRUE(ParseHostPort("::1", 123, &host, &port).ok());
  EXPECT_EQ(host, "::1");
  for (const char* bad :
       {"", ":123", "host:", "host:0", "host:70000", "host:x1", "[::1", "[::1]x"}) {
    EXPECT_FALSE(ParseHostPort(bad, 123, &host, &port).ok()) << bad;
  }
}

// A UDP server on a loopback port that answers each request with whatever `reply` makes of it.
class FakeServer {
 public:
  using Packets = std::vector<std::vector<uint8_t>>;
  explicit FakeServer(std::function<std::vector<uint8_t>(const NtpPacket&)> reply)
      : FakeServer(std::function<Packets(const NtpPacket&)>(
            [reply = std::move(reply)](const NtpPacket& req) { return Packets{reply(req)}; })) {}
  // Answers each request with every packet `replies` returns, in order.
  explicit FakeServer(std::function<Packets(const NtpPacket&)> replies)
      : reply_(std::move(replies)) {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, 20) <= 0) continue;
      std::array<uint8_t, 2048> buf{};
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      const ssize_t n =
          recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      auto req = ParseNtpPacket(std::span<const uint8_t>(buf.data(), size_t(n)));
      if (!req.ok()) continue;
      for (const std::vector<uint8_t>& out : reply_(*req)) {
        if (out.empty()) continue;  // stay silent
        sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    }
  }
  std::function<Packets(const NtpPacket&)> reply_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

NtpPacket ReplyTo(const NtpPacket& req) {
  NtpPacket p = GoodReply();
  p.originate_ts = req.transmit_ts;
  p.receive_ts = req.transmit_ts;
  p.transmit_ts = req.transmit_ts;
  return p;
}

TEST(SntpClientTest, QueriesALoopbackServer) {
  FakeServer server([](const NtpPacket& req) { return Bytes(ReplyTo(req)); });
  SntpClient client({"127.0.0.1", server.port(), 2000});
  auto r = client.Query();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reply.stratum, 2);
  EXPECT_GE(r->sample.delay_s, 0);
  EXPECT_LT(std::abs(r->sample.offset_s), 1.0);  // same clock on both ends
}

TEST(SntpClientTest, IgnoresStaleRepliesUntilTimeout) {
  FakeServer server([](const NtpPacket& req) {
    NtpPacket stale = ReplyTo(req);
    stale.originate_ts ^= 1;
    std::vector<uint8_t> out = Bytes(stale);
    return out;
  });
  SntpClient client({"127.0.0.1", server.port(), 300});
  auto r = client.Query();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("no reply within 300 ms"));
}

TEST(SntpClientTest, ReportsKissOfDeath) {
  FakeServer server([](const NtpPacket& req) {
    NtpPacket p = ReplyTo(req);
    p.stratum = 0;
    p.reference_id = Code("DENY");
    return Bytes(p);
  });
  SntpClient client({"127.0.0.1", server.port(), 2000});
  auto r = client.Query();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("kiss-o'-death 'DENY'"));
}

TEST(SntpClientTest, ReportsShortPacket) {
  FakeServer server([](const NtpPacket&) { return std::vector<uint8_t>(20, 0x24); });
  SntpClient client({"127.0.0.1", server.port(), 300});
  auto r = client.Query();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("rejected: ntp packet: size 20 bytes"));
}

// Replies with impossible timestamps, each answering the request (originate matches).
std::vector<std::vector<uint8_t>> ImpossibleReplies(const NtpPacket& req) {
  NtpPacket backwards = ReplyTo(req);
  backwards.transmit_ts = backwards.receive_ts - (1ULL << 32);  // sent 1 s before received
  NtpPacket never_synced = ReplyTo(req);
  never_synced.reference_ts = 0;
  NtpPacket no_code = ReplyTo(req);
  no_code.stratum = 0;
  no_code.reference_id = 0x01020304;
  return {Bytes(backwards), Bytes(never_synced), Bytes(no_code), std::vector<uint8_t>(20, 0x24)};
}

// A forged or broken reply that arrives first does not hide the server's real one.
TEST(SntpClientTest, UsesTheNextReplyAfterImpossibleOnes) {
  FakeServer server(std::function<FakeServer::Packets(const NtpPacket&)>([](const NtpPacket& req) {
    FakeServer::Packets out = ImpossibleReplies(req);
    out.push_back(Bytes(ReplyTo(req)));
    return out;
  }));
  SntpClient client({"127.0.0.1", server.port(), 5000});
  auto r = client.Query();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reply.stratum, 2);
  EXPECT_GE(NtpDiffSeconds(r->reply.transmit_ts, r->reply.receive_ts), 0);
}

TEST(SntpClientTest, OnlyImpossibleRepliesAreAnErrorNamingTheLastRejection) {
  FakeServer server(std::function<FakeServer::Packets(const NtpPacket&)>([](const NtpPacket& req) {
    NtpPacket backwards = ReplyTo(req);
    backwards.transmit_ts = backwards.receive_ts - (1ULL << 32);
    return FakeServer::Packets{Bytes(backwards)};
  }));
  SntpClient client({"127.0.0.1", server.port(), 300});
  auto r = client.Query();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("no valid reply within 300 ms; rejected"));
  EXPECT_THAT(r.status().message(), HasSubstr("before the receive timestamp"));
}

// The next query after a rejected one starts afresh: a server whose first answer is impossible
// and whose second is good gives one error, then a sample.
TEST(SntpClientTest, NextQueryAfterARejectedOneSucceeds) {
  auto count = std::make_shared<std::atomic<int>>(0);
  FakeServer server(
      std::function<FakeServer::Packets(const NtpPacket&)>([count](const NtpPacket& req) {
        if (count->fetch_add(1) == 0) return ImpossibleReplies(req);
        return FakeServer::Packets{Bytes(ReplyTo(req))};
      }));
  SntpClient client({"127.0.0.1", server.port(), 300});
  auto first = client.Query();
  ASSERT_FALSE(first.ok());
  EXPECT_THAT(first.status().message(), HasSubstr("rejected"));
  SntpClient patient({"127.0.0.1", server.port(), 5000});
  auto second = patient.Query();
  ASSERT_TRUE(second.ok()) << second.status();
}

TEST(SntpClientTest, TimesOutOnASilentServer) {
  FakeServer server([](const NtpPacket&) { return std::vector<uint8_t>(); });
  SntpClient client({"127.0.0.1", server.port(), 200});
  auto r = client.Query();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace seedance::engine
