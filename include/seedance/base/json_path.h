// The one syntax every Seedance message uses to name a place in a JSON (or YAML) document:
// `$` is the root, `.name` a member whose key is identifier-like (1 to 64 of [A-Za-z0-9_-], not
// starting with a digit or '-'), `["key"]` any other member, the key written as a JSON string
// (quotes, backslashes and control bytes escaped, invalid UTF-8 replaced by U+FFFD, clipped to
// 64 bytes), and `[i]` an array element: `$.items[0].spec.containers[1]`,
// `$.metadata.labels["app.kubernetes.io/name"]`, `$.limits["nvidia.com/gpu"]`.
// Paths hold user keys, so every path these functions return is clipped to 200 bytes (a longer
// one ends in "..."). Not RFC 6901 pointers ("/a/b/0"): a protocol that needs one (a JSON Patch
// "path") builds it itself. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace seedance::base {

// `path` followed by its member `key`: "$.a" + "b" -> "$.a.b", "$.a" + "b.c" -> `$.a["b.c"]`.
std::string JsonPathChild(std::string_view path, std::string_view key);

// `path` followed by its array element `i`: "$.a" + 3 -> "$.a[3]".
std::string JsonPathIndex(std::string_view path, size_t i);

// The path of the value holding the one `path` names ("$.a" of "$.a.b", of "$.a[3]" and of
// `$.a["b.c"]`), "" for "$" or "". For paths built by the two functions above; a clipped path
// yields a prefix of itself.
std::string JsonPathParent(std::string_view path);

}  // namespace seedance::base
