#include "launch/deepspeed_env.hpp"

namespace gangrun::launch {

void add_deepspeed_variables(const LaunchPlan& /*plan*/, const WorkerPlan& /*worker*/,
                             const RoundAssignment& /*round*/, EnvMap& /*vars*/) {}

}  // namespace gangrun::launch
