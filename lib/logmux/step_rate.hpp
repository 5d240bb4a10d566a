// How fast a worker goes, in its own words: the step counts its output
// shows, and their rate. `gangrun top`'s STEP/S and the metrics'
// gangrun_rank_steps_per_second read it. No clock of its own, no I/O: one
// StepRate per worker is fed every line with the time it was read.
//
// Two kinds of count are read, each on its own track, since a program may
// print both with different numbers (a tqdm bar on stderr counting batches,
// a log line on stdout counting optimizer steps):
//   - a progress bar's: "45/100 [" or "45it [" (tqdm's count and the bracket
//     with its clock after it);
//   - a log line's: the word step, iter or iteration (any case, also as the
//     end of a longer name such as global_step) and a whole number after it,
//     past spaces, ':', '=' or '#' ("step 120", "Iter: 7", "global_step=3").
// The rate is the track updated last: its count's growth from the window's
// start (k_window ago) to now, as Prometheus' rate() reads a counter, so a
// rank that stops counting slows down to 0 over the window. A rank that
// counts more rarely than the window is measured from its count before the
// last, and reads 0 only after k_stale_gaps of its gaps. A count that goes
// down (a new epoch's bar, another bar) starts the track again; a line that
// repeats the count (a bar redrawn) is no reading.
#pragma once

#include <chrono>
#include <deque>
#include <optional>
#include <string_view>

namespace gangrun::logmux {

enum class StepCountKind { bar, word };

struct StepCount {
  StepCountKind kind = StepCountKind::bar;
  long long count = 0;
};

// The count line shows (its text, without a terminator), if it shows one: a
// bar's count first, else the last step word's.
std::optional<StepCount> step_count_in(std::string_view line);

class StepRate {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds k_window{10};
  static constexpr double k_stale_gaps = 3;

  void see(std::string_view line, Clock::time_point at);
  // Steps a second; nullopt until one track has two readings.
  std::optional<double> per_second(Clock::time_point now) const;

 private:
  struct Reading {
    Clock::time_point at;
    long long count = 0;
  };
  struct Track {
    std::deque<Reading> readings;  // oldest first; the first is at or before the window
    void add(Reading reading);
  };
  Track bar_;
  Track word_;
};

}  // namespace gangrun::logmux
