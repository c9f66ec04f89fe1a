#include "seedance/policy/plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/mutex.h"
#include "seedance/base/text.h"

namespace seedance::policy {

namespace {
std::string Shown(std::string_view s) { return base::ForTerminal(base::Clip(s, 200)); }
}  // namespace

absl::StatusOr<std::shared_ptr<LoadedPlugin>> LoadedPlugin::Load(const std::string& path) {
  const std::string shown = Shown(path);
  // dlopen without a slash searches the library path: a policy names files, not libraries.
  if (path.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plugin '", shown, "': give a path (absolute, or relative to the policy file)"));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return err == ENOENT ? absl::NotFoundError(absl::StrCat("plugin '", shown, "': no such file"))
                         : absl::InvalidArgumentError(
                               absl::StrCat("plugin '", shown, "': ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("plugin '", shown, "': not a regular file"));
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::InvalidArgumentError(absl::StrCat(
        "plugin '", shown, "': cannot load: ", Shown(why != nullptr ? why : "dlopen failed")));
  }
  std::shared_ptr<LoadedPlugin> p(new LoadedPlugin);
  p->handle_ = handle;  // dlclose'd by the destructor from here on
  p->path_ = path;
  dlerror();
  void* sym = dlsym(handle, SEEDANCE_PLUGIN_ENTRY_SYMBOL);
  if (sym == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("plugin '", shown,
                                                   "': no symbol " SEEDANCE_PLUGIN_ENTRY_SYMBOL
                                                   " (not a Seedance plugin?)"));
  }
  auto entry = reinterpret_cast<seedance_plugin_entry_fn>(sym);
  const seedance_plugin_v1* table = entry(SEEDANCE_PLUGIN_ABI_VERSION);
  if (table == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plugin '", shown, "': does not speak plugin ABI version ", SEEDANCE_PLUGIN_ABI_VERSION));
  }
  if (table->abi_version != SEEDANCE_PLUGIN_ABI_VERSION) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin '", shown, "': built for plugin ABI version ", table->abi_version,
                     ", this Seedance speaks version ", SEEDANCE_PLUGIN_ABI_VERSION));
  }
  if (table->struct_size < sizeof(seedance_plugin_v1)) {
    return absl::InvalidArgumentError(absl::StrCat("plugin '", shown, "': its table is ",
                                                   table->struct_size, " bytes, expected ",
                                                   sizeof(seedance_plugin_v1)));
  }
  if (table->name == nullptr || table->on_action == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin '", shown, "': its table has no name or no on_action"));
  }
  p->table_ = table;
  p->name_ = Shown(table->name);
  p->version_ = table->version != nullptr ? Shown(table->version) : "";
  return p;
}

LoadedPlugin::~LoadedPlugin() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::StatusOr<std::string> LoadedPlugin::Call(std::string_view rule,
                                               std::string_view argument_json) {
  std::vector<char> reply(kPluginReplyBytes + 1, '\0');
  const std::string r(rule), arg(argument_json);
  int rc = 0;
  {
    base::MutexLock lock(mu_);
    rc = table_->on_action(r.c_str(), arg.c_str(), reply.data(), kPluginReplyBytes);
  }
  reply[kPluginReplyBytes] = '\0';
  std::string text(reply.data(), strnlen(reply.data(), kPluginReplyBytes));
  if (!base::IsValidUtf8(text)) text = base::SanitizeUtf8(text);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("plugin '", name_, "' failed (", rc, "): ", base::ForTerminal(text)));
  }
  return text;
}

}  // namespace seedance::policy
