#include "remote/srun_start.hpp"

#include "config/option_names.hpp"
#include "launch/program.hpp"
#include "remote/remote_start.hpp"
#include "remote/tool_start.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <optional>
#include <string_view>

namespace gangrun::remote {

using config::Options;

namespace {

// Options with which the user places this node, which the batch form
// leaves to Slurm.
constexpr std::array<std::string_view, 4> k_placing_options = {
    config::opt::node_rank, config::opt::master_addr, config::opt::rdzv_endpoint,
    config::opt::standalone};

// "--name (where)" when the user placed this node with the option; a flag
// places only when on.
std::optional<std::string> placed_by_user(const Options& options, std::string_view name) {
  const Options::Origin* origin = options.user_origin(name);
  if (!origin) return std::nullopt;
  if (name == config::opt::standalone && !options.standalone) return std::nullopt;
  return self_option(name) + " (" + config::to_string(origin->source) + ")";
}

}  // namespace

Expected<bool> starts_through_srun(const Options& options) {
  if (!options.job || !options.job->is_slurm() || options.launcher == Options::Launcher::local ||
      options.launcher == Options::Launcher::ssh ||
      options.launcher == Options::Launcher::openmpi) {
    return false;
  }
  const slurm::Job& job = *options.job->slurm;
  std::optional<std::string> placed;
  for (std::string_view name : k_placing_options) {
    if ((placed = placed_by_user(options, name))) break;
  }
  if (options.launcher == Options::Launcher::slurm) {
    const std::string launcher_slurm = self_option(config::opt::launcher) + " slurm";
    if (job.place == slurm::Place::step) {
      return fail_usage(launcher_slurm +
                        " starts gangrun on every node through srun, but this gangrun already "
                        "runs in an srun step (SLURM_STEP_ID=" +
                        strings::printable(job.step_id->value) + "); drop " + launcher_slurm +
                        " (inside a step gangrun reads the step's nodes itself)");
    }
    if (placed) {
      return fail_usage(launcher_slurm + " places every node through srun, so " + *placed +
                        " has no place here; drop it, or use " +
                        self_option(config::opt::launcher) + " local to place this node yourself");
    }
    return true;
  }
  return job.place == slurm::Place::allocation && job.num_nodes.value > 1 && !placed;
}

std::vector<std::string> srun_command(const Options& options, const std::string& srun,
                                      const std::string& self,
                                      const std::vector<std::string>& arguments) {
  const std::string nodes = std::to_string(options.nnodes);
  std::vector<std::string> command = {
      srun,
      "--nodes=" + nodes,
      "--ntasks=" + nodes,
      "--ntasks-per-node=1",
      // The job's variables (SLURM_NTASKS, SLURM_CPUS_PER_TASK, ...) are
      // srun's inputs too; the options above win over them, and these give
      // the agent every CPU and GPU the job has on its node.
      "--whole",
      "--cpu-bind=none",
      "--kill-on-bad-exit=0",
      "--export=ALL",
  };
  command.insert(command.end(), options.launcher_args.begin(), options.launcher_args.end());
  command.push_back(self);
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

std::string srun_dry_run_text(const std::vector<std::string>& command) {
  return "gangrun dry run: in this Slurm allocation gangrun would start itself on every node, "
         "one srun task per node:\n  " +
         strings::shell_join(command) +
         "\n(Run as it is inside the allocation, that command prints each node's own dry "
         "run.)\n";
}

Expected<std::string> srun_dry_run_for(const Options& options,
                                       const std::vector<std::string>& arguments,
                                       const EnvMap& /*env*/) {
  return srun_dry_run_text(srun_command(options, "srun", "gangrun", arguments));
}

Expected<int> run_through_srun(const Options& options, const std::vector<std::string>& arguments,
                               const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(secret, job_secret_for_hosts(env));
  GANGRUN_TRY_ASSIGN(srun, launch::find_executable("srun", env, "Slurm's srun"));
  GANGRUN_TRY_ASSIGN(self, self_for_run());
  std::vector<std::string> command = srun_command(options, *srun, *self, arguments);
  spdlog::info("starting gangrun on {} nodes of Slurm job {}: {}", options.nnodes,
               options.job->slurm->job_id.value, strings::join(command, " "));
  // srun's own answer to one INT is only a status line: TERM it is.
  // srun --export=ALL gives every task this environment; Slurm keeps it
  // from other users.
  return run_one_tool("srun", command, env, *secret);
}

}  // namespace gangrun::remote
