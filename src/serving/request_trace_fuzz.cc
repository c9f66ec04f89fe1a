// libFuzzer target: the three LLM trace parsers on arbitrary bytes must return a value or a clean
// error, never crash; a small parsed trace is also replayed through both schedulers with the KV
// invariants checked at the end.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seedance/base/check.h"
#include "seedance/serving/request_trace.h"
#include "seedance/serving/serving_sim.h"

namespace {

void Replay(const seedance::serving::RequestTrace& trace) {
  using namespace seedance::serving;  // NOLINT
  if (trace.requests.size() > 64) return;
  for (const TraceRequest& r : trace.requests) {
    if (r.output_tokens > 512 || r.prompt_tokens > 1 << 16) return;  // keep runs short
  }
  ServingHardware hw;
  hw.step_seconds = [](std::span<const seedance::model::SequenceWork> batch) {
    return 0.001 + 1e-6 * static_cast<double>(batch.size());
  };
  hw.kv_bytes_per_token = 1;
  hw.kv_cache_bytes = 16 * 256;
  for (BatchingMode mode : {BatchingMode::kContinuous, BatchingMode::kStatic}) {
    ServingSimOptions o;
    o.mode = mode;
    o.prefix_cache =
        trace.requests.size() % 2 ? PrefixCacheMode::kUnbounded : PrefixCacheMode::kPool;
    auto r = RunServingSim(trace, hw, o);
    SEEDANCE_CHECK(r.ok() || r.status().code() == absl::StatusCode::kInvalidArgument)
        << "a parsed trace failed to replay with a non-input error: " << r.status();
    SEEDANCE_CHECK(!r.ok() || r->completed + r->dropped ==
                                  static_cast<int64_t>(trace.requests.size()))
        << "replay lost requests: " << r->completed << " completed + " << r->dropped
        << " dropped of " << trace.requests.size();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seedance::serving;  // NOLINT
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto t = ParseAzureTrace(text, "fuzz.csv"); t.ok()) Replay(*t);
  if (auto t = ParseMooncakeTrace(text, "fuzz.jsonl"); t.ok()) Replay(*t);
  if (auto t = ParseShareGptTrace(text, "fuzz.csv", 2.0, 1); t.ok()) Replay(*t);
  return 0;
}
