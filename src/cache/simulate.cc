#include "seedance/cache/simulate.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "seedance/base/mutex.h"
#include "seedance/base/parallel.h"
#include "seedance/trace/input_error.h"

namespace seedance::cache {
namespace {

using trace::AbslView;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

struct Unit {
  std::string_view name;  // lower case
  double bytes;
};

// As base::ParseByteSize (--max-input-size) and libCacheSim's size strings: K, KB and KiB are all
// 1024 bytes, and so on up.
constexpr double kKiB = 1024.0;
constexpr std::array<Unit, 13> kUnits = {{
    {"b", 1.0},
    {"k", kKiB},
    {"kb", kKiB},
    {"kib", kKiB},
    {"m", kKiB* kKiB},
    {"mb", kKiB* kKiB},
    {"mib", kKiB* kKiB},
    {"g", kKiB* kKiB* kKiB},
    {"gb", kKiB* kKiB* kKiB},
    {"gib", kKiB* kKiB* kKiB},
    {"t", kKiB* kKiB* kKiB* kKiB},
    {"tb", kKiB* kKiB* kKiB* kKiB},
    {"tib", kKiB* kKiB* kKiB* kKiB},
}};

// The largest double below 2^63: capacities are int64.
constexpr double kMaxCapacity = 9.2233720368547748e18;

// A non-negative decimal number ("12", "0.5", "1.5"): digits with at most one '.'.
std::optional<double> ParseNumber(std::string_view s, bool* has_dot) {
  *has_dot = s.find('.') != std::string_view::npos;
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string_view::npos ||
      std::count(s.begin(), s.end(), '.') > 1 || s == ".") {
    return std::nullopt;
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string UnitList() {
  return "B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (powers of 1024), or %";
}

// One --sizes item in `unit`; errors read "item N 'TEXT': ..." (N 1-based).
absl::StatusOr<int64_t> ParseSizeItem(std::string_view item, size_t n, CacheUnit unit,
                                      const WorkingSet& ws) {
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("item ", n, " '", trace::QuoteValue(item), "': ", AbslView(what)));
  };
  const std::string_view text = Trim(item);
  if (text.empty()) return error("empty size");
  const size_t split = std::min(text.find_first_not_of("0123456789."), text.size());
  const std::string_view number = text.substr(0, split);
  const std::string suffix = absl::AsciiStrToLower(AbslView(text.substr(split)));
  bool has_dot = false;
  const std::optional<double> v = ParseNumber(number, &has_dot);
  if (!v) return error("expected a non-negative number, optionally with a unit");
  const int64_t whole = unit == CacheUnit::kObjects ? ws.objects : ws.bytes;
  const char* whole_name = unit == CacheUnit::kObjects ? "distinct objects" : "distinct bytes";
  double size = 0;
  if (suffix == "%" || (suffix.empty() && has_dot)) {
    const double fraction = suffix == "%" ? *v / 100 : *v;
    if (!(fraction > 0) || fraction > 1) {
      return error(suffix == "%" ? "a percentage must be in (0, 100]"
                                 : "a fraction of the working set must be in (0, 1]");
    }
    size = std::floor(fraction * static_cast<double>(whole));
    if (size < 1) {
      return error(absl::StrCat("is under 1 of the working set's ", whole, " ", whole_name));
    }
  } else if (suffix.empty()) {
    if (*v > kMaxCapacity) return error("too large");
    size = *v;
  } else {
    const auto u =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& x) { return x.name == suffix; });
    if (u == kUnits.end()) {
      return error(absl::StrCat("unknown unit '", trace::QuoteValue(text.substr(split)),
                                "' (expected none, ", UnitList(), ")"));
    }
    if (unit == CacheUnit::kObjects) {
      return error(
          "a size in bytes needs object sizes (--object-sizes on); give an object "
          "count or a fraction");
    }
    size = std::floor(*v * u->bytes);
    if (size > kMaxCapacity) return error("too large");
  }
  if (size < 1) return error("a cache size must be >= 1");
  return static_cast<int64_t>(size);
}

}  // namespace

WorkingSet MeasureWorkingSet(const std::vector<Request>& trace) {
  absl::flat_hash_set<uint64_t> seen;
  WorkingSet ws;
  for (const Request& r : trace) {
    if (r.size <= 0 || !seen.insert(r.id).second) continue;
    ++ws.objects;
    ws.bytes = r.size > std::numeric_limits<int64_t>::max() - ws.bytes
                   ? std::numeric_limits<int64_t>::max()
                   : ws.bytes + r.size;
  }
  return ws;
}

absl::StatusOr<std::vector<int64_t>> ParseCacheSizes(std::string_view list, CacheUnit unit,
                                                     const WorkingSet& working_set) {
  std::vector<int64_t> out;
  size_t n = 0;
  for (absl::string_view item : absl::StrSplit(AbslView(list), ',')) {
    absl::StatusOr<int64_t> size =
        ParseSizeItem(std::string_view(item.data(), item.size()), ++n, unit, working_set);
    if (!size.ok()) return size.status();
    out.push_back(*size);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParsePolicyList(std::string_view list) {
  std::vector<std::string> out;
  size_t n = 0;
  for (absl::string_view raw : absl::StrSplit(AbslView(list), ',')) {
    ++n;
    const std::string_view item = Trim(std::string_view(raw.data(), raw.size()));
    if (absl::AsciiStrToLower(AbslView(item)) == "all") {
      out.insert(out.end(), PolicyNames().begin(), PolicyNames().end());
      continue;
    }
    absl::StatusOr<std::unique_ptr<Policy>> p = NewPolicy(item, 1);
    if (!p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("item ", n, " '", trace::QuoteValue(item),
                                                     "': ", p.status().message(), " or all"));
    }
    out.emplace_back((*p)->name());
  }
  return out;
}

absl::StatusOr<std::vector<SimulationRow>> SimulateGrid(const std::vector<Request>& trace,
                                                        const std::vector<std::string>& policies,
                                                        const std::vector<int64_t>& capacities,
                                                        CacheUnit unit,
                                                        const GridOptions& options) {
  // Belady's oracle, computed once for every cell instead of once per cell.
  const std::vector<Request>* input = &trace;
  std::vector<Request> with_next;
  const bool belady = std::any_of(policies.begin(), policies.end(), [](const std::string& p) {
    return absl::AsciiStrToLower(p) == "belady" || absl::AsciiStrToLower(p) == "optimal";
  });
  if (belady && std::any_of(trace.begin(), trace.end(), [](const Request& r) {
        return r.next_access_vtime == kUnknownNextAccess;
      })) {
    with_next = trace;
    ComputeNextAccess(&with_next);
    input = &with_next;
  }
  const size_t cells = policies.size() * capacities.size();
  std::vector<SimulationRow> rows(cells);
  struct Done {
    base::Mutex mu;
    size_t cells ABSL_GUARDED_BY(mu) = 0;
  } done;
  absl::Status s = base::ParallelFor(cells, options.jobs, [&](size_t i) -> absl::Status {
    absl::StatusOr<SimulationRow> row =
        Simulate(*input, policies[i / capacities.size()], capacities[i % capacities.size()], unit);
    if (!row.ok()) return row.status();
    rows[i] = *std::move(row);
    if (options.progress) {
      base::MutexLock lock(done.mu);
      options.progress(++done.cells, cells);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return rows;
}

std::string RowsToJson(const std::vector<SimulationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const SimulationRow& r : rows) {
    out.push_back({{"policy", r.policy},
                   {"size", r.size},
                   {"requests", r.requests},
                   {"misses", r.misses},
                   {"miss_ratio", r.miss_ratio()}});
  }
  return out.dump();
}

std::string RowsToCsv(const std::vector<SimulationRow>& rows) {
  std::string out = "policy,size,requests,misses,miss_ratio\n";
  for (const SimulationRow& r : rows) {
    absl::StrAppend(&out, r.policy, ",", r.size, ",", r.requests, ",", r.misses, ",",
                    nlohmann::json(r.miss_ratio()).dump(), "\n");
  }
  return out;
}

std::string RowsToTable(const std::vector<SimulationRow>& rows) {
  std::vector<std::array<std::string, 5>> cells = {
      {"policy", "size", "requests", "misses", "miss_ratio"}};
  for (const SimulationRow& r : rows) {
    cells.push_back({r.policy, absl::StrCat(r.size), absl::StrCat(r.requests),
                     absl::StrCat(r.misses), absl::StrFormat("%.6f", r.miss_ratio())});
  }
  std::array<size_t, 5> width{};
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : cells) {
    // The policy left-aligned, the numbers right-aligned.
    absl::StrAppend(&out, row[0], std::string(width[0] - row[0].size(), ' '));
    for (size_t c = 1; c < row.size(); ++c) {
      absl::StrAppend(&out, "  ", std::string(width[c] - row[c].size(), ' '), row[c]);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace seedance::cache
