// The variables accelerate launch gives its workers beyond torchrun's, from
// Options::accelerate; worker_variables() (plan.hpp) adds them last.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

namespace gangrun::launch {

// Adds to (or overrides in) vars what accelerate launch would set for this worker.
void add_accelerate_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                              const RoundAssignment& round, EnvMap& vars);

}  // namespace gangrun::launch
