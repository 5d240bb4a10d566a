// The batch form under Slurm: when gangrun starts itself through srun, and
// the srun command it runs.
#include "config_test_support.hpp"
#include "remote/srun_start.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::config::test::launch;
using gangrun::remote::srun_command;
using gangrun::remote::starts_through_srun;

EnvMap allocation_env(int nodes) {
  return {{"SLURM_JOB_ID", "12"},
          {"SLURM_JOB_NUM_NODES", std::to_string(nodes)},
          {"SLURM_JOB_NODELIST", nodes == 1 ? "n1" : "n[1-" + std::to_string(nodes) + "]"}};
}

EnvMap step_env() {
  return {{"SLURM_JOB_ID", "12"},        {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_NODELIST", "n[1-2]"},
          {"SLURM_NODEID", "0"},         {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}};
}

bool through_srun(const Options& options) {
  auto decided = starts_through_srun(options);
  if (!decided) FAIL(decided.error().message());
  return *decided;
}

}  // namespace

TEST_CASE("a batch script on several nodes starts gangrun through srun", "[remote][slurm]") {
  CHECK(through_srun(launch({"train.py"}, allocation_env(3))));
  CHECK_FALSE(through_srun(launch({"train.py"}, allocation_env(1))));
  CHECK_FALSE(through_srun(launch({"train.py"}, step_env())));
  CHECK_FALSE(through_srun(launch({"train.py"})));
  CHECK_FALSE(through_srun(launch({"--launcher", "local", "train.py"}, allocation_env(3))));
}

TEST_CASE("the slurm launcher asks for srun even on one node", "[remote][slurm]") {
  CHECK(through_srun(launch({"--launcher", "slurm", "train.py"}, allocation_env(1))));
}

TEST_CASE("a node the user places itself runs here", "[remote][slurm]") {
  EnvMap env = allocation_env(3);
  CHECK_FALSE(through_srun(launch({"--node_rank", "1", "train.py"}, env)));
  CHECK_FALSE(through_srun(launch({"--master_addr", "n1", "train.py"}, env)));
  CHECK_FALSE(through_srun(launch({"--standalone", "train.py"}, env)));
  CHECK(through_srun(launch({"--standalone=false", "train.py"}, env)));
  CHECK(through_srun(launch({"--nnodes", "2", "train.py"}, env)));
}

TEST_CASE("the slurm launcher refuses what contradicts it", "[remote][slurm]") {
  auto inside_step = starts_through_srun(launch({"--launcher", "slurm", "train.py"}, step_env()));
  REQUIRE_FALSE(inside_step);
  CHECK_THAT(inside_step.error().message(), Contains("already runs in an srun step"));
  auto placed = starts_through_srun(
      launch({"--launcher", "slurm", "--node_rank", "1", "train.py"}, allocation_env(3)));
  REQUIRE_FALSE(placed);
  CHECK_THAT(placed.error().message(), Contains("--node_rank"));
}

TEST_CASE("the srun command: one task per node, then gangrun with its own words",
          "[remote][slurm]") {
  Options options = launch(
      {"--launcher_args", "--mem=0 --comment 'x y'", "--nnodes", "2", "train.py", "--lr", "1"},
      allocation_env(3));
  std::vector<std::string> arguments = {"--nnodes", "2", "train.py", "--lr", "1"};
  std::vector<std::string> command =
      srun_command(options, "/usr/bin/srun", "/opt/gangrun", arguments);
  std::vector<std::string> expected = {"/usr/bin/srun",
                                       "--nodes=2",
                                       "--ntasks=2",
                                       "--ntasks-per-node=1",
                                       "--whole",
                                       "--cpu-bind=none",
                                       "--kill-on-bad-exit=0",
                                       "--export=ALL",
                                       "--mem=0",
                                       "--comment",
                                       "x y",
                                       "/opt/gangrun",
                                       "--nnodes",
                                       "2",
                                       "train.py",
                                       "--lr",
                                       "1"};
  CHECK(command == expected);
  CHECK_THAT(gangrun::remote::srun_dry_run_text(command), Contains("'x y'"));
}

TEST_CASE("the srun command adds no run id: every task derives the step's, and a user's is kept",
          "[remote][slurm]") {
  std::vector<std::string> arguments = {"train.py"};
  std::vector<std::string> command =
      srun_command(launch(arguments, allocation_env(2)), "srun", "gangrun", arguments);
  CHECK(std::find(command.begin(), command.end(), "--rdzv_id") == command.end());
  // Each task runs in the step srun made, whose job and step numbers name
  // the run on every node alike, and differ from job to job.
  CHECK(launch(arguments, step_env()).rdzv_id == "12.0");
  std::vector<std::string> given = {"--rdzv_id", "exp-7", "train.py"};
  command = srun_command(launch(given, allocation_env(2)), "srun", "gangrun", given);
  CHECK(std::vector<std::string>(command.end() - 3, command.end()) == given);
  CHECK(launch(given, step_env()).rdzv_id == "exp-7");
}
