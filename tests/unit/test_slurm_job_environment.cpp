// What gangrun reads from SLURM_*: the place (allocation or step), the
// step's shape, run-length task lists, the store port and the run id.
#include "slurm/job_environment.hpp"

#include <catch2/catch.hpp>

#include <set>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::slurm::expand_counts;
using gangrun::slurm::Job;
using gangrun::slurm::Place;
using gangrun::slurm::read_job;

// What task 1 of a 3-node step with one task per node sees (the variables a
// local cluster gave, trimmed to those gangrun reads).
EnvMap step_env() {
  return {{"SLURM_JOB_ID", "41"},
          {"SLURM_JOBID", "41"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_NNODES", "3"},
          {"SLURM_STEP_NODELIST", "node[1-3]"},
          {"SLURM_JOB_NODELIST", "node[1-3]"},
          {"SLURM_NODEID", "1"},
          {"SLURM_PROCID", "1"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}};
}

Job read(const EnvMap& env) {
  auto job = read_job(env);
  if (!job) FAIL(job.error().message());
  REQUIRE(job->has_value());
  return **job;
}

std::string error_of(const EnvMap& env) {
  auto job = read_job(env);
  REQUIRE_FALSE(job);
  CHECK(job.error().code() == gangrun::ErrorCode::usage);
  return job.error().message();
}

}  // namespace

TEST_CASE("outside Slurm there is no job", "[slurm]") {
  auto job = read_job({{"PATH", "/bin"}, {"SLURM_CONF", "/etc/slurm.conf"}});
  REQUIRE(job);
  CHECK_FALSE(job->has_value());
}

TEST_CASE("a step task reads the step's shape", "[slurm]") {
  Job job = read(step_env());
  CHECK(job.place == Place::step);
  CHECK(job.job_id.value == "41");
  CHECK(job.step_id->value == "0");
  CHECK(job.num_nodes.value == 3);
  CHECK(job.num_nodes.variable == "SLURM_STEP_NUM_NODES");
  CHECK(job.node_list.value == "node[1-3]");
  CHECK(job.node_list.variable == "SLURM_STEP_NODELIST");
  CHECK(job.node_id->value == 1);
  CHECK(job.tasks_on_node->value == 1);
  CHECK_FALSE(job.gpus_on_node);
  CHECK_FALSE(job.node_name);
  EnvMap named = step_env();
  named["SLURMD_NODENAME"] = "node2";
  CHECK(read(named).node_name == "node2");
}

TEST_CASE("the step's variables win over the job's", "[slurm]") {
  // A step on 2 of the allocation's 4 nodes.
  EnvMap env = step_env();
  env["SLURM_JOB_NUM_NODES"] = "4";
  env["SLURM_JOB_NODELIST"] = "node[1-4]";
  env["SLURM_STEP_NUM_NODES"] = "2";
  env["SLURM_STEP_NODELIST"] = "node[3-4]";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  Job job = read(env);
  CHECK(job.num_nodes.value == 2);
  CHECK(job.node_list.value == "node[3-4]");
}

TEST_CASE("a batch script is in the allocation, outside any step", "[slurm]") {
  Job job = read({{"SLURM_JOB_ID", "7"},
                  {"SLURM_JOB_NUM_NODES", "4"},
                  {"SLURM_NNODES", "4"},
                  {"SLURM_JOB_NODELIST", "gpu[01-04]"},
                  {"SLURM_NODEID", "0"},
                  {"SLURM_GPUS_ON_NODE", "8"}});
  CHECK(job.place == Place::allocation);
  CHECK(job.num_nodes.value == 4);
  CHECK(job.num_nodes.variable == "SLURM_JOB_NUM_NODES");
  CHECK(job.node_list.value == "gpu[01-04]");
  CHECK_FALSE(job.node_id);  // 0 in a batch script, and meaningless there
  CHECK(job.gpus_on_node->value == 8);
}

TEST_CASE("legacy spellings are read when the new ones are missing", "[slurm]") {
  Job job = read({{"SLURM_JOBID", "9"}, {"SLURM_NNODES", "2"}, {"SLURM_NODELIST", "a,b"}});
  CHECK(job.job_id.variable == "SLURM_JOBID");
  CHECK(job.num_nodes.variable == "SLURM_NNODES");
  CHECK(job.node_list.variable == "SLURM_NODELIST");
}

TEST_CASE("SLURM_GPUS_ON_NODE=0 means no GPUs", "[slurm]") {
  EnvMap env = step_env();
  env["SLURM_GPUS_ON_NODE"] = "0";
  CHECK_FALSE(read(env).gpus_on_node);
  env["SLURM_GPUS_ON_NODE"] = "2";
  CHECK(read(env).gpus_on_node->value == 2);
}

TEST_CASE("broken Slurm variables are usage errors naming the variable", "[slurm]") {
  EnvMap env = step_env();
  SECTION("a job id that is no number") {
    env["SLURM_JOB_ID"] = "abc";
    CHECK_THAT(error_of(env), Contains("SLURM_JOB_ID=abc"));
  }
  SECTION("a node count that is no number") {
    env["SLURM_STEP_NUM_NODES"] = "three";
    CHECK_THAT(error_of(env), Contains("SLURM_STEP_NUM_NODES=three"));
  }
  SECTION("a step without its node index") {
    env.erase("SLURM_NODEID");
    CHECK_THAT(error_of(env), Contains("SLURM_NODEID"));
  }
  SECTION("a node index beyond the step") {
    env["SLURM_NODEID"] = "3";
    CHECK_THAT(error_of(env), Contains("SLURM_NODEID=3"));
  }
  SECTION("a task list that does not reach this node") {
    env["SLURM_STEP_TASKS_PER_NODE"] = "1";
    CHECK_THAT(error_of(env), Contains("SLURM_STEP_TASKS_PER_NODE=1"));
  }
  SECTION("a task list that is not Slurm's form") {
    env["SLURM_STEP_TASKS_PER_NODE"] = "2(3)";
    CHECK_THAT(error_of(env), Contains("SLURM_STEP_TASKS_PER_NODE=2(3)"));
  }
}

TEST_CASE("run-length task lists expand in node order", "[slurm]") {
  CHECK(*expand_counts("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(*expand_counts("4") == std::vector<int>{4});
  CHECK(*expand_counts("1,2(x2)") == std::vector<int>{1, 2, 2});
  for (const char* bad : {"", "x", "2(x)", "2(x0)", "2(x3", "-1", "2(y3)", "99999999999"}) {
    INFO(bad);
    CHECK_FALSE(expand_counts(bad));
  }
  CHECK_FALSE(expand_counts("1(x2000000)"));  // no node list is that long
}

TEST_CASE("the store port follows the documented formula", "[slurm]") {
  Job job = read(step_env());
  // 20000 + (41 * 16 + 0) % 12000
  CHECK(gangrun::slurm::store_port(job) == 20656);
  job.step_id->value = "3";
  CHECK(gangrun::slurm::store_port(job) == 20659);
  job.job_id.value = "18446744073709551615";  // the largest job number: no overflow
  int port = gangrun::slurm::store_port(job);
  CHECK(port >= 20000);
  CHECK(port < 32000);
}

TEST_CASE("ports stay below the ephemeral range and differ between steps", "[slurm]") {
  Job job = read(step_env());
  std::set<int> ports;
  for (int id = 1; id <= 750; ++id) {
    job.job_id.value = std::to_string(id);
    for (int step = 0; step < 16; ++step) {
      job.step_id->value = std::to_string(step);
      int port = gangrun::slurm::store_port(job);
      if (port < 20000 || port > 31999) FAIL("port " << port);
      ports.insert(port);
    }
  }
  CHECK(ports.size() == 12000);  // 750 consecutive jobs x 16 steps: no two share a port
}

TEST_CASE("the run id is job.step in a step, the job id outside", "[slurm]") {
  CHECK(gangrun::slurm::run_id(read(step_env())) == "41.0");
  CHECK(gangrun::slurm::run_id(read(
            {{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_JOB_NODELIST", "a"}})) ==
        "7");
}
