// The local workers' part of the plan: how their output is shown and kept,
// and each worker's argv, CPUs, device mask and streams (WorkerPlan).
#pragma once

#include "config/options.hpp"
#include "launch/plan.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <vector>

namespace gangrun::launch {

// Sets plan.prefix_output (--output; auto: prefix for several workers),
// log_dir, teardown_signals, parent_error_file and prefix_template. Reads
// plan.local_world_size, so it is set first.
void plan_output(const config::Options& options, const EnvMap& host_env, LaunchPlan& plan);

// Sets plan.numa_binding and plan.workers, one per local rank: its argv (the
// dialects' worker_starts), its CPUs (the dialects', or --numa_binding's),
// its mask from `device_envs` (place_workers) and where its streams go.
// Reads plan.dialects, program, devices, local_world_size, per_rank_visibility,
// scheduler_task and log_dir, so those are set first.
Expected<void> plan_workers(const config::Options& options, const EnvMap& host_env,
                            std::vector<EnvMap> device_envs, LaunchPlan& plan);

}  // namespace gangrun::launch
