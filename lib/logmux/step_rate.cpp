#include "logmux/step_rate.hpp"

#include "logmux/line_progress.hpp"
#include "util/strings.hpp"

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

std::optional<long long> count_of(std::string_view digits) {
  if (digits.empty() || digits.size() > k_max_digits) return std::nullopt;
  return strings::parse_int(digits);
}

// The run of digits that ends just before end, or starts at begin.
std::string_view digits_ending_at(std::string_view text, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && is_decimal_digit(text[begin - 1])) --begin;
  return text.substr(begin, end - begin);
}
std::string_view digits_starting_at(std::string_view text, std::size_t begin) {
  std::size_t end = begin;
  while (end < text.size() && is_decimal_digit(text[end])) ++end;
  return text.substr(begin, end - begin);
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
    std::string_view last = digits_ending_at(before, before.size());
    std::optional<long long> count = count_of(last);
    if (!count) continue;
    std::size_t start = before.size() - last.size();
    // "N/M": the count is N.
    if (start > 0 && before[start - 1] == '/')
      count = count_of(digits_ending_at(before, start - 1));
    if (count) return count;
  }
  return std::nullopt;
}

bool ends_with_ignoring_case(std::string_view word, std::string_view lower_ending) {
  return word.size() >= lower_ending.size() &&
         std::equal(lower_ending.begin(), lower_ending.end(), word.end() - lower_ending.size(),
                    [](char ending, char letter) { return ascii_lower(letter) == ending; });
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
    if (std::none_of(k_words.begin(), k_words.end(), [&](std::string_view ending) {
          return ends_with_ignoring_case(word, ending);
        })) {
      continue;
    }
    std::size_t at = i;
    while (at < text.size() &&
           (text[at] == ' ' || text[at] == ':' || text[at] == '=' || text[at] == '#')) {
      ++at;
    }
    if (auto count = count_of(digits_starting_at(text, at))) found = count;
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
