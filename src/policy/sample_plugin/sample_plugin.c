/* The sample Seedance policy plugin (docs/plugins.md): counts the actions it is asked to run and
 * echoes them back. Build: the CMake target seedance_sample_plugin (a MODULE library). */
#include <stdio.h>
#include <string.h>

#include "seedance/policy/plugin_abi.h"

static unsigned long calls = 0;

/* Replies "sample: RULE ARGUMENT (call N)"; fails (returns 1) when the argument is the JSON
 * string "fail", so a host can test its error path. */
static int on_action(const char* rule, const char* argument_json, char* reply, size_t reply_size) {
  ++calls;
  if (strcmp(argument_json, "\"fail\"") == 0) {
    snprintf(reply, reply_size, "asked to fail by rule %s", rule);
    return 1;
  }
  snprintf(reply, reply_size, "sample: %s %s (call %lu)", rule, argument_json, calls);
  return 0;
}

static const struct seedance_plugin_v1 table = {
    SEEDANCE_PLUGIN_ABI_VERSION, sizeof(struct seedance_plugin_v1), "sample", "1.0.0", on_action};

__attribute__((visibility("default"))) const struct seedance_plugin_v1* seedance_plugin_entry(
    uint32_t abi_version) {
  return abi_version == 1 ? &table : NULL;
}
