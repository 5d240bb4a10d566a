// The node agent's decisions once a round has ended (agent/restart_policy.hpp):
// pure, from the plan and what the round left.
#include "agent/restart_policy.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using gangrun::agent::after_single_node_round;
using gangrun::agent::AfterRound;
using gangrun::agent::finished_result;
using gangrun::agent::job_end_here;
using gangrun::agent::k_lost_rendezvous;
using gangrun::agent::last_round_failed_here;
using gangrun::agent::lost_store_code;
using gangrun::agent::RunResult;
using gangrun::launch::LaunchPlan;
using gangrun::rendezvous::JobOutcome;
using gangrun::report::AttemptRecord;
using gangrun::report::RunRecord;
using gangrun::report::WorkerRecord;
using gangrun::supervise::AttemptOutcome;
using gangrun::supervise::ExitStatus;
using gangrun::supervise::WorkerOutcome;

namespace {

LaunchPlan plan_with(int max_restarts,
                     gangrun::config::OnHang on_hang = gangrun::config::OnHang::stop) {
  LaunchPlan plan;
  plan.max_restarts = max_restarts;
  plan.doctor.on_hang = on_hang;
  return plan;
}

// Two workers; rank 1 failed with code when given.
AttemptOutcome outcome_of(std::optional<int> rank_1_code) {
  AttemptOutcome outcome;
  outcome.workers = {WorkerOutcome{.rank = 0, .status = ExitStatus::exited_with(0)},
                     WorkerOutcome{.rank = 1, .status = ExitStatus::exited_with(0)}};
  if (rank_1_code) {
    outcome.workers[1].status = ExitStatus::exited_with(*rank_1_code);
    outcome.root_cause = 1;
    outcome.first_failure = 1;
  }
  return outcome;
}

// Two workers' records; the one at failed (if any) exited with shell_code.
AttemptRecord attempt_of(std::optional<std::size_t> failed, int shell_code = 0) {
  AttemptRecord attempt;
  attempt.workers = {WorkerRecord{}, WorkerRecord{}};
  attempt.workers[0].rank = 4;
  attempt.workers[1].rank = 5;
  if (failed) {
    attempt.workers.at(*failed).shell_code = shell_code;
    attempt.root_cause = failed;
    attempt.first_failure = failed;
  }
  return attempt;
}

}  // namespace

TEST_CASE("restart policy: a failed round restarts while restarts are left", "[agent][restart]") {
  AfterRound next = after_single_node_round(plan_with(3), 1, outcome_of(7));
  CHECK(next.kind == AfterRound::Kind::restart);
  CHECK(next.warning == "rank 1 failed (exit code 7); restarting the gang (2 of 3 restarts)");

  CHECK(after_single_node_round(plan_with(3), 3, outcome_of(7)).kind == AfterRound::Kind::finish);
  CHECK(after_single_node_round(plan_with(0), 0, outcome_of(7)).kind == AfterRound::Kind::finish);
}

TEST_CASE("restart policy: success and a signal to gangrun end the run", "[agent][restart]") {
  AfterRound success = after_single_node_round(plan_with(3), 0, outcome_of(std::nullopt));
  CHECK(success.kind == AfterRound::Kind::finish);
  CHECK(success.warning.empty());

  AttemptOutcome stopped = outcome_of(std::nullopt);
  stopped.stopped_by_signal = SIGTERM;
  CHECK(after_single_node_round(plan_with(3), 0, stopped).kind == AfterRound::Kind::finish);
}

TEST_CASE("restart policy: a hang restarts only with --on-hang restart and restarts left",
          "[agent][restart]") {
  AttemptOutcome hung = outcome_of(std::nullopt);
  hung.stopped_for_hang = true;
  CHECK(after_single_node_round(plan_with(3), 0, hung).kind == AfterRound::Kind::hung_out);
  CHECK(after_single_node_round(plan_with(1, gangrun::config::OnHang::restart), 1, hung).kind ==
        AfterRound::Kind::hung_out);

  AfterRound restart =
      after_single_node_round(plan_with(2, gangrun::config::OnHang::restart), 0, hung);
  CHECK(restart.kind == AfterRound::Kind::restart);
  CHECK(restart.warning == "the gang hung; restarting it (1 of 2 restarts)");
  CHECK(after_single_node_round(plan_with(2, gangrun::config::OnHang::restart), 0, hung, true)
            .warning ==
        "the gang was still starting at --start-timeout; restarting it (1 of 2 restarts)");

  // A signal that came while the hang was being stopped wins.
  hung.stopped_by_signal = SIGINT;
  CHECK(after_single_node_round(plan_with(2, gangrun::config::OnHang::restart), 0, hung).kind ==
        AfterRound::Kind::finish);
}

TEST_CASE("restart policy: the last attempt's signal or first failure is the run's code",
          "[agent][restart]") {
  RunResult clean = finished_result({}, attempt_of(std::nullopt));
  CHECK(clean.exit_code == 0);
  CHECK_FALSE(clean.die_by_signal);

  CHECK(finished_result({}, attempt_of(1, 9)).exit_code == 9);

  AttemptRecord stopped = attempt_of(1, 9);
  stopped.stopped_by_signal = SIGTERM;
  RunResult by_signal = finished_result({}, stopped);
  CHECK(by_signal.die_by_signal == SIGTERM);
  CHECK(by_signal.exit_code == gangrun::exit_codes::for_signal(SIGTERM));
}

TEST_CASE("restart policy: a lost store ends with this node's own failure, else 3",
          "[agent][restart]") {
  RunRecord record;
  CHECK(lost_store_code(record, true) == k_lost_rendezvous);
  record.attempts.push_back(attempt_of(0, 6));
  CHECK(lost_store_code(record, true) == 6);
  CHECK(lost_store_code(record, false) == k_lost_rendezvous);
  record.attempts.push_back(attempt_of(std::nullopt));
  CHECK(lost_store_code(record, true) == k_lost_rendezvous);
}

TEST_CASE("restart policy: whether the last round failed here", "[agent][restart]") {
  CHECK(last_round_failed_here(attempt_of(0, 1), false));
  CHECK_FALSE(last_round_failed_here(attempt_of(0, 1), true));  // another node ended it
  CHECK_FALSE(last_round_failed_here(attempt_of(std::nullopt), false));
  AttemptRecord signalled = attempt_of(std::nullopt);
  signalled.stopped_by_signal = SIGTERM;
  CHECK(last_round_failed_here(signalled, false));
}

TEST_CASE("restart policy: the job's end on this node", "[agent][restart]") {
  AttemptRecord ok = attempt_of(std::nullopt);
  AttemptRecord failed = attempt_of(1, 1);

  SECTION("a success, as told") {
    auto end = job_end_here({}, JobOutcome{}, "me", std::nullopt, &ok, false);
    CHECK(end.result.exit_code == 0);
    CHECK_FALSE(end.result.die_by_signal);
    CHECK(end.errors.empty());
  }
  SECTION("a success this node's workers contradict") {
    auto end = job_end_here({}, JobOutcome{}, "me", std::nullopt, &failed, false);
    CHECK(end.result.exit_code == k_lost_rendezvous);
    REQUIRE(end.errors.size() == 1);
    CHECK(end.errors[0] ==
          "the job was reported a success, but this node's workers did not all succeed: "
          "exiting with 3");
    // Stopped because another node ended the round: not a failure here.
    CHECK(job_end_here({}, JobOutcome{}, "me", std::nullopt, &failed, true).errors.empty());
    // No round ran here.
    CHECK(job_end_here({}, JobOutcome{}, "me", std::nullopt, nullptr, false).errors.empty());
  }
  SECTION("a failure on another node is logged; this node's own is not") {
    JobOutcome elsewhere{.exit_code = 1, .message = "rank 3 failed", .root_agent = "other"};
    auto end = job_end_here({}, elsewhere, "me", std::nullopt, &ok, false);
    CHECK(end.result.exit_code == 1);
    REQUIRE(end.errors.size() == 1);
    CHECK(end.errors[0] == "the job ended on another node: rank 3 failed (this node exits with 1)");

    JobOutcome nobody{.exit_code = 3, .message = "nodes missing", .root_agent = ""};
    CHECK(job_end_here({}, nobody, "me", std::nullopt, nullptr, false).errors.at(0) ==
          "the job ended: nodes missing (this node exits with 3)");

    JobOutcome mine{.exit_code = 1, .message = "rank 5 failed", .root_agent = "me"};
    CHECK(job_end_here({}, mine, "me", std::nullopt, &failed, false).errors.empty());
  }
  SECTION("only this agent's own stop signal is raised again") {
    JobOutcome stopped{.exit_code = 143, .message = "", .root_agent = "me", .stop_signal = SIGTERM};
    CHECK(job_end_here({}, stopped, "me", SIGTERM, &ok, false).result.die_by_signal == SIGTERM);
    CHECK_FALSE(job_end_here({}, stopped, "me", SIGINT, &ok, false).result.die_by_signal);
    CHECK_FALSE(job_end_here({}, stopped, "me", std::nullopt, &ok, false).result.die_by_signal);
    stopped.root_agent = "other";
    CHECK_FALSE(job_end_here({}, stopped, "me", SIGTERM, &ok, false).result.die_by_signal);
  }
}
