#include "launch/doctor_plan.hpp"

#include "config/option_names.hpp"
#include "launch/program.hpp"

namespace gangrun::launch {

Expected<DoctorPlan> doctor_plan(const config::Options& options, const EnvMap& host_env) {
  DoctorPlan doctor;
  doctor.hang_timeout_s = options.hang_timeout;
  doctor.arrival_timeout_s = options.arrival_timeout;
  if (options.hang_timeout || options.user_origin(config::opt::start_timeout)) {
    doctor.start_timeout_s = options.start_timeout;
  }
  doctor.on_hang = options.on_hang;
  doctor.stacks_at_failure = !options.no_stacks_at_failure;
  doctor.straggler_interval_s = options.straggler_watch;
  doctor.flight_recorder = options.flight_recorder;
  if (options.stack_tool) {
    auto tool = find_executable(*options.stack_tool, host_env, "stack tool");
    if (!tool) {
      // Named as the user gave it: the environment's variable is not the flag.
      const config::Options::Origin* origin = options.user_origin(config::opt::stack_tool);
      std::string where = origin && origin->source == config::Source::gangrun_env
                              ? "GANGRUN_STACK_TOOL"
                              : "--stack-tool";
      return fail_usage(where + ": " + tool.error().message() +
                        "; give the path of py-spy (pip install py-spy puts it beside the "
                        "environment's python)");
    }
    doctor.stack_tool = std::move(*tool);
  }
  return doctor;
}

}  // namespace gangrun::launch
