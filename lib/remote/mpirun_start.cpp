#include "remote/mpirun_start.hpp"

#include "config/hosts/hostfile.hpp"
#include "config/option_names.hpp"
#include "config/option_table.hpp"
#include "launch/job_secret.hpp"
#include "launch/program.hpp"
#include "remote/remote_start.hpp"
#include "remote/ssh_start.hpp"
#include "remote/tool_start.hpp"
#include "store/default_port.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace gangrun::remote {

using config::Options;

namespace {

namespace opt = config::opt;

Expected<std::vector<std::string>> command_for(const Options& options,
                                               const std::vector<std::string>& arguments,
                                               const EnvMap& env, const std::string& mpirun,
                                               const std::string& self,
                                               const std::optional<HostsRunId>& run_id) {
  std::error_code error;
  std::string cwd = std::filesystem::current_path(error).string();
  GANGRUN_TRY_ASSIGN(exported, variables_for_hosts(env, cwd));
  return mpirun_command(options, mpirun, self, remote_arguments(arguments), cwd, *exported,
                        ::geteuid() == 0, run_id ? std::optional(run_id->value) : std::nullopt);
}

}  // namespace

Expected<bool> starts_through_mpirun(const Options& options) {
  return options.launcher == Options::Launcher::openmpi && !options.hosts.hosts.empty();
}

std::vector<std::string> mpirun_command(const Options& options, const std::string& mpirun,
                                        const std::string& self,
                                        const std::vector<std::string>& remote_args,
                                        const std::string& cwd, const EnvMap& exported,
                                        bool as_root, const std::optional<std::string>& run_id) {
  const std::vector<config::HostSlots>& hosts = options.hosts.hosts;
  std::string master_addr = options.user_origin(opt::master_addr) != nullptr && options.master_addr
                                ? *options.master_addr
                                : hosts.front().host;
  std::vector<std::string> exports = {
      "-x", "MASTER_ADDR=" + master_addr, "-x",
      "MASTER_PORT=" + std::to_string(options.master_port.value_or(store::k_default_port)),
      // By name: mpirun reads the value from its own environment.
      "-x", std::string(launch::k_job_secret_variable)};
  for (const auto& [name, value] : exported)
    exports.insert(exports.end(), {"-x", name + "=" + value});

  std::vector<std::string> command = {mpirun};
  // Open MPI refuses to run as root unless told; gangrun as root is the
  // user's choice already.
  if (as_root) command.emplace_back("--allow-run-as-root");
  command.insert(command.end(), {"--wdir", cwd});
  command.insert(command.end(), options.launcher_args.begin(), options.launcher_args.end());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const config::HostSlots& host = hosts[i];
    if (i > 0) command.emplace_back(":");
    command.insert(command.end(), {"-np", "1", "--host", host.host});
    command.insert(command.end(), exports.begin(), exports.end());
    command.insert(command.end(),
                   {self, self_option(opt::nproc_per_node), std::to_string(host.slots.size())});
    if (auto include = config::device_include(host, options.accelerator))
      command.insert(command.end(), {self_option(opt::include), *include});
    // On the command line, above the id each task would read from Open
    // MPI's variables: the same on every host, and shown in the dry run.
    if (run_id) command.insert(command.end(), {self_option(opt::rdzv_id), *run_id});
    command.insert(command.end(), remote_args.begin(), remote_args.end());
  }
  return command;
}

Expected<std::string> mpirun_dry_run_for(const Options& options,
                                         const std::vector<std::string>& arguments,
                                         const EnvMap& env) {
  std::optional<HostsRunId> run_id = run_id_for_hosts(options);
  GANGRUN_TRY_ASSIGN(command,
                     command_for(options, arguments, env, "mpirun", self_for_dry_run(), run_id));
  return "gangrun dry run: gangrun would start itself on " +
         std::to_string(options.hosts.hosts.size()) + " host(s) through mpirun, " +
         hosts_origin(options) + ", one task per host:\n" + hosts_job_line(options) + "  " +
         strings::shell_join(*command) +
         "\n(Each task reads its node rank from mpirun's variables; run with " +
         self_option(config::dash_case(opt::dry_run)) +
         " under mpirun, it prints its own node's dry run.)\n" + fresh_run_id_note(run_id);
}

Expected<int> run_through_mpirun(const Options& options, const std::vector<std::string>& arguments,
                                 const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(secret, job_secret_for_hosts(env));
  GANGRUN_TRY_ASSIGN(mpirun, launch::find_executable("mpirun", env, "Open MPI's mpirun"));
  GANGRUN_TRY_ASSIGN(self, self_for_run());
  GANGRUN_TRY_ASSIGN(
      command, command_for(options, arguments, env, *mpirun, *self, run_id_for_hosts(options)));
  spdlog::info("starting gangrun through mpirun on {} hosts (workers), {}: {}",
               options.hosts.hosts.size(), hosts_origin(options), hosts_and_slots(options));
  // mpirun exports the secret by name (-x) from its own environment, which
  // only mpirun gets.
  return run_one_tool("mpirun", *command, env, *secret);
}

}  // namespace gangrun::remote
