#include "launch/accelerate_env.hpp"

namespace gangrun::launch {

void add_accelerate_variables(const LaunchPlan& /*plan*/, const WorkerPlan& /*worker*/,
                              const RoundAssignment& /*round*/, EnvMap& /*vars*/) {}

}  // namespace gangrun::launch
