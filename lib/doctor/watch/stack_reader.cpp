#include "doctor/watch/stack_reader.hpp"

#include "doctor/stacks_json.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace gangrun::doctor {

namespace {

std::string indented(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

}  // namespace

StackReader::StackReader(boost::asio::io_context& io, supervise::Spawner& spawner,
                         const launch::LaunchPlan& plan)
    : plan_(plan), probe_(io, spawner) {}

void StackReader::read(const std::vector<StackTarget>& targets, std::chrono::milliseconds limit,
                       StackProbe::DoneHandler done) {
  probe_.start(tool_.path, plan_.host, targets, plan_.host_env, limit, std::move(done));
}

nlohmann::json StackReader::tell(const std::vector<RankStacks>& ranks, const std::string& file_name,
                                 const std::string& heading, const std::string& extra_line) {
  std::vector<StackGroup> groups = group_by_stack(ranks);
  std::vector<std::string> summary = summary_lines(groups);
  std::optional<std::string> file = write_text(file_name, full_text(ranks, groups));
  spdlog::warn("{}{}{}{}", heading, indented(summary),
               extra_line.empty() ? "" : "\n  " + extra_line,
               file ? "\n  every thread of every rank: " + *file : "");
  nlohmann::json out = stacks_json(ranks, summary, file);
  out["groups"] = group_ranks(groups);
  return out;
}

std::optional<std::string> StackReader::write_text(const std::string& name,
                                                   const std::string& text) {
  if (!attempt_dir_) return std::nullopt;
  std::string path = *attempt_dir_ + "/" + name;
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    spdlog::warn("could not write {}: {}", path, std::strerror(errno));
    return std::nullopt;
  }
  return path;
}

}  // namespace gangrun::doctor
