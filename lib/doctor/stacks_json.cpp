#include "doctor/stacks_json.hpp"

#include "doctor/proc_stat.hpp"

namespace gangrun::doctor {

namespace {

nlohmann::json thread_json(const ThreadStack& thread) {
  nlohmann::json frames = nlohmann::json::array();
  for (const Frame& frame : thread.frames) {
    frames.push_back({{"function", frame.function}, {"file", frame.file}, {"line", frame.line}});
  }
  return {{"name", thread.name},
          {"thread_id", thread.os_thread_id},
          {"active", thread.active},
          {"frames", std::move(frames)}};
}

}  // namespace

nlohmann::json stacks_json(const std::vector<RankStacks>& ranks,
                           const std::vector<std::string>& summary,
                           const std::optional<std::string>& file) {
  nlohmann::json ranks_json = nlohmann::json::array();
  for (const RankStacks& rank : ranks) {
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadStack& thread : rank.threads) threads.push_back(thread_json(thread));
    nlohmann::json stopped;
    if (rank.stopped) {
      stopped = {{"state", std::string(1, *rank.stopped)}, {"text", stopped_words(*rank.stopped)}};
    }
    ranks_json.push_back(
        {{"rank", rank.rank},
         {"host", rank.host},
         {"pid", rank.pid},
         {"unavailable", rank.unavailable ? nlohmann::json(*rank.unavailable) : nlohmann::json()},
         {"stopped", std::move(stopped)},
         {"threads", std::move(threads)}});
  }
  return {{"summary", summary},
          {"file", file ? nlohmann::json(*file) : nlohmann::json()},
          {"ranks", std::move(ranks_json)}};
}

nlohmann::json group_ranks(const std::vector<StackGroup>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const StackGroup& group : groups) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankStacks* member : group.members) ranks.push_back(member->rank);
    out.push_back(std::move(ranks));
  }
  return out;
}

}  // namespace gangrun::doctor
