// The job system's part of the plan: what Slurm or an MPI launcher says
// about this task (lib/schedulers, lib/slurm). Every read of Options::job by
// make_plan is here, so a change to the job model touches this file only.
#pragma once

#include "config/options.hpp"
#include "launch/plan.hpp"

#include <string>

namespace gangrun::launch {

// Sets plan.host (a Slurm job's node name, else this host's), plan.job,
// plan.worker_per_task and plan.scheduler_task (--worker-per-task: the
// task's place on its host, from srun or an MPI launcher).
void plan_job(const config::Options& options, LaunchPlan& plan);

// Where the store's host name came from, for messages: "--rdzv_endpoint"
// under c10d, the head node a job system gave, else "--master_addr".
std::string master_addr_origin(const config::Options& options, bool c10d);

}  // namespace gangrun::launch
