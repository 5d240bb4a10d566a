// The stack readings the doctor's watches share: one StackProbe, so that a
// hang's, a failure's and an expired timer's readings never overlap; the
// stack tool; and telling what a reading found: the ranks grouped on the
// console, every thread of every rank in a file of the attempt's directory,
// and the report's form of it (doctor/stacks_json.hpp).
#pragma once

#include "doctor/watch/stack_probe.hpp"
#include "doctor/watch/watch.hpp"
#include "launch/plan.hpp"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::doctor {

// How long a reading that must come at once may take: a failure's stacks
// (while the failure window keeps the others running) and an expired file
// timer's.
inline constexpr std::chrono::milliseconds k_failure_read_limit{1000};

class StackReader {
 public:
  // Everything given outlives the reader.
  StackReader(boost::asio::io_context& io, supervise::Spawner& spawner,
              const launch::LaunchPlan& plan);

  // The round whose files go into attempt_dir (nullopt: the run directory
  // is temporary, so only the console and the report get them).
  void round_started(std::optional<std::string> attempt_dir) {
    attempt_dir_ = std::move(attempt_dir);
  }
  SharedStackTool& tool() { return tool_; }
  const SharedStackTool& tool() const { return tool_; }

  // Reads every target's stack with the tool (StackProbe::start); only when
  // no reading runs.
  void read(const std::vector<StackTarget>& targets, std::chrono::milliseconds limit,
            StackProbe::DoneHandler done);
  bool running() const { return probe_.running(); }
  std::set<pid_t> supervisor_pids() const { return probe_.supervisor_pids(); }

  // Groups ranks, writes every thread of every rank into the attempt's
  // file_name, prints heading, the groups and extra_line (when not empty),
  // and returns the report's form of it all.
  nlohmann::json tell(const std::vector<RankStacks>& ranks, const std::string& file_name,
                      const std::string& heading, const std::string& extra_line = "");

 private:
  // Writes the whole text into the attempt's directory; the path, or
  // nullopt when there is none or it could not be written.
  std::optional<std::string> write_text(const std::string& name, const std::string& text);

  const launch::LaunchPlan& plan_;
  StackProbe probe_;
  SharedStackTool tool_;
  std::optional<std::string> attempt_dir_;  // per round
};

}  // namespace gangrun::doctor
