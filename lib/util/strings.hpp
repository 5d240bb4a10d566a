// Small string helpers shared by every module.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::strings {

// Splits on every occurrence of separator; "a,,b" gives {"a", "", "b"}, "" gives {""}.
std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
// {1, 3, 5} -> "1,3,5" with separator ",".
std::string join_numbers(const std::vector<int>& numbers, std::string_view separator);
std::string_view trim(std::string_view text);
std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);

// Whole-string decimal parse with an optional sign; nullopt on anything else
// (empty, trailing junk, overflow).
std::optional<std::int64_t> parse_int(std::string_view text);
// Whole-string decimal floating-point parse; nullopt on anything else.
std::optional<double> parse_double(std::string_view text);
// Whether text is a decimal number written plainly: digits only, no sign,
// no leading zero unless the number is 0 itself ("0", "12"; not "012",
// "+1", "0x1" or ""). Vendor variables accept only this form as an index.
bool plain_decimal(std::string_view text);

// Replaces every "${name}" for which lookup gives a value; unknown names stay.
template <typename Lookup>
std::string expand_template(std::string_view text, Lookup&& lookup) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t open = text.find("${", pos);
    if (open == std::string_view::npos) break;
    std::size_t close = text.find('}', open + 2);
    if (close == std::string_view::npos) break;
    out.append(text.substr(pos, open - pos));
    std::string_view name = text.substr(open + 2, close - open - 2);
    if (std::optional<std::string> value = lookup(name)) {
      out += *value;
    } else {
      out.append(text.substr(open, close - open + 1));
    }
    pos = close + 1;
  }
  out.append(text.substr(pos));
  return out;
}

// Greedy word wrap: the words of text (split at spaces, runs of spaces
// collapsed) as lines of at most `width` columns, as many words on each as
// fit. A word longer than `width` stands alone on a line that is longer.
// Text without words gives one empty line.
std::vector<std::string> wrap(std::string_view text, std::size_t width);

// Levenshtein distance: the fewest single-character insertions, deletions
// and substitutions that turn a into b (for "did you mean" suggestions).
std::size_t edit_distance(std::string_view a, std::string_view b);

// A duration for a message: whole milliseconds below 10 s ("200 ms",
// "9999 ms"), seconds from there on ("10 s", "12.5 s").
std::string duration_text(std::chrono::milliseconds duration);

// text in single quotes, for naming a user's entry in a message: 'x,y'.
std::string quoted(std::string_view text);

// Quotes a word for a POSIX shell only when it needs it (for printing commands).
std::string shell_quote(std::string_view word);
// The words as one shell command line, each quoted as shell_quote does.
std::string shell_join(const std::vector<std::string>& words);

// text safe to print on a terminal: control characters (escape sequences,
// NUL, newlines) as \xNN, so that text from the network cannot move the
// cursor, clear the screen or forge a log line.
std::string printable(std::string_view text);

}  // namespace gangrun::strings
