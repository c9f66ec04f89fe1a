#include "seedance/policy/manager.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "seedance/base/io.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"
#include "seedance/policy/plugin.h"

namespace seedance::policy {

namespace {

std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 200)); }

// Applies `f` to an alert-raising rule's name map.
void CollectAlerts(const Policy& p, std::map<std::string, bool>* alerts) {
  alerts->clear();
  for (const Rule& r : p.rules) {
    if (r.action.kind == Action::kAlert) (*alerts)[r.action.target] = false;
  }
}

}  // namespace

std::string_view PolicyStateName(PolicyState state) {
  switch (state) {
    case PolicyState::kLoaded:
      return "Loaded";
    case PolicyState::kReloading:
      return "Reloading";
    case PolicyState::kActive:
      return "Active";
    case PolicyState::kFailed:
      return "Failed";
  }
  return "Unknown";
}

PolicyManager::PolicyManager(std::string path, ManagerOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  if (!path_.empty() && path_ != "-") {
    const std::filesystem::path p(path_);
    dir_ = p.has_parent_path() ? p.parent_path().string() : ".";
    base_ = p.filename().string();
  }
}

PolicyManager::~PolicyManager() {
  if (watcher_.joinable()) {
    const char byte = 1;
    // A full pipe already wakes the watcher; nothing else to do on failure.
    [[maybe_unused]] ssize_t n = write(stop_pipe_[1], &byte, 1);
    watcher_.join();
  }
  for (int fd : stop_pipe_) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<PolicyManager>> PolicyManager::Start(
    std::string path, std::vector<std::string> known_metrics, ManagerOptions options) {
  options.parse.known_metrics = std::move(known_metrics);
  std::unique_ptr<PolicyManager> m(new PolicyManager(std::move(path), std::move(options)));
  std::string text(DefaultPolicyText());
  std::string source = "<built-in policy>";
  if (!m->path_.empty()) {
    absl::StatusOr<std::string> read = base::ReadInput(m->path_, base::InputKind::kConfig);
    if (!read.ok()) return read.status();
    text = *std::move(read);
    source = m->path_ == "-" ? "<stdin>" : m->path_;
    base::MutexLock lock(m->reload_mu_);  // no other thread yet: for the analysis
    m->last_file_text_ = text;
    m->have_file_text_ = true;
  }
  absl::StatusOr<std::shared_ptr<const Policy>> p = m->Build(text, source);
  if (!p.ok()) return p.status();
  m->Install(*std::move(p), PolicyState::kLoaded);
  if (m->options_.watch && !m->dir_.empty()) {
    if (absl::Status st = m->StartWatcher(); !st.ok()) return st;
  }
  return m;
}

absl::StatusOr<std::shared_ptr<const Policy>> PolicyManager::Build(std::string_view text,
                                                                   std::string_view source) const {
  absl::StatusOr<Policy> parsed = ParsePolicy(text, source, options_.parse);
  if (!parsed.ok()) return parsed.status();
  auto policy = std::make_shared<Policy>(*std::move(parsed));
  if (!policy->plugins.empty() && !options_.allow_plugins) {
    return absl::InvalidArgumentError(
        absl::StrCat(policy->plugins.front().where, ": plugins are not allowed here"));
  }
  for (const PluginRef& ref : policy->plugins) {
    std::filesystem::path file(ref.path);
    if (file.is_relative() && !dir_.empty()) file = std::filesystem::path(dir_) / file;
    absl::StatusOr<std::shared_ptr<LoadedPlugin>> loaded = LoadedPlugin::Load(file.string());
    if (!loaded.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(ref.where, ": ", loaded.status().message()));
    }
    policy->loaded_plugins[ref.name] = *std::move(loaded);
  }
  return policy;
}

void PolicyManager::Install(std::shared_ptr<const Policy> policy, PolicyState state) {
  base::MutexLock lock(mu_);
  current_ = std::move(policy);
  last_error_.clear();
  // Under the same lock: whoever sees the new policy through Current() also sees its state.
  state_.store(state);
  generation_.fetch_add(1);
}

std::shared_ptr<const Policy> PolicyManager::Current() const {
  base::MutexLock lock(mu_);
  return current_;
}

std::string PolicyManager::last_error() const {
  base::MutexLock lock(mu_);
  return last_error_;
}

absl::Status PolicyManager::Reload(std::string_view text, std::string_view source) {
  base::MutexLock lock(reload_mu_);
  return ReloadLocked(text, source);
}

absl::Status PolicyManager::ReloadLocked(std::string_view text, std::string_view source) {
  state_.store(PolicyState::kReloading);
  absl::StatusOr<std::shared_ptr<const Policy>> p = Build(text, source);
  if (!p.ok()) return Refuse(p.status());
  reloads_ok_.fetch_add(1);
  Install(*p, PolicyState::kActive);
  if (options_.on_reload) options_.on_reload(absl::OkStatus(), Current());
  return absl::OkStatus();
}

absl::Status PolicyManager::Refuse(absl::Status status) {
  {
    base::MutexLock lock(mu_);
    last_error_ = std::string(status.message());
  }
  reloads_failed_.fetch_add(1);
  state_.store(PolicyState::kFailed);
  if (options_.on_reload) options_.on_reload(status, Current());
  return status;
}

absl::Status PolicyManager::ReloadFromFile() {
  if (dir_.empty()) return absl::OkStatus();
  base::MutexLock lock(reload_mu_);
  absl::StatusOr<std::string> read = base::ReadInput(path_, base::InputKind::kConfig);
  if (!read.ok()) {
    // Gone for now (an editor between unlink and rename, a ConfigMap swap): keep serving.
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return absl::OkStatus();
    state_.store(PolicyState::kReloading);
    return Refuse(read.status());
  }
  if (have_file_text_ && *read == last_file_text_) return absl::OkStatus();
  last_file_text_ = *read;
  have_file_text_ = true;
  return ReloadLocked(last_file_text_, path_);
}

absl::Status PolicyManager::StartWatcher() {
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot watch ", Shown(dir_), ": inotify: ", std::strerror(errno)));
  }
  const uint32_t mask =
      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB;
  if (inotify_add_watch(fd, dir_.c_str(), mask) < 0) {
    const int err = errno;
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot watch ", Shown(dir_), ": ", std::strerror(err)));
  }
  if (pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot watch ", Shown(dir_), ": pipe: ", std::strerror(err)));
  }
  watcher_ = std::thread([this, fd] { WatchLoop(fd); });
  return absl::OkStatus();
}

void PolicyManager::WatchLoop(int fd) {
  using Clock = std::chrono::steady_clock;
  const int debounce_ms = std::max(1, options_.debounce_ms);
  bool pending = false;
  Clock::time_point first_event{};
  alignas(inotify_event) char buf[16384];
  while (true) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    const int n = poll(fds, 2, pending ? debounce_ms : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      // Every event in the directory counts (the file itself, a temporary renamed over it, a
      // ConfigMap's ..data symlink); the content comparison in ReloadFromFile filters the rest.
      while (read(fd, buf, sizeof(buf)) > 0) {
      }
      if (!pending) first_event = Clock::now();
      pending = true;
      if (Clock::now() - first_event < std::chrono::milliseconds(10 * debounce_ms)) continue;
    } else if (n > 0) {
      break;  // POLLERR / POLLHUP on the inotify descriptor
    }
    if (!pending) continue;
    pending = false;
    // Errors are kept in last_error() and the counters.
    (void)ReloadFromFile();
  }
  close(fd);
}

std::vector<Action> PolicyManager::Evaluate(const std::map<std::string, double>& metrics,
                                            double now_s) {
  const std::shared_ptr<const Policy> policy = Current();
  std::vector<Action> fired;
  {
    base::MutexLock lock(eval_mu_);
    if (eval_policy_ != policy) {
      eval_policy_ = policy;
      order_.resize(policy->rules.size());
      for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int>(i);
      std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
        return policy->rules[a].priority > policy->rules[b].priority;
      });
      rule_state_.assign(policy->rules.size(), RuleState{});
      slot_owner_.assign(policy->classes.size() + 1, SlotOwner{});
      CollectAlerts(*policy, &alerts_);
    }
    // Effects that ran out.
    for (size_t slot = 0; slot < slot_owner_.size(); ++slot) {
      SlotOwner& o = slot_owner_[slot];
      if (o.rule >= 0 && !(now_s < o.until_s)) {
        o.rule = -1;
        policy->SetSwitch(static_cast<int>(slot), -1);
      }
    }
    // Precedence of rule a over rule b: higher priority, then earlier in the file.
    auto precedes = [&](int a, int b) {
      const Rule& ra = policy->rules[a];
      const Rule& rb = policy->rules[b];
      return ra.priority != rb.priority ? ra.priority > rb.priority : a < b;
    };
    std::vector<std::pair<Action::Kind, std::string>> done;  // (kind, target) this evaluation
    std::map<std::string, bool> raised;
    for (int i : order_) {
      const Rule& rule = policy->rules[i];
      RuleState& rs = rule_state_[i];
      if (rule.action.kind == Action::kAlert && rs.fired && now_s < rs.until_s) {
        raised[rule.action.target] = true;
      }
      if (rs.fired && now_s < rs.last_fired_s + rule.timeout_s) continue;  // cooling down
      if (!rule.condition.Eval(metrics)) continue;
      const Action& a = rule.action;
      int slot = -1;
      if (a.kind == Action::kSwitchProfile) {
        slot = a.target == kDefaultClass ? static_cast<int>(policy->classes.size()) : [&] {
          for (size_t c = 0; c < policy->classes.size(); ++c) {
            if (policy->classes[c].name == a.target) return static_cast<int>(c);
          }
          return -1;
        }();
        if (slot < 0) continue;  // cannot happen: ParsePolicy checked the class
        const SlotOwner& o = slot_owner_[static_cast<size_t>(slot)];
        if (o.rule >= 0 && o.rule != i && precedes(o.rule, i)) continue;
      }
      const std::pair<Action::Kind, std::string> key(a.kind, a.target);
      if (std::find(done.begin(), done.end(), key) != done.end()) continue;
      done.push_back(key);
      rs.fired = true;
      rs.last_fired_s = now_s;
      rs.until_s = now_s + rule.timeout_s;
      if (slot >= 0) {
        slot_owner_[static_cast<size_t>(slot)] = SlotOwner{i, rs.until_s};
        policy->SetSwitch(slot, policy->ProfileIndex(a.value));
      }
      if (a.kind == Action::kAlert) raised[a.target] = true;
      Action out = a;
      out.rule = rule.name;
      fired.push_back(std::move(out));
    }
    for (auto& [name, on] : alerts_) on = raised.count(name) > 0;
  }
  for (Action& a : fired) {
    if (a.kind != Action::kPlugin) continue;
    auto it = policy->loaded_plugins.find(a.target);
    if (it == policy->loaded_plugins.end() || !it->second) {
      a.ok = false;
      a.result = absl::StrCat("plugin '", a.target, "' is not loaded");
      continue;
    }
    absl::StatusOr<std::string> reply = it->second->Call(a.rule, a.value);
    a.ok = reply.ok();
    a.result = reply.ok() ? *reply : std::string(reply.status().message());
  }
  return fired;
}

std::map<std::string, bool> PolicyManager::Alerts() const {
  const std::shared_ptr<const Policy> policy = Current();
  base::MutexLock lock(eval_mu_);
  if (eval_policy_ != policy) {
    std::map<std::string, bool> fresh;
    CollectAlerts(*policy, &fresh);
    return fresh;
  }
  return alerts_;
}

}  // namespace seedance::policy
