// SNTP (RFC 4330, NTPv4 packet format of RFC 5905) packets and a unicast UDP client.
//
// A time sample is the four timestamps of one request/reply exchange:
//   t1  client transmit time (client clock)     t2  server receive time (server clock)
//   t3  server transmit time (server clock)     t4  client receive time (client clock)
// offset = ((t2 - t1) + (t3 - t4)) / 2   (what to add to the client clock to read server time)
// delay  = (t4 - t1) - (t3 - t2)          (round trip on the network, server hold time excluded)
// The offset is exact when the path is symmetric; an asymmetry a = (up - down) adds a / 2.
//
// Every malformed or unusable reply is an absl::Status (kInvalidArgument for bad bytes,
// kUnavailable for a kiss-o'-death or an unsynchronised server, kDeadlineExceeded for a timeout)
// whose message says what was wrong; nothing here aborts on input from the network.
// Thread-safety: the free functions are pure; an SntpClient is used from one thread at a time.
#ifndef SEEDANCE_ENGINE_SNTP_H_
#define SEEDANCE_ENGINE_SNTP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::engine {

inline constexpr size_t kNtpPacketSize = 48;       // header without extensions or MAC
inline constexpr size_t kNtpMaxPacketSize = 1024;  // larger replies are rejected
inline constexpr uint8_t kNtpModeClient = 3;
inline constexpr uint8_t kNtpModeServer = 4;
inline constexpr uint64_t kNtpUnixEpochOffsetS = 2208988800ULL;  // 1900-01-01 to 1970-01-01

// 64-bit NTP timestamp: seconds since 1900 in the high 32 bits, fraction in the low 32 bits.
using NtpTimestamp = uint64_t;

// Converts Unix time in nanoseconds to an NTP timestamp (era 0; wraps in 2036 as NTP does).
NtpTimestamp NtpFromUnixNs(int64_t unix_ns);
// Signed difference a - b in seconds, correct across an era wrap when |a - b| < 68 years.
double NtpDiffSeconds(NtpTimestamp a, NtpTimestamp b);

// The fields of an NTP header. root_delay/root_dispersion are NTP short format (16.16 seconds).
struct NtpPacket {
  uint8_t leap = 0;     // 0 none, 1/2 leap second pending, 3 alarm (unsynchronised)
  uint8_t version = 4;  // 1..7 on the wire; a reply must be 3 or 4
  uint8_t mode = kNtpModeClient;
  uint8_t stratum = 0;  // 0 kiss-o'-death, 1 primary, 2..15 secondary, 16+ unsynchronised
  int8_t poll = 0;
  int8_t precision = 0;
  uint32_t root_delay = 0;
  uint32_t root_dispersion = 0;
  uint32_t reference_id = 0;  // for stratum 0, four ASCII letters (the kiss code)
  NtpTimestamp reference_ts = 0;
  NtpTimestamp originate_ts = 0;
  NtpTimestamp receive_ts = 0;
  NtpTimestamp transmit_ts = 0;
};

// Serialises the 48-byte header (big-endian, as on the wire).
std::array<uint8_t, kNtpPacketSize> EncodeNtpPacket(const NtpPacket& packet);
// A client request whose transmit timestamp is `transmit` (it comes back as the originate).
NtpPacket MakeSntpRequest(NtpTimestamp transmit);

// Parses the header. Rejects fewer than 48 bytes, more than kNtpMaxPacketSize, a length that is not
// a multiple of 4 (extension fields and MACs are whole words), and version 0. Does not judge
// whether the packet is a usable reply: see ValidateSntpReply.
absl::StatusOr<NtpPacket> ParseNtpPacket(std::span<const uint8_t> bytes);

// Whether the reference id of a stratum-0 packet is a kiss code (four printable ASCII bytes).
bool HasKissCode(const NtpPacket& packet);
// The kiss code of a stratum-0 packet ("RATE", "DENY", ...), non-printable bytes as '?'.
std::string KissCode(const NtpPacket& packet);

// RFC 4330 section 5 checks of a reply to a request whose transmit timestamp was
// `request_transmit`: version 3 or 4, mode 4 (server), leap != 3, stratum 1..15 (stratum 0 is a
// kiss-o'-death: the message names the code, e.g. RATE, DENY, RSTR), non-zero receive and transmit
// timestamps, and originate == request_transmit (otherwise the reply is stale or forged); then
// CheckReplyTimestamps. Stratum 0 without a kiss code (reference id not four ASCII letters) is a
// malformed reply (kInvalidArgument), not a kiss-o'-death.
absl::Status ValidateSntpReply(const NtpPacket& reply, NtpTimestamp request_transmit);

// Longest time a server may claim to have held a request (transmit - receive), and how far the
// reference timestamp may lie after the transmit timestamp; beyond them a reply is impossible.
inline constexpr double kMaxServerHoldS = 60;
inline constexpr double kMaxReferenceLeadS = 1;

// The server's timestamps must be possible: a non-zero reference timestamp (zero: the server was
// never synchronised, kUnavailable), transmit at or after receive and at most kMaxServerHoldS
// later, and a reference timestamp not after the transmit timestamp (kInvalidArgument).
absl::Status CheckReplyTimestamps(const NtpPacket& reply);

// One exchange, reduced to what clock estimation needs.
struct ClockSample {
  double local_time_s = 0;  // t4 on the client clock (seconds; any fixed epoch)
  double offset_s = 0;      // server - client, formula above
  double delay_s = 0;       // round-trip delay, formula above
};

// offset and delay from the four timestamps (local_time_s is t4 in seconds since 1900).
// Rejects a negative delay below -1 ms (clocks stepped during the exchange or a broken server).
absl::StatusOr<ClockSample> SampleFromTimestamps(NtpTimestamp t1, NtpTimestamp t2, NtpTimestamp t3,
                                                 NtpTimestamp t4);

struct SntpOptions {
  std::string host = "127.0.0.1";  // name or address (IPv4 or IPv6)
  uint16_t port = 123;
  int timeout_ms = 1000;  // per request: no reply by then is kDeadlineExceeded
};

// What one successful query returns.
struct SntpResult {
  ClockSample sample;
  NtpPacket reply;
};

// Unicast SNTP client over UDP, reading the system clock (CLOCK_REALTIME) for t1 and t4.
class SntpClient {
 public:
  explicit SntpClient(SntpOptions options) : options_(std::move(options)) {}
  // Sends one request and waits up to timeout_ms for a valid reply. Replies whose originate does
  // not match are ignored (stale or forged); a kiss-o'-death answering this request is returned
  // at once (kUnavailable). Any other bad reply (malformed, impossible timestamps, negative delay)
  // is set aside and the client keeps listening: the first valid reply before the deadline wins;
  // at the deadline the error is the last rejection (its code; the message says "rejected"), or
  // kDeadlineExceeded when nothing came. Resolution and socket failures are kUnavailable.
  absl::StatusOr<SntpResult> Query();

 private:
  SntpOptions options_;
};

// Splits "HOST", "HOST:PORT" or "[V6]:PORT". REQUIRES nothing; bad input is kInvalidArgument.
absl::Status ParseHostPort(const std::string& text, uint16_t default_port, std::string* host,
                           uint16_t* port);

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_SNTP_H_
