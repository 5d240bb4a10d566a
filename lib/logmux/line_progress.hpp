// Which of a worker's lines are progress, for the hang watch (--hang-timeout):
// every line is, except a progress bar drawn again without advancing. No
// clock, no I/O: one LineProgress per worker stream (its stdout or its
// stderr) is fed every line LineSplitter emits, in order, and same_bar is
// the pure comparison it makes.
//
// A redraw is a line that ends at a bare '\r', or whose text follows one (tqdm
// writes "\r" + bar, so the bar's text comes after the carriage return; a
// nested bar's text then ends at the '\n' that moves to its row). A redraw
// whose text is the same bar as the stream's previous redraw (same_bar) is
// not progress, and neither is a bare "\r": it only returns the cursor.
// Everything else is: a line that is not a redraw, the first redraw after
// one, and a redraw with new text.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::logmux {

// Whether now is before drawn again by a bar that did not advance: the two
// texts (without terminators) are the same but for trailing spaces, and for
// the digits and spaces inside any [...] that holds a clock reading (a digit,
// ':', a digit), where tqdm keeps its elapsed and remaining times and its
// rate, all of which change on every redraw of a bar that stands still.
// The count ("5/10", "5it"), the percentage and the bar itself are outside
// those brackets and must be equal. Why not simply the text before the first
// '[': a description in brackets ("[train]: 50%|...") would leave nothing to
// compare, and a count kept in brackets ("Epoch [1/10]") would go unseen, so
// a bar that advances would be taken for a hang. Where this rule errs, it
// errs the safe way (a clock bracket that changes shape, as when the hour
// appears, counts once, which only puts a report off), but for a count kept
// inside a clock's bracket (a custom tqdm bar_format), which goes unseen.
bool same_bar(std::string_view before, std::string_view now);

// "00:05", "1:02:03": text holds a digit, ':' and a digit, the way tqdm
// writes its elapsed and remaining times.
bool has_clock_reading(std::string_view text);

class LineProgress {
 public:
  // line as LineSplitter emits it: with its terminator ('\n', "\r\n" or
  // '\r'), or none for a fragment flushed early or a piece of an overlong line.
  bool is_progress(std::string_view line);

 private:
  // The previous line's text, kept while lines are redraws (a bare "\r"
  // leaves it); another line forgets it.
  std::string last_redraw_;
  bool has_last_redraw_ = false;
  bool after_carriage_return_ = false;  // the previous line ended at a bare '\r'
};

}  // namespace gangrun::logmux
