// PolicyManager: the policy a server runs, hot-reloaded from its file (inotify) or from text
// (PUT /v1/policy), with snapshots so that a decision in flight finishes under the policy it
// started with.
//
// States (state()): kLoaded once Start loaded the first policy; kReloading while a reload parses
// and loads plugins; kActive once a reload succeeded; kFailed when the last reload was refused,
// in which case the previous policy keeps serving (Current() never returns a policy that failed
// to load). generation() counts the policies installed (1 after Start).
//
// Watching: the file's DIRECTORY is watched, so an editor that writes a temporary file and
// renames it over the policy (and Kubernetes' ConfigMap symlink swap) is seen. Events are
// debounced (ManagerOptions::debounce_ms of quiet) and the file is reloaded only when its bytes
// changed. A removed file is ignored: the policy stays until the file is back.
//
// Thread-safety: every method may be called from any thread.
#ifndef SEEDANCE_POLICY_MANAGER_H_
#define SEEDANCE_POLICY_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/policy/policy.h"

namespace seedance::policy {

enum class PolicyState { kLoaded, kReloading, kActive, kFailed };
std::string_view PolicyStateName(PolicyState state);  // "Loaded", "Reloading", "Active", "Failed"

struct ManagerOptions {
  // How policies are checked; Start's known_metrics replace parse.known_metrics.
  ParseOptions parse;
  // Watch the file for changes (ignored without a file).
  bool watch = true;
  // Quiet time after the last change before the file is read (a burst of writes is one reload);
  // a reload happens at the latest after 10 x debounce_ms of continuous changes.
  int debounce_ms = 100;
  // Whether policies may list plugins (dlopen). The server may refuse them from PUT /v1/policy.
  bool allow_plugins = true;
  // Called after every reload attempt (file or Reload), with its outcome and the policy that
  // serves afterwards; runs on the reloading thread, outside the policy lock (Current() may be
  // called) but with the reload lock held: it must not call Reload.
  std::function<void(const absl::Status&, const std::shared_ptr<const Policy>&)> on_reload;
};

class PolicyManager {
 public:
  // Loads `path` (or DefaultPolicyText() when empty; "-" reads standard input once and does not
  // watch) and starts the watcher. A bad file is InvalidArgument "FILE:LINE:COL: $.field: ...";
  // an unreadable file the error of base::ReadInput; a failure to watch FailedPrecondition.
  static absl::StatusOr<std::unique_ptr<PolicyManager>> Start(
      std::string path, std::vector<std::string> known_metrics, ManagerOptions options = {});
  ~PolicyManager();  // stops the watcher thread
  PolicyManager(const PolicyManager&) = delete;
  PolicyManager& operator=(const PolicyManager&) = delete;

  // The serving policy; never null. An in-flight decision keeps its shared_ptr.
  std::shared_ptr<const Policy> Current() const;

  // Parses and installs `text` (plugins load relative to the policy file's directory). A bad
  // policy is refused (its error returned and kept in last_error()) and the previous stays.
  absl::Status Reload(std::string_view text, std::string_view source);
  // Reads the file now and reloads it if its bytes changed since the last read (what the
  // watcher does). OK and no reload when unchanged or when there is no file.
  absl::Status ReloadFromFile();

  PolicyState state() const { return state_.load(); }
  int64_t generation() const { return generation_.load(); }
  std::string last_error() const;
  int64_t reloads_ok() const { return reloads_ok_.load(); }
  int64_t reloads_failed() const { return reloads_failed_.load(); }
  const std::string& path() const { return path_; }
  const std::vector<std::string>& known_metrics() const { return options_.parse.known_metrics; }

  // Evaluates every rule of the current policy against `metrics` at time `now_s` (any monotonic
  // clock in seconds), highest priority first (ties: file order), and returns the actions that
  // fire, in that order. A rule fires when its condition holds and it is not cooling down: after
  // firing at t it does not fire again before t + timeout_s. Its effect (a profile switch, a
  // raised alert) lasts until t + timeout_s and is renewed when it fires again; with timeout 0 it
  // lasts until the next evaluation. A switch of a class already switched by a rule of higher
  // priority whose effect still lasts, and a second action of the same kind on the same target
  // in one evaluation, are suppressed (not returned). Plugin actions are called here (outside
  // the manager's locks) and carry the plugin's reply in Action::result. A reload clears every
  // switch, alert and cooldown: the new policy starts afresh.
  std::vector<Action> Evaluate(const std::map<std::string, double>& metrics, double now_s);

  // Every alert the current policy names, and whether it is raised (as of the last Evaluate).
  std::map<std::string, bool> Alerts() const;

 private:
  struct RuleState {
    bool fired = false;
    double last_fired_s = 0;
    double until_s = 0;  // effect lasts while now < until_s (or until the next evaluation)
  };
  struct SlotOwner {
    int rule = -1;  // index into rules; -1 = not switched
    double until_s = 0;
  };

  PolicyManager(std::string path, ManagerOptions options);
  absl::StatusOr<std::shared_ptr<const Policy>> Build(std::string_view text,
                                                      std::string_view source) const;
  // Publishes the policy and the state it leaves the manager in, together.
  void Install(std::shared_ptr<const Policy> policy, PolicyState state) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status StartWatcher();
  void WatchLoop(int inotify_fd);
  absl::Status ReloadLocked(std::string_view text, std::string_view source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Records a failed reload.
  absl::Status Refuse(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  std::string dir_, base_;  // of path_
  ManagerOptions options_;

  mutable base::Mutex mu_;
  std::shared_ptr<const Policy> current_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);

  base::Mutex reload_mu_;  // one reload at a time
  std::string last_file_text_ ABSL_GUARDED_BY(reload_mu_);
  bool have_file_text_ ABSL_GUARDED_BY(reload_mu_) = false;

  std::atomic<PolicyState> state_{PolicyState::kLoaded};
  std::atomic<int64_t> generation_{0};
  std::atomic<int64_t> reloads_ok_{0};
  std::atomic<int64_t> reloads_failed_{0};

  mutable base::Mutex eval_mu_;
  // The policy the rule state below belongs to.
  std::shared_ptr<const Policy> eval_policy_ ABSL_GUARDED_BY(eval_mu_);
  // Rule indices by (priority desc, file order).
  std::vector<int> order_ ABSL_GUARDED_BY(eval_mu_);
  std::vector<RuleState> rule_state_ ABSL_GUARDED_BY(eval_mu_);
  // Per class slot (classes.size() = the default class).
  std::vector<SlotOwner> slot_owner_ ABSL_GUARDED_BY(eval_mu_);
  std::map<std::string, bool> alerts_ ABSL_GUARDED_BY(eval_mu_);

  int stop_pipe_[2] = {-1, -1};
  std::thread watcher_;
};

}  // namespace seedance::policy

#endif  // SEEDANCE_POLICY_MANAGER_H_
