#include "launch/dialects/worker_variables.hpp"

#include "launch/dialects/accelerate.hpp"
#include "launch/dialects/deepspeed.hpp"
#include "launch/dialects/omp_threads.hpp"
#include "launch/dialects/torchrun.hpp"

namespace gangrun::launch {

EnvMap worker_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                        const RoundAssignment& round, const std::string& run_dir) {
  EnvMap vars = torchrun_variables(plan, worker, round, run_dir);
  add_accelerate_variables(plan.dialects.accelerate, plan.host_env, vars);
  add_deepspeed_variables(plan, round, vars);
  if (auto threads = omp_threads(plan, worker).value) vars["OMP_NUM_THREADS"] = *threads;
  return vars;
}

}  // namespace gangrun::launch
