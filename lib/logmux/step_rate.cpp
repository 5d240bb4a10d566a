#include "logmux/step_rate.hpp"

#include "logmux/line_progress.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace gangrun::logmux {
namespace {

bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Counts past this many digits are no step counts (and would overflow).
constexpr std::size_t k_max_digits = 15;

// The whole number whose last digit is just before end, and where it
// starts; nullopt when there is none or it is too long.
std::optional<long long> number_ending_at(std::string_view text, std::size_t end,
                                          std::size_t* start = nullptr) {
  std::size_t begin = end;
  while (begin > 0 && is_decimal_digit(text[begin - 1])) --begin;
  if (begin == end || end - begin > k_max_digits) return std::nullopt;
  if (start) *start = begin;
  long long value = 0;
  for (std::size_t i = begin; i < end; ++i) value = value * 10 + (text[i] - '0');
  return value;
}

std::optional<long long> number_starting_at(std::string_view text, std::size_t begin) {
  std::size_t end = begin;
  while (end < text.size() && is_decimal_digit(text[end])) ++end;
  if (end == begin || end - begin > k_max_digits) return std::nullopt;
  return number_ending_at(text, end);
}

// tqdm's count: "N/M [" or "Nit [", where the bracket holds its clock
// (a bracket without one is a description such as "1/10 [train]").
std::optional<long long> bar_count(std::string_view text) {
  for (std::size_t open = text.find(" ["); open != std::string_view::npos;
       open = text.find(" [", open + 1)) {
    std::size_t close = text.find(']', open);
    std::string_view inside = text.substr(
        open + 2, close == std::string_view::npos ? std::string_view::npos : close - open - 2);
    if (!has_clock_reading(inside)) continue;
    std::string_view before = text.substr(0, open);
    if (before.ends_with("it")) before.remove_suffix(2);
    std::size_t start = 0;
    std::optional<long long> last = number_ending_at(before, before.size(), &start);
    if (!last) continue;
    if (start > 0 && before[start - 1] == '/') {
      // "N/M": the count is N.
      if (auto count = number_ending_at(before, start - 1)) return count;
      continue;
    }
    return last;
  }
  return std::nullopt;
}

// The whole number after the last word that ends in step, iter or iteration.
std::optional<long long> word_count(std::string_view text) {
  static constexpr std::array<std::string_view, 3> k_words = {"step", "iter", "iteration"};
  std::optional<long long> found;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_word_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t word_start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    std::string_view word = text.substr(word_start, i - word_start);
    bool names_a_step = false;
    for (std::string_view ending : k_words) {
      if (word.size() < ending.size()) continue;
      std::string_view tail = word.substr(word.size() - ending.size());
      bool same = true;
      for (std::size_t k = 0; k < ending.size() && same; ++k)
        same = ascii_lower(tail[k]) == ending[k];
      names_a_step = names_a_step || same;
    }
    if (!names_a_step) continue;
    std::size_t at = i;
    while (at < text.size() &&
           (text[at] == ' ' || text[at] == ':' || text[at] == '=' || text[at] == '#')) {
      ++at;
    }
    if (auto count = number_starting_at(text, at)) found = count;
  }
  return found;
}

}  // namespace

std::optional<StepCount> step_count_in(std::string_view line) {
  if (auto count = bar_count(line)) return StepCount{StepCountKind::bar, *count};
  if (auto count = word_count(line)) return StepCount{StepCountKind::word, *count};
  return std::nullopt;
}

void StepRate::Track::add(Reading reading) {
  if (!readings.empty() && reading.count == readings.back().count) return;  // no step
  if (!readings.empty() && reading.count < readings.back().count) readings.clear();
  // Readings closer than this to the one before the newest replace the
  // newest: a bar advanced a thousand times a second keeps about a hundred
  // readings a window, not ten thousand.
  constexpr auto k_spacing = std::chrono::milliseconds(100);
  if (readings.size() >= 2 && reading.at - readings[readings.size() - 2].at < k_spacing) {
    readings.back() = reading;
  } else {
    readings.push_back(reading);
  }
  const auto window_start = reading.at - k_window;
  while (readings.size() > 2 && readings[1].at <= window_start) readings.pop_front();
}

void StepRate::see(std::string_view line, Clock::time_point at) {
  std::optional<StepCount> count = step_count_in(line);
  if (!count) return;
  (count->kind == StepCountKind::bar ? bar_ : word_).add({at, count->count});
}

std::optional<double> StepRate::per_second(Clock::time_point now) const {
  const Track* track = nullptr;
  for (const Track* candidate : {&bar_, &word_}) {
    if (candidate->readings.empty()) continue;
    if (!track || candidate->readings.back().at > track->readings.back().at) track = candidate;
  }
  if (!track || track->readings.size() < 2) return std::nullopt;
  const std::deque<Reading>& readings = track->readings;
  const Reading& back = readings.back();
  // The count at the window's start: the reading at or before it, but never
  // the newest (then the one before it: a rank that counts more rarely than
  // the window is measured over its last gap).
  std::size_t front = 0;
  while (front + 2 < readings.size() && readings[front + 1].at <= now - k_window) ++front;
  double usual_gap = std::chrono::duration<double>(back.at - readings[front].at).count() /
                     static_cast<double>(readings.size() - 1 - front);
  double silent = std::chrono::duration<double>(now - back.at).count();
  double window = std::chrono::duration<double>(k_window).count();
  if (silent > std::max(window, k_stale_gaps * usual_gap)) return 0.0;
  double seconds = std::chrono::duration<double>(now - readings[front].at).count();
  if (seconds <= 0) return std::nullopt;
  return static_cast<double>(back.count - readings[front].count) / seconds;
}

}  // namespace gangrun::logmux
