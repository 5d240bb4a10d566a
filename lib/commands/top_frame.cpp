#include "commands/top_frame.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace gangrun::commands {

namespace {

// A rank as a row: its node's name and counters beside its own status.
struct Row {
  const observe::RankStatus* rank = nullptr;
  const observe::NodeStatus* node = nullptr;
  std::optional<double> cpu;
};

bool stopped(const observe::RankStatus& rank) { return rank.state == observe::RankState::stopped; }

// Hung first, then stopped, then slow, then the others; by rank within each.
bool more_interesting(const Row& a, const Row& b) {
  auto key = [](const Row& row) {
    return std::make_tuple(!row.rank->hung, !stopped(*row.rank), !row.rank->slow, row.rank->rank);
  };
  return key(a) < key(b);
}

// Only printable ASCII reaches the terminal: a byte outside it (a control
// character, a part of a UTF-8 sequence, whose width is not one column) is '?'.
std::string ascii(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

// TEXT in exactly WIDTH columns: cut with '~' when longer, padded otherwise.
std::string fit(const std::string& text, int width, bool right = false) {
  if (width <= 0) return "";
  std::string shown = ascii(text);
  if (static_cast<int>(shown.size()) > width) {
    shown = width == 1 ? "~" : shown.substr(0, static_cast<std::size_t>(width - 1)) + "~";
  }
  std::string pad(static_cast<std::size_t>(width) - shown.size(), ' ');
  return right ? pad + shown : shown + pad;
}

// "node 1 (host, 10.0.0.2)", the job's name for a node, without its address
// when the whole does not fit.
std::string node_text(const std::string& name, int width) {
  if (static_cast<int>(name.size()) <= width) return name;
  std::size_t open = name.find(" (");
  std::size_t comma = open == std::string::npos ? open : name.find(", ", open);
  if (comma == std::string::npos || !name.ends_with(")")) return name;
  return name.substr(0, comma) + ")";
}

std::string clip(const std::string& line, int width) {
  return static_cast<int>(line.size()) > width ? line.substr(0, static_cast<std::size_t>(width))
                                               : line;
}

std::string marks_of(const observe::RankStatus& rank) {
  std::string marks;
  auto add = [&](const char* mark) { marks += (marks.empty() ? "" : " ") + std::string(mark); };
  if (rank.hung) add("HUNG");
  if (stopped(rank)) add("STOP");
  if (rank.slow) add("SLOW");
  if (rank.state == observe::RankState::zombie) add("ended");
  return marks;
}

const char* state_word(observe::RankState state) {
  switch (state) {
    case observe::RankState::running:
      return "run";
    case observe::RankState::stopped:
      return "stop";
    case observe::RankState::zombie:
      return "zomb";
    case observe::RankState::starting:
      return "start";
  }
  return "?";
}

std::string optional_number(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : "-";
}

struct Column {
  const char* title;
  int width;
  bool right;
};

}  // namespace

std::optional<double> cpu_percent(const observe::RankStatus& before, double before_at,
                                  const observe::RankStatus& now, double now_at) {
  const double elapsed = now_at - before_at;
  if (before.pid != now.pid || !(elapsed > 0)) return std::nullopt;
  // CPU time never goes back for one process; a smaller number is another reading's error.
  return std::max(0.0, now.cpu_seconds - before.cpu_seconds) / elapsed * 100.0;
}

std::string size_text(double bytes) {
  if (!(bytes >= 0)) return "-";
  const char* units[] = {"B", "K", "M", "G", "T", "P"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f}B", bytes);
  return bytes < 10 ? fmt::format("{:.1f}{}", bytes, units[unit])
                    : fmt::format("{:.0f}{}", bytes, units[unit]);
}

std::string age_text(double seconds) {
  if (!(seconds >= 0)) return "-";
  if (seconds < 10) return fmt::format("{:.1f}s", seconds);
  if (seconds < 100) return fmt::format("{:.0f}s", seconds);
  if (seconds < 6000) return fmt::format("{:.0f}m", seconds / 60);
  if (seconds < 360000) return fmt::format("{:.0f}h", seconds / 3600);
  return fmt::format("{:.0f}d", seconds / 86400);
}

std::vector<std::string> frame_lines(const TopView& now, const TopView* before, FrameSize size,
                                     const std::string& clock) {
  const int width = std::max(size.width, 20);
  // The earlier snapshot of each rank, for CPU%.
  std::map<std::pair<std::string, int>, std::pair<const observe::RankStatus*, double>> earlier;
  if (before) {
    for (const observe::NodeStatus& node : before->nodes) {
      for (const observe::RankStatus& rank : node.ranks) {
        earlier[{node.node, rank.rank}] = {&rank, node.collected_at};
      }
    }
  }
  std::vector<Row> rows;
  bool any_gpu = false;
  int restarts = 0;
  for (const observe::NodeStatus& node : now.nodes) {
    restarts = std::max(restarts, node.restarts);
    for (const observe::RankStatus& rank : node.ranks) {
      Row row{.rank = &rank, .node = &node, .cpu = std::nullopt};
      if (auto found = earlier.find({node.node, rank.rank}); found != earlier.end()) {
        row.cpu = cpu_percent(*found->second.first, found->second.second, rank, node.collected_at);
      }
      any_gpu = any_gpu || rank.gpu_utilization || rank.gpu_memory_bytes;
      rows.push_back(row);
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.rank->rank < b.rank->rank; });

  std::vector<std::string> lines;
  lines.push_back(
      clip(fmt::format("gangrun top  run {}  {} node{}, {} rank{}, {} restart{}  {}{}",
                       ascii(now.run_id), now.nodes.size(), now.nodes.size() == 1 ? "" : "s",
                       rows.size(), rows.size() == 1 ? "" : "s", restarts, restarts == 1 ? "" : "s",
                       clock, size.interactive ? "  (q quits)" : ""),
           width));
  int hung = 0, stopped_count = 0, slow = 0;
  for (const Row& row : rows) {
    hung += row.rank->hung ? 1 : 0;
    stopped_count += stopped(*row.rank) ? 1 : 0;
    slow += row.rank->slow ? 1 : 0;
  }
  std::string summary =
      fmt::format("marks: {} hung, {} stopped, {} slow", hung, stopped_count, slow);
  for (const std::string& node : now.unanswered) summary += "; " + ascii(node) + " did not answer";
  lines.push_back(clip(summary, width));

  // Fixed columns; the node's name gets what is left, the marks the rest.
  std::vector<Column> columns = {{"RANK", 4, true},  {"PID", 7, true}, {"ST", 5, false},
                                 {"CPU%", 5, true},  {"RSS", 5, true}, {"OUT", 5, true},
                                 {"STEP/S", 6, true}};
  if (any_gpu) {
    columns.push_back({"GPU%", 4, true});
    columns.push_back({"GMEM", 5, true});
  }
  columns.push_back({"RST", 3, true});
  int fixed = 0;
  for (const Column& column : columns) fixed += column.width + 1;
  constexpr int k_marks_width = 14;  // "HUNG STOP SLOW": every mark at 80 columns
  std::size_t longest_node = 4;
  for (const Row& row : rows) longest_node = std::max(longest_node, row.node->node.size());
  const int node_width =
      std::clamp(width - fixed - 1 - k_marks_width, 4, static_cast<int>(longest_node));
  auto line_of = [&](const std::vector<std::string>& cells, const std::string& node,
                     const std::string& marks) {
    std::string line = fit(cells[0], columns[0].width, true) + " " + fit(node, node_width) + " ";
    for (std::size_t i = 1; i < columns.size(); ++i) {
      line += fit(cells[i], columns[i].width, columns[i].right) + " ";
    }
    return clip(line + ascii(marks), width);
  };
  std::vector<std::string> titles;
  for (const Column& column : columns) titles.emplace_back(column.title);
  lines.push_back(line_of(titles, "NODE", "MARKS"));

  int room = size.height > 0 ? size.height - static_cast<int>(lines.size()) : -1;
  bool cut = room >= 0 && static_cast<int>(rows.size()) > room;
  if (cut) {
    std::sort(rows.begin(), rows.end(), more_interesting);
    room = std::max(room - 1, 0);  // the line that says how many are not shown
  }
  std::size_t shown = cut ? std::min(rows.size(), static_cast<std::size_t>(room)) : rows.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const observe::RankStatus& rank = *rows[i].rank;
    std::vector<std::string> cells = {
        std::to_string(rank.rank),
        std::to_string(rank.pid),
        state_word(rank.state),
        optional_number(rows[i].cpu, "{:.0f}"),
        size_text(static_cast<double>(rank.rss_kib) * 1024),
        rank.seconds_since_output ? age_text(*rank.seconds_since_output) : "-",
        optional_number(rank.steps_per_second, "{:.2f}")};
    if (any_gpu) {
      cells.push_back(optional_number(rank.gpu_utilization, "{:.0f}"));
      cells.push_back(rank.gpu_memory_bytes ? size_text(static_cast<double>(*rank.gpu_memory_bytes))
                                            : "-");
    }
    cells.push_back(std::to_string(rows[i].node->restarts));
    lines.push_back(line_of(cells, node_text(rows[i].node->node, node_width), marks_of(rank)));
  }
  if (cut) {
    lines.push_back(clip(fmt::format("... {} more rank{} not shown (the marked ones come first)",
                                     rows.size() - shown, rows.size() - shown == 1 ? "" : "s"),
                         width));
  }
  if (size.height > 0 && static_cast<int>(lines.size()) > size.height) {
    lines.resize(static_cast<std::size_t>(size.height));
  }
  return lines;
}

}  // namespace gangrun::commands
