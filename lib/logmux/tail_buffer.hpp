// The last lines a worker printed, kept for the failure report.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::logmux {

class TailBuffer {
 public:
  explicit TailBuffer(std::size_t max_lines = 20, std::size_t max_line_bytes = 512);
  // Stores line without its terminator, cut to max_line_bytes.
  void push(std::string_view line);
  std::vector<std::string> lines() const;

 private:
  std::size_t max_lines_;
  std::size_t max_line_bytes_;
  std::deque<std::string> lines_;
};

}  // namespace gangrun::logmux
