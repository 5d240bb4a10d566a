#include "logmux/line_progress.hpp"

#include "logmux/line_splitter.hpp"

#include <cstddef>

namespace gangrun::logmux {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Gives a bar's text one character at a time as same_bar compares it, so that
// a comparison allocates nothing: a worker may redraw thousands of times a
// second.
class BarReader {
 public:
  // tqdm pads a shorter redraw with spaces to cover the longer one before it.
  explicit BarReader(std::string_view text)
      : text_(text.substr(0, text.find_last_not_of(' ') + 1)) {}

  // The next character compared (as unsigned char), or -1 at the end.
  int next() {
    while (at_ < text_.size()) {
      std::size_t here = at_++;
      char c = text_[here];
      if (here < clock_end_) {
        if (is_digit(c) || c == ' ') continue;  // a time or rate, or its padding
      } else if (c == '[') {
        clock_end_ = clock_bracket_end(here);
      }
      return static_cast<unsigned char>(c);
    }
    return -1;
  }

 private:
  // Where the ']' of the bracket opened at open is, if it holds a clock
  // reading; else 0. Only a bracket with no '[' inside counts: nested bars
  // end in "\x1b[A" (cursor up), whose '[' must not swallow what follows.
  // Each character is looked at by at most one such scan, so reading stays
  // linear in the text however many '[' it holds.
  std::size_t clock_bracket_end(std::size_t open) const {
    std::size_t close = text_.find_first_of("[]", open + 1);
    if (close == std::string_view::npos || text_[close] != ']') return 0;
    return has_clock_reading(text_.substr(open + 1, close - open - 1)) ? close : 0;
  }

  std::string_view text_;
  std::size_t at_ = 0;
  std::size_t clock_end_ = 0;  // inside a clock bracket while at_ is below it
};

}  // namespace

bool has_clock_reading(std::string_view text) {
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == ':' && is_digit(text[i - 1]) && is_digit(text[i + 1])) return true;
  }
  return false;
}

bool same_bar(std::string_view before, std::string_view now) {
  BarReader a(before);
  BarReader b(now);
  for (;;) {
    int c = a.next();
    if (c != b.next()) return false;
    if (c < 0) return true;
  }
}

bool LineProgress::is_progress(std::string_view line) {
  bool ends_at_carriage_return = line.ends_with('\r');  // "\r\n" ends with '\n'
  std::string_view text = line.substr(0, line.size() - detail::terminator_length(line));
  bool redraw = ends_at_carriage_return || after_carriage_return_;
  after_carriage_return_ = ends_at_carriage_return;
  if (!redraw) {
    has_last_redraw_ = false;
    return true;
  }
  if (ends_at_carriage_return && text.empty()) return false;
  bool same = has_last_redraw_ && same_bar(last_redraw_, text);
  last_redraw_.assign(text);
  has_last_redraw_ = true;
  return !same;
}

}  // namespace gangrun::logmux
