// Reading ONNX models and tensors with Debian's libonnx (graph.h).
#include "seedance/model/graph.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "onnx/checker.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"
#include "ops.h"
#include "seedance/base/io.h"
#include "seedance/model/executor.h"

namespace seedance::model {
namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 17;

// Where a model's tensors come from: its folder for external data ("" when read from memory).
struct Source {
  std::string name;       // for messages
  std::string model_dir;  // external data is read only below this folder
  const LoadOptions* options = nullptr;
};

absl::Status Bad(const Source& src, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(src.name, ": ", what));
}

// libonnx's messages span lines ("...\n\n==> Context: Bad node spec ..."); ours take one.
std::string OneLine(const char* what) {
  return absl::StrReplaceAll(what, {{"\n\n==> Context: ", "; "}, {"\n", " "}});
}

// The bytes [offset, offset + length) of an external-data file below the model's folder.
absl::StatusOr<std::string> ReadExternal(const Source& src, const onnx::TensorProto& t,
                                         int64_t want_bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
    if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
  }
  const std::string what = absl::StrCat("tensor \"", t.name(), "\": external data");
  if (src.model_dir.empty()) return Bad(src, what + " needs the model's folder (read a file)");
  const std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::find(rel.begin(), rel.end(), "..") != rel.end()) {
    return Bad(src, absl::StrCat(what, " location \"", location,
                                 "\" must be a relative path inside the model's folder"));
  }
  if (offset < 0 || (length >= 0 && length != want_bytes)) {
    return Bad(src, absl::StrCat(what, " offset ", offset, " length ", length, " for ", want_bytes,
                                 " bytes of tensor data"));
  }
  const std::string path = (std::filesystem::path(src.model_dir) / rel).string();
  std::ifstream in(path, std::ios::binary);
  struct stat st {};
  if (!in || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Bad(src, absl::StrCat(what, " file ", path, " cannot be read"));
  }
  if (offset + want_bytes > st.st_size) {
    return Bad(src, absl::StrCat(what, " file ", path, " holds ", st.st_size,
                                 " bytes, fewer than offset + length ", offset + want_bytes));
  }
  std::string bytes(static_cast<size_t>(want_bytes), '\0');
  in.seekg(offset);
  in.read(bytes.data(), want_bytes);
  if (!in) return Bad(src, absl::StrCat(what, " file ", path, ": read failed"));
  return bytes;
}

// Copies a typed repeated field into `t`, element by element, converted to T.
template <typename T, typename Field>
absl::Status CopyTyped(const Source& src, const onnx::TensorProto& proto, const Field& field,
                       Tensor& t) {
  if (field.size() != t.size()) {
    return Bad(src, absl::StrCat("tensor \"", proto.name(), "\" ", t.Describe(), " holds ",
                                 field.size(), " values"));
  }
  T* out = t.data<T>();
  for (int64_t i = 0; i < t.size(); ++i) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      out[i] = T{static_cast<uint16_t>(field.Get(static_cast<int>(i)))};
    } else {
      out[i] = static_cast<T>(field.Get(static_cast<int>(i)));
    }
  }
  return absl::OkStatus();
}

absl::Status FillTyped(const Source& src, const onnx::TensorProto& p, Tensor& t) {
  switch (t.type()) {
    case DataType::kFloat:
      return CopyTyped<float>(src, p, p.float_data(), t);
    case DataType::kDouble:
      return CopyTyped<double>(src, p, p.double_data(), t);
    case DataType::kInt64:
      return CopyTyped<int64_t>(src, p, p.int64_data(), t);
    case DataType::kUint64:
      return CopyTyped<uint64_t>(src, p, p.uint64_data(), t);
    case DataType::kUint32:
      return CopyTyped<uint32_t>(src, p, p.uint64_data(), t);
    case DataType::kInt32:
      return CopyTyped<int32_t>(src, p, p.int32_data(), t);
    case DataType::kInt16:
      return CopyTyped<int16_t>(src, p, p.int32_data(), t);
    case DataType::kInt8:
      return CopyTyped<int8_t>(src, p, p.int32_data(), t);
    case DataType::kUint16:
      return CopyTyped<uint16_t>(src, p, p.int32_data(), t);
    case DataType::kUint8:
      return CopyTyped<uint8_t>(src, p, p.int32_data(), t);
    case DataType::kBool:
      return CopyTyped<bool>(src, p, p.int32_data(), t);
    case DataType::kFloat16:
      return CopyTyped<Float16>(src, p, p.int32_data(), t);
    case DataType::kBfloat16:
      return CopyTyped<BFloat16>(src, p, p.int32_data(), t);
    default:
      break;
  }
  return Bad(src, absl::StrCat("tensor \"", p.name(), "\": unsupported type"));
}

// Raw booleans are bytes; any non-zero byte is true, stored as 1 (a C++ bool holds 0 or 1 only).
Tensor Normalized(Tensor t) {
  if (t.type() != DataType::kBool) return t;
  auto* bytes = reinterpret_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.bytes(); ++i) bytes[i] = bytes[i] != 0 ? 1 : 0;
  return t;
}

absl::StatusOr<Tensor> TensorOf(const Source& src, const onnx::TensorProto& p) {
  const auto type = static_cast<DataType>(p.data_type());
  if (!IsSupported(type)) {
    return Bad(src, absl::StrCat("tensor \"", p.name(), "\" has element type ", DataTypeName(type),
                                 ", which the executor does not hold"));
  }
  std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
  absl::StatusOr<int64_t> count = ElementCount(shape);
  if (!count.ok())
    return Bad(src, absl::StrCat("tensor \"", p.name(), "\": ", count.status().message()));
  const int64_t bytes = *count * static_cast<int64_t>(ElementSize(type));
  if (bytes > src.options->max_tensor_bytes) {
    return Bad(src, absl::StrCat("tensor \"", p.name(), "\" ", ShapeString(shape), " needs ", bytes,
                                 " bytes, above the limit of ", src.options->max_tensor_bytes));
  }
  Tensor t(type, std::move(shape));
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    absl::StatusOr<std::string> data = ReadExternal(src, p, bytes);
    if (!data.ok()) return data.status();
    if (!data->empty()) std::memcpy(t.raw(), data->data(), data->size());
    return Normalized(std::move(t));
  }
  if (p.has_raw_data()) {
    if (static_cast<int64_t>(p.raw_data().size()) != bytes) {
      return Bad(src, absl::StrCat("tensor \"", p.name(), "\" ", t.Describe(), " needs ", bytes,
                                   " bytes of raw_data, has ", p.raw_data().size()));
    }
    if (bytes > 0) std::memcpy(t.raw(), p.raw_data().data(), static_cast<size_t>(bytes));
    return Normalized(std::move(t));
  }
  if (absl::Status s = FillTyped(src, p, t); !s.ok()) return s;
  return t;
}

absl::StatusOr<Attribute> AttributeOf(const Source& src, const onnx::AttributeProto& a) {
  Attribute out;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT:
      out.kind = Attribute::Kind::kFloat;
      out.f = a.f();
      break;
    case A::INT:
      out.kind = Attribute::Kind::kInt;
      out.i = a.i();
      break;
    case A::STRING:
      out.kind = Attribute::Kind::kString;
      out.s = a.s();
      break;
    case A::FLOATS:
      out.kind = Attribute::Kind::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      out.kind = Attribute::Kind::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      out.kind = Attribute::Kind::kStrings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::TENSOR: {
      absl::StatusOr<Tensor> t = TensorOf(src, a.t());
      if (!t.ok()) return t.status();
      out.kind = Attribute::Kind::kTensor;
      out.tensor.push_back(std::move(*t));
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("attribute \"", a.name(), "\" is of kind ", A::AttributeType_Name(a.type()),
                       " (subgraphs, sparse tensors and types are not supported)"));
  }
  return out;
}

absl::StatusOr<Node> NodeOf(const Source& src, const onnx::NodeProto& n, size_t index,
                            const Graph& g) {
  Node node;
  node.op_type = n.op_type();
  node.name = n.name().empty() ? absl::StrCat(n.op_type(), "#", index) : n.name();
  const std::string where = absl::StrCat("node \"", node.name, "\" (", node.op_type, ")");
  absl::Status known;
  if (n.domain().empty() || n.domain() == "ai.onnx") {
    known = CheckOperator(node.op_type, g.opset);
  } else if (n.domain() == kMicrosoftDomain) {
    node.domain = kMicrosoftDomain;
    known = CheckContribOperator(node.op_type, g.microsoft_opset);
  } else {
    known = absl::InvalidArgumentError(
        absl::StrCat("operator domain \"", n.domain(), "\" is not supported (only the default "
                     "ONNX domain and onnxruntime's \"", kMicrosoftDomain, "\")"));
  }
  if (!known.ok()) return Bad(src, absl::StrCat(where, ": ", known.message()));
  node.inputs.assign(n.input().begin(), n.input().end());
  node.outputs.assign(n.output().begin(), n.output().end());
  for (const auto& a : n.attribute()) {
    absl::StatusOr<Attribute> attr = AttributeOf(src, a);
    if (!attr.ok()) return Bad(src, absl::StrCat(where, ": ", attr.status().message()));
    node.attributes[a.name()] = std::move(*attr);
  }
  return node;
}

absl::StatusOr<ValueInfo> ValueInfoOf(const Source& src, const onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  if (!v.type().has_tensor_type()) {
    return Bad(src, absl::StrCat("graph value \"", v.name(), "\" is not a tensor"));
  }
  const auto& tt = v.type().tensor_type();
  info.type = static_cast<DataType>(tt.elem_type());
  if (!IsSupported(info.type)) {
    return Bad(src, absl::StrCat("graph value \"", v.name(), "\" has element type ",
                                 DataTypeName(info.type), ", which the executor does not hold"));
  }
  info.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return info;
}

// ONNX's checker over the graph with the model's folder known (external data), then strict shape
// inference (a shape or type mismatch is an error, as onnxruntime's loader treats it).
// `propagate_data`: ONNX's data propagation too (shapes computed by Shape, Gather, Concat...
// reach the Reshapes that read them, so dynamic dimensions keep their symbolic names).
absl::Status Check(const Source& src, onnx::ModelProto& model, bool propagate_data = false) {
  if (model.functions_size() > 0) return Bad(src, "model-local functions are not supported");
  ops::RegisterContribSchemas();
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(model.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : model.opset_import()) {
      opsets[o.domain()] = static_cast<int>(o.version());
    }
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(src.model_dir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(model.graph(), ctx, lex);
    onnx::ShapeInferenceOptions options{true, 1, propagate_data};
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    return Bad(src, absl::StrCat("invalid model: ", OneLine(e.what())));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> OpsetOf(const Source& src, const onnx::ModelProto& model) {
  int64_t opset = -1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0) return Bad(src, "the model imports no opset of the default ONNX domain");
  if (opset < kMinOpset || opset > kMaxOpset) {
    return Bad(src, absl::StrCat("opset ", opset, " is outside the opsets the executor runs (",
                                 kMinOpset, "..", kMaxOpset, ")"));
  }
  return opset;
}

// Every node input is a graph input, an initializer or an earlier node's output (the checker
// says so too; this holds when it is off).
absl::Status CheckOrder(const Source& src, const Graph& g) {
  std::set<std::string> known;
  for (const auto& v : g.inputs) known.insert(v.name);
  for (const auto& [name, t] : g.initializers) known.insert(name);
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) {
      if (!in.empty() && !known.count(in)) {
        return Bad(src, absl::StrCat("node \"", n.name, "\" (", n.op_type, "): input \"", in,
                                     "\" is not made before it (a cycle, or a missing "
                                     "initializer or graph input)"));
      }
    }
    for (const std::string& out : n.outputs) known.insert(out);
  }
  for (const ValueInfo& v : g.outputs) {
    if (!known.count(v.name)) {
      return Bad(src, absl::StrCat("graph output \"", v.name, "\" is made by no node"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> Convert(const Source& src, const onnx::ModelProto& model) {
  Graph g;
  g.source = src.name;
  absl::StatusOr<int64_t> opset = OpsetOf(src, model);
  if (!opset.ok()) return opset.status();
  g.opset = *opset;
  for (const auto& o : model.opset_import()) {
    if (o.domain() == kMicrosoftDomain) g.microsoft_opset = o.version();
  }
  g.ir_version = model.ir_version();
  const onnx::GraphProto& gp = model.graph();
  for (const auto& init : gp.initializer()) {
    absl::StatusOr<Tensor> t = TensorOf(src, init);
    if (!t.ok()) return t.status();
    g.initializers[init.name()] = std::move(*t);
  }
  if (gp.sparse_initializer_size() > 0) return Bad(src, "sparse initializers are not supported");
  for (const auto& in : gp.input()) {
    if (g.initializers.count(in.name())) continue;
    absl::StatusOr<ValueInfo> v = ValueInfoOf(src, in);
    if (!v.ok()) return v.status();
    g.inputs.push_back(std::move(*v));
  }
  for (const auto& out : gp.output()) {
    absl::StatusOr<ValueInfo> v = ValueInfoOf(src, out);
    if (!v.ok()) return v.status();
    g.outputs.push_back(std::move(*v));
  }
  std::set<std::string> names;
  for (int i = 0; i < gp.node_size(); ++i) {
    absl::StatusOr<Node> n = NodeOf(src, gp.node(i), static_cast<size_t>(i), g);
    if (!n.ok()) return n.status();
    // ONNX does not require unique node names; plans and reports name nodes, so a repeated name
    // gets its index ("attn#12").
    if (!names.insert(n->name).second) {
      n->name = absl::StrCat(n->name, "#", i);
      names.insert(n->name);
    }
    g.nodes.push_back(std::move(*n));
  }
  if (absl::Status s = CheckOrder(src, g); !s.ok()) return s;
  return g;
}

absl::StatusOr<Graph> Parse(const std::string& bytes, const Source& src) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Bad(src, "not an ONNX model (the protobuf does not parse: truncated or another format)");
  }
  if (!model.has_graph()) return Bad(src, "the model has no graph");
  if (src.options->check) {
    if (absl::Status s = Check(src, model); !s.ok()) return s;
  }
  return Convert(src, model);
}

// --- writing ------------------------------------------------------------------------------------

void FillTensorProto(const std::string& name, const Tensor& tensor, onnx::TensorProto* proto) {
  proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.type()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  // (an empty tensor's storage may be a null pointer, which no string may be built from)
  if (tensor.bytes() > 0) {
    proto->set_raw_data(std::string(reinterpret_cast<const char*>(tensor.raw()), tensor.bytes()));
  } else {
    proto->set_raw_data("");
  }
}

// False for a tensor attribute that holds no tensor.
bool FillAttribute(const std::string& name, const Attribute& a, onnx::AttributeProto* p) {
  using A = onnx::AttributeProto;
  p->set_name(name);
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      p->set_type(A::FLOAT);
      p->set_f(a.f);
      break;
    case Attribute::Kind::kInt:
      p->set_type(A::INT);
      p->set_i(a.i);
      break;
    case Attribute::Kind::kString:
      p->set_type(A::STRING);
      p->set_s(a.s);
      break;
    case Attribute::Kind::kFloats:
      p->set_type(A::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      break;
    case Attribute::Kind::kInts:
      p->set_type(A::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      break;
    case Attribute::Kind::kStrings:
      p->set_type(A::STRINGS);
      for (const std::string& v : a.strings) p->add_strings(v);
      break;
    case Attribute::Kind::kTensor:
      p->set_type(A::TENSOR);
      if (a.tensor.size() != 1) return false;
      FillTensorProto("", a.tensor[0], p->mutable_t());
      break;
  }
  return true;
}

void FillValueInfo(const ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  auto* tt = p->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(v.type));
  if (!v.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    auto* d = shape->add_dim();
    if (v.shape[i] >= 0) {
      d->set_dim_value(v.shape[i]);
    } else if (i < v.dim_names.size() && !v.dim_names[i].empty()) {
      d->set_dim_param(v.dim_names[i]);
    }
  }
}

// `max_initializer_bytes` >= 0: larger initializers are declared as graph inputs of their type and
// shape instead of copied (what shape inference needs of a weight; a shape tensor is small).
absl::StatusOr<onnx::ModelProto> ToModelProto(const Graph& g, int64_t max_initializer_bytes = -1) {
  onnx::ModelProto model;
  model.set_ir_version(g.ir_version > 0 ? g.ir_version : 8);
  model.set_producer_name("seedance");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(g.opset);
  const bool microsoft = g.microsoft_opset > 0 ||
      std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return !n.domain.empty(); });
  if (microsoft) {
    auto* ms = model.add_opset_import();
    ms->set_domain(kMicrosoftDomain);
    ms->set_version(g.microsoft_opset > 0 ? g.microsoft_opset : 1);
  }
  onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name("main");
  for (const ValueInfo& v : g.inputs) FillValueInfo(v, gp->add_input());
  for (const ValueInfo& v : g.outputs) FillValueInfo(v, gp->add_output());
  // Before IR version 4 every initializer must also be a graph input.
  const bool inputs_too = model.ir_version() < 4;
  for (const auto& [name, t] : g.initializers) {
    const bool copied =
        max_initializer_bytes < 0 || static_cast<int64_t>(t.bytes()) <= max_initializer_bytes;
    if (copied) FillTensorProto(name, t, gp->add_initializer());
    if (!copied || inputs_too) {
      FillValueInfo(
          ValueInfo{name, t.type(), t.shape(), std::vector<std::string>(t.shape().size()), true},
          gp->add_input());
    }
  }
  for (const Node& n : g.nodes) {
    onnx::NodeProto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    for (const std::string& in : n.inputs) np->add_input(in);
    for (const std::string& out : n.outputs) np->add_output(out);
    for (const auto& [name, a] : n.attributes) {
      if (!FillAttribute(name, a, np->add_attribute())) {
        return absl::InvalidArgumentError(absl::StrCat("node \"", n.name, "\" (", n.op_type,
                                                       "): tensor attribute \"", name,
                                                       "\" holds no tensor"));
      }
    }
  }
  return model;
}

}  // namespace

absl::Status CheckOperator(const std::string& op_type, int64_t opset) {
  if (!IsClaimed(op_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "operator ", op_type, " is not one the executor runs (`seedance model ops` lists them)"));
  }
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset), "");
  if (schema == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("operator ", op_type, " does not exist at opset ", opset));
  }
  // Every kernel implements the operator as it is from opset 7 on; a few, older versions too.
  const onnx::OpSchema* at7 = onnx::OpSchemaRegistry::Schema(op_type, 7, "");
  int64_t oldest = at7 == nullptr ? 1 : at7->since_version();
  if (ops::OldestVersion(op_type) > 0) oldest = std::min(oldest, ops::OldestVersion(op_type));
  if (schema->since_version() < oldest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "at opset ", opset, " operator ", op_type, " is its version ", schema->since_version(),
        "; the executor runs versions ", oldest, " and later"));
  }
  return absl::OkStatus();
}

absl::Status CheckContribOperator(const std::string& op_type, int64_t version) {
  if (version != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model imports ", kMicrosoftDomain, " at version ", version,
        "; the executor runs its operators at version 1"));
  }
  if (!IsClaimedContrib(op_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "operator ", kMicrosoftDomain, ".", op_type,
        " is not one the executor runs (`seedance model ops` lists them)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> ParseOnnxModel(const std::string& bytes, const std::string& source,
                                     const LoadOptions& options) {
  return Parse(bytes, Source{source, "", &options});
}

absl::StatusOr<Graph> LoadOnnxModel(const std::string& path, const LoadOptions& options) {
  absl::StatusOr<std::string> bytes = base::ReadInput(path, base::InputKind::kModel);
  if (!bytes.ok()) return bytes.status();
  if (static_cast<int64_t>(bytes->size()) > options.max_file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", bytes->size(), " bytes, above the limit of ", options.max_file_bytes));
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = path == "-" ? "" : parent.empty() ? "." : parent.string();
  return Parse(*bytes, Source{path, dir, &options});
}

absl::StatusOr<Tensor> ParseTensor(const std::string& bytes, const std::string& source,
                                   std::string* name) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an ONNX TensorProto (the protobuf does not parse)"));
  }
  const LoadOptions options;
  absl::StatusOr<Tensor> t = TensorOf(Source{source, "", &options}, proto);
  if (t.ok() && name != nullptr) *name = proto.name();
  return t;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name) {
  absl::StatusOr<std::string> bytes = base::ReadInput(path, base::InputKind::kModel);
  if (!bytes.ok()) return bytes.status();
  return ParseTensor(*bytes, path, name);
}

std::string SerializeTensor(const std::string& name, const Tensor& tensor) {
  onnx::TensorProto proto;
  FillTensorProto(name, tensor, &proto);
  return proto.SerializeAsString();
}

absl::Status WriteTensorFile(const std::string& path, const std::string& name,
                             const Tensor& tensor) {
  return base::WriteOutput(path, SerializeTensor(name, tensor));
}

absl::StatusOr<std::string> SerializeOnnxModel(const Graph& graph) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(graph);
  if (!proto.ok()) return proto.status();
  onnx::ModelProto& model = *proto;
  if (model.ByteSizeLong() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model would take ", model.ByteSizeLong(),
                     " bytes, above protobuf's 2 GiB (external data is not written)"));
  }
  onnx::ModelProto checked = model;  // shape inference writes value_info into what it checks
  if (absl::Status s = Check(Source{"the written model", "", nullptr}, checked); !s.ok()) return s;
  return model.SerializeAsString();
}

absl::StatusOr<std::map<std::string, ValueInfo>> InferValueInfo(const Graph& graph) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(graph, 4096);
  if (!proto.ok()) return proto.status();
  const Source src{graph.source.empty() ? "the model" : graph.source, "", nullptr};
  // With ONNX's data propagation first; libonnx 1.12's propagation throws on some valid models
  // (a Concat's axis checked against a rank it propagated wrongly: ONNX's own
  // test_layer_normalization_2d_axis_negative_2_expanded), so without it when it does.
  if (!Check(src, *proto, true).ok()) {
    proto = ToModelProto(graph, 4096);  // afresh: the failed inference left part of its work
    if (!proto.ok()) return proto.status();
    if (absl::Status s = Check(src, *proto); !s.ok()) return s;  // writes value_info
  }
  std::map<std::string, ValueInfo> out;
  const onnx::GraphProto& gp = proto->graph();
  for (const auto* list : {&gp.input(), &gp.value_info(), &gp.output()}) {
    for (const auto& v : *list) {
      absl::StatusOr<ValueInfo> info = ValueInfoOf(src, v);
      if (info.ok()) out[v.name()] = std::move(*info);
    }
  }
  for (const auto& [name, t] : graph.initializers) {
    ValueInfo& v = out[name];
    v.name = name;
    v.type = t.type();
    v.shape = t.shape();
    v.dim_names.assign(t.shape().size(), "");
    v.has_shape = true;
  }
  return out;
}

absl::StatusOr<Graph> ConvertOpset(const Graph& graph, int64_t version) {
  absl::StatusOr<onnx::ModelProto> proto = ToModelProto(graph);
  if (!proto.ok()) return proto.status();
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(*proto, static_cast<int>(version));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("opset ", graph.opset, " -> ", version,
                                                   ": ", OneLine(e.what())));
  }
  const LoadOptions options;
  const Source src{graph.source.empty() ? "the converted model" : graph.source, "", &options};
  if (absl::Status s = Check(src, converted); !s.ok()) return s;
  absl::StatusOr<Graph> g = Convert(src, converted);
  if (g.ok()) g->source = graph.source;
  return g;
}

absl::Status SaveOnnxModel(const Graph& graph, const std::string& path) {
  absl::StatusOr<std::string> bytes = SerializeOnnxModel(graph);
  if (!bytes.ok()) return bytes.status();
  return base::WriteOutput(path, *bytes);
}

}  // namespace seedance::model
