#include "launch/accelerate_env.hpp"

#include "util/host.hpp"
#include "util/strings.hpp"

#include <filesystem>
#include <system_error>

namespace gangrun::launch {

namespace {

// accelerate's --num_cpu_threads_per_process default: the inherited
// OMP_NUM_THREADS, else 1; under --cpu without OMP_NUM_THREADS the physical
// cores shared among the processes of a machine when that gives more than 1.
std::string omp_threads(const config::AccelerateSettings& settings, const EnvMap& host_env) {
  if (settings.cpu_threads_per_process) return std::to_string(*settings.cpu_threads_per_process);
  // get_int_from_env: a negative or absent value counts as unset.
  int inherited = -1;
  if (auto text = env_lookup(host_env, "OMP_NUM_THREADS")) {
    try {
      inherited = std::stoi(*text);
    } catch (const std::exception&) {
      inherited = 1;  // accelerate itself stops on it; the workers get one thread
    }
  }
  if (settings.split_physical_cores_among && inherited <= 0) {
    // psutil.cpu_count(logical=False) shared among the processes.
    int shared = host::physical_core_count().value_or(0) / *settings.split_physical_cores_among;
    if (shared > 1) return std::to_string(shared);
  }
  return std::to_string(inherited >= 0 ? inherited : 1);
}

}  // namespace

void add_accelerate_variables(const LaunchPlan& plan, const WorkerPlan& /*worker*/,
                              const RoundAssignment& /*round*/, EnvMap& vars) {
  const config::AccelerateSettings& settings = plan.options.accelerate;
  if (!settings.active) return;
  if (settings.one_plain_process) {
    // accelerate's simple launcher starts the script as a plain process: with
    // LOCAL_RANK or WORLD_SIZE set, Accelerator() would set up a
    // torch.distributed world (MULTI_CPU) that accelerate launch never gives.
    for (const char* name :
         {"LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
          "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE"}) {
      vars.erase(name);
    }
  }
  for (const auto& [name, value] : settings.variables) vars[name] = value;
  if (settings.sets_omp_threads) vars["OMP_NUM_THREADS"] = omp_threads(settings, plan.host_env);
  if (settings.add_cwd_to_python_path) {
    // accelerate's env_var_path_add: the inherited entries, empty ones
    // dropped, then the working directory.
    std::vector<std::string> paths;
    for (const std::string& part :
         strings::split(env_lookup(plan.host_env, "PYTHONPATH").value_or(""), ':')) {
      if (!part.empty()) paths.push_back(part);
    }
    std::error_code error;
    paths.push_back(std::filesystem::current_path(error).string());
    vars["PYTHONPATH"] = strings::join(paths, ":");
  }
}

}  // namespace gangrun::launch
