#include "seedance/cost/prices.h"

#include <cctype>
#include <fstream>

#include "absl/strings/str_cat.h"
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

absl::StatusOr<PriceTable> LoadPrices(const std::string& path, const PriceTable& base) {
  std::ifstream probe(path);
  if (!probe) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  auto where = [&](const YAML::Node& n, const std::string& field) {
    return absl::StrCat(path, ":", n.Mark().line + 1, ": ", field, ": ");
  };
  if (!doc.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected a mapping"));
  PriceTable t = base;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string key = it->first.as<std::string>("");
    const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
    if (key == "source") {
      t.source = absl::StrCat(path, ": ", v.as<std::string>(""));
    } else if (key == "hours_per_month") {
      double h = 0;
      try {
        h = v.as<double>();
      } catch (const YAML::Exception&) {
        return absl::InvalidArgumentError(absl::StrCat(where(v, key), "expected a number"));
      }
      if (!(h > 0 && h <= 744)) {
        return absl::InvalidArgumentError(absl::StrCat(where(v, key), "must be in (0, 744]"));
      }
      t.hours_per_month = h;
    } else if (key == "gpu_usd_per_hour") {
      if (!v.IsMap())
        return absl::InvalidArgumentError(absl::StrCat(where(v, key), "expected a mapping"));
      for (auto g = v.begin(); g != v.end(); ++g) {
        const std::string model = g->first.as<std::string>("");
        double price = -1;
        try {
          price = g->second.as<double>();
        } catch (const YAML::Exception&) {
          price = -1;
        }
        if (!(price >= 0)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(g->second, key + "." + model),
                           "expected a non-negative number (USD per GPU-hour)"));
        }
        t.gpu_usd_per_hour[CanonicalGpuModel(model)] = price;
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where(it->first, key),
                       "unknown field (expected source, hours_per_month, gpu_usd_per_hour)"));
    }
  }
  if (t.source == base.source) t.source = absl::StrCat(path, " over ", base.source);
  return t;
}

}  // namespace seedance::cost
