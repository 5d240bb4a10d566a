#include "launch/workers_plan.hpp"

#include "launch/numa_cpus.hpp"
#include "logmux/prefix.hpp"
#include "util/host.hpp"

#include <csignal>

namespace gangrun::launch {
namespace {

config::Streams either(config::Streams a, config::Streams b) {
  return {a.out || b.out, a.err || b.err};
}

// --numa_binding: each worker's CPUs, near its devices.
Expected<std::vector<std::vector<int>>> numa_cpus(const config::Options& options,
                                                  const EnvMap& host_env, const LaunchPlan& plan) {
  std::vector<int> usable = host::usable_cpus();
  NumaRequest request{.mode = *options.numa_binding,
                      .devices_per_worker = plan.per_rank_visibility ? options.devices_per_proc : 1,
                      .first_local_rank = plan.scheduler_task ? plan.scheduler_task->local_id : 0,
                      .sysfs_root = sysfs_root(host_env),
                      .usable = {usable.begin(), usable.end()}};
  return numa_worker_cpus(request, plan.devices, plan.local_world_size);
}

}  // namespace

void plan_output(const config::Options& options, const EnvMap& host_env, LaunchPlan& plan) {
  switch (options.output) {
    case config::OutputMode::prefix:
      plan.prefix_output = true;
      break;
    case config::OutputMode::inherit:
      plan.prefix_output = false;
      break;
    case config::OutputMode::automatic:
      plan.prefix_output = plan.local_world_size > 1;
      break;
  }
  plan.log_dir =
      options.log_dir;  // each run makes its own directory inside (launch/run_directory.hpp)
  plan.teardown_signals.insert(options.signals_to_handle.begin(), options.signals_to_handle.end());
  if (plan.teardown_signals.empty()) plan.teardown_signals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  plan.parent_error_file = env_lookup(host_env, "TORCHELASTIC_ERROR_FILE");
  plan.prefix_template = options.log_prefix
                             ? *options.log_prefix
                             : env_lookup(host_env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
                                   .value_or(std::string(logmux::k_default_prefix_template));
}

Expected<void> plan_workers(const config::Options& options, const EnvMap& host_env,
                            std::vector<EnvMap> device_envs, LaunchPlan& plan) {
  GANGRUN_TRY_ASSIGN(starts,
                     worker_starts(plan.dialects, plan.program.argv, plan.local_world_size));
  plan.numa_binding = options.numa_binding;
  if (options.numa_binding) {
    GANGRUN_TRY_ASSIGN(near, numa_cpus(options, host_env, plan));
    // config allows no --bind_cores_to_rank beside it, so these were empty.
    for (std::size_t i = 0; i < starts->size(); ++i) (*starts)[i].cpus = std::move((*near)[i]);
  }
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    WorkerStart& start = (*starts)[static_cast<std::size_t>(local_rank)];
    WorkerPlan worker;
    worker.local_rank = local_rank;
    worker.device_env = std::move(device_envs[static_cast<std::size_t>(local_rank)]);
    worker.cpus = std::move(start.cpus);
    worker.argv = std::move(start.argv);
    config::Streams redirected = options.redirects.for_local_rank(local_rank);
    config::Streams teed = options.tee.for_local_rank(local_rank);
    worker.to_file = either(redirected, teed);
    if (plan.log_dir) worker.to_file = {true, true};
    bool shown = !options.local_ranks_filter || options.local_ranks_filter->count(local_rank) != 0;
    // A tee'd stream is shown even when it is also redirected.
    worker.to_console = {shown && (!redirected.out || teed.out),
                         shown && (!redirected.err || teed.err)};
    plan.workers.push_back(std::move(worker));
  }
  return {};
}

}  // namespace gangrun::launch
