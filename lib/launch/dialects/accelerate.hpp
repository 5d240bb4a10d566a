// The variables accelerate launch gives its workers beyond torchrun's, from
// the plan's Dialects::accelerate; worker_variables() adds them after
// torchrun's. Its OMP_NUM_THREADS rule (accelerate_omp_threads) is asked by
// omp_threads.hpp, which decides.
#pragma once

#include "config/accelerate/accelerate_settings.hpp"
#include "launch/node_devices.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

// Adds to (or overrides in, or removes from) vars what accelerate launch
// would set for every worker, but OMP_NUM_THREADS. Nothing unless
// settings.active.
void add_accelerate_variables(const config::AccelerateSettings& settings, const EnvMap& host_env,
                              EnvMap& vars);

// An accelerate line without a launcher mode (multi_process_without_mode)
// becomes a multi-CPU job where the workers get no GPU (devices of kind cpu,
// or none probed): ACCELERATE_USE_CPU=True, which Accelerator() reads to
// join the ranks over gloo. Where they get GPUs, accelerate's state finds
// them itself (MULTI_GPU). Nothing for any other line.
void settle_accelerate_mode(config::AccelerateSettings& settings,
                            const std::optional<NodeDevices>& devices);

// The one line that says how such a line departs from accelerate launch,
// which would start one process per machine unless it saw several GPUs;
// nullopt where there is no departure to tell.
std::optional<std::string> accelerate_mode_message(const config::AccelerateSettings& settings,
                                                   const std::optional<NodeDevices>& devices,
                                                   int processes, int nnodes);

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
