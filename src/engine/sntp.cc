// SNTP packets and client (RFC 4330 / RFC 5905). See include/seedance/engine/sntp.h.
#include "seedance/engine/sntp.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace seedance::engine {
namespace {

uint32_t Load32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t Load64(const uint8_t* p) { return (uint64_t{Load32(p)} << 32) | Load32(p + 4); }
void Store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
void Store64(uint8_t* p, uint64_t v) {
  Store32(p, static_cast<uint32_t>(v >> 32));
  Store32(p + 4, static_cast<uint32_t>(v));
}

int64_t UnixNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Closes a file descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

NtpTimestamp NtpFromUnixNs(int64_t unix_ns) {
  // Floor division so that times before 1970 still map correctly.
  int64_t sec = unix_ns / 1'000'000'000;
  int64_t ns = unix_ns % 1'000'000'000;
  if (ns < 0) {
    ns += 1'000'000'000;
    --sec;
  }
  const uint64_t ntp_sec = static_cast<uint64_t>(sec) + kNtpUnixEpochOffsetS;
  const uint64_t frac = (static_cast<uint64_t>(ns) << 32) / 1'000'000'000ULL;
  return (ntp_sec << 32) | (frac & 0xffffffffULL);
}

double NtpDiffSeconds(NtpTimestamp a, NtpTimestamp b) {
  // Two's-complement difference of the 64-bit values: the NTP on-wire arithmetic, valid across an
  // era boundary when the true difference is under 2^31 seconds.
  const int64_t d = static_cast<int64_t>(a - b);
  return static_cast<double>(d) / 4294967296.0;
}

std::array<uint8_t, kNtpPacketSize> EncodeNtpPacket(const NtpPacket& p) {
  std::array<uint8_t, kNtpPacketSize> out{};
  out[0] = static_cast<uint8_t>(((p.leap & 3) << 6) | ((p.version & 7) << 3) | (p.mode & 7));
  out[1] = p.stratum;
  out[2] = static_cast<uint8_t>(p.poll);
  out[3] = static_cast<uint8_t>(p.precision);
  Store32(&out[4], p.root_delay);
  Store32(&out[8], p.root_dispersion);
  Store32(&out[12], p.reference_id);
  Store64(&out[16], p.reference_ts);
  Store64(&out[24], p.originate_ts);
  Store64(&out[32], p.receive_ts);
  Store64(&out[40], p.transmit_ts);
  return out;
}

NtpPacket MakeSntpRequest(NtpTimestamp transmit) {
  NtpPacket p;
  p.leap = 0;
  p.version = 4;
  p.mode = kNtpModeClient;
  p.transmit_ts = transmit;
  return p;
}

absl::StatusOr<NtpPacket> ParseNtpPacket(std::span<const uint8_t> bytes) {
  if (bytes.size() < kNtpPacketSize) {
    return absl::InvalidArgumentError(absl::StrCat("ntp packet: size ", bytes.size(),
                                                   " bytes, expected at least ", kNtpPacketSize));
  }
  if (bytes.size() > kNtpMaxPacketSize) {
    return absl::InvalidArgumentError(absl::StrCat("ntp packet: size ", bytes.size(),
                                                   " bytes, expected at most ", kNtpMaxPacketSize));
  }
  if (bytes.size() % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("ntp packet: size ", bytes.size(),
                                                   " bytes is not a whole number of 32-bit words"));
  }
  const uint8_t* b = bytes.data();
  NtpPacket p;
  p.leap = b[0] >> 6;
  p.version = (b[0] >> 3) & 7;
  p.mode = b[0] & 7;
  if (p.version == 0) return absl::InvalidArgumentError("ntp packet: field 'version': 0");
  p.stratum = b[1];
  p.poll = static_cast<int8_t>(b[2]);
  p.precision = static_cast<int8_t>(b[3]);
  p.root_delay = Load32(b + 4);
  p.root_dispersion = Load32(b + 8);
  p.reference_id = Load32(b + 12);
  p.reference_ts = Load64(b + 16);
  p.originate_ts = Load64(b + 24);
  p.receive_ts = Load64(b + 32);
  p.transmit_ts = Load64(b + 40);
  return p;
}

bool HasKissCode(const NtpPacket& packet) {
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((packet.reference_id >> (24 - 8 * i)) & 0xff);
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

std::string KissCode(const NtpPacket& packet) {
  std::string code(4, '?');
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((packet.reference_id >> (24 - 8 * i)) & 0xff);
    if (c >= 0x20 && c < 0x7f) code[i] = c;
  }
  return code;
}

absl::Status ValidateSntpReply(const NtpPacket& r, NtpTimestamp request_transmit) {
  if (r.version != 3 && r.version != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("ntp reply: field 'version': ", r.version, ", expected 3 or 4"));
  }
  if (r.mode != kNtpModeServer) {
    return absl::InvalidArgumentError(
        absl::StrCat("ntp reply: field 'mode': ", r.mode, ", expected 4 (server)"));
  }
  if (r.stratum == 0) {
    if (!HasKissCode(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ntp reply: field 'stratum': 0 without a kiss code (reference id 0x",
                       absl::Hex(r.reference_id, absl::kZeroPad8), " is not four ASCII letters)"));
    }
    const std::string code = KissCode(r);
    std::string meaning = "unknown kiss code";
    if (code == "RATE") meaning = "rate exceeded: poll less often";
    if (code == "DENY") meaning = "access denied by the server";
    if (code == "RSTR") meaning = "access restricted by the server";
    return absl::UnavailableError(
        absl::StrCat("ntp reply: kiss-o'-death '", code, "' (", meaning, ")"));
  }
  if (r.stratum > 15) {
    return absl::UnavailableError(absl::StrCat("ntp reply: field 'stratum': ", r.stratum,
                                               ", server is unsynchronised (expected 1..15)"));
  }
  if (r.leap == 3) {
    return absl::UnavailableError("ntp reply: field 'leap': 3, server clock is unsynchronised");
  }
  if (r.transmit_ts == 0) {
    return absl::InvalidArgumentError("ntp reply: field 'transmit_timestamp': zero");
  }
  if (r.receive_ts == 0) {
    return absl::InvalidArgumentError("ntp reply: field 'receive_timestamp': zero");
  }
  if (r.originate_ts != request_transmit) {
    return absl::InvalidArgumentError(
        absl::StrCat("ntp reply: field 'originate_timestamp': ", r.originate_ts,
                     " does not match the request's transmit timestamp ", request_transmit,
                     " (stale or forged reply)"));
  }
  return CheckReplyTimestamps(r);
}

absl::Status CheckReplyTimestamps(const NtpPacket& r) {
  if (r.reference_ts == 0) {
    return absl::UnavailableError(
        "ntp reply: field 'reference_timestamp': zero, server clock never synchronised");
  }
  const double hold_s = NtpDiffSeconds(r.transmit_ts, r.receive_ts);
  if (hold_s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ntp reply: field 'transmit_timestamp': ", -hold_s,
                     " s before the receive timestamp (impossible: the server sent the reply "
                     "before it received the request)"));
  }
  if (hold_s > kMaxServerHoldS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ntp reply: field 'transmit_timestamp': ", hold_s,
        " s after the receive timestamp (the server claims to have held the request longer than "
        "any request waits for a reply)"));
  }
  if (NtpDiffSeconds(r.reference_ts, r.transmit_ts) > kMaxReferenceLeadS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ntp reply: field 'reference_timestamp': ", NtpDiffSeconds(r.reference_ts, r.transmit_ts),
        " s after the transmit timestamp (the server cannot have synchronised in "
        "its own future)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClockSample> SampleFromTimestamps(NtpTimestamp t1, NtpTimestamp t2, NtpTimestamp t3,
                                                 NtpTimestamp t4) {
  ClockSample s;
  s.offset_s = (NtpDiffSeconds(t2, t1) + NtpDiffSeconds(t3, t4)) / 2;
  s.delay_s = NtpDiffSeconds(t4, t1) - NtpDiffSeconds(t3, t2);
  s.local_time_s =
      static_cast<double>(t4 >> 32) + static_cast<double>(t4 & 0xffffffffULL) / 4294967296.0;
  if (s.delay_s < -1e-3) {
    return absl::InvalidArgumentError(
        absl::StrCat("ntp sample: negative delay ", s.delay_s * 1e6,
                     " us (server hold time longer than the round trip)"));
  }
  return s;
}

absl::Status ParseHostPort(const std::string& text, uint16_t default_port, std::string* host,
                           uint16_t* port) {
  *port = default_port;
  std::string port_text;
  if (text.empty()) return absl::InvalidArgumentError("server: empty host");
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("server: missing ']' in '", text, "'"));
    }
    *host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        return absl::InvalidArgumentError(
            absl::StrCat("server: expected ':' after ']' in '", text, "'"));
      }
      port_text = text.substr(close + 2);
      if (port_text.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("server: empty port in '", text, "'"));
      }
    }
  } else {
    const size_t colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      *host = text;  // a bare IPv6 address
    } else if (colon != std::string::npos) {
      *host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
      if (port_text.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("server: empty port in '", text, "'"));
      }
    } else {
      *host = text;
    }
  }
  if (host->empty())
    return absl::InvalidArgumentError(absl::StrCat("server: empty host in '", text, "'"));
  if (!port_text.empty()) {
    uint32_t p = 0;
    if (!absl::SimpleAtoi(port_text, &p) || p == 0 || p > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("server: port '", port_text, "' is not a number in 1..65535"));
    }
    *port = static_cast<uint16_t>(p);
  }
  return absl::OkStatus();
}

absl::StatusOr<SntpResult> SntpClient::Query() {
  const std::string where = absl::StrCat(options_.host, ":", options_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const std::string port_str = std::to_string(options_.port);
  const int gai = getaddrinfo(options_.host.c_str(), port_str.c_str(), &hints, &res);
  if (gai != 0 || res == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("sntp ", where, ": cannot resolve host: ", gai_strerror(gai)));
  }
  const int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    freeaddrinfo(res);
    return absl::UnavailableError(absl::StrCat("sntp ", where, ": socket: ", strerror(errno)));
  }
  FdCloser closer(fd);
  const int rc = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("sntp ", where, ": connect: ", strerror(errno)));
  }

  // The low bits of the transmit timestamp are below the clock's resolution; random bits there
  // make the originate check a nonce as RFC 5905 suggests.
  std::random_device rd;
  const NtpTimestamp t1 = (NtpFromUnixNs(UnixNowNs()) & ~0xffffULL) | (rd() & 0xffffULL);
  const auto request = EncodeNtpPacket(MakeSntpRequest(t1));
  if (send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError(absl::StrCat("sntp ", where, ": send: ", strerror(errno)));
  }

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  std::array<uint8_t, kNtpMaxPacketSize + 4> buf{};
  // A reply that fails a check is remembered and the client keeps listening until the deadline:
  // a forged or broken packet must not hide the server's real reply.
  absl::Status rejected = absl::OkStatus();
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (!rejected.ok()) {
        return absl::Status(
            rejected.code(),
            absl::StrCat("sntp ", where, ": no valid reply within ", options_.timeout_ms,
                         " ms; rejected: ", rejected.message()));
      }
      return absl::DeadlineExceededError(
          absl::StrCat("sntp ", where, ": no reply within ", options_.timeout_ms, " ms"));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int pr = poll(&pfd, 1, static_cast<int>(left.count()));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("sntp ", where, ": poll: ", strerror(errno)));
    }
    if (pr == 0) continue;  // the deadline check above reports the timeout
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    const NtpTimestamp t4 = NtpFromUnixNs(UnixNowNs());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      // ECONNREFUSED: an ICMP port unreachable came back (nothing listens there).
      return absl::UnavailableError(absl::StrCat("sntp ", where, ": recv: ", strerror(errno)));
    }
    auto packet = ParseNtpPacket(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)));
    if (!packet.ok()) {
      rejected = packet.status();
      continue;
    }
    if (packet->originate_ts != t1) {
      continue;  // a late reply to an earlier request, or a forged one (even a forged kiss)
    }
    absl::Status valid = ValidateSntpReply(*packet, t1);
    if (!valid.ok() && packet->stratum == 0 && HasKissCode(*packet)) {
      // A kiss-o'-death that answers this very request: stop asking.
      return absl::Status(valid.code(), absl::StrCat("sntp ", where, ": ", valid.message()));
    }
    if (!valid.ok()) {
      rejected = valid;
      continue;
    }
    auto sample = SampleFromTimestamps(t1, packet->receive_ts, packet->transmit_ts, t4);
    if (!sample.ok()) {
      rejected = sample.status();
      continue;
    }
    return SntpResult{*sample, *packet};
  }
}

}  // namespace seedance::engine
