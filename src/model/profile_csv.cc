// Reader for Vidur-schema operator and collective profiles (calibration.h).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/model/calibration.h"
#include "seedance/trace/csv_table.h"

namespace seedance::model {
namespace {

using trace::table::Column;
using trace::table::Row;
using trace::table::TableOptions;
using trace::table::TableReader;
using trace::table::UnknownColumns;

constexpr const char* kOps[] = {"emb",         "input_layernorm", "attn_pre_proj",
                                "attn_rope",   "attn_post_proj",  "post_attention_layernorm",
                                "mlp_up_proj", "mlp_act",         "mlp_down_proj",
                                "add"};
constexpr int kNumOps = static_cast<int>(std::size(kOps));

// The columns read from either kind of profile; which are required depends on the kind, which the
// header tells (ParseProfileCsv). The first kNumOps are the operator medians, in kOps order.
enum ProfileColumn {
  kNHead = kNumOps,
  kNKvHead,
  kNEmbd,
  kNExpandedEmbd,
  kNumTokens,
  kNumTensorParallelWorkers,
  kUseGatedMlp,
  kAllReduceMedian,
  kNumWorkers,
  kSize,
  kDevicesPerNode,
  kNumProfileColumns,
};
constexpr std::array<Column, kNumProfileColumns> kProfileColumns = {{
    {"time_stats.emb.median", false},
    {"time_stats.input_layernorm.median", false},
    {"time_stats.attn_pre_proj.median", false},
    {"time_stats.attn_rope.median", false},
    {"time_stats.attn_post_proj.median", false},
    {"time_stats.post_attention_layernorm.median", false},
    {"time_stats.mlp_up_proj.median", false},
    {"time_stats.mlp_act.median", false},
    {"time_stats.mlp_down_proj.median", false},
    {"time_stats.add.median", false},
    {"n_head", false},
    {"n_kv_head", false},
    {"n_embd", false},
    {"n_expanded_embd", false},
    {"num_tokens", false},
    {"num_tensor_parallel_workers", false},
    {"use_gated_mlp", false},
    {"time_stats.all_reduce.median", false},
    {"num_workers", false},
    {"size", false},
    {"devices_per_node", false},
}};

// kProfileColumns[i] is "time_stats." + kOps[i] + ".median".
constexpr bool OpMediansMatchOps() {
  constexpr std::string_view kPrefix = "time_stats.", kSuffix = ".median";
  for (int i = 0; i < kNumOps; ++i) {
    const std::string_view name = kProfileColumns[i].name;
    if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix) ||
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()) != kOps[i]) {
      return false;
    }
  }
  return true;
}
static_assert(OpMediansMatchOps());

// Vidur's profiles carry many columns that are not read (min, max, mean, std, rank, ...).
constexpr TableOptions kOtherColumnsIgnored = {.unknown_columns = UnknownColumns::kIgnore};

absl::StatusOr<double> Number(const Row& r, int col, double min_value) {
  const std::string text(r.value(col));
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
    return r.Error(col, "expected a number");
  }
  if (v < min_value) return r.Error(col, absl::StrCat("expected a number >= ", min_value));
  return v;
}

absl::StatusOr<bool> Bool(const Row& r, int col) {
  const std::string_view v = r.value(col);
  if (v == "True" || v == "true" || v == "1") return true;
  if (v == "False" || v == "false" || v == "0") return false;
  return r.Error(col, "expected True or False");
}

// An integer in [min_value, max_value] (bounded so that shape products cannot overflow).
absl::StatusOr<int64_t> Int(const Row& r, int col, int64_t min_value, int64_t max_value) {
  absl::StatusOr<double> v = Number(r, col, static_cast<double>(min_value));
  if (!v.ok()) return v.status();
  if (*v != std::floor(*v)) return r.Error(col, "expected an integer");
  if (*v > static_cast<double>(max_value)) {
    return r.Error(col, absl::StrCat("expected at most ", max_value));
  }
  return static_cast<int64_t>(*v);
}

#define ASSIGN_OR_RETURN_(lhs, expr)            \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  const auto lhs = *lhs##_or

absl::Status ParseOperatorRow(const Row& r, std::vector<ProfileSample>& out) {
  ASSIGN_OR_RETURN_(n_head, Int(r, kNHead, 1, 1 << 16));
  ASSIGN_OR_RETURN_(n_kv, Int(r, kNKvHead, 1, 1 << 16));
  ASSIGN_OR_RETURN_(e, Int(r, kNEmbd, 1, 1 << 24));
  ASSIGN_OR_RETURN_(f, Int(r, kNExpandedEmbd, 1, 1 << 24));
  ASSIGN_OR_RETURN_(t, Int(r, kNumTokens, 1, 1 << 30));
  ASSIGN_OR_RETURN_(tp, Int(r, kNumTensorParallelWorkers, 1, 1 << 12));
  bool gated = true;
  if (r.has(kUseGatedMlp)) {
    absl::StatusOr<bool> g = Bool(r, kUseGatedMlp);
    if (!g.ok()) return g.status();
    gated = *g;
  }
  if (e < n_head) return r.Error(kNEmbd, absl::StrCat("must be at least n_head (", n_head, ")"));
  const int64_t hd = e / n_head;
  const int64_t q = std::max<int64_t>(1, n_head / tp) * hd;
  const int64_t kv = std::max<int64_t>(1, n_kv / tp) * hd;
  const int64_t ff = std::max<int64_t>(1, f / tp);
  const double td = static_cast<double>(t);
  for (int col = 0; col < kNumOps; ++col) {
    if (!r.has(col)) continue;
    const char* op = kOps[col];
    ProfileSample s;
    s.line = static_cast<int>(r.line);
    s.op = op;
    s.num_workers = static_cast<int>(tp);
    s.num_tokens = t;
    ASSIGN_OR_RETURN_(ms, Number(r, col, 0));
    if (ms <= 0) continue;  // not measured
    s.measured_s = ms * 1e-3;
    const std::string_view o = op;
    s.op_class = OpClass::kGemm;
    s.m = t;
    if (o == "attn_pre_proj") {
      s.k = e;
      s.n = q + 2 * kv;
    } else if (o == "attn_post_proj") {
      s.k = q;
      s.n = e;
    } else if (o == "mlp_up_proj") {
      s.k = e;
      s.n = gated ? 2 * ff : ff;
    } else if (o == "mlp_down_proj") {
      s.k = ff;
      s.n = e;
    } else {
      s.op_class = OpClass::kElementwise;
      s.m = s.k = s.n = 0;
      // 16-bit activations: bytes read + written.
      if (o == "emb" || o == "input_layernorm" || o == "post_attention_layernorm") {
        s.bytes = td * 2.0 * e * 2.0;
        s.kind = o == "emb" ? ElementwiseKind::kEmbedding : ElementwiseKind::kNorm;
      } else if (o == "attn_rope") {
        s.bytes = td * 2.0 * (q + kv) * 2.0;
        s.kind = ElementwiseKind::kRope;
      } else if (o == "mlp_act") {
        s.bytes = td * (gated ? 3.0 : 2.0) * ff * 2.0;
        s.kind = ElementwiseKind::kActivation;
      } else {  // add: two inputs, one output
        s.bytes = td * 3.0 * e * 2.0;
        s.kind = ElementwiseKind::kAdd;
      }
    }
    out.push_back(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status ParseAllReduceRow(const Row& r, std::vector<ProfileSample>& out) {
  ASSIGN_OR_RETURN_(ms, Number(r, kAllReduceMedian, 0));
  ASSIGN_OR_RETURN_(n, Int(r, kNumWorkers, 1, 1 << 20));
  ASSIGN_OR_RETURN_(size, Int(r, kSize, 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN_(dpn, Int(r, kDevicesPerNode, 1, 1 << 20));
  if (ms <= 0) return absl::OkStatus();
  ProfileSample s;
  s.line = static_cast<int>(r.line);
  s.op = "all_reduce";
  s.op_class = OpClass::kAllReduce;
  s.bytes = static_cast<double>(size) * 2.0;  // FP16 elements
  s.num_workers = static_cast<int>(n);
  s.devices_per_node = static_cast<int>(dpn);
  s.measured_s = ms * 1e-3;
  out.push_back(std::move(s));
  return absl::OkStatus();
}

// The header tells the kind of profile, and so which columns it needs.
absl::Status CheckProfileHeader(const TableReader& table) {
  if (table.has(kAllReduceMedian)) {
    for (int c : {kNumWorkers, kSize, kDevicesPerNode}) {
      if (absl::Status s = table.Require(c); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  bool any = false;
  for (int op = 0; op < kNumOps; ++op) any |= table.has(op);
  if (!any) {
    return table.HeaderError("time_stats.<op>.median",
                             "not an operator or all-reduce profile: no operator median column "
                             "(time_stats.mlp_up_proj.median, ...) and no "
                             "time_stats.all_reduce.median");
  }
  for (int c : {kNHead, kNKvHead, kNEmbd, kNExpandedEmbd, kNumTokens, kNumTensorParallelWorkers}) {
    if (absl::Status s = table.Require(c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Profile> ParseProfileCsv(std::string_view text, std::string_view source) {
  absl::StatusOr<TableReader> table =
      TableReader::Open(text, source, kProfileColumns, kOtherColumnsIgnored);
  if (!table.ok()) return table.status();
  if (absl::Status s = CheckProfileHeader(*table); !s.ok()) return s;
  Profile profile;
  profile.source = std::string(source);
  profile.collective = table->has(kAllReduceMedian);
  Row row;
  absl::Status status;
  while (table->Next(&row, &status)) {
    if (absl::Status s = profile.collective ? ParseAllReduceRow(row, profile.samples)
                                            : ParseOperatorRow(row, profile.samples);
        !s.ok()) {
      return s;
    }
  }
  if (!status.ok()) return status;
  return profile;
}

absl::StatusOr<Profile> ReadProfileCsv(const std::string& path) {
  // The one reader: a directory, /dev/zero or a silent FIFO is an error naming the path and the
  // OS error, not an "empty file".
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseProfileCsv(*text, base::ForTerminal(path));
}

}  // namespace seedance::model
