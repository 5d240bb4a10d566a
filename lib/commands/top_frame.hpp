// What `gangrun top` draws: one frame of text from every node's snapshot
// (observe/node_status.hpp), fitted to the terminal. Pure functions, so the
// layout is tested without a terminal: every line at most `width` columns
// of printable ASCII, and when the ranks do not all fit, the most
// interesting first (hung, stopped, slow, then by rank) under a line that
// counts them all.
#pragma once

#include "observe/node_status.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::commands {

// One view of the job: what every node answered, and those that did not.
struct TopView {
  std::string run_id;
  std::vector<observe::NodeStatus> nodes;
  std::vector<std::string> unanswered;  // "node 1" for each that did not answer in time
};

// A rank's CPU use between two snapshots of the same process, as a percent
// of one core (a rank using two cores shows 200); nullopt when there is no
// earlier snapshot of that pid or no time passed between them.
std::optional<double> cpu_percent(const observe::RankStatus& before, double before_at,
                                  const observe::RankStatus& now, double now_at);

struct FrameSize {
  int width = 80;
  int height = 24;          // 0: no limit (--once to a file or a pipe)
  bool interactive = true;  // the live view, which q quits; not --once
};

// The frame's lines, none longer than size.width and, with a height, no
// more than it; before: the previous frame's view (for CPU%), if any.
// clock: the header's time of day ("12:04:31").
std::vector<std::string> frame_lines(const TopView& now, const TopView* before, FrameSize size,
                                     const std::string& clock);

// Short forms that fit a column: "512K", "3.4M", "1.2G" (from KiB or
// bytes); "0.4s", "42s", "12m", "3h".
std::string size_text(double bytes);
std::string age_text(double seconds);

}  // namespace gangrun::commands
