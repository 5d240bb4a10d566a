#include "launch/job_plan.hpp"

#include "config/option_names.hpp"
#include "util/host.hpp"

namespace gangrun::launch {

namespace {

// --worker-per-task's place of this task on its host: srun's, or an MPI
// launcher's as srun's; nullopt where the job does not say.
std::optional<SchedulerTask> task_on_host(const schedulers::Job& job) {
  if (job.is_slurm()) {
    const slurm::Job& step = *job.slurm;
    if (!step.local_id || !step.tasks_on_node) return std::nullopt;
    return SchedulerTask{.local_id = step.local_id->value,
                         .tasks_on_node = step.tasks_on_node->value};
  }
  if (!job.local_rank || !job.tasks_on_node) return std::nullopt;
  return SchedulerTask{.local_id = job.local_rank->value,
                       .tasks_on_node = job.tasks_on_node->value};
}

}  // namespace

void plan_job(const config::Options& options, LaunchPlan& plan) {
  const auto& job = options.job;
  plan.host =
      job && job->is_slurm() && job->slurm->node_name ? *job->slurm->node_name : host::host_name();
  plan.job = job;
  plan.worker_per_task = options.worker_per_task;
  if (options.worker_per_task && job) plan.scheduler_task = task_on_host(*job);
}

std::string master_addr_origin(const config::Options& options, bool c10d) {
  if (c10d) return "--rdzv_endpoint";
  auto it = options.origins.find(std::string(config::opt::master_addr));
  const auto& job = options.job;
  if (job && job->is_slurm() && it != options.origins.end() &&
      it->second.source == config::Source::slurm) {
    return "the head node: " + slurm::head_node_origin(*job->slurm);
  }
  if (job && !job->is_slurm() && it != options.origins.end() &&
      it->second.source == config::Source::scheduler) {
    return schedulers::head_origin(*job);
  }
  return "--master_addr";
}

}  // namespace gangrun::launch
