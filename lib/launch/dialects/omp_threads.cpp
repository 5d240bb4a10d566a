#include "launch/dialects/omp_threads.hpp"

#include "launch/dialects/accelerate.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <vector>

namespace gangrun::launch {

OmpThreads omp_threads(const LaunchPlan& plan, const WorkerPlan& worker) {
  // torchrun's --numa_binding leaves OMP_NUM_THREADS to its own rule.
  if (plan.dialects.deepspeed.bind_cores_to_rank && !worker.cpus.empty()) {
    return {std::to_string(worker.cpus.size()),
            "the size of each worker's core share under --bind_cores_to_rank, as deepspeed sets "
            "it"};
  }
  if (auto accelerate = accelerate_omp_threads(plan.dialects.accelerate, plan.host_env)) {
    return {std::move(accelerate->value), std::move(accelerate->why)};
  }
  if (auto inherited = env_lookup(plan.host_env, "OMP_NUM_THREADS")) return {*inherited, ""};
  if (plan.local_world_size > 1) return {"1", "set it yourself to tune"};
  return {};
}

std::optional<std::string> omp_threads_message(const LaunchPlan& plan) {
  auto inherited = env_lookup(plan.host_env, "OMP_NUM_THREADS");
  std::vector<OmpThreads> chosen;
  bool announced = false;
  for (const WorkerPlan& worker : plan.workers) {
    chosen.push_back(omp_threads(plan, worker));
    const OmpThreads& threads = chosen.back();
    announced = announced || (threads.value && threads.value != inherited && !threads.why.empty());
  }
  if (!announced) return std::nullopt;

  std::string subject = inherited ? "OMP_NUM_THREADS=" + *inherited + " is replaced"
                                  : std::string("OMP_NUM_THREADS is unset");
  bool same = true;
  for (const OmpThreads& threads : chosen) {
    same = same && threads.value == chosen.front().value && threads.why == chosen.front().why;
  }
  std::string what;
  if (same) {
    what = chosen.size() == 1
               ? fmt::format("setting it to {} for the one worker", *chosen.front().value)
               : fmt::format("setting it to {} for each of the {} workers", *chosen.front().value,
                             chosen.size());
  } else {
    std::vector<std::string> each;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      each.push_back(fmt::format("local rank {}: {}", plan.workers[i].local_rank,
                                 chosen[i].value.value_or("unset")));
    }
    what = "setting it for each worker (" + strings::join(each, ", ") + ")";
  }
  std::string why;
  for (const OmpThreads& threads : chosen) {
    if (!threads.why.empty()) {
      why = threads.why;
      break;
    }
  }
  return fmt::format("{}; {} ({})", subject, what, why);
}

}  // namespace gangrun::launch
