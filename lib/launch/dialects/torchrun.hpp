// torchrun's conventions for a worker, every worker's base whatever tool the
// command line spoke (docs/environment.md, "What each worker gets"): its
// rank and world variables, the store, the restart count, the error file,
// NCCL's error handling, its device mask, --virtual_local_rank.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

#include <string>

namespace gangrun::launch {

// torchrun's variables for worker in the given round, with its files in
// run_dir. Inherited values of NCCL_ASYNC_ERROR_HANDLING and
// TORCH_NCCL_ASYNC_ERROR_HANDLING are kept; the worker's device_env is added.
EnvMap torchrun_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                          const RoundAssignment& round, const std::string& run_dir);

// --virtual_local_rank: the CUDA_VISIBLE_DEVICES of the worker at local_rank,
// the inherited list's entry there (make_plan checks it has one), else the
// local rank itself, as torchrun gives it.
std::string virtual_local_device(const EnvMap& host_env, int local_rank);

}  // namespace gangrun::launch
