// Every variable gangrun sets for a worker of a round: torchrun's
// (torchrun.hpp), then accelerate's (accelerate.hpp) and deepspeed's
// (deepspeed.hpp) when the line spoke them, then OMP_NUM_THREADS as
// omp_threads.hpp decides it.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

#include <string>

namespace gangrun::launch {

// The variables gangrun sets for worker in the given round, with its files
// in run_dir (docs/environment.md, "What each worker gets").
EnvMap worker_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                        const RoundAssignment& round, const std::string& run_dir);

}  // namespace gangrun::launch
