/* Deliberately broken plugins for the loader's tests (one source, built three ways):
 *   BAD_VERSION: speaks only ABI version 99 (returns NULL for 1);
 *   BAD_TABLE:   returns a table claiming version 2;
 *   NO_ENTRY:    exports no seedance_plugin_entry at all. */
#include <stddef.h>

#include "seedance/policy/plugin_abi.h"

#if defined(NO_ENTRY)
__attribute__((visibility("default"))) int not_a_seedance_plugin(void) { return 42; }
#else
static int on_action(const char* rule, const char* argument_json, char* reply, size_t reply_size) {
  (void)rule;
  (void)argument_json;
  (void)reply;
  (void)reply_size;
  return 0;
}
static const struct seedance_plugin_v1 table = {2u, sizeof(struct seedance_plugin_v1), "bad", "0",
                                                on_action};
__attribute__((visibility("default"))) const struct seedance_plugin_v1* seedance_plugin_entry(
    uint32_t abi_version) {
#if defined(BAD_VERSION)
  return abi_version == 99 ? &table : NULL;
#else
  (void)abi_version;
  return &table;
#endif
}
#endif
