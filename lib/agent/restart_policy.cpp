#include "agent/restart_policy.hpp"

#include "report/blame.hpp"

#include <fmt/format.h>

namespace gangrun::agent {

AfterRound after_single_node_round(const launch::LaunchPlan& plan, int restart_count,
                                   const supervise::AttemptOutcome& outcome, bool still_starting) {
  bool restarts_left = restart_count < plan.max_restarts;
  if (outcome.stopped_for_hang && !outcome.stopped_by_signal) {
    if (plan.doctor.on_hang != config::OnHang::restart || !restarts_left) {
      return {AfterRound::Kind::hung_out, ""};
    }
    return {AfterRound::Kind::restart,
            fmt::format(
                "{}; restarting it ({} of {} restarts)",
                still_starting ? "the gang was still starting at --start-timeout" : "the gang hung",
                restart_count + 1, plan.max_restarts)};
  }
  if (outcome.succeeded() || outcome.stopped_by_signal || !restarts_left) {
    return {AfterRound::Kind::finish, ""};
  }
  const supervise::WorkerOutcome& root = outcome.workers.at(*outcome.root_cause);
  std::string what = outcome.blame
                         ? report::describe(*outcome.blame)
                         : fmt::format("rank {} failed ({})", root.rank, root.status.describe());
  return {AfterRound::Kind::restart, fmt::format("{}; restarting the gang ({} of {} restarts)",
                                                 what, restart_count + 1, plan.max_restarts)};
}

RunResult finished_result(RunResult so_far, const report::AttemptRecord& last) {
  if (last.stopped_by_signal) {
    so_far.die_by_signal = last.stopped_by_signal;
    so_far.exit_code = exit_codes::for_signal(*last.stopped_by_signal);
  } else if (last.first_failure) {
    so_far.exit_code = last.workers.at(*last.first_failure).shell_code;
  }
  return so_far;
}

int lost_store_code(const report::RunRecord& record, bool failed_here) {
  if (!record.attempts.empty() && failed_here) {
    const report::AttemptRecord& last = record.attempts.back();
    if (last.first_failure) return last.workers.at(*last.first_failure).shell_code;
  }
  return k_lost_rendezvous;
}

bool last_round_failed_here(const report::AttemptRecord& last, bool stopped_for_round_end) {
  return !stopped_for_round_end && (last.root_cause || last.stopped_by_signal);
}

JobEndHere job_end_here(RunResult so_far, const rendezvous::JobOutcome& outcome,
                        const std::string& agent_id, std::optional<int> stop_signal,
                        const report::AttemptRecord* last, bool stopped_for_round_end) {
  JobEndHere end{.result = so_far, .errors = {}};
  end.result.exit_code = outcome.exit_code;
  bool mine = outcome.root_agent == agent_id;
  if (mine && outcome.stop_signal && outcome.stop_signal == stop_signal) {
    end.result.die_by_signal = stop_signal;
  }
  if (outcome.exit_code == 0 && last && last_round_failed_here(*last, stopped_for_round_end)) {
    end.result.exit_code = k_lost_rendezvous;
    end.errors.push_back(
        fmt::format("the job was reported a success, but this node's workers did not all succeed: "
                    "exiting with {}",
                    k_lost_rendezvous));
  }
  if (!outcome.message.empty() && !mine) {
    // No agent to blame (nodes missing at the join timeout): nothing
    // happened "on another node", whichever node hosts the coordinator.
    end.errors.push_back(fmt::format("the job ended{}: {} (this node exits with {})",
                                     outcome.root_agent.empty() ? "" : " on another node",
                                     outcome.message, outcome.exit_code));
  }
  return end;
}

}  // namespace gangrun::agent
