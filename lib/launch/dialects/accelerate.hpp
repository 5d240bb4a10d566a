// The variables accelerate launch gives its workers beyond torchrun's, from
// the plan's Dialects::accelerate; worker_variables() adds them after
// torchrun's. Its OMP_NUM_THREADS rule (accelerate_omp_threads) is asked by
// omp_threads.hpp, which decides.
#pragma once

#include "config/accelerate_settings.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

// Adds to (or overrides in, or removes from) vars what accelerate launch
// would set for every worker, but OMP_NUM_THREADS. Nothing unless
// settings.active.
void add_accelerate_variables(const config::AccelerateSettings& settings, const EnvMap& host_env,
                              EnvMap& vars);

// What accelerate would set OMP_NUM_THREADS to, and why, when it sets it
// (settings.active and sets_omp_threads).
struct AccelerateThreads {
  std::string value;
  // Empty when the user asked for the value (--num_cpu_threads_per_process,
  // or an inherited OMP_NUM_THREADS it keeps); else accelerate's reason.
  std::string why;
};
std::optional<AccelerateThreads> accelerate_omp_threads(const config::AccelerateSettings& settings,
                                                        const EnvMap& host_env);

}  // namespace gangrun::launch
