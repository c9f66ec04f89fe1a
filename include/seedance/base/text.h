// Text hygiene for everything Seedance prints or writes: UTF-8 repair for JSON writers, control-
// character stripping for terminals, and escaping for each HTML context. Pure functions; thread-
// safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace seedance::base {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);

// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view s);

// `s` made safe to print on a terminal: invalid UTF-8 becomes U+FFFD and C0/C1 control
// characters (ESC, CR, BEL, ...) and DEL become "\xNN"; tab and newline are kept only when
// `keep_newlines` (messages), never in a name.
std::string ForTerminal(std::string_view s, bool keep_newlines = false);

// Escapes &, <, >, " and ' for HTML text and for a double- or single-quoted attribute value.
// Invalid UTF-8 becomes U+FFFD.
std::string HtmlEscape(std::string_view s);

// Serialises `j` for inclusion inside an HTML <script> element: the JSON text with '<', '>',
// '&', U+2028 and U+2029 written as \u escapes, so no string in it can close the element or
// start a comment. Invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string JsonForScript(const nlohmann::json& j);
std::string JsonForScript(const nlohmann::ordered_json& j);

// j.dump(indent) that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string DumpJson(const nlohmann::json& j, int indent = -1);
std::string DumpJson(const nlohmann::ordered_json& j, int indent = -1);

// The deepest nesting of arrays and objects in the JSON text `json`, ignoring brackets inside
// strings; stops scanning once the depth passes `limit` (then returns a value > limit). Lets a
// reader refuse a deeply nested document before a recursive parser exhausts the stack.
int JsonNestingDepth(std::string_view json, int limit);

// Shortens `s` to at most `max_bytes` (cutting at a UTF-8 boundary) and appends "..." when cut;
// for quoting user values in messages so a 2 MB line never becomes a 2 MB message.
std::string Clip(std::string_view s, size_t max_bytes = 80);

// `url` with the user information ("user:password@") and any query string replaced by
// "<redacted>", and invalid UTF-8 replaced: safe to print or store. Every URL a message shows
// goes through it (--server, --prometheus, --slurm-url, --kube-api).
std::string RedactUrl(std::string_view url);

}  // namespace seedance::base
