#include "config/option_names.hpp"
#include "launch/job_plan.hpp"

#include <catch2/catch.hpp>

using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::launch::LaunchPlan;
using gangrun::launch::master_addr_origin;
using gangrun::launch::plan_job;

TEST_CASE("launch::plan_job takes the host and the srun task from the Slurm job", "[launch]") {
  Options options;
  options.slurm_job.emplace();
  options.slurm_job->node_name = "node7";
  options.slurm_job->local_id.emplace();
  options.slurm_job->local_id->value = 2;
  options.slurm_job->tasks_on_node.emplace();
  options.slurm_job->tasks_on_node->value = 4;

  LaunchPlan plan;
  plan_job(options, plan);
  CHECK(plan.host == "node7");
  CHECK(plan.slurm_job == options.slurm_job);
  CHECK_FALSE(plan.srun_task);  // the task's place counts only with --worker-per-task

  options.worker_per_task = true;
  plan = {};
  plan_job(options, plan);
  CHECK(plan.worker_per_task);
  REQUIRE(plan.srun_task);
  CHECK(plan.srun_task->local_id == 2);
  CHECK(plan.srun_task->tasks_on_node == 4);
}

TEST_CASE("launch::plan_job places an MPI task as srun's", "[launch]") {
  Options options;
  options.worker_per_task = true;
  options.scheduler_job.emplace();
  options.scheduler_job->local_rank.emplace();
  options.scheduler_job->local_rank->value = 1;
  options.scheduler_job->tasks_on_node.emplace();
  options.scheduler_job->tasks_on_node->value = 3;

  LaunchPlan plan;
  plan_job(options, plan);
  CHECK_FALSE(plan.slurm_job);
  CHECK_FALSE(plan.host.empty());  // this host's own name
  REQUIRE(plan.srun_task);
  CHECK(plan.srun_task->local_id == 1);
  CHECK(plan.srun_task->tasks_on_node == 3);
}

TEST_CASE("launch::master_addr_origin names the head node a job system gave", "[launch]") {
  Options options;
  CHECK(master_addr_origin(options, false) == "--master_addr");
  CHECK(master_addr_origin(options, true) == "--rdzv_endpoint");

  options.slurm_job.emplace();
  options.slurm_job->node_list.variable = "SLURM_JOB_NODELIST";
  options.slurm_job->node_list.text = "node[1-2]";
  options.origins[std::string(gangrun::config::opt::master_addr)] = {.text = "node1",
                                                                     .source = Source::slurm};
  CHECK(master_addr_origin(options, false).rfind("the head node: ", 0) == 0);
  CHECK(master_addr_origin(options, true) == "--rdzv_endpoint");

  options.origins[std::string(gangrun::config::opt::master_addr)].source = Source::command_line;
  CHECK(master_addr_origin(options, false) == "--master_addr");
}
