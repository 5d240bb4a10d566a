#include "config/option_names.hpp"
#include "launch/job_plan.hpp"

#include <catch2/catch.hpp>

using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::launch::LaunchPlan;
using gangrun::launch::master_addr_origin;
using gangrun::launch::plan_job;

namespace {

// A Slurm task of node7, the third of four on its node.
gangrun::schedulers::Job slurm_task() {
  gangrun::slurm::Job step;
  step.node_name = "node7";
  step.local_id.emplace();
  step.local_id->value = 2;
  step.tasks_on_node.emplace();
  step.tasks_on_node->value = 4;
  return gangrun::schedulers::from_slurm(step);
}

}  // namespace

TEST_CASE("launch::plan_job takes the host and the srun task from the Slurm job", "[launch]") {
  Options options;
  options.job = slurm_task();

  LaunchPlan plan;
  plan_job(options, plan);
  CHECK(plan.host == "node7");
  CHECK(plan.job == options.job);
  CHECK_FALSE(plan.scheduler_task);  // the task's place counts only with --worker-per-task

  options.worker_per_task = true;
  plan = {};
  plan_job(options, plan);
  CHECK(plan.worker_per_task);
  REQUIRE(plan.scheduler_task);
  CHECK(plan.scheduler_task->local_id == 2);
  CHECK(plan.scheduler_task->tasks_on_node == 4);
}

TEST_CASE("launch::plan_job places an MPI task as srun's", "[launch]") {
  Options options;
  options.worker_per_task = true;
  options.job.emplace();
  options.job->local_rank.emplace();
  options.job->local_rank->value = 1;
  options.job->tasks_on_node.emplace();
  options.job->tasks_on_node->value = 3;

  LaunchPlan plan;
  plan_job(options, plan);
  REQUIRE(plan.job);
  CHECK_FALSE(plan.job->is_slurm());
  CHECK_FALSE(plan.host.empty());  // this host's own name
  REQUIRE(plan.scheduler_task);
  CHECK(plan.scheduler_task->local_id == 1);
  CHECK(plan.scheduler_task->tasks_on_node == 3);
}

TEST_CASE("launch::plan_job leaves the task out where the job does not place it", "[launch]") {
  Options options;
  options.worker_per_task = true;
  options.job = gangrun::schedulers::from_slurm(gangrun::slurm::Job{});  // an allocation

  LaunchPlan plan;
  plan_job(options, plan);
  CHECK_FALSE(plan.scheduler_task);
}

TEST_CASE("launch::master_addr_origin names the head node a job system gave", "[launch]") {
  Options options;
  CHECK(master_addr_origin(options, false) == "--master_addr");
  CHECK(master_addr_origin(options, true) == "--rdzv_endpoint");

  gangrun::slurm::Job allocation;
  allocation.node_list.variable = "SLURM_JOB_NODELIST";
  allocation.node_list.text = "node[1-2]";
  options.job = gangrun::schedulers::from_slurm(allocation);
  options.origins[std::string(gangrun::config::opt::master_addr)] = {.text = "node1",
                                                                     .source = Source::slurm};
  CHECK(master_addr_origin(options, false).rfind("the head node: ", 0) == 0);
  CHECK(master_addr_origin(options, true) == "--rdzv_endpoint");

  options.origins[std::string(gangrun::config::opt::master_addr)].source = Source::command_line;
  CHECK(master_addr_origin(options, false) == "--master_addr");
}
