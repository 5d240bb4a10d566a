#include "launch/dialects/dialects.hpp"

#include "launch/dialects/deepspeed.hpp"
#include "launch/dialects/deepspeed_cores.hpp"
#include "launch/program.hpp"
#include "util/host.hpp"

namespace gangrun::launch {

Dialects dialects_from(const config::Options& options) {
  const std::size_t words = options.program_and_args.size();
  return Dialects{.accelerate = options.accelerate,
                  .deepspeed = options.deepspeed,
                  .script_arguments = words == 0 ? 0 : words - 1};
}

Expected<std::vector<WorkerStart>> worker_starts(const Dialects& dialects,
                                                 const std::vector<std::string>& program_argv,
                                                 int local_workers) {
  CoreHost core_host;
  if (dialects.deepspeed.bind_cores_to_rank) {
    std::vector<int> usable = host::usable_cpus();
    core_host = {host::physical_core_count(), {usable.begin(), usable.end()}};
  }
  GANGRUN_TRY_ASSIGN(cores, split_cores(dialects.deepspeed, local_workers, core_host));
  std::vector<WorkerStart> starts;
  starts.reserve(static_cast<std::size_t>(local_workers));
  for (int local_rank = 0; local_rank < local_workers; ++local_rank) {
    starts.push_back({.argv = deepspeed_argv(
                          dialects, substitute_local_rank(program_argv, local_rank), local_rank),
                      .cpus = std::move((*cores)[static_cast<std::size_t>(local_rank)])});
  }
  return starts;
}

}  // namespace gangrun::launch
