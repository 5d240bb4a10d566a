#include "doctor/stack_groups.hpp"

#include "doctor/proc_stat.hpp"
#include "report/blame.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gangrun::doctor {

namespace {

// What ranks are grouped by: whether they were stopped, and the main
// thread's frames or the reason none were read (the two never mix: a frame
// list of one reason's group is empty).
using GroupKey = std::tuple<std::optional<char>, bool,
                            std::vector<std::tuple<std::string, std::string, int>>, std::string>;

GroupKey key_of(const RankStacks& rank) {
  if (rank.unavailable) return {rank.stopped, true, {}, *rank.unavailable};
  std::vector<std::tuple<std::string, std::string, int>> frames;
  if (const ThreadStack* main = main_thread(rank.threads, rank.pid)) {
    for (const Frame& frame : main->frames)
      frames.emplace_back(frame.function, frame.file, frame.line);
  }
  return {rank.stopped, false, std::move(frames), ""};
}

std::vector<int> ranks_of(const StackGroup& group) {
  std::vector<int> ranks;
  ranks.reserve(group.members.size());
  for (const RankStacks* member : group.members) ranks.push_back(member->rank);
  return ranks;
}

// "node1, pid 4711" for one rank; "node0, node1" (each host once, in rank
// order) for several.
std::string where(const StackGroup& group) {
  if (group.members.size() == 1) {
    const RankStacks& only = *group.members.front();
    return only.host + ", pid " + std::to_string(only.pid);
  }
  std::vector<std::string> hosts;
  for (const RankStacks* member : group.members) {
    if (std::find(hosts.begin(), hosts.end(), member->host) == hosts.end()) {
      hosts.push_back(member->host);
    }
  }
  return strings::join(hosts, ", ");
}

}  // namespace

std::vector<StackGroup> group_by_stack(const std::vector<RankStacks>& ranks) {
  std::map<GroupKey, StackGroup> by_key;
  for (const RankStacks& rank : ranks) {
    StackGroup& group = by_key[key_of(rank)];
    group.members.push_back(&rank);
    group.unavailable = rank.unavailable;
    group.stopped = rank.stopped;
    if (group.members.size() == 1 && !rank.unavailable) {
      if (const ThreadStack* main = main_thread(rank.threads, rank.pid))
        group.frames = main->frames;
    }
  }
  std::vector<StackGroup> groups;
  groups.reserve(by_key.size());
  for (auto& [key, group] : by_key) {
    std::sort(group.members.begin(), group.members.end(),
              [](const RankStacks* a, const RankStacks* b) { return a->rank < b->rank; });
    groups.push_back(std::move(group));
  }
  // A stopped rank first, even one whose stack could not be read: the
  // others wait for it, wherever they stand.
  auto order = [](const StackGroup& group) {
    return std::make_tuple(!group.stopped, group.unavailable.has_value(), group.members.size(),
                           group.members.front()->rank);
  };
  std::sort(groups.begin(), groups.end(),
            [&](const StackGroup& a, const StackGroup& b) { return order(a) < order(b); });
  return groups;
}

std::vector<int> stopped_ranks(const std::vector<RankStacks>& ranks) {
  std::vector<int> stopped;
  for (const RankStacks& rank : ranks) {
    if (rank.stopped) stopped.push_back(rank.rank);
  }
  std::sort(stopped.begin(), stopped.end());
  return stopped;
}

std::string frames_line(const std::vector<Frame>& frames, std::size_t max_frames) {
  if (frames.empty()) return "(no Python frames)";
  std::vector<std::string> names;
  for (const Frame& frame : frames) {
    if (names.size() == max_frames) {
      names.emplace_back("...");
      break;
    }
    names.push_back(frame.function);
  }
  return strings::join(names, " <- ");
}

std::vector<std::string> summary_lines(const std::vector<StackGroup>& groups) {
  std::vector<std::string> lines;
  lines.reserve(groups.size());
  for (const StackGroup& group : groups) {
    std::string what =
        group.unavailable ? "no stack: " + *group.unavailable : frames_line(group.frames);
    if (group.stopped)
      what = stopped_words(*group.stopped) + (group.unavailable ? "; " : ": ") + what;
    lines.push_back(report::rank_list(ranks_of(group)) + " (" + where(group) + "): " + what);
  }
  return lines;
}

std::string full_text(const std::vector<RankStacks>& ranks, const std::vector<StackGroup>& groups) {
  std::string text;
  for (const std::string& line : summary_lines(groups)) text += line + "\n";
  std::vector<const RankStacks*> in_order;
  in_order.reserve(ranks.size());
  for (const RankStacks& rank : ranks) in_order.push_back(&rank);
  std::sort(in_order.begin(), in_order.end(),
            [](const RankStacks* a, const RankStacks* b) { return a->rank < b->rank; });
  for (const RankStacks* rank : in_order) {
    text += "\nrank " + std::to_string(rank->rank) + " (" + rank->host + ", pid " +
            std::to_string(rank->pid) + ")";
    if (rank->stopped) text += ", " + stopped_words(*rank->stopped);
    if (rank->unavailable) {
      text += ": no stack: " + *rank->unavailable + "\n";
      continue;
    }
    text += "\n";
    for (const ThreadStack& thread : rank->threads) {
      text += "  thread " + std::to_string(thread.os_thread_id) + " (" +
              (thread.name.empty() ? std::string("unnamed") : thread.name) + ", " +
              (thread.active ? "active" : "idle") + ")\n";
      for (const Frame& frame : thread.frames) {
        text += "    " + frame.function;
        if (!frame.file.empty()) {
          text +=
              " (" + frame.file + (frame.line > 0 ? ":" + std::to_string(frame.line) : "") + ")";
        }
        text += "\n";
      }
    }
  }
  return text;
}

}  // namespace gangrun::doctor
