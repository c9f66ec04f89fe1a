#include "seedance/model/inputs.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ops.h"

namespace seedance::model {
namespace {

namespace fs = std::filesystem;

bool HasTensorFiles(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".pb") return true;
  }
  return false;
}

absl::StatusOr<Sample> ReadSample(const Graph& graph, const fs::path& dir, std::string name) {
  Sample sample{std::move(name), {}};
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ValueInfo& in = graph.inputs[i];
    fs::path path = dir / (FileNameOf(in.name) + ".pb");
    if (!fs::exists(path)) path = dir / absl::StrCat("input_", i, ".pb");
    if (!fs::exists(path)) {
      return absl::InvalidArgumentError(absl::StrCat(dir.string(), ": no tensor for input \"",
                                                     in.name, "\" (want ", FileNameOf(in.name),
                                                     ".pb or input_", i, ".pb)"));
    }
    absl::StatusOr<Tensor> t = ReadTensorFile(path.string());
    if (!t.ok()) return t.status();
    sample.feeds[in.name] = std::move(*t);
  }
  return sample;
}

}  // namespace

std::string FileNameOf(const std::string& value_name) {
  std::string out = value_name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

absl::StatusOr<std::vector<Sample>> ReadSamples(const Graph& graph, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": not a folder of input samples"));
  }
  std::vector<Sample> samples;
  if (HasTensorFiles(dir)) {
    absl::StatusOr<Sample> s = ReadSample(graph, dir, "");
    if (!s.ok()) return s.status();
    samples.push_back(std::move(*s));
    return samples;
  }
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const fs::path& sub : subdirs) {
    absl::StatusOr<Sample> s = ReadSample(graph, sub, sub.filename().string());
    if (!s.ok()) return s.status();
    samples.push_back(std::move(*s));
  }
  if (samples.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": no sample (no .pb files, no sub-folders holding them)"));
  }
  return samples;
}

absl::StatusOr<std::map<std::string, std::vector<int64_t>>> ParseShapes(
    const std::vector<std::string>& flags) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& flag : flags) {
    const size_t eq = flag.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape \"", flag, "\": want NAME=DxDx... (e.g. input=1x3x224x224)"));
    }
    std::vector<int64_t> dims;
    for (absl::string_view d : absl::StrSplit(flag.substr(eq + 1), 'x')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v) || v < 0 || v > (int64_t{1} << 31)) {
        return absl::InvalidArgumentError(absl::StrCat("--shape \"", flag, "\": dimension \"", d,
                                                       "\" is not an integer in 0..2^31"));
      }
      dims.push_back(v);
    }
    shapes[flag.substr(0, eq)] = std::move(dims);
  }
  return shapes;
}

absl::StatusOr<std::vector<int64_t>> ShapeFor(
    const ValueInfo& in, const std::map<std::string, std::vector<int64_t>>& shapes) {
  auto it = shapes.find(in.name);
  if (it != shapes.end()) {
    bool agrees = !in.has_shape || it->second.size() == in.shape.size();
    for (size_t i = 0; agrees && in.has_shape && i < in.shape.size(); ++i) {
      agrees = in.shape[i] < 0 || in.shape[i] == it->second[i];
    }
    if (!agrees) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape ", in.name, "=", ShapeString(it->second),
                       " disagrees with the model's ", ShapeString(in.shape), " (-1 = free)"));
    }
    return it->second;
  }
  if (!in.has_shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input \"", in.name, "\" declares no shape; give one with --shape ", in.name, "=DxD..."));
  }
  for (size_t i = 0; i < in.shape.size(); ++i) {
    if (in.shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input \"", in.name, "\" dimension ", i,
                       in.dim_names[i].empty() ? "" : absl::StrCat(" (", in.dim_names[i], ")"),
                       " is not fixed; give the shape with --shape ", in.name, "=DxD..."));
    }
  }
  return in.shape;
}

absl::StatusOr<TensorMap> RandomSample(const Graph& graph,
                                       const std::map<std::string, std::vector<int64_t>>& shapes,
                                       uint64_t seed) {
  for (const auto& [name, shape] : shapes) {
    bool known = false;
    for (const ValueInfo& in : graph.inputs) known = known || in.name == name;
    if (!known) {
      std::string names;
      for (const ValueInfo& in : graph.inputs)
        absl::StrAppend(&names, names.empty() ? "" : ", ", in.name);
      return absl::InvalidArgumentError(
          absl::StrCat("--shape names \"", name,
                       "\", which is not an input of the model (inputs: ", names, ")"));
    }
  }
  std::mt19937_64 rng(seed);
  TensorMap feeds;
  for (const ValueInfo& in : graph.inputs) {
    absl::StatusOr<std::vector<int64_t>> shape = ShapeFor(in, shapes);
    if (!shape.ok()) return shape.status();
    absl::StatusOr<int64_t> count = ElementCount(*shape);
    if (!count.ok()) return count.status();
    Tensor t(in.type, *shape);
    ops::VisitType(in.type, [&]<typename T>(T) {
      T* data = t.data<T>();
      for (int64_t i = 0; i < t.size(); ++i) {
        const uint64_t bits = rng();
        // 53 random bits as a double in [0, 1), the same on every platform.
        const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
        if constexpr (std::is_same_v<T, bool>) {
          data[i] = (bits >> 63) != 0;
        } else if constexpr (std::is_integral_v<T>) {
          data[i] = static_cast<T>(static_cast<int>(u * 10));
        } else {
          data[i] = ops::FromDouble<T>(2 * u - 1);
        }
      }
    });
    feeds[in.name] = std::move(t);
  }
  return feeds;
}

absl::Status WriteSampleFolder(const std::string& dir, const Graph& graph, const TensorMap* inputs,
                               const TensorMap& outputs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  if (inputs != nullptr) {
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const std::string& name = graph.inputs[i].name;
      absl::Status s = WriteTensorFile((fs::path(dir) / absl::StrCat("input_", i, ".pb")).string(),
                                       name, inputs->at(name));
      if (!s.ok()) return s;
    }
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const std::string& name = graph.outputs[i].name;
    absl::Status s = WriteTensorFile((fs::path(dir) / absl::StrCat("output_", i, ".pb")).string(),
                                     name, outputs.at(name));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace seedance::model
