#include "launch/dialects/torchrun.hpp"

#include "launch/run_directory.hpp"
#include "util/strings.hpp"

#include <vector>

namespace gangrun::launch {

std::string virtual_local_device(const EnvMap& host_env, int local_rank) {
  auto inherited = env_lookup(host_env, "CUDA_VISIBLE_DEVICES");
  if (!inherited) return std::to_string(local_rank);
  std::vector<std::string> devices = strings::split(*inherited, ',');
  const auto index = static_cast<std::size_t>(local_rank);
  return index < devices.size() ? std::string(strings::trim(devices[index]))
                                : std::to_string(local_rank);
}

EnvMap torchrun_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                          const RoundAssignment& round, const std::string& run_dir) {
  auto inherited_or = [&](const char* name, const char* fallback) {
    return env_lookup(plan.host_env, name).value_or(fallback);
  };
  const std::string rank = std::to_string(round.rank_of(worker));
  const std::string world_size = std::to_string(round.world_size);
  // With --worker-per-task every srun task is a node of one worker, but its
  // local rank is among the tasks on its machine, as srun numbers them, so
  // that LOCAL_RANK still picks the task's device.
  int local_rank = worker.local_rank;
  int local_world_size = plan.local_world_size;
  if (plan.scheduler_task) {
    local_rank = plan.scheduler_task->local_id;
    local_world_size = plan.scheduler_task->tasks_on_node;
  }
  EnvMap vars = {
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"RANK", rank},
      {"GROUP_RANK", std::to_string(round.group_rank)},
      {"ROLE_RANK", rank},
      {"ROLE_NAME", plan.role},
      {"LOCAL_WORLD_SIZE", std::to_string(local_world_size)},
      {"WORLD_SIZE", world_size},
      {"GROUP_WORLD_SIZE", std::to_string(round.group_world_size)},
      {"ROLE_WORLD_SIZE", world_size},
      {"MASTER_ADDR", round.master_addr},
      {"MASTER_PORT", round.master_port},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(round.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(plan.max_restarts)},
      {"TORCHELASTIC_RUN_ID", plan.run_id},
      // Workers are clients of the store gangrun hosts (agent/agent_store.hpp).
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_ERROR_FILE",
       RunDirectory::error_file(run_dir, round.attempt, worker.local_rank)},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", inherited_or("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")},
      {"NCCL_ASYNC_ERROR_HANDLING", inherited_or("NCCL_ASYNC_ERROR_HANDLING", "1")},
  };
  vars.insert(worker.device_env.begin(), worker.device_env.end());
  if (plan.virtual_local_rank) {
    // As torchrun 2.x: the worker's one device is its device 0.
    vars["LOCAL_RANK"] = "0";
    vars["CUDA_VISIBLE_DEVICES"] = virtual_local_device(plan.host_env, local_rank);
  }
  return vars;
}

}  // namespace gangrun::launch
