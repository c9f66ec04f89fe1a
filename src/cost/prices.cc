#include "seedance/cost/prices.h"

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/json_path.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/hw/catalog.h"
#include "yaml-cpp/yaml.h"

namespace seedance::cost {

std::string CanonicalGpuModel(std::string_view reported) { return hw::CanonicalName(reported); }

PriceTable PriceTable::Builtin() {
  // The hardware catalog's default prices (include/seedance/hw/catalog.h cites each source).
  PriceTable t;
  for (const hw::GpuModel& g : hw::Gpus()) {
    if (g.usd_per_hour) t.gpu_usd_per_hour[g.name] = *g.usd_per_hour;
  }
  t.source = std::string(hw::PriceSources());
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
  // "FILE:LINE: $.PATH: " (the one JSON path syntax; base/json_path.h).
  auto where = [&](const YAML::Node& n, const std::string& path) {
    return absl::StrCat(source, ":", n.Mark().line + 1, ": ", path, ": ");
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
      const std::string path = base::JsonPathChild("$", key);
      const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
      if (!seen_keys.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat(where(it->first, path), "given twice"));
      }
      if (key == "source") {
        if (!v.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(where(v, path), "expected a string"));
        }
        t.source = absl::StrCat(source, ": ", v.as<std::string>(""));
      } else if (key == "hours_per_month") {
        double h = 0;
        if (!v.IsScalar() || !YAML::convert<double>::decode(v, h) || !(h > 0 && h <= 744)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(v, path), "expected a number in (0, 744] (hours in a month)"));
        }
        t.hours_per_month = h;
      } else if (key == "gpu_usd_per_hour") {
        if (!v.IsMap()) {
          return absl::InvalidArgumentError(absl::StrCat(where(v, path), "expected a mapping"));
        }
        std::map<std::string, int> lines;  // canonical model -> line it was priced at
        for (auto g = v.begin(); g != v.end(); ++g) {
          const std::string model = g->first.IsScalar() ? g->first.as<std::string>("") : "";
          const std::string field = base::JsonPathChild(path, model);
          if (model.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat(where(g->first, path), "expected a GPU model name"));
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
            absl::StrCat(where(it->first, path),
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
