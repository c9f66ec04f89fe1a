// libFuzzer target: any bytes given to the NTP packet parser and reply checks must come back as a
// status or a sample, never a crash; a parsed header must survive re-encoding unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "seedance/base/check.h"
#include "seedance/engine/clock_sync.h"
#include "seedance/engine/sntp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seedance::engine;
  const std::span<const uint8_t> bytes(data, size);
  auto packet = ParseNtpPacket(bytes);
  if (!packet.ok()) return 0;
  const auto encoded = EncodeNtpPacket(*packet);
  for (size_t i = 0; i < kNtpPacketSize; ++i) {
    SEEDANCE_CHECK(encoded[i] == data[i])
        << "parse/encode disagree at byte " << i << ": " << int{encoded[i]} << " != "
        << int{data[i]};
  }
  (void)KissCode(*packet);
  // Check the reply both against its own originate (so the deeper checks run) and a wrong one.
  (void)ValidateSntpReply(*packet, packet->originate_ts);
  (void)ValidateSntpReply(*packet, packet->originate_ts + 1);
  auto sample = SampleFromTimestamps(packet->originate_ts, packet->receive_ts, packet->transmit_ts,
                                     packet->reference_ts);
  if (sample.ok()) {
    // Feed whatever came out to both estimators: no input may break them.
    auto reg = NewRegressionEstimator();
    auto ewma = NewEwmaEstimator();
    for (int i = 0; i < 3; ++i) {
      ClockSample s = *sample;
      s.local_time_s += i;
      reg->AddSample(s);
      ewma->AddSample(s);
    }
    (void)reg->OffsetAt(sample->local_time_s);
    (void)ewma->OffsetAt(sample->local_time_s);
  }
  return 0;
}
