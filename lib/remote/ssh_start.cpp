#include "remote/ssh_start.hpp"

#include "config/deepspeed/deepspeed_env_file.hpp"
#include "config/hosts/hostfile.hpp"
#include "config/option_names.hpp"
#include "config/option_table.hpp"
#include "launch/job_secret.hpp"
#include "launch/program.hpp"
#include "remote/remote_start.hpp"
#include "remote/tool_start.hpp"
#include "store/default_port.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <system_error>

namespace gangrun::remote {

using config::Options;

namespace {

// ssh's own code when it could not connect or authenticate.
constexpr int k_ssh_failed = 255;

namespace opt = config::opt;

// The options ssh_command() sets for each copy, or that only the
// calling gangrun uses.
constexpr std::array<std::string_view, 18> k_replaced_options = {
    opt::hostfile,     opt::include,        opt::exclude,       opt::nnodes,
    opt::node_rank,    opt::master_addr,    opt::master_port,   opt::rdzv_endpoint,
    opt::standalone,   opt::launcher,       opt::launcher_args, opt::ssh_port,
    opt::no_ssh_check, opt::nproc_per_node, opt::num_processes, opt::num_gpus,
    opt::dry_run,      opt::mpirun_hostfile};

constexpr std::array<std::string_view, 5> k_exported_prefixes = {"MLFLOW", "PYTHON", "MV2", "UCX",
                                                                 "NCCL"};

bool replaced(const config::OptionSpec* spec) {
  return spec != nullptr && std::find(k_replaced_options.begin(), k_replaced_options.end(),
                                      spec->name) != k_replaced_options.end();
}

// The remote script: its first line of stdin is the job's secret (ssh's
// channel, not the command line, which every user of the host sees in ps),
// exported for the copy alone. The copy's stdin is /dev/null; the rest of
// the script's stdin is watched by `cat` on descriptor 3, and its end sends
// SIGTERM to the copy. The watcher writes nowhere, so that sshd ends the
// session as soon as the copy has.
std::string remote_script(const std::string& cwd, const std::string& command) {
  return "IFS= read -r GANGRUN_JOB_SECRET || exit 2; export GANGRUN_JOB_SECRET; "
         "unset GANGRUN_JOB_SECRET_FILE; cd " +
         strings::shell_quote(cwd) + " || exit 2; exec 3<&0; " + command +
         " </dev/null 3<&- & p=$!; { cat <&3; kill -TERM $p; } >/dev/null 2>&1 & w=$!; "
         "exec 3<&-; wait $p; c=$?; kill $w 2>/dev/null; exit $c";
}

}  // namespace

Expected<bool> starts_through_ssh(const Options& options) {
  if (options.launcher != Options::Launcher::ssh) return false;
  if (options.job && options.job->is_slurm() && options.user_origin(opt::launcher) == nullptr) {
    return fail_usage("-H/" + self_option(opt::hostfile) +
                      " names hosts to reach over ssh, and this gangrun runs in Slurm job " +
                      options.job->slurm->job_id.value + ", which gives nodes too: give " +
                      self_option(opt::launcher) +
                      " ssh to use the hostfile, or drop it to use the allocation");
  }
  return true;
}

std::vector<std::string> remote_arguments(const std::vector<std::string>& arguments) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& word = arguments[i];
    const config::OptionSpec* spec = nullptr;
    bool value_attached = false;
    if (word == "--" || word.size() < 2 || word[0] != '-') {
      kept.insert(kept.end(), arguments.begin() + static_cast<long>(i), arguments.end());
      break;
    }
    if (word[1] == '-') {
      std::size_t equals = word.find('=');
      spec = config::find_option(std::string_view(word).substr(2, equals - 2));
      value_attached = equals != std::string::npos;
    } else {
      spec = config::find_option_by_short_name(word[1]);
      value_attached = word.size() > 2;
    }
    bool takes_next = spec != nullptr && spec->kind == config::OptionKind::value && !value_attached;
    bool drop = replaced(spec);
    if (!drop) kept.push_back(word);
    if (takes_next && i + 1 < arguments.size()) {
      ++i;
      if (!drop) kept.push_back(arguments[i]);
    }
  }
  return kept;
}

EnvMap exported_variables(const EnvMap& env, const std::string& cwd) {
  EnvMap exported;
  for (const auto& [name, value] : env) {
    bool wanted =
        name == "PATH" ||
        std::any_of(k_exported_prefixes.begin(), k_exported_prefixes.end(),
                    [&name = name](std::string_view prefix) { return name.starts_with(prefix); });
    if (wanted) exported[name] = value;
  }
  auto python_path = exported.find("PYTHONPATH");
  exported["PYTHONPATH"] = python_path == exported.end() ? cwd : cwd + ":" + python_path->second;
  return exported;
}

Expected<EnvMap> variables_for_hosts(const EnvMap& env, const std::string& cwd) {
  EnvMap exported = exported_variables(env, cwd);
  GANGRUN_TRY_ASSIGN(from_files, config::read_deepspeed_env_files(env, cwd));
  for (auto& [name, value] : *from_files) exported[name] = value;
  return exported;
}

std::string hosts_and_slots(const Options& options) {
  std::vector<std::string> names;
  for (const config::HostSlots& host : options.hosts.hosts) {
    names.push_back(host.host + " (" + std::to_string(host.slots.size()) + ")");
  }
  return strings::join(names, ", ");
}

std::vector<std::string> ssh_command(const Options& options, std::size_t index,
                                     const std::string& ssh, const std::string& self,
                                     const std::vector<std::string>& remote_args,
                                     const std::string& cwd, const EnvMap& exported,
                                     const std::optional<std::string>& run_id) {
  const std::vector<config::HostSlots>& hosts = options.hosts.hosts;
  const config::HostSlots& host = hosts[index];
  std::string master_addr = options.user_origin(opt::master_addr) != nullptr && options.master_addr
                                ? *options.master_addr
                                : hosts.front().host;
  std::vector<std::string> copy = {"env"};
  for (const auto& [name, value] : exported) copy.push_back(name + "=" + value);
  copy.insert(copy.end(),
              {self, self_option(opt::launcher), "local", self_option(opt::nnodes),
               std::to_string(hosts.size()), self_option(opt::node_rank), std::to_string(index),
               self_option(opt::master_addr), master_addr, self_option(opt::master_port),
               std::to_string(options.master_port.value_or(store::k_default_port)),
               self_option(opt::nproc_per_node), std::to_string(host.slots.size())});
  if (auto include = config::device_include(host, options.accelerator))
    copy.insert(copy.end(), {self_option(opt::include), *include});
  // One run id names the run on every host (run_id_for_hosts); one the
  // user's command line gave travels in the remote arguments.
  if (run_id) copy.insert(copy.end(), {self_option(opt::rdzv_id), *run_id});
  copy.insert(copy.end(), remote_args.begin(), remote_args.end());

  std::vector<std::string> command = {ssh, "-o", "BatchMode=yes"};
  if (options.hosts.ssh_port)
    command.insert(command.end(), {"-p", std::to_string(*options.hosts.ssh_port)});
  command.insert(command.end(), options.launcher_args.begin(), options.launcher_args.end());
  // A host name starting with '-' must not become an option of ssh.
  command.emplace_back("--");
  command.push_back(host.host);
  command.push_back("sh -c " + strings::shell_quote(remote_script(cwd, strings::shell_join(copy))));
  return command;
}

namespace {

// The job whose hosts these are (a PBS or LSF job's script runs gangrun),
// or nullptr under a hostfile.
const schedulers::Job* job_of_hosts(const Options& options) {
  const std::optional<schedulers::Job>& job = options.job;
  if (options.hosts.hostfile || !job || job->is_slurm()) return nullptr;
  return &*job;
}

}  // namespace

std::string hosts_origin(const Options& options) {
  const schedulers::Job* job = job_of_hosts(options);
  if (!job) return "-H/" + self_option(opt::hostfile) + " " + options.hosts.hostfile.value_or("");
  std::string id = job->job_id ? " " + strings::printable(job->job_id->value) : "";
  return "the hosts of " + job->system + " job" + id + " (" + job->hosts_origin + ")";
}

std::string hosts_job_line(const Options& options) {
  const schedulers::Job* job = job_of_hosts(options);
  if (!job) return "";
  int hosts = static_cast<int>(options.hosts.hosts.size());
  return "  job:        " + schedulers::job_line(*job, 0, hosts) + "\n";
}

std::string ssh_dry_run_text(const std::vector<std::vector<std::string>>& commands,
                             const std::string& origin, const std::string& job_line) {
  std::string text = "gangrun dry run: gangrun would start itself on " +
                     std::to_string(commands.size()) + " host(s) over ssh, " + origin +
                     ", one command per host:\n" + job_line;
  for (const std::vector<std::string>& command : commands) {
    text += "  " + strings::shell_join(command) + "\n";
  }
  return text;
}

namespace {

Expected<std::vector<std::vector<std::string>>> every_command(
    const Options& options, const std::vector<std::string>& arguments, const EnvMap& env,
    const std::string& ssh, const std::string& self, const std::optional<HostsRunId>& run_id) {
  std::error_code error;
  std::string cwd = std::filesystem::current_path(error).string();
  std::vector<std::string> remote_args = remote_arguments(arguments);
  GANGRUN_TRY_ASSIGN(exported, variables_for_hosts(env, cwd));
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < options.hosts.hosts.size(); ++i) {
    commands.push_back(ssh_command(options, i, ssh, self, remote_args, cwd, *exported,
                                   run_id ? std::optional(run_id->value) : std::nullopt));
  }
  return commands;
}

}  // namespace

Expected<std::string> ssh_dry_run_for(const Options& options,
                                      const std::vector<std::string>& arguments,
                                      const EnvMap& env) {
  std::optional<HostsRunId> run_id = run_id_for_hosts(options);
  GANGRUN_TRY_ASSIGN(commands,
                     every_command(options, arguments, env, "ssh", self_for_dry_run(), run_id));
  return ssh_dry_run_text(*commands, hosts_origin(options), hosts_job_line(options)) +
         fresh_run_id_note(run_id);
}

Expected<int> run_through_ssh(const Options& options, const std::vector<std::string>& arguments,
                              const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(secret, job_secret_for_hosts(env));
  GANGRUN_TRY_ASSIGN(ssh, launch::find_executable("ssh", env, "OpenSSH's ssh"));
  GANGRUN_TRY_ASSIGN(self, self_for_run());
  std::optional<HostsRunId> run_id = run_id_for_hosts(options);
  GANGRUN_TRY_ASSIGN(commands, every_command(options, arguments, env, *ssh, *self, run_id));
  spdlog::info("starting gangrun over ssh on {} hosts (workers), {}: {}",
               options.hosts.hosts.size(), hosts_origin(options), hosts_and_slots(options));
  std::vector<ToolCommand> tools;
  for (std::size_t i = 0; i < commands->size(); ++i) {
    tools.push_back({.name = "ssh to " + options.hosts.hosts[i].host, .argv = (*commands)[i]});
  }
  // ssh takes the secret on its input; its own environment need not hold it.
  EnvMap tool_env = env;
  launch::remove_job_secret(tool_env);
  GANGRUN_TRY_ASSIGN(statuses, supervise_tools(tools, tool_env,
                                               ToolRun{.stop_by = StopBy::closing_stdin,
                                                       .first_stdin_line = *secret,
                                                       .stop_rest_on_failure = true}));
  // The job's code is the first failure's: the hosts stopped after it end
  // with SIGTERM's code.
  int job_code = exit_codes::k_success;
  bool unreachable = false;
  for (std::size_t i : statuses->end_order) {
    int code = statuses->statuses[i].shell_code();
    if (code == k_ssh_failed) {
      spdlog::error(
          "ssh to {} failed (ssh exit code 255; its message is above): the job was "
          "stopped on every host",
          options.hosts.hosts[i].host);
      unreachable = true;
    } else if (job_code == exit_codes::k_success) {
      job_code = code;
    }
  }
  return unreachable ? exit_codes::k_store : job_code;
}

}  // namespace gangrun::remote
