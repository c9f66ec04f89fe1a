// The CPU executor's run loop (executor.h): feeds checked against the graph's declarations,
// nodes run in order through the kernel table (ops.h), values freed after their last use.
#include "seedance/model/executor.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "ops.h"

namespace seedance::model {
namespace {

absl::Status CheckFeed(const Graph& g, const ValueInfo& info, const Tensor& t) {
  if (t.type() != info.type) {
    return absl::InvalidArgumentError(absl::StrCat(g.source, ": input \"", info.name, "\" is ",
                                                   t.Describe(), ", the model declares ",
                                                   DataTypeName(info.type)));
  }
  if (!info.has_shape) return absl::OkStatus();
  bool same = static_cast<size_t>(t.rank()) == info.shape.size();
  for (size_t i = 0; same && i < info.shape.size(); ++i) {
    same = info.shape[i] < 0 || info.shape[i] == t.shape()[i];
  }
  if (!same) {
    std::string want = "[";
    for (size_t i = 0; i < info.shape.size(); ++i) {
      absl::StrAppend(&want, i ? "," : "",
                      info.shape[i] >= 0          ? absl::StrCat(info.shape[i])
                      : info.dim_names[i].empty() ? std::string("?")
                                                  : info.dim_names[i]);
    }
    return absl::InvalidArgumentError(absl::StrCat(g.source, ": input \"", info.name,
                                                   "\" has shape ", ShapeString(t.shape()),
                                                   ", the model declares ", want, "]"));
  }
  return absl::OkStatus();
}

// The index of the last node that reads each value (graph outputs are never freed).
std::unordered_map<std::string, size_t> LastUses(const Graph& g) {
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) last[in] = i;
  }
  for (const ValueInfo& out : g.outputs) last[out.name] = g.nodes.size();
  return last;
}

class Runner {
 public:
  Runner(const Graph& g, const RunOptions& options)
      : g_(g), options_(options), last_(LastUses(g)) {}

  absl::Status Feed(const TensorMap& feeds) {
    for (const auto& [name, t] : feeds) {
      bool declared = false;
      for (const ValueInfo& info : g_.inputs) declared = declared || info.name == name;
      if (!declared) {
        return absl::InvalidArgumentError(
            absl::StrCat(g_.source, ": \"", name, "\" is not an input of the model"));
      }
    }
    for (const ValueInfo& info : g_.inputs) {
      auto it = feeds.find(info.name);
      if (it == feeds.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(g_.source, ": input \"", info.name, "\" is not given"));
      }
      if (absl::Status s = CheckFeed(g_, info, it->second); !s.ok()) return s;
      values_[info.name] = &it->second;
    }
    for (const auto& [name, t] : g_.initializers) values_.emplace(name, &t);
    return absl::OkStatus();
  }

  absl::Status Step(size_t index) {
    const Node& node = g_.nodes[index];
    // The message prefix, built only when a message is (a run is many small nodes).
    auto where = [&] {
      return absl::StrCat(g_.source, ": node \"", node.name, "\" (", node.op_type, "): ");
    };
    std::vector<const Tensor*> inputs;
    for (const std::string& name : node.inputs) {
      auto it = name.empty() ? values_.end() : values_.find(name);
      if (!name.empty() && it == values_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), "input \"", name, "\" is not made before it"));
      }
      inputs.push_back(name.empty() ? nullptr : it->second);
    }
    auto kernel = ops::OpTable().find(node.op_type);
    if (kernel == ops::OpTable().end()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), "operator not supported"));
    }
    std::vector<Tensor> replacements(options_.before_node ? inputs.size() : 0);
    if (options_.before_node) {
      absl::Status s = options_.before_node(node, inputs, replacements);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where(), s.message()));
    }
    std::vector<Tensor> outputs(node.outputs.size());
    absl::Status s = kernel->second(ops::OpContext(node, g_.opset, std::move(inputs)), outputs);
    if (s.ok() && options_.after_node) s = options_.after_node(node, outputs);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where(), s.message()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string& name = node.outputs[k];
      // An output nobody reads is dropped at once (unless every value is kept).
      if (name.empty() || (!last_.count(name) && !options_.keep_intermediates)) continue;
      auto it = owned_.insert_or_assign(name, std::move(outputs[k])).first;
      values_[name] = &it->second;
    }
    if (!options_.keep_intermediates) Free(node, index);
    return absl::OkStatus();
  }

  TensorMap Result() {
    TensorMap out;
    if (options_.keep_intermediates) {
      for (auto& [name, t] : owned_) out.emplace(name, t);
    }
    for (const ValueInfo& v : g_.outputs) out.insert_or_assign(v.name, *values_.at(v.name));
    return out;
  }

 private:
  // Drops the node's inputs it was the last reader of.
  void Free(const Node& node, size_t index) {
    for (const std::string& in : node.inputs) {
      auto last = last_.find(in);
      if (in.empty() || last == last_.end() || last->second != index) continue;
      if (owned_.erase(in) > 0) values_.erase(in);
    }
  }

  const Graph& g_;
  const RunOptions& options_;
  const std::unordered_map<std::string, size_t> last_;
  std::unordered_map<std::string, const Tensor*> values_;  // every live value
  std::unordered_map<std::string, Tensor> owned_;          // the values nodes made
};

}  // namespace

absl::StatusOr<TensorMap> Run(const Graph& graph, const TensorMap& feeds,
                              const RunOptions& options) {
  Runner run(graph, options);
  if (absl::Status s = run.Feed(feeds); !s.ok()) return s;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (absl::Status s = run.Step(i); !s.ok()) return s;
  }
  return run.Result();
}

std::vector<std::string> ClaimedOps() {
  std::vector<std::string> names;
  for (const auto& [name, kernel] : ops::OpTable()) names.push_back(name);
  return names;
}

bool IsClaimed(const std::string& op_type) { return ops::OpTable().count(op_type) > 0; }

}  // namespace seedance::model
