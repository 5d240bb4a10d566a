// The last lines a worker printed, kept for the failure report, and when it
// printed the last one (the hang watch's sign of progress).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
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
  // When push() was last called; nullopt before the first line.
  std::optional<std::chrono::steady_clock::time_point> last_line_at() const {
    return last_line_at_;
  }

 private:
  std::size_t max_lines_;
  std::size_t max_line_bytes_;
  std::deque<std::string> lines_;
  std::optional<std::chrono::steady_clock::time_point> last_line_at_;
};

}  // namespace gangrun::logmux
