// Reader for Vidur-schema operator and collective profiles (calibration.h).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/serving/calibration.h"
#include "seedance/trace/input_error.h"

namespace seedance::serving {
namespace {

constexpr const char* kOps[] = {"emb",         "input_layernorm", "attn_pre_proj",
                                "attn_rope",   "attn_post_proj",  "post_attention_layernorm",
                                "mlp_up_proj", "mlp_act",         "mlp_down_proj",
                                "add"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// The shared reader message, without "(got ...)" when there is no value to show.
absl::Status FieldError(std::string_view source, int line, std::string_view field,
                        std::string_view what, std::string_view value) {
  if (!value.empty()) return trace::FieldError(source, line, field, what, value);
  return trace::LineError(
      source, line, absl::StrCat("field '", trace::AbslView(field), "': ", trace::AbslView(what)));
}

class Row {
 public:
  Row(std::string_view source, int line, const std::map<std::string, size_t>& cols,
      const std::vector<std::string_view>& fields)
      : source_(source), line_(line), cols_(cols), fields_(fields) {}

  absl::StatusOr<double> Number(const std::string& name, double min_value) const {
    const auto it = cols_.find(name);
    if (it == cols_.end() || it->second >= fields_.size()) {
      return FieldError(source_, line_, name, "missing value", "");
    }
    const std::string text(fields_[it->second]);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
      return FieldError(source_, line_, name, "expected a number", text);
    }
    if (v < min_value) {
      return FieldError(source_, line_, name, absl::StrCat("expected a number >= ", min_value),
                        text);
    }
    return v;
  }
  absl::StatusOr<bool> Bool(const std::string& name) const {
    const auto it = cols_.find(name);
    if (it == cols_.end() || it->second >= fields_.size()) {
      return FieldError(source_, line_, name, "missing value", "");
    }
    const std::string_view v = fields_[it->second];
    if (v == "True" || v == "true" || v == "1") return true;
    if (v == "False" || v == "false" || v == "0") return false;
    return FieldError(source_, line_, name, "expected True or False", v);
  }
  // An integer in [min_value, max_value] (bounded so that shape products cannot overflow).
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t min_value, int64_t max_value) const {
    absl::StatusOr<double> v = Number(name, static_cast<double>(min_value));
    if (!v.ok()) return v.status();
    const auto it = cols_.find(name);
    if (*v != std::floor(*v)) {
      return FieldError(source_, line_, name, "expected an integer", fields_[it->second]);
    }
    if (*v > static_cast<double>(max_value)) {
      return FieldError(source_, line_, name, absl::StrCat("expected at most ", max_value),
                        fields_[it->second]);
    }
    return static_cast<int64_t>(*v);
  }

 public:
  std::string_view source() const { return source_; }
  std::string_view Text(const std::string& name) const {
    const auto it = cols_.find(name);
    return it == cols_.end() || it->second >= fields_.size() ? std::string_view()
                                                             : fields_[it->second];
  }

 private:
  std::string_view source_;
  int line_;
  const std::map<std::string, size_t>& cols_;
  const std::vector<std::string_view>& fields_;
};

#define ASSIGN_OR_RETURN_(lhs, expr)            \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  const auto lhs = *lhs##_or

absl::Status ParseOperatorRow(const Row& r, int line, std::vector<ProfileSample>& out,
                              const std::map<std::string, size_t>& cols) {
  ASSIGN_OR_RETURN_(n_head, r.Int("n_head", 1, 1 << 16));
  ASSIGN_OR_RETURN_(n_kv, r.Int("n_kv_head", 1, 1 << 16));
  ASSIGN_OR_RETURN_(e, r.Int("n_embd", 1, 1 << 24));
  ASSIGN_OR_RETURN_(f, r.Int("n_expanded_embd", 1, 1 << 24));
  ASSIGN_OR_RETURN_(t, r.Int("num_tokens", 1, 1 << 30));
  ASSIGN_OR_RETURN_(tp, r.Int("num_tensor_parallel_workers", 1, 1 << 12));
  bool gated = true;
  if (const auto it = cols.find("use_gated_mlp"); it != cols.end()) {
    absl::StatusOr<bool> g = r.Bool("use_gated_mlp");
    if (!g.ok()) return g.status();
    gated = *g;
  }
  if (e < n_head) {
    return FieldError(r.source(), line, "n_embd",
                      absl::StrCat("must be at least n_head (", n_head, ")"), r.Text("n_embd"));
  }
  const int64_t hd = e / n_head;
  const int64_t q = std::max<int64_t>(1, n_head / tp) * hd;
  const int64_t kv = std::max<int64_t>(1, n_kv / tp) * hd;
  const int64_t ff = std::max<int64_t>(1, f / tp);
  const double td = static_cast<double>(t);
  for (const char* op : kOps) {
    const std::string col = absl::StrCat("time_stats.", op, ".median");
    if (!cols.count(col)) continue;
    ProfileSample s;
    s.line = line;
    s.op = op;
    s.num_workers = static_cast<int>(tp);
    s.num_tokens = t;
    ASSIGN_OR_RETURN_(ms, r.Number(col, 0));
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

absl::Status ParseAllReduceRow(const Row& r, int line, std::vector<ProfileSample>& out) {
  ASSIGN_OR_RETURN_(ms, r.Number("time_stats.all_reduce.median", 0));
  ASSIGN_OR_RETURN_(n, r.Int("num_workers", 1, 1 << 20));
  ASSIGN_OR_RETURN_(size, r.Int("size", 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN_(dpn, r.Int("devices_per_node", 1, 1 << 20));
  if (ms <= 0) return absl::OkStatus();
  ProfileSample s;
  s.line = line;
  s.op = "all_reduce";
  s.op_class = OpClass::kAllReduce;
  s.bytes = static_cast<double>(size) * 2.0;  // FP16 elements
  s.num_workers = static_cast<int>(n);
  s.devices_per_node = static_cast<int>(dpn);
  s.measured_s = ms * 1e-3;
  out.push_back(std::move(s));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Profile> ParseProfileCsv(std::string_view text, std::string_view source) {
  Profile profile;
  profile.source = std::string(source);
  std::map<std::string, size_t> cols;
  bool have_header = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (Trim(line).empty()) continue;
    const std::vector<std::string_view> fields = Split(line);
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) {
        if (!cols.emplace(std::string(fields[i]), i).second) {
          return FieldError(source, line_no, fields[i], "column appears twice in the header", "");
        }
      }
      have_header = true;
      if (cols.count("time_stats.all_reduce.median")) {
        profile.collective = true;
        for (const char* c : {"num_workers", "size", "devices_per_node"}) {
          if (!cols.count(c)) return FieldError(source, line_no, c, "missing column", "");
        }
      } else {
        bool any = false;
        for (const char* op : kOps) {
          any |= cols.count(absl::StrCat("time_stats.", op, ".median")) > 0;
        }
        if (!any) {
          return FieldError(source, line_no, "time_stats.<op>.median",
                            "not an operator or all-reduce profile: no operator median column "
                            "(time_stats.mlp_up_proj.median, ...) and no "
                            "time_stats.all_reduce.median",
                            "");
        }
        for (const char* c : {"n_head", "n_kv_head", "n_embd", "n_expanded_embd", "num_tokens",
                              "num_tensor_parallel_workers"}) {
          if (!cols.count(c)) return FieldError(source, line_no, c, "missing column", "");
        }
      }
      continue;
    }
    if (fields.size() != cols.size()) {
      return FieldError(source, line_no, "*", absl::StrCat("expected ", cols.size(), " fields"),
                        absl::StrCat(fields.size(), " fields"));
    }
    const Row row(source, line_no, cols, fields);
    const absl::Status st = profile.collective
                                ? ParseAllReduceRow(row, line_no, profile.samples)
                                : ParseOperatorRow(row, line_no, profile.samples, cols);
    if (!st.ok()) return st;
  }
  if (!have_header) return FieldError(source, 1, "header", "empty file", "");
  return profile;
}

absl::StatusOr<Profile> ReadProfileCsv(const std::string& path) {
  // The one reader: a directory, /dev/zero or a silent FIFO is an error naming the path and the
  // OS error, not an "empty file".
  absl::StatusOr<std::string> text = base::ReadInput(path, base::InputKind::kTrace);
  if (!text.ok()) return text.status();
  return ParseProfileCsv(*text, base::ForTerminal(path));
}

}  // namespace seedance::serving
