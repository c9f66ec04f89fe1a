// libFuzzer target for the cache simulator's inputs: arbitrary bytes through MaybeDecompress, then
// (the decompressed bytes, or the raw ones) through ParseTrace in every format, and as a --sizes
// list, a --policy list, a format name and a trace path. Nothing may crash, hang or throw.
// Oracles: every error is InvalidArgument (NotFound for a path whose name tells no format) and
// a parse error names the source; an accepted trace keeps the format's promises (size 1 and the
// request index as time where the format has neither; non-negative times and sizes otherwise);
// every accepted cache size is >= 1 and every accepted policy name is one of PolicyNames().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/base/check.h"
#include "seedance/cache/policy.h"
#include "seedance/cache/simulate.h"
#include "seedance/cache/trace.h"

namespace cache = seedance::cache;

namespace {

constexpr std::string_view kSource = "fuzz.trace";

void CheckError(const absl::Status& s, bool names_source) {
  SEEDANCE_CHECK(s.code() == absl::StatusCode::kInvalidArgument)
      << "unexpected code " << static_cast<int>(s.code()) << ": " << s.message();
  if (names_source) {
    SEEDANCE_CHECK(std::string_view(s.message().data(), s.message().size()).starts_with(kSource))
        << "error does not name the source: " << s.message();
  }
}

void CheckTrace(const std::vector<cache::Request>& t, cache::TraceFormat format) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (!cache::TraceHasSizes(format)) {
      SEEDANCE_CHECK(t[i].size == 1) << "request " << i << " has size " << t[i].size;
    }
    if (!cache::TraceHasTime(format)) {
      SEEDANCE_CHECK(t[i].time == static_cast<int64_t>(i)) << "request " << i << " time";
    }
    SEEDANCE_CHECK(t[i].time >= 0 && t[i].size >= 0)
        << "request " << i << ": time " << t[i].time << " size " << t[i].size;
  }
}

constexpr cache::TraceFormat kAll[] = {
    cache::TraceFormat::kOracleGeneral, cache::TraceFormat::kCsv,
    cache::TraceFormat::kTxt,           cache::TraceFormat::kLis,
    cache::TraceFormat::kLirs,          cache::TraceFormat::kCache2k,
    cache::TraceFormat::kVscsi,         cache::TraceFormat::kMsr,
    cache::TraceFormat::kSystor,        cache::TraceFormat::kTencentCbs,
    cache::TraceFormat::kTencentPhoto,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<std::string> text = cache::MaybeDecompress(raw, kSource);
  if (!text.ok()) CheckError(text.status(), true);
  const std::string& input = text.ok() ? *text : raw;
  for (cache::TraceFormat format : kAll) {
    absl::StatusOr<std::vector<cache::Request>> t = cache::ParseTrace(input, kSource, format);
    if (t.ok()) {
      CheckTrace(*t, format);
    } else {
      CheckError(t.status(), true);
    }
  }

  for (cache::CacheUnit unit : {cache::CacheUnit::kObjects, cache::CacheUnit::kBytes}) {
    auto sizes = cache::ParseCacheSizes(raw, unit, {.objects = 1000, .bytes = 1 << 30});
    if (sizes.ok()) {
      for (int64_t s : *sizes) SEEDANCE_CHECK(s >= 1) << "size " << s;
    } else {
      CheckError(sizes.status(), false);
    }
  }

  auto policies = cache::ParsePolicyList(raw);
  if (policies.ok()) {
    const std::vector<std::string>& names = cache::PolicyNames();
    for (const std::string& p : *policies) {
      SEEDANCE_CHECK(std::find(names.begin(), names.end(), p) != names.end()) << p;
    }
  } else {
    CheckError(policies.status(), false);
  }

  auto format = cache::ParseTraceFormat(raw);
  if (format.ok()) {
    SEEDANCE_CHECK(*cache::ParseTraceFormat(cache::TraceFormatName(*format)) == *format);
  } else {
    CheckError(format.status(), false);
  }
  auto by_name = cache::TraceFormatFromPath(raw);
  SEEDANCE_CHECK(by_name.ok() || by_name.status().code() == absl::StatusCode::kNotFound)
      << by_name.status();
  return 0;
}
