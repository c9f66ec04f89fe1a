#include "seedance/core/yaml_scan.h"

namespace seedance::core {

size_t FindStrayYamlComma(std::string_view t) {
  const size_t n = t.size();
  auto blank = [&](size_t k) {
    return k >= n || t[k] == ' ' || t[k] == '\t' || t[k] == '\n' || t[k] == '\r';
  };
  enum Last { kLineStart, kPlain, kOther };  // what the current line last held
  Last last = kLineStart;
  int depth = 0;      // flow collections open
  size_t indent = 0;  // of the current line
  size_t i = 0;
  while (i < n) {
    const char c = t[i];
    if (c == '\n') {
      last = kLineStart;
      ++i;
      indent = 0;
      while (i < n && t[i] == ' ') {
        ++i;
        ++indent;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' && (i == 0 || blank(i - 1))) {
      while (i < n && t[i] != '\n') ++i;
      continue;
    }
    const bool starts_token = depth > 0 || last != kPlain;
    if ((c == '\'' || c == '"') && starts_token) {
      ++i;
      while (i < n) {
        if (c == '"' && t[i] == '\\') {
          i += 2;
        } else if (t[i] == c) {
          if (c == '\'' && i + 1 < n && t[i + 1] == '\'') {
            i += 2;
          } else {
            break;
          }
        } else {
          ++i;
        }
      }
      ++i;  // past the closing quote (or the end: the parser reports it)
      last = kOther;
      continue;
    }
    if ((c == '[' || c == '{') && starts_token) {
      ++depth;
      last = kOther;
      ++i;
      continue;
    }
    if ((c == ']' || c == '}') && depth > 0) {
      --depth;
      last = kOther;
      ++i;
      continue;
    }
    if (c == ',') {
      if (depth == 0 && last != kPlain) return i;
      last = depth > 0 ? kOther : kPlain;
      ++i;
      continue;
    }
    if (depth == 0 && (c == '|' || c == '>') && last != kPlain) {
      // A block scalar: its lines are the following ones indented deeper than this line.
      while (i < n && t[i] != '\n') ++i;
      while (i < n) {
        size_t k = i + 1, spaces = 0;
        while (k < n && t[k] == ' ') {
          ++k;
          ++spaces;
        }
        const bool empty = k >= n || t[k] == '\n' || t[k] == '\r';
        if (!empty && spaces <= indent) break;
        i = k;
        while (i < n && t[i] != '\n') ++i;
      }
      last = kOther;
      continue;
    }
    if ((c == '-' || c == '?' || c == ':') && blank(i + 1)) {
      last = kOther;
      ++i;
      continue;
    }
    if ((i == 0 || t[i - 1] == '\n') && (t.substr(i, 3) == "---" || t.substr(i, 3) == "...") &&
        blank(i + 3)) {
      last = kOther;
      i += 3;
      continue;
    }
    if ((c == '&' || c == '!' || c == '*') && starts_token) {
      while (!blank(i)) ++i;
      last = kOther;
      continue;
    }
    last = depth > 0 ? kOther : kPlain;
    ++i;
  }
  return std::string_view::npos;
}

}  // namespace seedance::core
