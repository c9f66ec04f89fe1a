#include "seedance/cost/prices.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "yaml-cpp/yaml.h"

namespace seedance::cost {

std::string CanonicalGpuModel(std::string_view reported) {
  std::string up;
  for (char c : reported) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](std::string_view s) { return up.find(s) != std::string::npos; };
  // Order matters: longer names first (A100 before A10, L40S before L40 before L4).
  if (has("H200")) return "H200";
  if (has("H100")) return "H100";
  if (has("A100")) return has("80G") ? "A100-80GB" : "A100-40GB";
  if (has("L40S")) return "L40S";
  if (has("L40")) return "L40";
  if (has("A10G")) return "A10G";
  if (has("A10")) return "A10";
  if (has("L4")) return "L4";
  if (has("V100")) return "V100";
  if (has("P100")) return "P100";
  if (has("T4")) return "T4";
  if (has("P4")) return "P4";
  std::string out;
  for (char c : up) out += c == ' ' ? '-' : c;
  return out;
}

PriceTable PriceTable::Builtin() {
  PriceTable t;
  // Google Cloud Compute Engine GPU pricing, on-demand, us-central1, per GPU-hour (the GPU part
  // of the VM price; for A3/H100 the whole a3-highgpu-8g VM divided by 8). Read in 2024; check
  // https://cloud.google.com/compute/gpus-pricing before relying on them, or pass --prices.
  t.gpu_usd_per_hour = {
      {"H100", 11.06},
      {"A100-80GB", 3.93},
      {"A100-40GB", 2.93},
      {"L4", 0.56},
      {"V100", 2.48},
      {"P100", 1.46},
      {"T4", 0.35},
      {"P4", 0.60},
      // AWS EC2 on-demand us-east-1 (2024): g5.xlarge (1x A10G) 1.006/h, g6e.xlarge (1x L40S)
      // 1.861/h, whole instance price for one GPU.
      {"A10G", 1.006},
      {"L40S", 1.861},
  };
  t.source =
      "built-in: GCP us-central1 on-demand GPU prices (A100/H100/L4/V100/P100/T4/P4) and "
      "AWS us-east-1 on-demand (A10G g5.xlarge, L40S g6e.xlarge), read 2024";
  return t;
}

std::optional<double> PriceTable::GpuUsdPerHour(std::string_view model) const {
  auto it = gpu_usd_per_hour.find(CanonicalGpuModel(model));
  if (it == gpu_usd_per_hour.end()) return std::nullopt;
  return it->second;
}

namespace {

// yaml-cpp's parser recurses once per nesting level, so a file of "[[[[..." would overflow the
// stack. A price table is flat (two levels); anything estimated deeper than this is refused
// before yaml-cpp sees it. The estimate counts, per line, the indentation and the flow brackets
// and "- " sequence entries outside quotes, so it never underestimates.
constexpr int kMaxPriceNesting = 32;

absl::Status CheckNesting(std::string_view text, const std::string& source) {
  int flow = 0;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    int indent = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      ++indent;
      ++i;
    }
    int depth = indent;
    char quote = 0;
    for (; i < text.size() && text[i] != '\n'; ++i) {
      const char c = text[i];
      if (quote != 0) {
        if (c == '\\' && quote == '"') {
          ++i;
        } else if (c == quote) {
          quote = 0;
        }
        continue;
      }
      if (c == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
        break;
      }
      if (c == '"' || c == '\'') quote = c;
      if (c == '[' || c == '{') ++flow;
      if ((c == ']' || c == '}') && flow > 0) --flow;
      if (c == '-' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '\t')) ++depth;
      if (flow + depth > kMaxPriceNesting) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ":", line, ": nested deeper than ", kMaxPriceNesting,
                         " levels (a price table is a flat mapping; see docs/cost.md)"));
      }
    }
    if (i < text.size()) ++i;  // the newline
    ++line;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PriceTable> ParsePrices(std::string_view text, const std::string& source,
                                       const PriceTable& base) {
  if (absl::Status s = CheckNesting(text, source); !s.ok()) return s;
  // Alias bombs and the stray commas yaml-cpp never returns from, as every YAML reader.
  if (absl::Status s = core::CheckYamlLimits(text, source); !s.ok()) return s;
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  auto where = [&](const YAML::Node& n, const std::string& field) {
    return absl::StrCat(source, ":", n.Mark().line + 1, ": ", base::Clip(field), ": ");
  };
  if (!doc.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected a mapping (source, hours_per_month, gpu_usd_per_hour)"));
  }
  PriceTable t = base;
  std::set<std::string> seen_keys;
  try {
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.as<std::string>("") : "";
      const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
      if (!seen_keys.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat(where(it->first, key), "given twice"));
      }
      if (key == "source") {
        if (!v.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(where(v, key), "expected a string"));
        }
        t.source = absl::StrCat(source, ": ", v.as<std::string>(""));
      } else if (key == "hours_per_month") {
        double h = 0;
        if (!v.IsScalar() || !YAML::convert<double>::decode(v, h) || !(h > 0 && h <= 744)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(v, key), "expected a number in (0, 744] (hours in a month)"));
        }
        t.hours_per_month = h;
      } else if (key == "gpu_usd_per_hour") {
        if (!v.IsMap()) {
          return absl::InvalidArgumentError(absl::StrCat(where(v, key), "expected a mapping"));
        }
        std::map<std::string, int> lines;  // canonical model -> line it was priced at
        for (auto g = v.begin(); g != v.end(); ++g) {
          const std::string model = g->first.IsScalar() ? g->first.as<std::string>("") : "";
          const std::string field = key + "." + model;
          if (model.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat(where(g->first, key), "expected a GPU model name"));
          }
          double price = -1;
          if (!g->second.IsScalar() || !YAML::convert<double>::decode(g->second, price) ||
              !(price >= 0 && price <= kMaxGpuUsdPerHour)) {
            return absl::InvalidArgumentError(
                absl::StrCat(where(g->second, field),
                             "expected a non-negative number (USD per GPU-hour) of at most ",
                             kMaxGpuUsdPerHour));
          }
          const std::string canonical = CanonicalGpuModel(model);
          const int line = g->first.Mark().line + 1;
          if (auto [prev, fresh] = lines.emplace(canonical, line); !fresh) {
            return absl::InvalidArgumentError(absl::StrCat(where(g->first, field),
                                                           "priced twice (model ", canonical,
                                                           ", also line ", prev->second, ")"));
          }
          t.gpu_usd_per_hour[canonical] = price;
        }
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(where(it->first, key),
                         "unknown field (expected source, hours_per_month, gpu_usd_per_hour)"));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ": invalid price table: ", e.msg));
  }
  if (t.source == base.source) t.source = absl::StrCat(source, " over ", base.source);
  return t;
}

absl::StatusOr<PriceTable> LoadPrices(const std::string& path, const PriceTable& base) {
  auto text = base::ReadInput(path, base::InputKind::kConfig);
  if (!text.ok()) return text.status();
  return ParsePrices(*text, path == "-" ? "<stdin>" : path, base);
}

}  // namespace seedance::cost
