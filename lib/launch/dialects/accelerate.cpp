#include "launch/dialects/accelerate.hpp"

#include "util/host.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace gangrun::launch {

std::optional<AccelerateThreads> accelerate_omp_threads(const config::AccelerateSettings& settings,
                                                        const EnvMap& host_env) {
  if (!settings.active || !settings.sets_omp_threads) return std::nullopt;
  // accelerate's --num_cpu_threads_per_process default: the inherited
  // OMP_NUM_THREADS, else 1; under --cpu without OMP_NUM_THREADS the physical
  // cores shared among the processes of a machine when that gives more than 1.
  if (settings.cpu_threads_per_process) {
    return AccelerateThreads{std::to_string(*settings.cpu_threads_per_process), ""};
  }
  const std::string tune = "; set it, or --num_cpu_threads_per_process, to tune";
  // get_int_from_env: a negative or absent value counts as unset.
  int inherited = -1;
  if (auto text = env_lookup(host_env, "OMP_NUM_THREADS")) {
    try {
      inherited = std::stoi(*text);
    } catch (const std::exception&) {
      // accelerate itself stops on it; the workers get one thread
      return AccelerateThreads{"1", "accelerate reads no number in it" + tune};
    }
  }
  if (settings.split_physical_cores_among && inherited <= 0) {
    // psutil.cpu_count(logical=False) shared among the processes.
    const int cores = host::physical_core_count().value_or(0);
    const int among = *settings.split_physical_cores_among;
    if (cores / among > 1) {
      return AccelerateThreads{std::to_string(cores / among),
                               "accelerate --cpu: this host's " + std::to_string(cores) +
                                   " physical cores shared among " + std::to_string(among) +
                                   " processes per machine" + tune};
    }
  }
  if (inherited >= 0) return AccelerateThreads{std::to_string(inherited), ""};
  return AccelerateThreads{"1", "accelerate's default" + tune};
}

namespace {

bool workers_get_gpus(const std::optional<NodeDevices>& devices) {
  return devices && devices->kind != accel::DeviceKind::cpu && !devices->selected.empty();
}

}  // namespace

void settle_accelerate_mode(config::AccelerateSettings& settings,
                            const std::optional<NodeDevices>& devices) {
  if (!settings.active || !settings.multi_process_without_mode || workers_get_gpus(devices)) return;
  settings.variables.emplace_back("ACCELERATE_USE_CPU", "True");
}

std::optional<std::string> accelerate_mode_message(const config::AccelerateSettings& settings,
                                                   const std::optional<NodeDevices>& devices,
                                                   int processes, int nnodes) {
  if (!settings.active || !settings.multi_process_without_mode) return std::nullopt;
  const bool gpus = workers_get_gpus(devices);
  // With more than one GPU accelerate would start them all too.
  if (gpus && devices->selected.size() > 1) return std::nullopt;
  return fmt::format(
      "{} without --multi_gpu or --cpu: starting {} processes{} as a multi-{} job (accelerate "
      "launch would start 1{} on a machine with {})",
      settings.process_count_given, processes, nnodes > 1 ? " per machine" : "",
      gpus ? "GPU" : "CPU", nnodes > 1 ? " per machine" : "", gpus ? "one GPU" : "no GPU");
}

void add_accelerate_variables(const config::AccelerateSettings& settings, const EnvMap& host_env,
                              EnvMap& vars) {
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
  if (settings.add_cwd_to_python_path) {
    // accelerate's env_var_path_add: the inherited entries, empty ones
    // dropped, then the working directory.
    std::vector<std::string> paths;
    for (const std::string& part :
         strings::split(env_lookup(host_env, "PYTHONPATH").value_or(""), ':')) {
      if (!part.empty()) paths.push_back(part);
    }
    std::error_code error;
    paths.push_back(std::filesystem::current_path(error).string());
    vars["PYTHONPATH"] = strings::join(paths, ":");
  }
}

}  // namespace gangrun::launch
