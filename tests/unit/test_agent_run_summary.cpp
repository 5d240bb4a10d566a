// The run's record as this node keeps it (agent/run_summary.hpp): what it
// says before any round, how a multi-node job's outcome enters it, who
// prints the failure summary, and the report file.
#include "agent/run_summary.hpp"
#include "temp_dir.hpp"
#include "util/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using gangrun::agent::blame_as_told;
using gangrun::agent::job_record;
using gangrun::agent::new_run_record;
using gangrun::agent::prints_failure_summary;
using gangrun::agent::registered_job;
using gangrun::agent::report_run;
using gangrun::agent::RunResult;
using gangrun::launch::LaunchPlan;
using gangrun::rendezvous::JobOutcome;
using gangrun::report::AttemptRecord;
using gangrun::report::WorkerRecord;

namespace {

LaunchPlan plain_plan() {
  LaunchPlan plan;
  plan.run_id = "run-7";
  plan.host = "vm";
  plan.program.entrypoint = "train.py";
  return plan;
}

// Ranks 4 and 5 here; rank 5 (index 1) failed first.
AttemptRecord failed_attempt() {
  AttemptRecord attempt;
  attempt.workers = {WorkerRecord{}, WorkerRecord{}};
  attempt.workers[0].rank = 4;
  attempt.workers[1].rank = 5;
  attempt.first_failure = 1;
  attempt.root_cause = 1;
  return attempt;
}

}  // namespace

TEST_CASE("run summary: the record of a run that starts now", "[agent][summary]") {
  LaunchPlan plan = plain_plan();
  auto record = new_run_record(plan, std::string("logs/run-7_x"));
  CHECK(record.run_id == "run-7");
  CHECK(record.host == "vm");
  CHECK(record.entrypoint == "train.py");
  CHECK(record.log_dir == "logs/run-7_x");
  CHECK(record.started_at.time_since_epoch().count() > 0);
  CHECK(record.attempts.empty());
  CHECK_FALSE(new_run_record(plan, std::nullopt).log_dir);
}

TEST_CASE("run summary: what gangrun stacks finds of this job", "[agent][summary]") {
  LaunchPlan plan = plain_plan();
  auto job = registered_job(plan, std::string("logs"));
  CHECK(job.pid == ::getpid());
  CHECK(job.run_id == "run-7");
  CHECK(job.log_dir == (std::filesystem::current_path() / "logs").string());
  CHECK_FALSE(job.interpreter);
  CHECK_FALSE(job.nodes);
  CHECK_FALSE(registered_job(plan, std::nullopt).log_dir);

  plan.multi_node = true;
  plan.master_addr = "10.0.0.1";
  plan.master_port = 29400;
  auto unsealed = registered_job(plan, std::nullopt);
  REQUIRE(unsealed.nodes);
  CHECK(unsealed.nodes->store_host == "10.0.0.1");
  CHECK(unsealed.nodes->store_port == 29400);
  CHECK_FALSE(unsealed.nodes->stacks_key);
  plan.job_secret = "secret";
  auto sealed = registered_job(plan, std::nullopt);
  REQUIRE(sealed.nodes);
  REQUIRE(sealed.nodes->stacks_key);
  CHECK_FALSE(sealed.nodes->stacks_key->empty());
  CHECK(*sealed.nodes->stacks_key != "secret");
}

TEST_CASE("run summary: the job's outcome as this node records it", "[agent][summary]") {
  JobOutcome outcome{.exit_code = 1, .message = "rank 5 failed", .root_agent = "a"};
  nlohmann::json here = job_record(outcome, "a");
  CHECK(here.at("exit_code") == 1);
  CHECK(here.at("message") == "rank 5 failed");
  CHECK(here.at("root_cause_here") == true);
  CHECK(here.at("root_cause_agent") == "a");
  CHECK(job_record(outcome, "b").at("root_cause_here") == false);
}

TEST_CASE("run summary: the coordinator's blame replaces this node's own", "[agent][summary]") {
  AttemptRecord attempt = failed_attempt();
  attempt.blame = "this node's own judgement";

  SECTION("the blamed rank ran here") {
    blame_as_told(
        JobOutcome{.exit_code = 1, .message = "rank 4 never arrived", .waited_for = {4, 9}},
        attempt);
    CHECK(attempt.root_cause == 0u);
    CHECK(attempt.blame == "rank 4 never arrived");
  }
  SECTION("it ran elsewhere: the first failure here, no blame") {
    blame_as_told(JobOutcome{.exit_code = 1, .message = "rank 9 never arrived", .waited_for = {9}},
                  attempt);
    CHECK(attempt.root_cause == 1u);
    CHECK_FALSE(attempt.blame);
  }
  SECTION("nobody singled out") {
    attempt.root_cause = 0;
    blame_as_told(JobOutcome{.exit_code = 1, .message = "rank 5 failed"}, attempt);
    CHECK(attempt.root_cause == 1u);
    CHECK_FALSE(attempt.blame);
  }
}

TEST_CASE("run summary: who prints the failure summary", "[agent][summary]") {
  AttemptRecord failed = failed_attempt();
  CHECK(prints_failure_summary(failed, std::nullopt, "", false));
  CHECK_FALSE(prints_failure_summary(AttemptRecord{}, std::nullopt, "", false));

  JobOutcome mine{.exit_code = 1, .message = "rank 5 failed", .root_agent = "a"};
  CHECK(prints_failure_summary(failed, mine, "a", false));
  CHECK_FALSE(prints_failure_summary(failed, mine, "b", false));  // another node's root cause
  // Stopped because another node ended the round: only when blamed here.
  CHECK_FALSE(prints_failure_summary(failed, mine, "a", true));
  failed.blame = "rank 5 never arrived";
  CHECK(prints_failure_summary(failed, mine, "a", true));
}

TEST_CASE("run summary: the report, and a report that cannot be written", "[agent][summary]") {
  gangrun::test::TempDir dir;
  LaunchPlan plan = plain_plan();
  auto record = new_run_record(plan, std::nullopt);
  record.attempts.push_back(AttemptRecord{});
  JobOutcome outcome{.exit_code = 0, .message = "", .root_agent = ""};

  SECTION("no report asked for") {
    CHECK(report_run(plan, record, RunResult{}, outcome, "a", false).exit_code == 0);
    CHECK(record.job);
  }
  SECTION("written, with the job's outcome") {
    plan.report_path = dir / "report.json";
    CHECK(report_run(plan, record, RunResult{}, outcome, "a", false).exit_code == 0);
    std::ifstream in(*plan.report_path);
    nlohmann::json report = nlohmann::json::parse(in);
    CHECK(report.at("attempts").size() == 1);
  }
  SECTION("not written: no success, but a failure keeps its code") {
    // Under a file, which no one can make a directory of.
    plan.report_path = dir.write("file", "") + "/report.json";
    CHECK(report_run(plan, record, RunResult{}, std::nullopt, "", false).exit_code ==
          gangrun::exit_codes::k_system_failure);
    CHECK(report_run(plan, record, RunResult{.exit_code = 7, .die_by_signal = std::nullopt},
                     std::nullopt, "", false)
              .exit_code == 7);
  }
}
