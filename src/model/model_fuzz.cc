// libFuzzer target: any bytes given as an ONNX model, a TensorProto file or a plan JSON (`model
// quantize --plan`) must give a status or a value, never a crash or a hang (libonnx's parser,
// checker and shape inference, the conversion into Seedance's graph and back through the model
// writer, the plan reader); a tensor that parses must survive its own serialisation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "seedance/base/check.h"
#include "seedance/model/graph.h"
#include "seedance/model/quantize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  seedance::model::LoadOptions options;
  options.max_tensor_bytes = int64_t{1} << 24;  // what a fuzzed model may make us allocate
  auto graph = seedance::model::ParseOnnxModel(bytes, "fuzz", options);
  if (graph.ok()) (void)seedance::model::SerializeOnnxModel(*graph);  // the writer, its checker
  (void)seedance::model::ParsePlanJson(bytes, "fuzz");
  std::string name;
  auto tensor = seedance::model::ParseTensor(bytes, "fuzz", &name);
  if (!tensor.ok() || tensor->bytes() > (size_t{1} << 24)) return 0;
  const std::string again = seedance::model::SerializeTensor(name, *tensor);
  auto back = seedance::model::ParseTensor(again, "again");
  SEEDANCE_CHECK(back.ok()) << back.status().message();
  SEEDANCE_CHECK(
      back->type() == tensor->type() && back->shape() == tensor->shape() &&
      (tensor->bytes() == 0 || std::memcmp(back->raw(), tensor->raw(), tensor->bytes()) == 0))
      << "a tensor changed through its own serialisation";
  return 0;
}
