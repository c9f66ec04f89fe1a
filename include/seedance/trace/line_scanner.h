// Line-by-line scanning of a text file held in memory, shared by the trace readers (cluster CSVs,
// LLM request traces): non-blank lines with their 1-based line numbers for error messages.
#pragma once

#include <cstdint>
#include <string_view>

namespace seedance::trace {

// Yields the non-blank lines of `text` (blank = only spaces and tabs) with their 1-based line
// numbers; a trailing "\r" (CRLF files) is stripped. `text` must outlive the scanner.
class LineScanner {
 public:
  explicit LineScanner(std::string_view text) : text_(text) {}

  bool Next(std::string_view* line, int64_t* line_no) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view l = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_no_;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (l.find_first_not_of(" \t") == std::string_view::npos) continue;
      *line = l;
      *line_no = line_no_;
      return true;
    }
    return false;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_no_ = 0;
};

}  // namespace seedance::trace
