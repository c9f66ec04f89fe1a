// Loading policy plugins: shared objects speaking the C ABI of plugin_abi.h (docs/plugins.md).
//
// Thread-safety: a LoadedPlugin may be shared between threads; Call serialises calls into the
// plugin. The object stays loaded as long as any LoadedPlugin (or a Policy holding one) is alive.
#ifndef SEEDANCE_POLICY_PLUGIN_H_
#define SEEDANCE_POLICY_PLUGIN_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "seedance/base/mutex.h"
#include "seedance/policy/plugin_abi.h"

namespace seedance::policy {

inline constexpr size_t kPluginReplyBytes = 4096;

class LoadedPlugin {
 public:
  // dlopen(path) and check the ABI. Errors name `path`: a missing or unreadable file (NotFound /
  // InvalidArgument), a file that is not a shared object, a missing seedance_plugin_entry
  // symbol, a plugin that does not speak SEEDANCE_PLUGIN_ABI_VERSION or returns a malformed
  // table (InvalidArgument).
  static absl::StatusOr<std::shared_ptr<LoadedPlugin>> Load(const std::string& path);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }        // as the plugin reports it
  const std::string& version() const { return version_; }  // as the plugin reports it

  // Calls on_action; the reply on success, or Internal naming the plugin with its reply.
  absl::StatusOr<std::string> Call(std::string_view rule, std::string_view argument_json);

 private:
  LoadedPlugin() = default;
  base::Mutex mu_;  // serialises the calls into the plugin
  void* handle_ = nullptr;
  const seedance_plugin_v1* table_ ABSL_PT_GUARDED_BY(mu_) = nullptr;
  std::string path_, name_, version_;
};

}  // namespace seedance::policy

#endif  // SEEDANCE_POLICY_PLUGIN_H_
