// The template half of line_splitter.hpp; include that header, not this one.
#pragma once

#include <cstring>

namespace gangrun::logmux {

namespace detail {

// Index of the first '\n' or '\r' in text, or npos. memchr is vectorised, so
// this costs two fast passes instead of one byte-by-byte loop; '\r' is rare and
// only searched for up to the '\n'. text must not be empty (memchr on the null
// data() of an empty view is undefined).
inline std::size_t find_line_end(std::string_view text) {
  const char* begin = text.data();
  const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', text.size()));
  std::size_t limit = newline ? static_cast<std::size_t>(newline - begin) : text.size();
  if (const auto* cr = static_cast<const char*>(std::memchr(begin, '\r', limit))) {
    return static_cast<std::size_t>(cr - begin);
  }
  return newline ? limit : std::string_view::npos;
}

inline std::size_t terminator_length(std::string_view line) {
  if (line.ends_with("\r\n")) return 2;
  return (line.ends_with('\n') || line.ends_with('\r')) ? 1 : 0;
}

// Emits a terminated line, in max_line pieces if it is longer; the terminator
// stays with the last piece so "\r\n" is never split.
template <typename OnLine>
void emit_cut(std::string_view line, std::size_t max_line, OnLine& on_line) {
  std::size_t terminator = terminator_length(line);
  while (line.size() - terminator > max_line) {
    on_line(line.substr(0, max_line));
    line.remove_prefix(max_line);
  }
  on_line(line);
}

}  // namespace detail

template <typename OnLine>
void LineSplitter::feed(std::string_view bytes, OnLine&& on_line) {
  if (bytes.empty()) return;
  // A '\r' that ended the previous feed was held back because it might have
  // been the first half of "\r\n"; the first new byte decides.
  if (!pending_.empty() && pending_.back() == '\r') {
    if (bytes.front() == '\n') {
      pending_.push_back('\n');
      bytes.remove_prefix(1);
    }
    detail::emit_cut(pending_, max_line_, on_line);
    pending_.clear();
  }
  while (!bytes.empty()) {
    std::size_t end = detail::find_line_end(bytes);
    if (end == std::string_view::npos || (bytes[end] == '\r' && end + 1 == bytes.size())) {
      hold(bytes, on_line);
      return;
    }
    std::size_t length = end + 1;
    if (bytes[end] == '\r' && bytes[end + 1] == '\n') ++length;
    std::string_view line = bytes.substr(0, length);
    bytes.remove_prefix(length);
    if (pending_.empty()) {
      // The common case: the line lies whole in bytes and is passed on uncopied.
      detail::emit_cut(line, max_line_, on_line);
    } else {
      pending_.append(line);
      detail::emit_cut(pending_, max_line_, on_line);
      pending_.clear();
    }
  }
}

template <typename OnLine>
void LineSplitter::hold(std::string_view bytes, OnLine& on_line) {
  pending_.append(bytes);
  std::size_t content = pending_.size() - (pending_.back() == '\r' ? 1 : 0);
  std::size_t offset = 0;
  while (content - offset > max_line_) {
    on_line(std::string_view(pending_).substr(offset, max_line_));
    offset += max_line_;
  }
  if (offset > 0) pending_.erase(0, offset);
}

}  // namespace gangrun::logmux
