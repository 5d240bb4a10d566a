#include "launch/job_plan.hpp"

#include "config/option_names.hpp"
#include "util/host.hpp"

namespace gangrun::launch {

void plan_job(const config::Options& options, LaunchPlan& plan) {
  const auto& job = options.slurm_job;
  plan.host = job && job->node_name ? *job->node_name : host::host_name();
  plan.slurm_job = options.slurm_job;
  plan.scheduler_job = options.scheduler_job;
  plan.worker_per_task = options.worker_per_task;
  if (options.worker_per_task && job && job->local_id && job->tasks_on_node) {
    plan.srun_task =
        SrunTask{.local_id = job->local_id->value, .tasks_on_node = job->tasks_on_node->value};
  }
  // An MPI task as one worker: its place on the host, as srun's.
  const auto& task = options.scheduler_job;
  if (options.worker_per_task && task && task->local_rank && task->tasks_on_node) {
    plan.srun_task =
        SrunTask{.local_id = task->local_rank->value, .tasks_on_node = task->tasks_on_node->value};
  }
}

std::string master_addr_origin(const config::Options& options, bool c10d) {
  if (c10d) return "--rdzv_endpoint";
  auto it = options.origins.find(std::string(config::opt::master_addr));
  if (options.slurm_job && it != options.origins.end() &&
      it->second.source == config::Source::slurm) {
    return "the head node: " + slurm::head_node_origin(*options.slurm_job);
  }
  if (options.scheduler_job && it != options.origins.end() &&
      it->second.source == config::Source::scheduler) {
    return schedulers::head_origin(*options.scheduler_job);
  }
  return "--master_addr";
}

}  // namespace gangrun::launch
