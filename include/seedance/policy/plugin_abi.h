/* The C ABI of Seedance policy plugins (docs/plugins.md). C only: include it from C or C++.
 *
 * A plugin is a shared object exporting one function:
 *
 *   const struct seedance_plugin_v1* seedance_plugin_entry(uint32_t abi_version);
 *
 * The host calls it once after dlopen with the newest ABI version it speaks
 * (SEEDANCE_PLUGIN_ABI_VERSION). The plugin returns a pointer to a table that stays valid until
 * the object is unloaded, whose abi_version is the version asked for, or NULL when it does not
 * speak that version (the host then refuses the plugin, naming the file).
 *
 * Versioning: a version's struct never changes. A new version appends fields to a new struct
 * (seedance_plugin_v2 starting with the same fields) and bumps SEEDANCE_PLUGIN_ABI_VERSION; a
 * host that speaks v2 may still ask an old plugin for v1.
 *
 * Threading: the host never calls one plugin's on_action from two threads at once. on_action
 * must not block for long: it runs on the thread that evaluates the policy's rules.
 */
#ifndef SEEDANCE_POLICY_PLUGIN_ABI_H_
#define SEEDANCE_POLICY_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SEEDANCE_PLUGIN_ABI_VERSION 1u
#define SEEDANCE_PLUGIN_ENTRY_SYMBOL "seedance_plugin_entry"

struct seedance_plugin_v1 {
  uint32_t abi_version; /* SEEDANCE_PLUGIN_ABI_VERSION the table was built for: 1 */
  uint32_t struct_size; /* sizeof(struct seedance_plugin_v1) */
  const char* name;     /* the plugin's name, NUL-terminated UTF-8 */
  const char* version;  /* the plugin's own version, e.g. "1.0.0" */
  /* Runs an action. `rule`: the name of the rule that fired; `argument_json`: the action's
   * argument as JSON text (never NULL; "null" when the policy gives none). The plugin may write
   * a NUL-terminated reply of at most reply_size bytes (the host truncates and terminates it in
   * any case). Returns 0 on success, anything else on failure (the reply then says why). */
  int (*on_action)(const char* rule, const char* argument_json, char* reply, size_t reply_size);
};

typedef const struct seedance_plugin_v1* (*seedance_plugin_entry_fn)(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* SEEDANCE_POLICY_PLUGIN_ABI_H_ */
