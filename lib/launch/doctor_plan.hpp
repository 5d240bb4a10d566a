// The gang doctor's part of the plan (DoctorPlan, launch/plan.hpp): its
// timeouts and watches as the options ask, and --stack-tool checked to be
// an executable.
#pragma once

#include "config/options.hpp"
#include "launch/plan.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::launch {

// A usage error names --stack-tool (or GANGRUN_STACK_TOOL, as the user gave
// it) when the tool is not an executable.
Expected<DoctorPlan> doctor_plan(const config::Options& options, const EnvMap& host_env);

}  // namespace gangrun::launch
