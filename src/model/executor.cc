// The CPU executor's run loop (executor.h): feeds checked against the graph's declarations,
// nodes run in order through the kernel table (ops.h), values freed after their last use.
//
// A run works on value numbers, not names: a Plan numbers every value of a graph, resolves each
// node's inputs, outputs and kernel, and lists the values each node is the last reader of. Plans
// are made once per graph and thread (a thread_local cache keyed by the graph's address, each
// plan checked against the graph it is used for, so a changed or new graph at a reused address
// gets a new plan); runs share no mutable state.
#include "seedance/model/executor.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
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

// Markers in a NodePlan's value lists.
constexpr int kOmitted = -1;  // "": an omitted optional input or output
constexpr int kNotMade = -2;  // an input no earlier node, graph input or initializer makes

struct NodePlan {
  const ops::Kernel* kernel = nullptr;  // nullptr: the operator is not claimed
  std::vector<int> inputs, outputs;     // value numbers or the markers above
  std::vector<int> last_reads;          // the values this node reads last (each once)
  std::vector<bool> takeable;           // per input: read last here, and by no other input
};

// A graph's values numbered and its nodes resolved (see the file comment). `names` holds every
// name the plan was made from, in the order Matches walks the graph.
struct Plan {
  std::vector<std::string> names;    // the graph's names, in walk order (Matches)
  std::vector<std::string> values;   // value number -> name
  std::vector<int> inputs, outputs;  // per graph input / output
  std::vector<int> initializers;     // per initializer, in the map's order
  std::vector<NodePlan> nodes;
  std::vector<bool> read;  // a node or the graph's outputs read the value
};

// Calls visit(name) for every name a plan depends on, in a fixed order, with a separator ("")
// between groups so that names cannot shift from one group to the next unnoticed.
template <typename F>
void WalkNames(const Graph& g, F visit) {
  for (const ValueInfo& v : g.inputs) visit(v.name);
  visit(std::string_view("\x01"));
  for (const auto& [name, t] : g.initializers) visit(name);
  visit(std::string_view("\x01"));
  for (const Node& n : g.nodes) {
    visit(n.domain);
    visit(n.op_type);
    for (const std::string& in : n.inputs) visit(in);
    visit(std::string_view("\x02"));
    for (const std::string& out : n.outputs) visit(out);
    visit(std::string_view("\x03"));
  }
  for (const ValueInfo& v : g.outputs) visit(v.name);
}

// True when `plan` was made from a graph with the same names as `g` (a value of the same walk).
bool Matches(const Plan& plan, const Graph& g) {
  size_t i = 0;
  bool same = true;
  WalkNames(g, [&](std::string_view name) {
    same = same && i < plan.names.size() && plan.names[i] == name;
    ++i;
  });
  return same && i == plan.names.size();
}

std::shared_ptr<const Plan> MakePlan(const Graph& g) {
  auto plan = std::make_shared<Plan>();
  WalkNames(g, [&](std::string_view name) { plan->names.emplace_back(name); });
  std::unordered_map<std::string_view, int> ids;  // the names numbered so far
  auto define = [&](const std::string& name) {
    auto [it, fresh] = ids.emplace(name, static_cast<int>(plan->values.size()));
    if (fresh) plan->values.push_back(name);
    return it->second;
  };
  for (const ValueInfo& v : g.inputs) plan->inputs.push_back(define(v.name));
  for (const auto& [name, t] : g.initializers) plan->initializers.push_back(define(name));
  std::vector<size_t> last;  // per value: the last node that reads it (nodes.size(): never)
  plan->nodes.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    NodePlan& np = plan->nodes[i];
    const ops::Table& table = node.domain.empty() ? ops::OpTable() : ops::ContribTable();
    auto kernel = table.find(node.op_type);
    np.kernel = kernel == table.end() ? nullptr : &kernel->second;
    for (const std::string& in : node.inputs) {
      auto it = in.empty() ? ids.end() : ids.find(in);
      np.inputs.push_back(in.empty() ? kOmitted : it == ids.end() ? kNotMade : it->second);
    }
    for (const std::string& out : node.outputs) {
      np.outputs.push_back(out.empty() ? kOmitted : define(out));
    }
  }
  // Last readers, by name as the values are (a name read before it is made counts too).
  last.assign(plan->values.size(), g.nodes.size());
  plan->read.assign(plan->values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      auto it = in.empty() ? ids.end() : ids.find(in);
      if (it == ids.end()) continue;
      last[static_cast<size_t>(it->second)] = i;
      plan->read[static_cast<size_t>(it->second)] = true;
    }
  }
  for (const ValueInfo& v : g.outputs) {
    auto it = ids.find(v.name);
    plan->outputs.push_back(it == ids.end() ? kNotMade : it->second);
    if (it == ids.end()) continue;
    last[static_cast<size_t>(it->second)] = g.nodes.size();
    plan->read[static_cast<size_t>(it->second)] = true;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& np = plan->nodes[i];
    for (size_t k = 0; k < np.inputs.size(); ++k) {
      const int id = np.inputs[k];
      const bool last_here = id >= 0 && last[static_cast<size_t>(id)] == i;
      const bool first = std::find(np.inputs.begin(), np.inputs.begin() + k, id) ==
                         np.inputs.begin() + static_cast<std::ptrdiff_t>(k);
      const bool once = std::count(np.inputs.begin(), np.inputs.end(), id) == 1;
      if (last_here && first) np.last_reads.push_back(id);
      np.takeable.push_back(last_here && once);
    }
  }
  return plan;
}

// The plan of `g` for this thread, made when the cache holds none for it or one made from a graph
// that differs. Shared, so that a run keeps its plan when a hook's nested run evicts it.
std::shared_ptr<const Plan> PlanFor(const Graph& g) {
  // A few graphs per thread (a precision search alternates an FP32 graph and its FP64 copy).
  constexpr size_t kMaxPlans = 16;
  thread_local std::unordered_map<const Graph*, std::shared_ptr<const Plan>> cache;
  auto it = cache.find(&g);
  if (it != cache.end() && Matches(*it->second, g)) return it->second;
  if (it == cache.end() && cache.size() >= kMaxPlans) cache.clear();
  std::shared_ptr<const Plan> plan = MakePlan(g);
  cache[&g] = plan;
  return plan;
}

class Runner {
 public:
  Runner(const Graph& g, const RunOptions& options)
      : g_(g),
        options_(options),
        plan_holder_(PlanFor(g)),
        plan_(*plan_holder_),
        live_(plan_.values.size(), nullptr),
        owned_(plan_.values.size()) {}

  absl::Status Feed(const TensorMap& feeds) {
    for (const auto& [name, t] : feeds) {
      bool declared = false;
      for (const ValueInfo& info : g_.inputs) declared = declared || info.name == name;
      if (!declared) {
        return absl::InvalidArgumentError(
            absl::StrCat(g_.source, ": \"", name, "\" is not an input of the model"));
      }
    }
    for (size_t i = 0; i < g_.inputs.size(); ++i) {
      const ValueInfo& info = g_.inputs[i];
      auto it = feeds.find(info.name);
      if (it == feeds.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(g_.source, ": input \"", info.name, "\" is not given"));
      }
      if (absl::Status s = CheckFeed(g_, info, it->second); !s.ok()) return s;
      live_[Idx(plan_.inputs[i])] = &it->second;
    }
    size_t i = 0;
    for (const auto& [name, t] : g_.initializers) {
      const Tensor*& slot = live_[Idx(plan_.initializers[i++])];
      if (slot == nullptr) slot = &t;  // a feed of the same name wins
    }
    return absl::OkStatus();
  }

  absl::Status Step(size_t index) {
    const Node& node = g_.nodes[index];
    const NodePlan& np = plan_.nodes[index];
    // The message prefix, built only when a message is (a run is many small nodes).
    auto where = [&] {
      return absl::StrCat(g_.source, ": node \"", node.name, "\" (", node.op_type, "): ");
    };
    std::vector<const Tensor*> inputs(np.inputs.size(), nullptr);
    for (size_t k = 0; k < np.inputs.size(); ++k) {
      const int id = np.inputs[k];
      if (id == kOmitted) continue;
      inputs[k] = id == kNotMade ? nullptr : live_[Idx(id)];
      if (inputs[k] == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), "input \"", node.inputs[k], "\" is not made before it"));
      }
    }
    if (np.kernel == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where(), "operator not supported"));
    }
    std::vector<Tensor> replacements(options_.before_node ? inputs.size() : 0);
    if (options_.before_node) {
      absl::Status s = options_.before_node(node, inputs, replacements);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where(), s.message()));
    }
    std::vector<Tensor*> takeable;  // inputs the kernel may move from (ops.h: OpContext)
    if (!options_.keep_intermediates) {
      for (size_t k = 0; k < inputs.size(); ++k) {
        const int id = np.inputs[k];
        if (id < 0 || !np.takeable[k]) continue;  // omitted, or read again later
        std::optional<Tensor>& slot = owned_[Idx(id)];
        if (!slot.has_value() || inputs[k] != &*slot) continue;
        takeable.resize(inputs.size(), nullptr);
        takeable[k] = &*slot;
      }
    }
    std::vector<Tensor> outputs(np.outputs.size());
    absl::Status s = (*np.kernel)(
        ops::OpContext(node, g_.opset, std::move(inputs), std::move(takeable)), outputs);
    if (s.ok() && options_.after_node) s = options_.after_node(node, outputs);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where(), s.message()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      const int id = np.outputs[k];
      // An output nobody reads is dropped at once (unless every value is kept).
      if (id < 0 || (!plan_.read[Idx(id)] && !options_.keep_intermediates)) continue;
      live_[Idx(id)] = &owned_[Idx(id)].emplace(std::move(outputs[k]));
    }
    if (!options_.keep_intermediates) Free(np);
    return absl::OkStatus();
  }

  absl::StatusOr<TensorMap> Result() {
    TensorMap out;
    if (options_.keep_intermediates) {
      for (size_t id = 0; id < owned_.size(); ++id) {
        if (owned_[id].has_value()) out.emplace(plan_.values[id], *owned_[id]);
      }
    }
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const int id = plan_.outputs[i];
      if (id < 0 || live_[Idx(id)] == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(g_.source, ": output \"", g_.outputs[i].name, "\" is not made"));
      }
      // The value itself when a node made it and nothing reads it after this (no later output
      // names it, intermediates are not kept); else a copy.
      std::optional<Tensor>& slot = owned_[Idx(id)];
      const bool last = std::find(plan_.outputs.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                  plan_.outputs.end(), id) == plan_.outputs.end();
      if (!options_.keep_intermediates && last && slot.has_value() && live_[Idx(id)] == &*slot) {
        out.insert_or_assign(g_.outputs[i].name, *std::move(slot));
        slot.reset();
        live_[Idx(id)] = nullptr;
      } else {
        out.insert_or_assign(g_.outputs[i].name, *live_[Idx(id)]);
      }
    }
    return out;
  }

 private:
  static size_t Idx(int id) { return static_cast<size_t>(id); }

  // Drops the values the node was the last reader of that a node made.
  void Free(const NodePlan& np) {
    for (int id : np.last_reads) {
      if (!owned_[Idx(id)].has_value()) continue;
      owned_[Idx(id)].reset();
      live_[Idx(id)] = nullptr;
    }
  }

  const Graph& g_;
  const RunOptions& options_;
  const std::shared_ptr<const Plan> plan_holder_;
  const Plan& plan_;
  std::vector<const Tensor*> live_;           // per value: the tensor it holds now, or nullptr
  std::vector<std::optional<Tensor>> owned_;  // per value: the tensor a node made, if any
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

std::vector<std::string> ClaimedContribOps() {
  std::vector<std::string> names;
  for (const auto& [name, kernel] : ops::ContribTable()) names.push_back(name);
  return names;
}

bool IsClaimedContrib(const std::string& op_type) {
  return ops::ContribTable().count(op_type) > 0;
}

}  // namespace seedance::model
