#include "logmux/line_splitter.hpp"

#include <algorithm>

namespace gangrun::logmux {

// A zero max_line would never make progress when cutting.
LineSplitter::LineSplitter(std::size_t max_line) : max_line_(std::max<std::size_t>(max_line, 1)) {}

std::string LineSplitter::take_fragment() {
  std::string fragment;
  fragment.swap(pending_);
  return fragment;
}

}  // namespace gangrun::logmux
