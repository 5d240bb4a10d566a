// Cuts a byte stream into whole lines. Pure; one instance per worker stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gangrun::logmux {

class LineSplitter {
 public:
  // Lines longer than max_line bytes are cut into max_line pieces, so one
  // worker that never prints a newline cannot grow gangrun's memory.
  explicit LineSplitter(std::size_t max_line = 64 * 1024);

  // Appends bytes and calls on_line(std::string_view) once per complete line,
  // in order. A line ends at '\n' or at '\r' (progress bars redraw with '\r');
  // the view includes its terminator. "\r\n" is one line ending in "\r\n".
  // A '\r' that ends bytes is held until the next feed shows whether '\n'
  // follows, so until then it is part of the fragment. A piece cut at
  // max_line has no terminator. A view is valid only during the call.
  template <typename OnLine>
  void feed(std::string_view bytes, OnLine&& on_line);

  bool has_fragment() const { return !pending_.empty(); }
  // Returns and clears the unterminated tail (used at EOF or when the worker
  // goes quiet mid-line). It may end in a held '\r', making it a whole line.
  std::string take_fragment();

 private:
  // Keeps terminator-free bytes (or ones ending in a held '\r') as the fragment,
  // emitting max_line pieces once it grows past max_line.
  template <typename OnLine>
  void hold(std::string_view bytes, OnLine& on_line);

  std::size_t max_line_;
  std::string pending_;
};

}  // namespace gangrun::logmux

#include "logmux/line_splitter_impl.hpp"
