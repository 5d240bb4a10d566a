#include "launch/deepspeed_env.hpp"

namespace gangrun::launch {
namespace {

bool deepspeed_style(const LaunchPlan& plan) {
  return plan.options.deepspeed.launch_style == config::LaunchStyle::deepspeed;
}

}  // namespace

std::vector<std::string> deepspeed_argv(const LaunchPlan& plan, std::vector<std::string> argv,
                                        int local_rank) {
  if (!deepspeed_style(plan) || plan.options.deepspeed.no_local_rank) return argv;
  const std::size_t script_args =
      plan.options.program_and_args.empty() ? 0 : plan.options.program_and_args.size() - 1;
  const std::size_t at = argv.size() >= script_args ? argv.size() - script_args : argv.size();
  argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(at),
              "--local_rank=" + std::to_string(local_rank));
  return argv;
}

void add_deepspeed_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                             const RoundAssignment& round, EnvMap& vars) {
  if (deepspeed_style(plan)) {
    vars["LOCAL_SIZE"] = std::to_string(plan.local_world_size);
    vars["CROSS_RANK"] = std::to_string(round.group_rank);
    vars["CROSS_SIZE"] = std::to_string(round.group_world_size);
  }
  // As deepspeed: the share's size, over an inherited OMP_NUM_THREADS too.
  if (!worker.cpus.empty()) vars["OMP_NUM_THREADS"] = std::to_string(worker.cpus.size());
}

}  // namespace gangrun::launch
