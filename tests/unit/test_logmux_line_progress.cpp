#include "logmux/line_progress.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using gangrun::logmux::LineProgress;
using gangrun::logmux::same_bar;

namespace {

// What LineProgress makes of each line of one stream, in order.
std::vector<bool> progress_of(const std::vector<std::string>& lines) {
  LineProgress progress;
  std::vector<bool> verdicts;
  for (const std::string& line : lines) verdicts.push_back(progress.is_progress(line));
  return verdicts;
}

// tqdm 4.70's own lines, as it drew them: tqdm(total=10), five update(1), then refresh() while
// the count stood at 5.
const std::string k_four = " 40%|████      | 4/10 [00:01<00:01,  3.29it/s]";
const std::string k_five = " 50%|█████     | 5/10 [00:01<00:01,  3.27it/s]";
const std::string k_five_later = " 50%|█████     | 5/10 [00:03<00:01,  3.27it/s]";

}  // namespace

TEST_CASE("logmux::same_bar: the same text is the same bar", "[logmux]") {
  CHECK(same_bar(k_five, k_five));
  CHECK(same_bar("", ""));
  CHECK(same_bar("step 5", "step 5"));
  CHECK_FALSE(same_bar("step 5", "step 6"));
  CHECK_FALSE(same_bar("", "step 5"));
}

TEST_CASE("logmux::same_bar ignores tqdm's elapsed, remaining and rate fields", "[logmux]") {
  CHECK(same_bar(k_five, k_five_later));
  // A bar without a total, redrawn while its rate fell (and its padding with it).
  CHECK(same_bar("3it [00:00,  7.44it/s]", "3it [00:01,  2.48it/s]"));
  CHECK(same_bar("3it [00:09,  9.97it/s]", "3it [00:10, 10.03it/s]"));
  // The postfix sits in the same bracket, so its numbers are ignored too.
  CHECK(same_bar(" 50%|█████     | 5/10 [00:05<00:01,  3.27it/s, loss=0.5]",
                 " 50%|█████     | 5/10 [00:06<00:01,  3.27it/s, loss=0.4]"));
  // A bar below another (tqdm's position 1) ends in a cursor-up escape, "\x1b[A".
  CHECK(same_bar("step:  40%|████      | 4/10 [00:00<00:00, 13.01it/s]\x1b[A",
                 "step:  40%|████      | 4/10 [00:00<00:01,  4.37it/s]\x1b[A"));
  // A shorter redraw is padded with spaces to cover the longer one before it.
  CHECK(same_bar(k_five_later + "  ", k_five));
  // A description in brackets holds no clock, and is compared as it is.
  CHECK(same_bar("[train]:   0%|          | 0/10 [00:00<?, ?it/s]",
                 "[train]:   0%|          | 0/10 [00:01<?, ?it/s]"));
  CHECK_FALSE(same_bar("[train]:   0%|          | 0/10 [00:00<?, ?it/s]",
                       "[valid]:   0%|          | 0/10 [00:00<?, ?it/s]"));
}

TEST_CASE("logmux::same_bar: a count that advanced is a new bar", "[logmux]") {
  CHECK_FALSE(same_bar(k_four, k_five));
  CHECK_FALSE(same_bar("3it [00:00,  7.44it/s]", "4it [00:00,  7.44it/s]"));
  CHECK_FALSE(same_bar("step:  40%|████      | 4/10 [00:00<00:01,  4.37it/s]\x1b[A",
                       "step:  50%|█████     | 5/10 [00:00<00:01,  4.37it/s]\x1b[A"));
  // Counts in brackets without a clock ("Epoch [1/10]") count.
  CHECK_FALSE(same_bar("Epoch [1/10] Step [5/100]", "Epoch [1/10] Step [6/100]"));
  // Only digits and spaces are ignored in a clock's bracket: an unknown time becoming known,
  // or the hour appearing, counts as progress once (a hang is named a timeout later, never
  // early).
  CHECK_FALSE(same_bar("5/10 [00:05<?, ?it/s]", "5/10 [00:06<00:05,  1.00it/s]"));
  CHECK_FALSE(same_bar("5/10 [59:59<00:05, 1.00it/s]", "5/10 [1:00:00<00:05, 1.00it/s]"));
  // An unclosed bracket is text like any other.
  CHECK_FALSE(same_bar("eta [00:05 left", "eta [00:06 left"));
}

TEST_CASE("logmux::LineProgress: a redraw of the same bar is not progress", "[logmux]") {
  // tqdm writes "\r" + bar: the splitter gives the bare "\r" first, then each bar up to the
  // next one's "\r".
  CHECK(progress_of({"\r", k_five + "\r", k_five + "\r", k_five + "\r"}) ==
        std::vector<bool>{false, true, false, false});
  // With only the time fields changing, nor is it; a count that advanced is.
  CHECK(progress_of({"\r", k_four + "\r", k_five + "\r", k_five_later + "\r", k_five + "\r"}) ==
        std::vector<bool>{false, true, true, false, false});
  // A bar flushed as a fragment (the worker paused after drawing it) follows its "\r".
  CHECK(progress_of({"\r", k_five, "\r", k_five_later, "\r", k_five}) ==
        std::vector<bool>{false, true, false, false, false, false});
  // A bar below another: "\r" + bar + cursor up, its line ended by the next draw's "\n".
  std::string nested = "step:  40%|████      | 4/10 [00:00<00:01,  4.37it/s]\x1b[A";
  CHECK(progress_of({"\r", nested + "\n", "\r", nested + "\n"}) ==
        std::vector<bool>{false, true, false, false});
}

TEST_CASE("logmux::LineProgress: a line ended by \\n with new text always counts", "[logmux]") {
  CHECK(progress_of({"same\n", "same\n", "same\r\n", "same\r\n"}) ==
        std::vector<bool>{true, true, true, true});
  // A message printed over the bar, then the bar again: both are new text.
  CHECK(progress_of({"\r", k_five + "\r", "saved a checkpoint\n", "\r", k_five + "\r"}) ==
        std::vector<bool>{false, true, true, false, true});
  // After a line that is no redraw, the bar's next draw counts, even unchanged.
  CHECK(progress_of({k_five + "\r", "loss 0.5\n", "loss 0.4\n", k_five + "\r", k_five + "\r"}) ==
        std::vector<bool>{true, true, true, true, false});
}

TEST_CASE("logmux::LineProgress: the first line of a stream is progress", "[logmux]") {
  CHECK(progress_of({k_five + "\r"}) == std::vector<bool>{true});
  CHECK(progress_of({"hello\n"}) == std::vector<bool>{true});
  CHECK(progress_of({"a fragment"}) == std::vector<bool>{true});
  // Not a bare carriage return: it moves the cursor and shows nothing.
  CHECK(progress_of({"\r"}) == std::vector<bool>{false});
}
