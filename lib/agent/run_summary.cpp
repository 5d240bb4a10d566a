#include "agent/run_summary.hpp"

#include "agent/attempt_record.hpp"
#include "agent/rendezvous_setup.hpp"
#include "launch/dry_run.hpp"
#include "rendezvous/signing.hpp"
#include "report/run_report.hpp"
#include "util/exit_codes.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace gangrun::agent {

report::RunRecord new_run_record(const launch::LaunchPlan& plan,
                                 const std::optional<std::string>& log_dir) {
  report::RunRecord record;
  record.run_id = plan.run_id;
  record.host = plan.host;
  record.entrypoint = plan.program.entrypoint;
  record.interpreter = plan.program.interpreter;
  record.plan = launch::plan_to_json(plan);
  record.started_at = std::chrono::system_clock::now();
  record.log_dir = log_dir;
  return record;
}

doctor::RegisteredJob registered_job(const launch::LaunchPlan& plan,
                                     const std::optional<std::string>& log_dir) {
  doctor::RegisteredJob job{
      .pid = ::getpid(),
      .start_ticks = doctor::process_start_ticks(::getpid()).value_or(0),
      .run_id = plan.run_id,
      .host = plan.host,
      .log_dir = log_dir ? std::optional<std::string>(std::filesystem::absolute(*log_dir).string())
                         : std::nullopt,
      .program = plan.program.entrypoint,
      .interpreter = plan.program.interpreter
                         ? std::optional<std::string>(plan.program.interpreter->path)
                         : std::nullopt,
      .nodes = std::nullopt,
      .metrics = std::nullopt};
  if (plan.multi_node) {
    store::ClientSettings store = agent_store_client(plan);
    job.nodes = doctor::RegisteredJob::Nodes{
        .store_host = store.host,
        .store_port = store.port,
        .stacks_key = plan.job_secret
                          ? std::optional<std::string>(rendezvous::derived_key(
                                *plan.job_secret, rendezvous::k_stacks_purpose, plan.run_id))
                          : std::nullopt};
  }
  return job;
}

std::optional<doctor::Registration> register_job(const launch::LaunchPlan& plan,
                                                 const std::optional<std::string>& log_dir,
                                                 const std::optional<std::string>& metrics) {
  doctor::RegisteredJob job = registered_job(plan, log_dir);
  job.metrics = metrics;
  auto registered = doctor::Registration::create(plan.host_env, job);
  if (!registered) {
    spdlog::warn("gangrun stacks will not find this job: {}", registered.error().describe());
    return std::nullopt;
  }
  return std::move(*registered);
}

nlohmann::json job_record(const rendezvous::JobOutcome& outcome, const std::string& agent_id) {
  return nlohmann::json{{"exit_code", outcome.exit_code},
                        {"message", outcome.message},
                        {"root_cause_here", outcome.root_agent == agent_id},
                        {"root_cause_agent", outcome.root_agent}};
}

void blame_as_told(const rendezvous::JobOutcome& outcome, report::AttemptRecord& attempt) {
  attempt.blame.reset();
  attempt.root_cause = attempt.first_failure;
  if (outcome.waited_for.empty()) return;
  for (std::size_t i = 0; i < attempt.workers.size(); ++i) {
    if (attempt.workers[i].rank != outcome.waited_for.front()) continue;
    attempt.root_cause = i;
    attempt.blame = outcome.message;
    return;
  }
}

bool prints_failure_summary(const report::AttemptRecord& last,
                            const std::optional<rendezvous::JobOutcome>& job,
                            const std::string& agent_id, bool stopped_for_round_end) {
  // On many nodes the full summary belongs to the node of the root cause.
  bool root_here = !job || job->root_agent == agent_id;
  bool blamed_here = last.blame && root_here;
  return last.root_cause && root_here && (!stopped_for_round_end || blamed_here);
}

RunResult report_run(const launch::LaunchPlan& plan, report::RunRecord& record, RunResult result,
                     const std::optional<rendezvous::JobOutcome>& job, const std::string& agent_id,
                     bool stopped_for_round_end) {
  if (job) record.job = job_record(*job, agent_id);
  // No round ran here when there is no attempt (a run directory failed, a
  // spare, a lost store): no summary then.
  if (!record.attempts.empty() &&
      prints_failure_summary(record.attempts.back(), job, agent_id, stopped_for_round_end)) {
    report_failure(plan, record, record.attempts.back());
  }
  if (!plan.report_path) return result;
  if (auto written = report::write_report(*plan.report_path, record); !written) {
    spdlog::error("{}", written.error().describe());
    if (result.exit_code == 0) result.exit_code = exit_codes::k_system_failure;
  }
  return result;
}

}  // namespace gangrun::agent
