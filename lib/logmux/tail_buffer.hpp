// The last lines a worker printed, kept for the failure report, when it
// printed the last one that was progress (the hang watch's sign of life;
// line_progress.hpp says which lines are), and the step rate its lines show
// (step_rate.hpp).
#pragma once

#include "logmux/step_rate.hpp"

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
  // Stores line without its terminator, cut to max_line_bytes; every line is
  // kept, a progress bar's redraws too, since the report shows what was printed.
  void push(std::string_view line, bool is_progress);
  std::vector<std::string> lines() const;
  // When push() was last called with a line that is progress; nullopt before
  // the first.
  std::optional<std::chrono::steady_clock::time_point> last_line_at() const {
    return last_line_at_;
  }
  // Steps a second its lines show (StepRate::per_second).
  std::optional<double> steps_per_second(std::chrono::steady_clock::time_point now) const {
    return step_rate_.per_second(now);
  }

 private:
  std::size_t max_lines_;
  std::size_t max_line_bytes_;
  std::deque<std::string> lines_;
  std::optional<std::chrono::steady_clock::time_point> last_line_at_;
  StepRate step_rate_;
};

}  // namespace gangrun::logmux
