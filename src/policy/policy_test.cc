#include "seedance/policy/policy.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace seedance::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kFull[] = R"(version: 1
profiles:
  - name: packed
    policy: cas
    description: pack GPU pods tightly
    options:
      sigmoid_scale: 2
    weights:
      CostAwareScore: 3
  - name: spread
    policy: bestfit
default_profile: spread
classes:
  - name: training
    match:
      namespace: ml
      labels: {team: research, tier: batch}
      min_priority: 100
      max_priority: 1000
    profile: packed
  - name: anything-in-ml
    match: {namespace: ml}
    profile: spread
plugins:
  - name: pager
    path: ./pager.so
rules:
  - name: crowded
    condition: gpu_free_pct < 10 && pending_pods > 100
    priority: 10
    timeout: 5m
    action: {type: switch_profile, class: training, profile: spread}
  - name: cordon-bad
    condition: fragmentation_ratio > 0.5
    action: {type: cordon, node: node-7}
  - name: drain-bad
    condition: "unschedulable_pods >= 1"
    priority: -3
    timeout: 90
    action: {type: drain, node: node-8}
  - name: low
    condition: gpu_alloc_pct > 95
    action: {type: alert, name: GpuNearlyFull, message: add nodes}
  - name: page
    condition: "!(bind_rate_per_s > 0) && nodes > cordoned_nodes"
    action:
      type: plugin
      plugin: pager
      argument: {severity: high, count: 3, ratio: 0.5, on: true, list: [a, 1], none: null, text: "7"}
)";

Policy MustParse(std::string_view text) {
  absl::StatusOr<Policy> p = ParsePolicy(text, "p.yaml");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : Policy{};
}

// The error message for `text`, which must be InvalidArgument.
std::string ErrorOf(std::string_view text) {
  absl::StatusOr<Policy> p = ParsePolicy(text, "p.yaml");
  EXPECT_FALSE(p.ok()) << text;
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  return std::string(p.status().message());
}

TEST(ParsePolicyTest, EveryField) {
  const Policy p = MustParse(kFull);
  EXPECT_EQ(p.source, "p.yaml");
  EXPECT_EQ(p.text, kFull);
  ASSERT_EQ(p.profiles.size(), 2u);
  EXPECT_EQ(p.profiles[0].name, "packed");
  EXPECT_EQ(p.profiles[0].policy, "cas");
  EXPECT_EQ(p.profiles[0].options, (std::map<std::string, std::string>{{"sigmoid_scale", "2"}}));
  EXPECT_EQ(p.profiles[0].weights, (std::map<std::string, int64_t>{{"CostAwareScore", 3}}));
  EXPECT_EQ(p.profiles[1].policy, "bestfit");
  EXPECT_TRUE(p.profiles[1].options.empty());
  EXPECT_EQ(p.default_profile, "spread");
  EXPECT_EQ(p.default_profile_index, 1);

  ASSERT_EQ(p.classes.size(), 2u);
  const ClassBinding& c = p.classes[0];
  EXPECT_EQ(c.name, "training");
  EXPECT_EQ(c.match.ns, "ml");
  EXPECT_EQ(c.match.labels,
            (std::map<std::string, std::string>{{"team", "research"}, {"tier", "batch"}}));
  EXPECT_EQ(c.match.min_priority, 100);
  EXPECT_EQ(c.match.max_priority, 1000);
  EXPECT_EQ(c.profile, "packed");
  EXPECT_EQ(c.profile_index, 0);
  EXPECT_FALSE(p.classes[1].match.min_priority.has_value());

  ASSERT_EQ(p.plugins.size(), 1u);
  EXPECT_EQ(p.plugins[0].name, "pager");
  EXPECT_EQ(p.plugins[0].path, "./pager.so");
  EXPECT_EQ(p.plugins[0].where, "p.yaml:26:11: $.plugins[0].path");

  ASSERT_EQ(p.rules.size(), 5u);
  EXPECT_EQ(p.rules[0].name, "crowded");
  EXPECT_EQ(p.rules[0].condition.text(), "gpu_free_pct < 10 && pending_pods > 100");
  EXPECT_EQ(p.rules[0].priority, 10);
  EXPECT_DOUBLE_EQ(p.rules[0].timeout_s, 300);
  EXPECT_EQ(p.rules[0].action.kind, Action::kSwitchProfile);
  EXPECT_EQ(p.rules[0].action.target, "training");
  EXPECT_EQ(p.rules[0].action.value, "spread");
  EXPECT_EQ(p.rules[1].priority, 0);
  EXPECT_DOUBLE_EQ(p.rules[1].timeout_s, 0);
  EXPECT_EQ(p.rules[1].action.kind, Action::kCordon);
  EXPECT_EQ(p.rules[1].action.target, "node-7");
  EXPECT_EQ(p.rules[2].priority, -3);
  EXPECT_DOUBLE_EQ(p.rules[2].timeout_s, 90);  // a bare number is seconds
  EXPECT_EQ(p.rules[2].action.kind, Action::kDrain);
  EXPECT_EQ(p.rules[3].action.kind, Action::kAlert);
  EXPECT_EQ(p.rules[3].action.target, "GpuNearlyFull");
  EXPECT_EQ(p.rules[3].action.value, "add nodes");
  EXPECT_EQ(p.rules[4].action.kind, Action::kPlugin);
  EXPECT_EQ(p.rules[4].action.target, "pager");
  EXPECT_EQ(p.rules[4].action.value,
            R"({"count":3,"list":["a",1],"none":null,"on":true,"ratio":0.5,"severity":"high",)"
            R"("text":"7"})");
}

TEST(ParsePolicyTest, MinimalPolicyDefaults) {
  const Policy p = MustParse("profiles: [{name: only, policy: packing}]\n");
  EXPECT_EQ(p.default_profile, "only");
  EXPECT_TRUE(p.classes.empty());
  EXPECT_TRUE(p.rules.empty());
  EXPECT_EQ(p.ProfileFor("x", {}, 0).name, "only");
  const Policy builtin = MustParse(DefaultPolicyText());
  EXPECT_EQ(builtin.profiles.at(0).policy, "cas");
}

TEST(ParsePolicyTest, PluginActionWithoutArgumentIsNull) {
  const Policy p = MustParse(R"(profiles: [{name: a, policy: cas}]
plugins: [{name: x, path: /x.so}]
rules: [{name: r, condition: "nodes > 0", action: {type: plugin, plugin: x}}]
)");
  EXPECT_EQ(p.rules[0].action.value, "null");
}

TEST(ProfileForTest, FirstMatchingClassWinsElseDefault) {
  const Policy p = MustParse(kFull);
  const std::map<std::string, std::string> research = {{"team", "research"}, {"tier", "batch"}};
  EXPECT_EQ(p.ProfileFor("ml", research, 500).name, "packed");
  EXPECT_EQ(p.ClassFor("ml", research, 500), 0);
  // Priority bounds are inclusive.
  EXPECT_EQ(p.ProfileFor("ml", research, 100).name, "packed");
  EXPECT_EQ(p.ProfileFor("ml", research, 1000).name, "packed");
  // Outside the range, a missing or different label: the next class (namespace only).
  EXPECT_EQ(p.ClassFor("ml", research, 99), 1);
  EXPECT_EQ(p.ClassFor("ml", research, 1001), 1);
  EXPECT_EQ(p.ClassFor("ml", {{"team", "research"}}, 500), 1);
  EXPECT_EQ(p.ClassFor("ml", {{"team", "x"}, {"tier", "batch"}}, 500), 1);
  // Extra labels on the pod do not matter.
  std::map<std::string, std::string> more = research;
  more["extra"] = "1";
  EXPECT_EQ(p.ClassFor("ml", more, 500), 0);
  // Another namespace: no class, the default profile.
  EXPECT_EQ(p.ClassFor("web", research, 500), -1);
  EXPECT_EQ(p.ProfileFor("web", research, 500).name, "spread");
}

TEST(ProfileForTest, SwitchesOverrideTheClassProfile) {
  const Policy p = MustParse(kFull);
  EXPECT_EQ(p.SwitchOf(0), -1);
  p.SetSwitch(0, 1);
  EXPECT_EQ(p.ProfileFor("ml", {{"team", "research"}, {"tier", "batch"}}, 500).name, "spread");
  p.SetSwitch(2, 0);  // the default class
  EXPECT_EQ(p.ProfileFor("web", {}, 0).name, "packed");
  p.SetSwitch(0, -1);
  EXPECT_EQ(p.ProfileFor("ml", {{"team", "research"}, {"tier", "batch"}}, 500).name, "packed");
  p.SetSwitch(99, 0);  // out of range: ignored
  EXPECT_EQ(p.SwitchOf(99), -1);
}

TEST(ParsePolicyErrorTest, UnknownKeysGetDidYouMean) {
  EXPECT_EQ(ErrorOf("profiles: [{name: a, policy: cas}]\nrulez: []\n"),
            "p.yaml:2:1: $.rulez: unknown key (did you mean 'rules'?); known: version, profiles, "
            "default_profile, classes, rules, plugins, queues, preemption");
  EXPECT_THAT(ErrorOf("profiles:\n  - name: a\n    polcy: cas\n"),
              StartsWith("p.yaml:3:5: $.profiles[0].polcy: unknown key (did you mean 'policy'?)"));
  EXPECT_THAT(ErrorOf("profiles: [{name: a, policy: cas}]\nclasses:\n  - name: c\n    profile: a\n"
                      "    match: {namespase: x}\n"),
              StartsWith("p.yaml:5:13: $.classes[0].match.namespase: unknown key (did you mean "
                         "'namespace'?)"));
  EXPECT_THAT(
      ErrorOf("profiles: [{name: a, policy: cas}]\nrules:\n  - name: r\n"
              "    condition: nodes > 1\n    timout: 5s\n    action: {type: alert, name: x}\n"),
      StartsWith("p.yaml:5:5: $.rules[0].timout: unknown key (did you mean 'timeout'?)"));
  EXPECT_THAT(ErrorOf("profiles: [{name: a, policy: cas}]\nrules:\n  - name: r\n"
                      "    condition: nodes > 1\n    action: {type: cordon, nod: n1}\n"),
              StartsWith("p.yaml:5:28: $.rules[0].action.nod: unknown key (did you mean 'node'?)"));
}

TEST(ParsePolicyErrorTest, EveryErrorNamesItsPlace) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"", "p.yaml: the policy is empty"},
      {"[1, 2]", "p.yaml:1:1: $: must be a mapping (got a list)"},
      {"version: 2\nprofiles: [{name: a, policy: cas}]\n",
       "p.yaml:1:10: $.version: must be an integer in [1, 1], got '2'"},
      {"default_profile: a\n", "p.yaml:1:1: $.profiles: missing (a policy needs a profile)"},
      {"profiles: []\n", "p.yaml:1:11: $.profiles: must hold at least one profile"},
      {"profiles: {a: 1}\n", "p.yaml:1:11: $.profiles: must be a list (got a mapping)"},
      {"profiles: [{policy: cas}]\n", "p.yaml:1:12: $.profiles[0].name: missing"},
      {"profiles: [{name: a}]\n", "p.yaml:1:12: $.profiles[0].policy: missing"},
      {"profiles: [{name: 'a b', policy: cas}]\n",
       "p.yaml:1:19: $.profiles[0].name: 'a b' is not a valid name (1-63 letters, digits, '_', '-' "
       "or '.', starting with a letter or digit)"},
      {"profiles: [{name: a, policy: cas}, {name: a, policy: fgd}]\n",
       "p.yaml:1:43: $.profiles[1].name: profile 'a' is defined twice"},
      {"profiles: [{name: a, policy: bestfitt}]\n",
       "p.yaml:1:30: $.profiles[0].policy: unknown policy 'bestfitt' (did you mean 'bestfit'?); "
       "registered: bestfit, cas, clustering, dotprod, fgd, least-allocated, "
       "most-allocated, packing, random"},
      {"profiles: [{name: a, policy: cas, options: {coverage_pct: 150}}]\n",
       "p.yaml:1:45: $.profiles[0].options.coverage_pct: must be in (0, 100], got '150'"},
      {"profiles: [{name: a, policy: cas, options: {sigmoid: 1}}]\n",
       "p.yaml:1:45: $.profiles[0].options.sigmoid: unknown cas option 'sigmoid' (did you mean "
       "'sigmoid_scale'?)"},
      {"profiles: [{name: a, policy: cas, options: {x: [1]}}]\n",
       "p.yaml:1:48: $.profiles[0].options.x: must be a string (got a list)"},
      {"profiles: [{name: a, policy: cas, weights: {CostAwareScor: 2}}]\n",
       "p.yaml:1:45: $.profiles[0].weights.CostAwareScor: policy 'cas' has no score plugin "
       "'CostAwareScor' (did you mean 'CostAwareScore'?); its score plugins: CostAwareScore, "
       "CostAwareCpuBalance"},
      {"profiles: [{name: a, policy: cas, weights: {CostAwareScore: -1}}]\n",
       "p.yaml:1:61: $.profiles[0].weights.CostAwareScore: must be an integer in [0, 1000], got "
       "'-1'"},
      {"profiles: [{name: a, policy: cas}]\ndefault_profile: b\n",
       "p.yaml:2:18: $.default_profile: unknown profile 'b'; profiles: a"},
      {"profiles: [{name: a, policy: cas}]\nclasses: [{name: c}]\n",
       "p.yaml:2:11: $.classes[0].profile: missing"},
      {"profiles: [{name: a, policy: cas}]\nclasses: [{name: default, profile: a}]\n",
       "p.yaml:2:18: $.classes[0].name: 'default' is reserved"},
      {"profiles: [{name: a, policy: cas}]\nclasses: [{name: c, profile: b}]\n",
       "p.yaml:2:30: $.classes[0].profile: unknown profile 'b'; profiles: a"},
      {"profiles: [{name: a, policy: cas}]\n"
       "classes: [{name: c, profile: a}, {name: c, profile: a}]\n",
       "p.yaml:2:41: $.classes[1].name: class 'c' is defined twice"},
      {"profiles: [{name: a, policy: cas}]\n"
       "classes: [{name: c, profile: a, match: {min_priority: 5, max_priority: 4}}]\n",
       "p.yaml:2:55: $.classes[0].match.min_priority: is above max_priority (5 > 4)"},
      {"profiles: [{name: a, policy: cas}]\n"
       "classes: [{name: c, profile: a, match: {max_priority: 3000000000}}]\n",
       "p.yaml:2:55: $.classes[0].match.max_priority: must be an integer in [-2147483648, "
       "2147483647], got '3000000000'"},
      {"profiles: [{name: a, policy: cas}]\n"
       "classes: [{name: c, profile: a, match: {labels: [x]}}]\n",
       "p.yaml:2:49: $.classes[0].match.labels: must be a mapping (got a list)"},
      {"profiles: [{name: a, policy: cas}]\n"
       "classes: [{name: c, profile: a, match: {labels: {app.kubernetes.io/team: [x]}}}]\n",
       "p.yaml:2:74: $.classes[0].match.labels[\"app.kubernetes.io/team\"]: must be a string "
       "(got a list)"},
      {"profiles: [{name: a, policy: cas}]\n\"my key\": 1\n",
       "p.yaml:2:1: $[\"my key\"]: unknown key; known: version, profiles"},
      {"profiles: [{name: a, policy: cas}]\nrules: [{name: r, action: {type: alert, name: x}}]\n",
       "p.yaml:2:9: $.rules[0].condition: missing"},
      {"profiles: [{name: a, policy: cas}]\nrules: [{name: r, condition: nodes > 1}]\n",
       "p.yaml:2:9: $.rules[0].action: missing"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, timeout: 5 minutes, action: {type: alert, name: "
       "x}}]\n",
       "p.yaml:2:50: $.rules[0].timeout: "},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, priority: high, action: {type: alert, name: x}}]\n",
       "p.yaml:2:51: $.rules[0].priority: expected an integer in [-1000000, 1000000], got 'high'"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: evict, node: n}}]\n",
       "p.yaml:2:56: $.rules[0].action.type: unknown action 'evict'; known: switch_profile, "},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {node: n}}]\n",
       "p.yaml:2:49: $.rules[0].action.type: missing (one of switch_profile, cordon, drain, alert, "
       "plugin)"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: cordon}}]\n",
       "p.yaml:2:49: $.rules[0].action.node: missing for cordon"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: switch_profile, class: c, "
       "profile: a}}]\n",
       "p.yaml:2:79: $.rules[0].action.class: unknown class 'c'; classes: default"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: switch_profile, class: default, "
       "profile: b}}]\n",
       "p.yaml:2:97: $.rules[0].action.profile: unknown profile 'b'; profiles: a"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: plugin, plugin: p}}]\n",
       "p.yaml:2:72: $.rules[0].action.plugin: unknown plugin 'p'; the policy lists no plugins"},
      {"profiles: [{name: a, policy: cas}]\n"
       "rules: [{name: r, condition: nodes > 1, action: {type: alert, name: x}},\n"
       "        {name: r, condition: nodes > 2, action: {type: alert, name: y}}]\n",
       "p.yaml:3:16: $.rules[1].name: rule 'r' is defined twice"},
      {"profiles: [{name: a, policy: cas}]\nplugins: [{name: p}]\n",
       "p.yaml:2:11: $.plugins[0].path: missing"},
      {"profiles: [{name: a, policy: cas}]\nplugins: [{name: p, path: /a}, {name: p, path: /b}]\n",
       "p.yaml:2:39: $.plugins[1].name: plugin 'p' is listed twice"},
      {"profiles: [{name: a, policy: cas}]\nprofiles: [{name: b, policy: cas}]\n",
       "p.yaml:2:1: $.profiles: repeated key"},
      {"profiles: [{name: a, policy: cas}\n", "p.yaml:2:1: invalid YAML: "},
      {"profiles: [{name: a, policy: cas}]\n---\nprofiles: []\n",
       "p.yaml:3: a policy is one YAML document"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ErrorOf(c.text), StartsWith(c.error)) << c.text;
  }
}

TEST(ParsePolicyErrorTest, ConditionErrorsPointIntoTheFile) {
  // Plain scalar: column of the scalar plus the offset inside the condition.
  EXPECT_EQ(ErrorOf("profiles: [{name: a, policy: cas}]\nrules:\n  - name: r\n"
                    "    condition: nodes > 1 && gpu_fre_pct < 10\n"
                    "    action: {type: alert, name: x}\n"),
            "p.yaml:4:29: $.rules[0].condition: column 14: unknown metric 'gpu_fre_pct' (did you "
            "mean 'gpu_free_pct'?); known: gpu_free_pct, gpu_alloc_pct, pending_pods, "
            "unschedulable_pods, nodes, cordoned_nodes, fragmentation_ratio, bind_rate_per_s");
  // Quoted scalar: one more for the quote.
  EXPECT_THAT(ErrorOf("profiles: [{name: a, policy: cas}]\nrules:\n  - name: r\n"
                      "    condition: \"nodes >\"\n    action: {type: alert, name: x}\n"),
              StartsWith("p.yaml:4:24: $.rules[0].condition: column 8: unexpected end"));
  // A block scalar: the scalar's own place, and the column inside it.
  EXPECT_THAT(ErrorOf("profiles: [{name: a, policy: cas}]\nrules:\n  - name: r\n"
                      "    condition: |\n      nodes > 1 &&\n      pending > 2\n"
                      "    action: {type: alert, name: x}\n"),
              StartsWith("p.yaml:4:16: $.rules[0].condition: column 14: unknown metric 'pending'"));
}

TEST(ParsePolicyErrorTest, KnownMetricsAreAParameter) {
  ParseOptions opts;
  opts.known_metrics = {"queue_depth"};
  const char* text =
      "profiles: [{name: a, policy: cas}]\n"
      "rules: [{name: r, condition: queue_depth > 3, action: {type: alert, "
      "name: x}}]\n";
  EXPECT_TRUE(ParsePolicy(text, "p.yaml", opts).ok());
  EXPECT_FALSE(ParsePolicy(text, "p.yaml").ok());
}

TEST(ParsePolicyErrorTest, KnownPoliciesAndValidatorAreParameters) {
  ParseOptions opts;
  opts.known_policies = {"mine"};
  opts.validate_profile =
      [](const std::string& policy,
         const std::map<std::string, std::string>& options) -> absl::StatusOr<ProfileInfo> {
    if (options.count("bad") > 0) return absl::InvalidArgumentError("bad: not good");
    return ProfileInfo{{policy + "Score"}};
  };
  EXPECT_TRUE(
      ParsePolicy("profiles: [{name: a, policy: mine, weights: {mineScore: 2}}]\n", "p", opts)
          .ok());
  absl::StatusOr<Policy> bad =
      ParsePolicy("profiles: [{name: a, policy: mine, options: {bad: 1}}]\n", "p", opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "p:1:46: $.profiles[0].options.bad: not good");
  EXPECT_FALSE(ParsePolicy("profiles: [{name: a, policy: cas}]\n", "p", opts).ok());
}

TEST(ParsePolicyErrorTest, LimitsOnAliasesDepthAndSize) {
  // A billion laughs: refused before the tree is walked.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 0; i < 9; ++i) {
    const std::string prev(1, static_cast<char>('a' + i));
    const std::string cur(1, static_cast<char>('b' + i));
    bomb += cur + ": &" + cur + " [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  EXPECT_THAT(ErrorOf(bomb), HasSubstr("nodes (through YAML aliases?)"));
  std::string deep = "profiles: ";
  for (int i = 0; i < 66; ++i) deep += "[";
  for (int i = 0; i < 66; ++i) deep += "]";
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested deeper than 64 levels"));
  EXPECT_THAT(ErrorOf(std::string(kMaxPolicyBytes + 1, '#')), HasSubstr("larger than"));
  EXPECT_EQ(ErrorOf("profiles: [{name: \xff, policy: cas}]"),
            "p.yaml: the policy is not valid UTF-8");
  EXPECT_EQ(ErrorOf(std::string("profiles: \0", 11)), "p.yaml: the policy holds a NUL byte");
}

// yaml-cpp 0.7 never returns on these (found by policy_fuzz): refused before it parses them.
TEST(ParsePolicyErrorTest, StrayCommasAreRefusedNotHung) {
  struct Case {
    const char* text;
    const char* where;
  };
  const Case cases[] = {
      {",", "1:1"},
      {"# c\n  , a", "2:3"},
      {"--- &x !t ,", "1:11"},
      {"%YAML 1.2\n---\n,", "3:1"},
      {"profiles: [{name: a, policy: cas}]\n...\n,", "3:1"},
      {"[a]\n,", "2:1"},
      {"[a] ,", "1:5"},
      {"- [a]\n,", "2:1"},
      {"'x'\n,", "2:1"},
      {"{a: 1}\n ,b", "2:2"},
      {"profil# x file's\n    timeout: 1m\n   ,'policy action: {type: a", "3:4"},
      {"a: |\n  text\n,", "3:1"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorOf(c.text),
              absl::StrCat("p.yaml:", c.where, ": invalid YAML: ',' outside [...] or {...}"))
        << c.text;
  }
  // Commas inside flow collections, quoted and block scalars and plain text are fine.
  MustParse("profiles: [\n  {name: a, policy: cas}\n  , {name: b, policy: cas}]\n");
  MustParse("profiles:\n  - {name: 'a', policy: cas, description: 'x\n ,y'}\n# ---\n");
  MustParse(
      "profiles:\n  - name: a\n    policy: cas\n    description: |\n      one\n"
      "      , two\n    weights: {CostAwareScore: 1}\n");
  MustParse("profiles:\n  - name: a\n    policy: cas\n    description: it 's a, b ,c\n");
}

TEST(ParsePolicyErrorTest, NamesFromTheFileAreSafeToPrint) {
  const std::string msg = ErrorOf("profiles: [{name: a, policy: \"\\e[31mred\"}]\n");
  EXPECT_THAT(msg, HasSubstr("unknown policy '\\x1B[31mred'"));
  EXPECT_EQ(msg.find('\x1b'), std::string::npos);
}

TEST(ExamplesTest, EveryExamplePolicyParses) {
  const char* env = std::getenv("SEEDANCE_SOURCE_DIR");
  const std::string root = env != nullptr && *env != '\0' ? env : POLICY_SOURCE_DIR;
  const std::filesystem::path dir = std::filesystem::path(root) / "examples" / "policy";
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Policy> p = ParsePolicy(text.str(), entry.path().string());
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) {
      EXPECT_FALSE(p->rules.empty()) << entry.path();
    }
    ++parsed;
  }
  EXPECT_GE(parsed, 2);
}

TEST(BuildProfileTest, OptionsAndWeightsReachTheSchedulerProfile) {
  const Policy p = MustParse(kFull);
  absl::StatusOr<sched::Profile> prof = BuildProfile(p.profiles[0], sched::PolicyContext{});
  ASSERT_TRUE(prof.ok()) << prof.status();
  ASSERT_EQ(prof->scores.size(), 2u);
  EXPECT_EQ(prof->scores[0].plugin->Name(), "CostAwareScore");
  EXPECT_EQ(prof->scores[0].weight, 3);
  EXPECT_EQ(prof->scores[1].weight, 1);
  PlacementProfile bad = p.profiles[0];
  bad.weights["Nope"] = 2;
  EXPECT_THAT(std::string(BuildProfile(bad, sched::PolicyContext{}).status().message()),
              HasSubstr("has no score plugin 'Nope'"));
  bad = p.profiles[0];
  bad.options["coverage_pct"] = "0";
  EXPECT_EQ(BuildProfile(bad, sched::PolicyContext{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProfileForDeathTest, APolicyWithoutProfilesIsABug) {
  EXPECT_DEATH((void)Policy{}.ProfileFor("ns", {}, 0), "at least one profile");
}

TEST(ActionKindNameTest, Names) {
  EXPECT_EQ(ActionKindName(Action::kSwitchProfile), "switch_profile");
  EXPECT_EQ(ActionKindName(Action::kCordon), "cordon");
  EXPECT_EQ(ActionKindName(Action::kDrain), "drain");
  EXPECT_EQ(ActionKindName(Action::kAlert), "alert");
  EXPECT_EQ(ActionKindName(Action::kPlugin), "plugin");
}

}  // namespace
}  // namespace seedance::policy

namespace seedance::policy {
namespace {

TEST(PolicyQueuesTest, AThreeLevelTreeWithNamespaces) {
  auto p = ParsePolicy(R"(profiles: [{name: default, policy: bestfit}]
preemption: true
queues:
  - name: org
    guaranteed: {gpus: 16}
  - name: team-a
    parent: org
    namespaces: [a-prod, a-dev]
    guaranteed: {gpus: 8, cpu_milli: 64000}
    limit: {gpus: 12}
    weight: 3
    disruption_budget: 5
  - name: team-b
    parent: org
    namespaces: [b]
)",
                       "p.yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->preemption);
  ASSERT_EQ(p->queues.size(), 3u);
  const QueueBinding& a = p->queues[1];
  EXPECT_EQ(a.spec.name, "team-a");
  EXPECT_EQ(a.spec.parent, "org");
  EXPECT_EQ(a.spec.guaranteed[sched::kQueueGpus], 8);
  EXPECT_EQ(a.spec.guaranteed[sched::kQueueCpuMilli], 64000);
  EXPECT_EQ(a.spec.limit[sched::kQueueGpus], 12);
  EXPECT_TRUE(std::isinf(a.spec.limit[sched::kQueueMemoryMib]));
  EXPECT_EQ(a.spec.weight, 3);
  EXPECT_EQ(a.spec.disruption_budget, 5);
  EXPECT_EQ(p->queues[2].spec.disruption_budget, -1);
  EXPECT_EQ(a.namespaces, (std::vector<std::string>{"a-prod", "a-dev"}));
}

TEST(PolicyQueuesTest, BadQueuesNameTheLineAndField) {
  struct Case {
    std::string name, queues, want;
  };
  const std::vector<Case> cases = {
      {"namespace twice", "  - {name: a, namespaces: [x]}\n  - {name: b, namespaces: [x]}\n",
       "p.yaml:4:28: $.queues[1].namespaces[0]: namespace 'x' is already in queue 'a'"},
      {"unknown parent", "  - {name: a, parent: nope}\n",
       "queue 'a': parent 'nope' is not a queue"},
      {"inner queue with namespaces", "  - {name: a, namespaces: [x]}\n  - {name: b, parent: a}\n",
       "$.queues[0].namespaces: only a leaf queue holds pods"},
      {"unknown resource", "  - {name: a, guaranteed: {gpu: 1}}\n",
       "$.queues[0].guaranteed.gpu: unknown key (did you mean 'gpus'?)"},
      {"negative", "  - {name: a, guaranteed: {gpus: -1}}\n", "$.queues[0].guaranteed.gpus"},
      {"limit below guarantee", "  - {name: a, guaranteed: {gpus: 4}, limit: {gpus: 2}}\n",
       "limit gpus must be >= its guarantee"},
      {"zero weight", "  - {name: a, weight: 0}\n", "$.queues[0].weight"},
      {"no name", "  - {guaranteed: {gpus: 1}}\n", "$.queues[0].name: missing"},
  };
  for (const Case& c : cases) {
    auto p = ParsePolicy("profiles: [{name: default, policy: bestfit}]\nqueues:\n" + c.queues,
                         "p.yaml");
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_NE(p.status().message().find(c.want), std::string::npos)
        << c.name << ": " << p.status().message();
  }
  auto bad = ParsePolicy("profiles: [{name: default, policy: bestfit}]\npreemption: maybe\n",
                         "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("$.preemption: must be true or false"), std::string::npos);
}

}  // namespace
}  // namespace seedance::policy
