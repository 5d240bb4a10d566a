// The variables deepspeed gives its workers beyond torchrun's, from
// Options::deepspeed; worker_variables() (plan.hpp) adds them last.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

namespace gangrun::launch {

// Adds to (or overrides in) vars what deepspeed would set for this worker.
void add_deepspeed_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                             const RoundAssignment& round, EnvMap& vars);

}  // namespace gangrun::launch
