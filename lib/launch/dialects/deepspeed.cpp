#include "launch/dialects/deepspeed.hpp"

namespace gangrun::launch {
namespace {

bool deepspeed_style(const Dialects& dialects) {
  return dialects.deepspeed.launch_style == config::LaunchStyle::deepspeed;
}

}  // namespace

std::vector<std::string> deepspeed_argv(const Dialects& dialects, std::vector<std::string> argv,
                                        int local_rank) {
  if (!deepspeed_style(dialects) || dialects.deepspeed.no_local_rank) return argv;
  const std::size_t script_args = dialects.script_arguments;
  const std::size_t at = argv.size() >= script_args ? argv.size() - script_args : argv.size();
  argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(at),
              "--local_rank=" + std::to_string(local_rank));
  return argv;
}

void add_deepspeed_variables(const LaunchPlan& plan, const RoundAssignment& round, EnvMap& vars) {
  if (!deepspeed_style(plan.dialects)) return;
  vars["LOCAL_SIZE"] = std::to_string(plan.local_world_size);
  vars["CROSS_RANK"] = std::to_string(round.group_rank);
  vars["CROSS_SIZE"] = std::to_string(round.group_world_size);
}

}  // namespace gangrun::launch
