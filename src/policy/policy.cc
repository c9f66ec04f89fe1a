#include "seedance/policy/policy.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "seedance/base/check.h"
#include "seedance/base/json_path.h"
#include "seedance/base/parse.h"
#include "seedance/base/text.h"
#include "seedance/core/resource_descriptor.h"
#include "seedance/core/yaml_scan.h"
#include "seedance/sched/registry.h"
#include "yaml-cpp/yaml.h"

namespace seedance::policy {

namespace {

// Thrown inside the reader, caught by ParsePolicy: the first error ends the parse.
struct ParseError {
  std::string message;  // complete: "FILE:LINE:COL: $.path: what"
};

// A node that IsDefined() says is absent (a default-constructed YAML::Node counts as defined).
YAML::Node Absent() { return YAML::Node(YAML::NodeType::Undefined); }

std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 64)); }

std::string DidYouMean(std::string_view word, const std::vector<std::string>& known) {
  const std::string guess = base::ClosestMatch(base::Clip(word, 64), known);
  return guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)");
}

bool IsValidName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '-' || c == '.'; });
}

// Paths in messages are base/json_path.h's: `$.profiles[0].options.sigmoid_scale`.
constexpr char kRoot[] = "$";
std::string Child(std::string_view path, std::string_view key) {
  return base::JsonPathChild(path, key);
}
std::string Index(std::string_view path, size_t i) { return base::JsonPathIndex(path, i); }

// Walks the YAML tree; every error names the node's position and the field path.
class Reader {
 public:
  Reader(std::string_view text, std::string source, const ParseOptions& opts)
      : text_(text), source_(std::move(source)), opts_(opts) {}

  Policy Read(const YAML::Node& root) {
    Policy p;
    if (!root.IsDefined() || root.IsNull()) Fail(root, "", "the policy is empty");
    RequireMap(root, kRoot);
    YAML::Node profiles = Absent(), classes = Absent(), rules = Absent(), plugins = Absent(),
               default_profile = Absent();
    YAML::Node queues = Absent();
    ForEachKey(root, kRoot,
               {"version", "profiles", "default_profile", "classes", "rules", "plugins", "queues",
                "preemption"},
               [&](const std::string& key, const YAML::Node& v) {
                 if (key == "version") {
                   if (Int(v, Child(kRoot, "version"), 1, 1) != 1)
                     Fail(v, Child(kRoot, "version"), "must be 1");
                 } else if (key == "profiles") {
                   profiles = v;
                 } else if (key == "default_profile") {
                   default_profile = v;
                 } else if (key == "classes") {
                   classes = v;
                 } else if (key == "rules") {
                   rules = v;
                 } else if (key == "queues") {
                   queues = v;
                 } else if (key == "preemption") {
                   const std::string b = Str(v, Child(kRoot, "preemption"));
                   if (b != "true" && b != "false")
                     Fail(v, Child(kRoot, "preemption"), "must be true or false");
                   p.preemption = b == "true";
                 } else {
                   plugins = v;
                 }
               });
    if (!profiles.IsDefined())
      Fail(root, Child(kRoot, "profiles"), "missing (a policy needs a profile)");
    ReadProfiles(profiles, &p);
    if (default_profile.IsDefined()) {
      p.default_profile = Str(default_profile, Child(kRoot, "default_profile"));
      p.default_profile_index = ProfileRef(p, default_profile, Child(kRoot, "default_profile"));
    } else {
      p.default_profile = p.profiles.front().name;
      p.default_profile_index = 0;
    }
    if (plugins.IsDefined()) ReadPlugins(plugins, &p);
    if (classes.IsDefined()) ReadClasses(classes, &p);
    if (rules.IsDefined()) ReadRules(rules, &p);
    if (queues.IsDefined()) ReadQueues(queues, &p);
    p.switches = std::make_shared<std::vector<std::atomic<int>>>(p.classes.size() + 1);
    for (std::atomic<int>& s : *p.switches) s.store(-1);
    return p;
  }

 private:
  std::string Where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null() || m.line < 0) return source_;
    return absl::StrCat(source_, ":", m.line + 1, ":", m.column + 1);
  }
  std::string WhereAt(int line, int column) const {
    return absl::StrCat(source_, ":", line, ":", column);
  }

  [[noreturn]] void Fail(const YAML::Node& n, const std::string& path, absl::string_view what) {
    FailAt(Where(n), path, what);
  }
  [[noreturn]] static void FailAt(const std::string& where, const std::string& path,
                                  absl::string_view what) {
    throw ParseError{path.empty() ? absl::StrCat(where, ": ", what)
                                  : absl::StrCat(where, ": ", path, ": ", what)};
  }

  static std::string KindOf(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map:
        return "a mapping";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Scalar:
        return "a scalar";
      case YAML::NodeType::Null:
        return "empty";
      default:
        return "undefined";
    }
  }
  void RequireMap(const YAML::Node& n, const std::string& path) {
    if (!n.IsMap()) Fail(n, path, absl::StrCat("must be a mapping (got ", KindOf(n), ")"));
  }
  void RequireSeq(const YAML::Node& n, const std::string& path) {
    if (!n.IsSequence()) Fail(n, path, absl::StrCat("must be a list (got ", KindOf(n), ")"));
    if (n.size() > kMaxPolicyEntries) {
      Fail(n, path, absl::StrCat("has more than ", kMaxPolicyEntries, " entries"));
    }
  }

  // Calls f(key, value) for each entry of the mapping `n`, refusing unknown and repeated keys.
  template <class F>
  void ForEachKey(const YAML::Node& n, const std::string& path,
                  const std::vector<std::string>& allowed, F&& f) {
    RequireMap(n, path);
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) Fail(key, path, "keys must be plain names");
      const std::string& k = key.Scalar();
      const std::string sub = Child(path, k);
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        Fail(key, sub,
             absl::StrCat("unknown key", DidYouMean(k, allowed),
                          "; known: ", absl::StrJoin(allowed, ", ")));
      }
      if (!seen.insert(k).second) Fail(key, sub, "repeated key");
      f(k, it->second);
    }
  }

  std::string Str(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) Fail(n, path, absl::StrCat("must be a string (got ", KindOf(n), ")"));
    return n.Scalar();
  }
  std::string Name(const YAML::Node& n, const std::string& path) {
    std::string s = Str(n, path);
    if (!IsValidName(s)) {
      Fail(n, path,
           absl::StrCat("'", Shown(s),
                        "' is not a valid name (1-63 letters, digits, '_', '-' or '.', starting "
                        "with a letter or digit)"));
    }
    return s;
  }
  int64_t Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) {
    const std::string s = Str(n, path);
    absl::StatusOr<int64_t> v = base::ParseInt64(s, path, lo, hi);
    if (!v.ok()) FailAt(Where(n), "", v.status().message());
    return *v;
  }

  int ProfileRef(const Policy& p, const YAML::Node& n, const std::string& path) {
    const std::string name = Str(n, path);
    const int i = p.ProfileIndex(name);
    if (i < 0) {
      std::vector<std::string> names;
      for (const PlacementProfile& pp : p.profiles) names.push_back(pp.name);
      Fail(n, path,
           absl::StrCat("unknown profile '", Shown(name), "'", DidYouMean(name, names),
                        "; profiles: ", absl::StrJoin(names, ", ")));
    }
    return i;
  }

  void ReadProfiles(const YAML::Node& list, Policy* p) {
    RequireSeq(list, Child(kRoot, "profiles"));
    if (list.size() == 0) Fail(list, Child(kRoot, "profiles"), "must hold at least one profile");
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      const std::string path = Index(Child(kRoot, "profiles"), i);
      PlacementProfile prof;
      YAML::Node name = Absent(), policy = Absent(), options = Absent(), weights = Absent();
      ForEachKey(e, path, {"name", "policy", "options", "weights", "description"},
                 [&](const std::string& k, const YAML::Node& v) {
                   if (k == "name") name = v;
                   if (k == "policy") policy = v;
                   if (k == "options") options = v;
                   if (k == "weights") weights = v;
                 });
      if (!name.IsDefined()) Fail(e, Child(path, "name"), "missing");
      if (!policy.IsDefined()) Fail(e, Child(path, "policy"), "missing");
      prof.name = Name(name, Child(path, "name"));
      if (p->ProfileIndex(prof.name) >= 0) {
        Fail(name, Child(path, "name"), absl::StrCat("profile '", prof.name, "' is defined twice"));
      }
      prof.policy = Str(policy, Child(path, "policy"));
      if (std::find(known_policies_.begin(), known_policies_.end(), prof.policy) ==
          known_policies_.end()) {
        Fail(policy, Child(path, "policy"),
             absl::StrCat("unknown policy '", Shown(prof.policy), "'",
                          DidYouMean(prof.policy, known_policies_),
                          "; registered: ", absl::StrJoin(known_policies_, ", ")));
      }
      std::map<std::string, YAML::Node> option_nodes;
      if (options.IsDefined() && !options.IsNull()) {
        RequireMap(options, Child(path, "options"));
        for (auto it = options.begin(); it != options.end(); ++it) {
          const YAML::Node key = it->first;
          const std::string kp = Child(path, "options");
          if (!key.IsScalar()) Fail(key, kp, "keys must be plain names");
          const std::string sub = Child(kp, key.Scalar());
          if (prof.options.count(key.Scalar()) > 0) Fail(key, sub, "repeated key");
          prof.options[key.Scalar()] = Str(it->second, sub);
          option_nodes.emplace(key.Scalar(), key);
        }
      }
      ProfileInfo info;
      absl::StatusOr<ProfileInfo> checked = validate_(prof.policy, prof.options);
      if (!checked.ok()) {
        // Point at the option the message names, when it names one.
        std::string msg(checked.status().message());
        const std::string_view prefix = "--policy-opt ";
        if (msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
        for (const auto& [key, node] : option_nodes) {
          if (msg.rfind(key + ":", 0) == 0) {
            FailAt(Where(node), Child(Child(path, "options"), key),
                   absl::StrCat(msg.substr(key.size() + 1).erase(0, 1)));
          }
        }
        Fail(options.IsDefined() ? options : policy, Child(path, "options"), msg);
      }
      info = *std::move(checked);
      if (weights.IsDefined() && !weights.IsNull()) {
        RequireMap(weights, Child(path, "weights"));
        for (auto it = weights.begin(); it != weights.end(); ++it) {
          const YAML::Node key = it->first;
          if (!key.IsScalar()) Fail(key, Child(path, "weights"), "keys must be plain names");
          const std::string& plugin = key.Scalar();
          const std::string sub = Child(Child(path, "weights"), plugin);
          if (!info.score_plugins.empty() &&
              std::find(info.score_plugins.begin(), info.score_plugins.end(), plugin) ==
                  info.score_plugins.end()) {
            Fail(key, sub,
                 absl::StrCat("policy '", prof.policy, "' has no score plugin '", Shown(plugin),
                              "'", DidYouMean(plugin, info.score_plugins),
                              "; its score plugins: ", absl::StrJoin(info.score_plugins, ", ")));
          }
          if (prof.weights.count(plugin) > 0) Fail(key, sub, "repeated key");
          prof.weights[plugin] = Int(it->second, sub, 0, 1000);
        }
      }
      p->profiles.push_back(std::move(prof));
    }
  }

  void ReadPlugins(const YAML::Node& list, Policy* p) {
    if (list.IsNull()) return;
    RequireSeq(list, Child(kRoot, "plugins"));
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      const std::string path = Index(Child(kRoot, "plugins"), i);
      PluginRef ref;
      YAML::Node name = Absent(), file = Absent();
      ForEachKey(e, path, {"name", "path", "description"},
                 [&](const std::string& k, const YAML::Node& v) {
                   if (k == "name") name = v;
                   if (k == "path") file = v;
                 });
      if (!name.IsDefined()) Fail(e, Child(path, "name"), "missing");
      if (!file.IsDefined()) Fail(e, Child(path, "path"), "missing");
      ref.name = Name(name, Child(path, "name"));
      for (const PluginRef& other : p->plugins) {
        if (other.name == ref.name) {
          Fail(name, Child(path, "name"), absl::StrCat("plugin '", ref.name, "' is listed twice"));
        }
      }
      ref.path = Str(file, Child(path, "path"));
      if (ref.path.empty() || ref.path.find('\0') != std::string::npos) {
        Fail(file, Child(path, "path"), "must be a file name");
      }
      ref.where = absl::StrCat(Where(file), ": ", Child(path, "path"));
      p->plugins.push_back(std::move(ref));
    }
  }

  // guaranteed: / limit: {gpus, gpu_milli, cpu_milli, memory_mib}; an absent key keeps `*r`.
  void ReadResources(const YAML::Node& m, const std::string& path, sched::Resources* r) {
    const auto& names = sched::QueueResourceNames();
    const std::vector<std::string> allowed(names.begin(), names.end());
    ForEachKey(m, path, allowed, [&](const std::string& k, const YAML::Node& v) {
      const size_t i = static_cast<size_t>(
          std::find(allowed.begin(), allowed.end(), k) - allowed.begin());
      (*r)[i] = static_cast<double>(Int(v, Child(path, k), 0, int64_t{1} << 50));
    });
  }

  void ReadQueue(const YAML::Node& e, const std::string& path, QueueBinding* q) {
    YAML::Node name = Absent(), namespaces = Absent();
    ForEachKey(e, path,
               {"name", "parent", "namespaces", "guaranteed", "limit", "weight",
                "disruption_budget", "description"},
               [&](const std::string& k, const YAML::Node& v) {
                 const std::string sub = Child(path, k);
                 if (k == "name") name = v;
                 if (k == "parent") q->spec.parent = Name(v, sub);
                 if (k == "namespaces") namespaces = v;
                 if (k == "guaranteed") ReadResources(v, sub, &q->spec.guaranteed);
                 if (k == "limit") ReadResources(v, sub, &q->spec.limit);
                 if (k == "weight") q->spec.weight = static_cast<double>(Int(v, sub, 1, 1000000));
                 if (k == "disruption_budget") q->spec.disruption_budget = Int(v, sub, 0, 1000000);
               });
    if (!name.IsDefined()) Fail(e, Child(path, "name"), "missing");
    q->spec.name = Name(name, Child(path, "name"));
    if (namespaces.IsDefined() && !namespaces.IsNull()) {
      RequireSeq(namespaces, Child(path, "namespaces"));
      for (size_t j = 0; j < namespaces.size(); ++j) {
        q->namespaces.push_back(Name(namespaces[j], Index(Child(path, "namespaces"), j)));
      }
    }
  }

  void ReadQueues(const YAML::Node& list, Policy* p) {
    if (list.IsNull()) return;
    RequireSeq(list, Child(kRoot, "queues"));
    std::map<std::string, std::string> ns_owner;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = Index(Child(kRoot, "queues"), i);
      QueueBinding q;
      ReadQueue(list[i], path, &q);
      for (size_t j = 0; j < q.namespaces.size(); ++j) {
        auto [it, fresh] = ns_owner.emplace(q.namespaces[j], q.spec.name);
        if (!fresh) {
          Fail(list[i]["namespaces"][j], Index(Child(path, "namespaces"), j),
               absl::StrCat("namespace '", q.namespaces[j], "' is already in queue '", it->second,
                            "'"));
        }
      }
      p->queues.push_back(std::move(q));
    }
    std::vector<sched::QueueSpec> specs;
    for (const QueueBinding& q : p->queues) specs.push_back(q.spec);
    absl::StatusOr<sched::QueueTree> tree = sched::QueueTree::Build(specs, sched::Resources{});
    if (!tree.ok()) Fail(list, Child(kRoot, "queues"), tree.status().message());
    for (size_t i = 0; i < p->queues.size(); ++i) {
      if (!tree->is_leaf(static_cast<int>(i)) && !p->queues[i].namespaces.empty()) {
        Fail(list[i], Child(Index(Child(kRoot, "queues"), i), "namespaces"),
             "only a leaf queue holds pods; this queue has child queues");
      }
    }
  }

  void ReadClasses(const YAML::Node& list, Policy* p) {
    if (list.IsNull()) return;
    RequireSeq(list, Child(kRoot, "classes"));
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      const std::string path = Index(Child(kRoot, "classes"), i);
      ClassBinding c;
      YAML::Node name = Absent(), match = Absent(), profile = Absent();
      ForEachKey(e, path, {"name", "match", "profile", "description"},
                 [&](const std::string& k, const YAML::Node& v) {
                   if (k == "name") name = v;
                   if (k == "match") match = v;
                   if (k == "profile") profile = v;
                 });
      if (!name.IsDefined()) Fail(e, Child(path, "name"), "missing");
      if (!profile.IsDefined()) Fail(e, Child(path, "profile"), "missing");
      c.name = Name(name, Child(path, "name"));
      if (c.name == kDefaultClass) {
        Fail(name, Child(path, "name"),
             "'default' is reserved (it names the pods no class matches)");
      }
      for (const ClassBinding& other : p->classes) {
        if (other.name == c.name) {
          Fail(name, Child(path, "name"), absl::StrCat("class '", c.name, "' is defined twice"));
        }
      }
      if (match.IsDefined() && !match.IsNull()) ReadMatch(match, Child(path, "match"), &c.match);
      c.profile = Str(profile, Child(path, "profile"));
      c.profile_index = ProfileRef(*p, profile, Child(path, "profile"));
      p->classes.push_back(std::move(c));
    }
  }

  void ReadMatch(const YAML::Node& m, const std::string& path, PodClass* c) {
    YAML::Node min_node = Absent();
    ForEachKey(m, path, {"namespace", "labels", "min_priority", "max_priority"},
               [&](const std::string& k, const YAML::Node& v) {
                 const std::string sub = Child(path, k);
                 if (k == "namespace") {
                   c->ns = Str(v, sub);
                 } else if (k == "labels") {
                   if (v.IsNull()) return;
                   RequireMap(v, sub);
                   for (auto it = v.begin(); it != v.end(); ++it) {
                     const YAML::Node key = it->first;
                     if (!key.IsScalar() || key.Scalar().empty()) {
                       Fail(key, sub, "label keys must be non-empty strings");
                     }
                     const std::string lp = Child(sub, key.Scalar());
                     if (c->labels.count(key.Scalar()) > 0) Fail(key, lp, "repeated key");
                     c->labels[key.Scalar()] = Str(it->second, lp);
                   }
                 } else if (k == "min_priority") {
                   min_node = v;
                   c->min_priority = static_cast<int32_t>(Int(v, sub, INT32_MIN, INT32_MAX));
                 } else {
                   c->max_priority = static_cast<int32_t>(Int(v, sub, INT32_MIN, INT32_MAX));
                 }
               });
    if (c->min_priority && c->max_priority && *c->min_priority > *c->max_priority) {
      Fail(min_node, Child(path, "min_priority"),
           absl::StrCat("is above max_priority (", *c->min_priority, " > ", *c->max_priority, ")"));
    }
  }

  void ReadRules(const YAML::Node& list, Policy* p) {
    if (list.IsNull()) return;
    RequireSeq(list, Child(kRoot, "rules"));
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      const std::string path = Index(Child(kRoot, "rules"), i);
      Rule r;
      YAML::Node name = Absent(), condition = Absent(), priority = Absent(), timeout = Absent(),
                 action = Absent();
      ForEachKey(e, path, {"name", "condition", "priority", "timeout", "action", "description"},
                 [&](const std::string& k, const YAML::Node& v) {
                   if (k == "name") name = v;
                   if (k == "condition") condition = v;
                   if (k == "priority") priority = v;
                   if (k == "timeout") timeout = v;
                   if (k == "action") action = v;
                 });
      if (!name.IsDefined()) Fail(e, Child(path, "name"), "missing");
      if (!condition.IsDefined()) Fail(e, Child(path, "condition"), "missing");
      if (!action.IsDefined()) Fail(e, Child(path, "action"), "missing");
      r.name = Name(name, Child(path, "name"));
      for (const Rule& other : p->rules) {
        if (other.name == r.name) {
          Fail(name, Child(path, "name"), absl::StrCat("rule '", r.name, "' is defined twice"));
        }
      }
      r.condition = Condition(condition, Child(path, "condition"));
      if (priority.IsDefined()) {
        r.priority = static_cast<int>(Int(priority, Child(path, "priority"), -1000000, 1000000));
      }
      if (timeout.IsDefined()) {
        absl::StatusOr<double> t =
            base::ParseDuration(Str(timeout, Child(path, "timeout")), Child(path, "timeout"), 1,
                                base::NonNegative(30 * 86400.0));
        if (!t.ok()) FailAt(Where(timeout), "", t.status().message());
        r.timeout_s = *t;
      }
      r.action = ReadAction(action, Child(path, "action"), *p);
      p->rules.push_back(std::move(r));
    }
  }

  Expr Condition(const YAML::Node& n, const std::string& path) {
    const std::string text = Str(n, path);
    int column = 0;
    absl::StatusOr<Expr> e = Expr::Parse(text, opts_.known_metrics, &column);
    if (e.ok()) return *std::move(e);
    // Point into the file when the scalar sits on one line as written (plain or quoted).
    const YAML::Mark m = n.Mark();
    std::string where = Where(n);
    if (!m.is_null() && m.pos >= 0 && static_cast<size_t>(m.pos) <= text_.size() && column >= 1 &&
        text.substr(0, std::min<size_t>(column - 1, text.size())).find('\n') == std::string::npos) {
      const size_t pos = static_cast<size_t>(m.pos);
      const size_t prefix = static_cast<size_t>(column - 1);
      const bool plain = text_.substr(pos, text.size()) == text;
      const bool quoted = pos < text_.size() && (text_[pos] == '"' || text_[pos] == '\'') &&
                          text_.substr(pos + 1, text.size()) == text;
      if (plain || quoted) {
        where = WhereAt(m.line + 1, m.column + 1 + static_cast<int>(prefix) + (quoted ? 1 : 0));
      }
    }
    FailAt(where, path, e.status().message());
  }

  Action ReadAction(const YAML::Node& n, const std::string& path, const Policy& p) {
    RequireMap(n, path);
    static const std::vector<std::string> kTypes = {"switch_profile", "cordon", "drain", "alert",
                                                    "plugin"};
    const YAML::Node type = n["type"];
    if (!type.IsDefined()) {
      Fail(n, Child(path, "type"),
           absl::StrCat("missing (one of ", absl::StrJoin(kTypes, ", "), ")"));
    }
    const std::string t = Str(type, Child(path, "type"));
    Action a;
    std::vector<std::string> keys = {"type"};
    if (t == "switch_profile") {
      a.kind = Action::kSwitchProfile;
      keys.insert(keys.end(), {"class", "profile"});
    } else if (t == "cordon" || t == "drain") {
      a.kind = t == "cordon" ? Action::kCordon : Action::kDrain;
      keys.push_back("node");
    } else if (t == "alert") {
      a.kind = Action::kAlert;
      keys.insert(keys.end(), {"name", "message"});
    } else if (t == "plugin") {
      a.kind = Action::kPlugin;
      keys.insert(keys.end(), {"plugin", "argument"});
    } else {
      Fail(type, Child(path, "type"),
           absl::StrCat("unknown action '", Shown(t), "'", DidYouMean(t, kTypes),
                        "; known: ", absl::StrJoin(kTypes, ", ")));
    }
    std::map<std::string, YAML::Node> f;
    ForEachKey(n, path, keys, [&](const std::string& k, const YAML::Node& v) { f[k] = v; });
    auto need = [&](const std::string& k) {
      if (f.count(k) == 0) Fail(n, Child(path, k), absl::StrCat("missing for ", t));
      return f[k];
    };
    switch (a.kind) {
      case Action::kSwitchProfile: {
        const YAML::Node cls = need("class");
        const YAML::Node prof = need("profile");
        a.target = Str(cls, Child(path, "class"));
        if (a.target != kDefaultClass) {
          std::vector<std::string> names = {std::string(kDefaultClass)};
          bool found = false;
          for (const ClassBinding& c : p.classes) {
            names.push_back(c.name);
            found = found || c.name == a.target;
          }
          if (!found) {
            Fail(cls, Child(path, "class"),
                 absl::StrCat("unknown class '", Shown(a.target), "'", DidYouMean(a.target, names),
                              "; classes: ", absl::StrJoin(names, ", ")));
          }
        }
        a.value = Str(prof, Child(path, "profile"));
        ProfileRef(p, prof, Child(path, "profile"));
        break;
      }
      case Action::kCordon:
      case Action::kDrain: {
        const YAML::Node node = need("node");
        a.target = Str(node, Child(path, "node"));
        if (a.target.empty() || a.target.size() > 253 || base::ForTerminal(a.target) != a.target) {
          Fail(node, Child(path, "node"), "must be a node name (1-253 printable characters)");
        }
        break;
      }
      case Action::kAlert:
        a.target = Name(need("name"), Child(path, "name"));
        if (f.count("message") > 0) a.value = Str(f["message"], Child(path, "message"));
        break;
      case Action::kPlugin: {
        const YAML::Node plugin = need("plugin");
        a.target = Str(plugin, Child(path, "plugin"));
        std::vector<std::string> names;
        for (const PluginRef& ref : p.plugins) names.push_back(ref.name);
        if (std::find(names.begin(), names.end(), a.target) == names.end()) {
          Fail(plugin, Child(path, "plugin"),
               absl::StrCat("unknown plugin '", Shown(a.target), "'", DidYouMean(a.target, names),
                            names.empty()
                                ? "; the policy lists no plugins"
                                : absl::StrCat("; plugins: ", absl::StrJoin(names, ", "))));
        }
        a.value = f.count("argument") > 0 ? base::DumpJson(ToJson(f["argument"])) : "null";
        break;
      }
    }
    return a;
  }

  // A YAML value as JSON: plain scalars that read as numbers, booleans or null become those.
  static nlohmann::json ToJson(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map: {
        nlohmann::json o = nlohmann::json::object();
        for (auto it = n.begin(); it != n.end(); ++it) {
          const YAML::Node key = it->first;
          o[key.IsScalar() ? key.Scalar() : std::string("?")] = ToJson(it->second);
        }
        return o;
      }
      case YAML::NodeType::Sequence: {
        nlohmann::json a = nlohmann::json::array();
        for (size_t i = 0; i < n.size(); ++i) a.push_back(ToJson(n[i]));
        return a;
      }
      case YAML::NodeType::Scalar: {
        const std::string& s = n.Scalar();
        if (n.Tag() == "?") {
          if (s == "true" || s == "false") return s == "true";
          if (s == "null" || s == "~") return nullptr;
          int64_t i = 0;
          if (YAML::convert<int64_t>::decode(n, i)) return i;
          double d = 0;
          if (YAML::convert<double>::decode(n, d) && std::isfinite(d)) return d;
        }
        return s;
      }
      default:
        return nullptr;
    }
  }

 public:
  void Init() {
    known_policies_ =
        opts_.known_policies.empty() ? sched::Registry::Builtins().Names() : opts_.known_policies;
    validate_ = opts_.validate_profile;
    if (!validate_) validate_ = BuiltinValidator;
  }

  static absl::StatusOr<ProfileInfo> BuiltinValidator(
      const std::string& policy, const std::map<std::string, std::string>& options) {
    const sched::Registry& reg = sched::Registry::Builtins();
    if (!reg.Contains(policy)) return ProfileInfo{};
    sched::PolicyContext ctx;
    ctx.params = options;
    // A stand-in for fgd's oracle workload: only the options are being checked here.
    ctx.oracle_workload = {sched::TargetShape{.cpu_milli = 1000,
                                              .num_gpu = 1,
                                              .gpu_milli = 1000,
                                              .gpu_model_mask = 0,
                                              .gpu_spec = "",
                                              .freq = 1.0}};
    absl::StatusOr<sched::Profile> prof = reg.Create(policy, ctx);
    if (!prof.ok()) return prof.status();
    ProfileInfo info;
    for (const auto& s : prof->scores) {
      if (s.plugin) info.score_plugins.emplace_back(s.plugin->Name());
    }
    return info;
  }

 private:
  std::string_view text_;
  std::string source_;
  const ParseOptions& opts_;
  std::vector<std::string> known_policies_;
  ProfileValidator validate_;
};

}  // namespace

const std::vector<std::string>& ServerMetricNames() {
  static const std::vector<std::string> names = {
      "gpu_free_pct", "gpu_alloc_pct",  "pending_pods",        "unschedulable_pods",
      "nodes",        "cordoned_nodes", "fragmentation_ratio", "bind_rate_per_s"};
  return names;
}

std::string_view ActionKindName(Action::Kind kind) {
  switch (kind) {
    case Action::kSwitchProfile:
      return "switch_profile";
    case Action::kCordon:
      return "cordon";
    case Action::kDrain:
      return "drain";
    case Action::kAlert:
      return "alert";
    case Action::kPlugin:
      return "plugin";
  }
  return "unknown";
}

bool PodClass::Matches(std::string_view pod_ns,
                       const std::map<std::string, std::string>& pod_labels,
                       int32_t priority) const {
  if (!ns.empty() && ns != pod_ns) return false;
  if (min_priority && priority < *min_priority) return false;
  if (max_priority && priority > *max_priority) return false;
  for (const auto& [k, v] : labels) {
    auto it = pod_labels.find(k);
    if (it == pod_labels.end() || it->second != v) return false;
  }
  return true;
}

int Policy::ClassFor(std::string_view ns, const std::map<std::string, std::string>& labels,
                     int32_t priority) const {
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i].match.Matches(ns, labels, priority)) return static_cast<int>(i);
  }
  return -1;
}

const PlacementProfile& Policy::ProfileFor(std::string_view ns,
                                           const std::map<std::string, std::string>& labels,
                                           int32_t priority) const {
  SEEDANCE_CHECK(!profiles.empty()) << "a Policy has at least one profile (ParsePolicy)";
  const int c = ClassFor(ns, labels, priority);
  const int slot = c < 0 ? static_cast<int>(classes.size()) : c;
  int profile = SwitchOf(slot);
  if (profile < 0 || profile >= static_cast<int>(profiles.size())) {
    profile = c < 0 ? default_profile_index : classes[c].profile_index;
  }
  return profiles[static_cast<size_t>(profile)];
}

const PlacementProfile* Policy::FindProfile(std::string_view name) const {
  const int i = ProfileIndex(name);
  return i < 0 ? nullptr : &profiles[static_cast<size_t>(i)];
}

int Policy::ProfileIndex(std::string_view name) const {
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void Policy::SetSwitch(int class_index, int profile_index) const {
  if (!switches || class_index < 0 || class_index >= static_cast<int>(switches->size())) return;
  (*switches)[static_cast<size_t>(class_index)].store(profile_index, std::memory_order_release);
}

int Policy::SwitchOf(int class_index) const {
  if (!switches || class_index < 0 || class_index >= static_cast<int>(switches->size())) return -1;
  return (*switches)[static_cast<size_t>(class_index)].load(std::memory_order_acquire);
}

absl::StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source,
                                   const ParseOptions& options) {
  const std::string src = source.empty() ? "<policy>" : base::ForTerminal(source);
  if (text.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": the policy is larger than ", kMaxPolicyBytes, " bytes"));
  }
  if (!base::IsValidUtf8(text)) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": the policy is not valid UTF-8"));
  }
  if (text.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": the policy holds a NUL byte"));
  }
  Reader reader(text, src, options);
  reader.Init();
  try {
    // The cluster descriptor's limits on depth and alias expansion, before any tree is built.
    const std::string copy(text);
    if (const size_t comma = core::FindStrayYamlComma(text); comma != std::string_view::npos) {
      const size_t line_start = text.rfind('\n', comma);
      const size_t line =
          1 + static_cast<size_t>(std::count(text.begin(), text.begin() + comma, '\n'));
      const size_t col = comma - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
      return absl::InvalidArgumentError(
          absl::StrCat(src, ":", line, ":", col, ": invalid YAML: ',' outside [...] or {...}"));
    }
    if (absl::Status st = core::CheckYamlLimits(text, src); !st.ok()) {
      // A syntax error: the parser stops where the check stopped (within the depth limit), so
      // parse again for the column.
      if (absl::string_view(st.message()).find(": invalid YAML: ") != absl::string_view::npos) {
        (void)YAML::LoadAll(copy);
      }
      return st;
    }
    std::vector<YAML::Node> docs = YAML::LoadAll(copy);
    if (docs.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          src, ":", docs[1].Mark().line + 1, ": a policy is one YAML document (found another)"));
    }
    Policy p = reader.Read(docs.empty() ? YAML::Node() : docs[0]);
    p.source = std::string(source);
    p.text = copy;
    return p;
  } catch (const ParseError& e) {
    return absl::InvalidArgumentError(e.message);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ":", e.mark.line + 1, ":", e.mark.column + 1, ": invalid YAML: ", e.msg));
  }
}

absl::StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source) {
  static const ParseOptions kDefaults;
  return ParsePolicy(text, source, kDefaults);
}

absl::StatusOr<sched::Profile> BuildProfile(const PlacementProfile& p, sched::PolicyContext ctx,
                                            const sched::Registry& registry) {
  ctx.params = p.options;
  absl::StatusOr<sched::Profile> prof = registry.Create(p.policy, ctx);
  if (!prof.ok()) {
    return absl::Status(
        prof.status().code(),
        absl::StrCat("profile '", p.name, "' (policy ", p.policy, "): ", prof.status().message()));
  }
  for (const auto& [plugin, weight] : p.weights) {
    bool found = false;
    for (sched::Profile::WeightedScore& s : prof->scores) {
      if (s.plugin && s.plugin->Name() == plugin) {
        s.weight = weight;
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("profile '", p.name, "': policy ", p.policy,
                                                     " has no score plugin '", plugin, "'"));
    }
  }
  return prof;
}

std::string_view DefaultPolicyText() {
  return "# The built-in policy: every pod is placed by the cost-aware policy.\n"
         "version: 1\n"
         "profiles:\n"
         "  - name: default\n"
         "    policy: cas\n";
}

}  // namespace seedance::policy
