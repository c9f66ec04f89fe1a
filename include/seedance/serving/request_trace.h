// Readers for LLM request traces replayed by the serving simulator (docs/serving.md#trace-formats).
//
//  * Azure LLM inference trace 2023 (Splitwise): CSV `TIMESTAMP,ContextTokens,GeneratedTokens`,
//    TIMESTAMP as `YYYY-MM-DD HH:MM:SS[.fffffff]`; arrivals relative to the first row.
//  * Mooncake FAST'25 JSONL: one object per line with `timestamp` (ms), `input_length`,
//    `output_length`, `hash_ids` (one id per 512-token prompt block; equal id = equal prefix
//    block).
//  * ShareGPT length statistics CSV (Sarathi-Serve): `num_prefill_tokens,num_decode_tokens[,...]`,
//    no times; arrivals are drawn as a Poisson process at `poisson_rate` requests/s.
//
// Columns/keys are matched by name. The CSV formats are read in the one CSV dialect of
// seedance/trace/csv_table.h (blank lines skipped, "\r\n" accepted, a leading byte order mark
// skipped, blanks and surrounding double quotes stripped from fields, no quoted commas); columns
// other than the ones named above are not read, and a column named twice is an error. Errors are
// absl::InvalidArgumentError (kNotFound for a missing file) reading "FILE:LINE: field 'NAME': what
// was wrong (got 'VALUE')"; LINE is 1-based. Rejected: a missing column or key, a non-integer or
// negative length, a prompt of 0 tokens, an output of 0 tokens, timestamps that go backwards, a row
// with too many or too few fields.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace seedance::serving {

struct TraceRequest {
  double arrival_s = 0;  // since the trace start
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  // Content ids of the prompt's blocks of RequestTrace::prefix_block_tokens tokens (Mooncake
  // hash_ids); empty when the trace has none.
  std::vector<uint64_t> prefix_block_ids;
};

enum class TraceFormat { kAuto, kAzure, kMooncake, kShareGpt };

struct RequestTrace {
  std::string source;
  TraceFormat format = TraceFormat::kAuto;
  int prefix_block_tokens = 0;  // tokens per prefix_block_ids entry (Mooncake: 512), 0 = none
  std::vector<TraceRequest> requests;  // sorted by arrival
};

struct TraceReadOptions {
  TraceFormat format = TraceFormat::kAuto;  // kAuto: .jsonl = Mooncake, CSV by header
  double poisson_rate = 1.0;                // ShareGPT: requests per second
  uint64_t seed = 42;                       // ShareGPT: arrival draws
  int64_t max_requests = 0;                 // > 0: keep only the first N requests
};

absl::StatusOr<RequestTrace> ParseAzureTrace(std::string_view text, std::string_view source);
absl::StatusOr<RequestTrace> ParseMooncakeTrace(std::string_view text, std::string_view source);
absl::StatusOr<RequestTrace> ParseShareGptTrace(std::string_view text, std::string_view source,
                                                double poisson_rate, uint64_t seed);

// Reads `path` and parses it in the given (or detected) format.
absl::StatusOr<RequestTrace> ReadRequestTrace(const std::string& path,
                                              const TraceReadOptions& options = {});

// Token-weighted prefix hit ratio of an infinite cache: for each request in arrival order, the
// leading prefix blocks whose ids appeared in any earlier request count as hits (a partial last
// block with its actual tokens), over all prompt tokens. This is the Mooncake README's definition
// (0.374 for the conversation trace). 0 when the trace has no block ids.
double IdealPrefixHitRatio(const RequestTrace& trace);

}  // namespace seedance::serving
