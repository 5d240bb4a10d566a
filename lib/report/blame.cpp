#include "report/blame.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gangrun::report {

std::optional<Blame> find_waited_for(const std::vector<RankFate>& fates) {
  using State = RankFate::State;
  std::vector<int> failed;
  std::vector<int> running;
  std::optional<std::chrono::system_clock::time_point> first_failure;
  for (const RankFate& fate : fates) {
    if (fate.state == State::failed) {
      failed.push_back(fate.rank);
      if (!first_failure || fate.ended_at < *first_failure) first_failure = fate.ended_at;
    } else if (fate.state == State::running) {
      running.push_back(fate.rank);
    }
  }
  if (failed.size() < 2) return std::nullopt;
  std::vector<int> left_first;
  for (const RankFate& fate : fates) {
    if (fate.state == State::succeeded && fate.ended_at < *first_failure) {
      left_first.push_back(fate.rank);
    }
  }
  Blame blame;
  if (!running.empty()) {
    if (running.size() >= failed.size()) return std::nullopt;
    blame.waited_for = std::move(running);
  } else {
    if (left_first.empty() || left_first.size() >= failed.size()) return std::nullopt;
    blame.waited_for = std::move(left_first);
    blame.never_exited = false;
  }
  blame.waiting = std::move(failed);
  std::sort(blame.waited_for.begin(), blame.waited_for.end());
  std::sort(blame.waiting.begin(), blame.waiting.end());
  return blame;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t run = i;
    while (run + 1 < ranks.size() && ranks[run + 1] == ranks[run] + 1) ++run;
    if (i != 0) out += ", ";
    if (run - i >= 2) {
      out += fmt::format("{}-{}", ranks[i], ranks[run]);
      i = run + 1;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

std::string describe(const Blame& blame, const std::string& where_ranks_run) {
  std::string who = rank_list(blame.waited_for);
  if (!where_ranks_run.empty()) who += " on " + where_ranks_run;
  bool one = blame.waited_for.size() == 1;
  if (blame.never_exited) {
    return fmt::format("{} never reached the collective; {} timed out waiting", who,
                       rank_list(blame.waiting));
  }
  return fmt::format("{} exited first (with code 0); {} failed after {}", who,
                     rank_list(blame.waiting), one ? "it" : "them");
}

}  // namespace gangrun::report
