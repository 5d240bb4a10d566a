// The Slurm layer: inside a step the node options come from SLURM_*, below
// every layer the user writes; values that would contradict what the user
// chose stand back; --launcher local turns it off; the checks of a step's
// shape and of --launcher.
#include "config/job_values.hpp"
#include "config/option_names.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;
namespace opt = gangrun::config::opt;

EnvMap step_env(int node_id = 1) {
  return {{"SLURM_JOB_ID", "41"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_STEP_NODELIST", "gpu-a[07-09]"},
          {"SLURM_NODEID", std::to_string(node_id)},
          {"SLURM_PROCID", std::to_string(node_id)},
          {"SLURM_LOCALID", "0"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}};
}

const Options::Origin& origin(const Options& o, const std::string& name) {
  auto it = o.origins.find(name);
  REQUIRE(it != o.origins.end());
  return it->second;
}

}  // namespace

TEST_CASE("inside a step the node options come from Slurm", "[config][slurm]") {
  Options o = launch({"train.py"}, step_env(2));
  CHECK(o.nnodes == 3);
  CHECK(o.node_rank == 2);
  CHECK(o.master_addr == "gpu-a07");
  CHECK(o.master_port == 20000 + 41 * 16);
  CHECK(o.rdzv_id == "41.0");
  CHECK_FALSE(o.nproc_per_node);  // no GPUs: the default, one worker
  REQUIRE(o.job);
  CHECK(o.job->is_slurm());
  CHECK(o.job->system == "Slurm");
  CHECK(o.job->job_id->value == "41");
  CHECK(o.job->num_nodes.value == 3);
  CHECK(origin(o, "nnodes").source == Source::slurm);
  CHECK(origin(o, "nnodes").text == "3 (SLURM_STEP_NUM_NODES=3)");
  CHECK(origin(o, "node_rank").text == "2 (SLURM_NODEID=2)");
  CHECK(origin(o, "master_addr").text ==
        "gpu-a07 (the first host of SLURM_STEP_NODELIST=gpu-a[07-09])");
  CHECK_THAT(origin(o, "master_port").text, Contains("SLURM_JOB_ID=41, SLURM_STEP_ID=0"));
  // Read from Slurm, or a default: not the user's.
  CHECK(o.user_origin(opt::nnodes) == nullptr);
  CHECK(o.user_origin(opt::launcher) == nullptr);
}

TEST_CASE("workers per node default to the GPUs Slurm gave", "[config][slurm]") {
  EnvMap env = step_env();
  env["SLURM_GPUS_ON_NODE"] = "4";
  Options o = launch({"train.py"}, env);
  REQUIRE(o.nproc_per_node);
  CHECK(o.nproc_per_node->number == 4);
  CHECK(origin(o, "nproc_per_node").text == "4 (SLURM_GPUS_ON_NODE=4)");

  SECTION("a count the user gives wins") {
    CHECK(launch({"--nproc_per_node", "2", "train.py"}, env).nproc_per_node->number == 2);
  }
  SECTION("accelerate's and deepspeed's counts replace it instead of disagreeing") {
    Options total = launch({"--num_processes", "6", "train.py"}, env);
    CHECK(*total.num_processes == 6);
    CHECK_FALSE(total.nproc_per_node);
    CHECK_FALSE(launch({"--num_gpus", "1", "train.py"}, env).nproc_per_node);
  }
}

TEST_CASE("every layer the user writes wins over Slurm", "[config][slurm]") {
  EnvMap env = step_env();
  SECTION("command line") {
    Options o = launch({"--master_port", "23456", "--nnodes", "2", "train.py"}, env);
    CHECK(o.master_port == 23456);
    CHECK(o.nnodes == 2);
    CHECK(origin(o, "master_port").source == Source::command_line);
    CHECK(origin(o, "node_rank").source == Source::slurm);
    REQUIRE(o.user_origin(opt::master_port) != nullptr);
    CHECK(o.user_origin(opt::master_port)->text == "23456");
    CHECK(o.user_origin(opt::node_rank) == nullptr);
  }
  SECTION("GANGRUN_ and PET_ variables") {
    env["GANGRUN_MASTER_ADDR"] = "10.0.0.1";
    env["PET_RDZV_ID"] = "mine";
    Options o = launch({"train.py"}, env);
    CHECK(o.master_addr == "10.0.0.1");
    CHECK(o.rdzv_id == "mine");
    CHECK(origin(o, "master_addr").source == Source::gangrun_env);
    CHECK(o.user_origin(opt::master_addr) != nullptr);
    CHECK(o.user_origin(opt::rdzv_id) != nullptr);
  }
}

TEST_CASE("Slurm's values stand back where the user chose what they contradict",
          "[config][slurm]") {
  EnvMap env = step_env();
  SECTION("--standalone keeps the single-node launch") {
    Options o = launch({"--standalone", "train.py"}, env);
    CHECK(o.nnodes == 1);
    CHECK(o.node_rank == 0);
    CHECK(origin(o, "nnodes").source == Source::default_value);
  }
  SECTION("--rdzv_endpoint gives the master address and port") {
    Options o = launch({"--rdzv_endpoint", "head:1234", "train.py"}, env);
    CHECK(o.master_addr == "head");
    CHECK(o.master_port == 1234);
    CHECK(o.nnodes == 3);
  }
}

TEST_CASE("a one-node step keeps 127.0.0.1 and a free port", "[config][slurm]") {
  EnvMap env = step_env(0);
  env["SLURM_STEP_NUM_NODES"] = "1";
  env["SLURM_STEP_NODELIST"] = "gpu-a07";
  env["SLURM_STEP_NUM_TASKS"] = "1";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1";
  Options o = launch({"train.py"}, env);
  CHECK(o.nnodes == 1);
  CHECK_FALSE(o.master_addr);
  CHECK_FALSE(o.master_port);
  CHECK(o.rdzv_id == "41.0");
}

TEST_CASE("the local launcher reads nothing from Slurm", "[config][slurm]") {
  EnvMap env = step_env();
  env["SLURM_STEP_NUM_NODES"] = "not read";
  Options o = launch({"--launcher", "local", "train.py"}, env);
  CHECK(o.nnodes == 1);
  CHECK_FALSE(o.job);
  env["GANGRUN_LAUNCHER"] = "local";
  CHECK_FALSE(launch({"train.py"}, env).job);
}

TEST_CASE("a step with several tasks per node is refused with the fix", "[config][slurm]") {
  EnvMap env = step_env();
  env["SLURM_STEP_NUM_TASKS"] = "6";
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  std::string message = usage_error({"train.py"}, env);
  CHECK_THAT(message, Contains("2 tasks on this node"));
  CHECK_THAT(message, Contains("srun --ntasks-per-node=1"));
  CHECK_THAT(message, Contains("--worker-per-task"));

  SECTION("--worker-per-task makes each task one node of one worker") {
    env["SLURM_PROCID"] = "3";
    env["SLURM_LOCALID"] = "1";
    Options o = launch({"--worker-per-task", "train.py"}, env);
    CHECK(o.nnodes == 6);
    CHECK(o.node_rank == 3);
    CHECK(o.nproc_per_node->number == 1);
    CHECK(origin(o, "node_rank").text == "3 (SLURM_PROCID=3)");
  }
}

TEST_CASE("launcher names", "[config][slurm]") {
  CHECK_THAT(usage_error({"--launcher", "slurm", "train.py"}),
             Contains("needs a Slurm allocation"));
  CHECK_THAT(usage_error({"--launcher", "pdsh", "train.py"}), Contains("deepspeed launcher"));
  CHECK_THAT(usage_error({"--launcher", "mpi", "train.py"}), Contains("not a launcher"));
  CHECK(launch({"--launcher", "SLURM", "train.py"}, step_env()).launcher ==
        Options::Launcher::slurm);
}

TEST_CASE("launcher arguments split like a shell", "[config][slurm]") {
  using gangrun::config::parse_launcher_args;
  CHECK(*parse_launcher_args("--mem=0  --comment 'a b'") ==
        std::vector<std::string>{"--mem=0", "--comment", "a b"});
  CHECK(*parse_launcher_args("-x \"\"") == std::vector<std::string>{"-x", ""});
  CHECK(parse_launcher_args("").value().empty());
  CHECK_FALSE(parse_launcher_args("--comment 'open"));
}

TEST_CASE("a node list that is not a hostlist is a usage error", "[config][slurm]") {
  EnvMap env = step_env();
  env["SLURM_STEP_NODELIST"] = "node[3-1]";
  CHECK_THAT(usage_error({"train.py"}, env), Contains("SLURM_STEP_NODELIST"));
}
