#include "config/hosts/hosts_values.hpp"

#include "config/hosts/hostfile.hpp"
#include "config/job_values.hpp"
#include "config/option_values.hpp"
#include "util/host.hpp"

namespace gangrun::config {

Expected<int> parse_ssh_port(std::string_view text) {
  GANGRUN_TRY_ASSIGN(port, parse_positive_int(text));
  if (*port > 65535) return fail_usage(std::to_string(*port) + " is not a port (1..65535)");
  return *port;
}

namespace {

bool given_by_user(const LayeredValues& values, std::string_view name) {
  auto it = values.find(name);
  return it != values.end() && config::given_by_user(it->second.source);
}

bool runs_here_only(const std::vector<HostSlots>& hosts) {
  if (hosts.size() != 1) return false;
  const std::string& host = hosts.front().host;
  return host == "localhost" || host == "127.0.0.1" || host == host::host_name();
}

}  // namespace

Expected<HostsAdditions> type_hosts_values(const LayeredValues& values, const Options& options) {
  const HostsSettings& hosts = options.hosts;
  const std::optional<schedulers::Job>& job = options.job;
  bool from_job = !hosts.hostfile && job && job->start == schedulers::Start::first_node &&
                  options.launcher != Options::Launcher::local;

  if (!hosts.hostfile && !from_job) {
    if (options.launcher == Options::Launcher::ssh) {
      return fail_usage(value_of(values, opt::launcher).given +
                        " starts gangrun over ssh on the hosts of a hostfile (as the deepspeed "
                        "launcher pdsh does): give -H/--hostfile FILE ('HOST slots=N' lines)");
    }
    if (options.launcher == Options::Launcher::openmpi) {
      return fail_usage(value_of(values, opt::launcher).given +
                        " starts gangrun through mpirun on the hosts of a hostfile: give "
                        "-H/--hostfile FILE ('HOST slots=N' lines); under mpirun already, drop it");
    }
    return HostsAdditions{};
  }
  if (options.launcher == Options::Launcher::local ||
      options.launcher == Options::Launcher::slurm) {
    return fail_usage("-H/--hostfile names hosts gangrun reaches over ssh, but --launcher " +
                      std::string(options.launcher == Options::Launcher::local
                                      ? "local runs on this node only"
                                      : "slurm takes the nodes from the Slurm allocation") +
                      "; drop one of them");
  }
  bool counts_given = given_by_user(values, opt::nnodes) || options.num_gpus.has_value();
  if (counts_given && (options.include || options.exclude)) {
    return fail_usage(
        "--num_nodes/--num_gpus cannot be combined with --include/--exclude (as in "
        "deepspeed); choose the hosts and slots with one of them");
  }
  std::optional<ProcCount> per_host;
  if (given_by_user(values, opt::nproc_per_node)) per_host = options.nproc_per_node;
  GANGRUN_TRY_ASSIGN(
      entries, from_job ? Expected<std::vector<HostfileEntry>>(scheduler_hosts(*job, per_host))
                        : read_hostfile(*hosts.hostfile));
  GANGRUN_TRY_ASSIGN(filtered, filter_hosts(*entries, options.include, options.exclude));
  std::optional<int> num_nodes;
  if (given_by_user(values, opt::nnodes)) num_nodes = options.nnodes;
  GANGRUN_TRY_ASSIGN(limited, limit_hosts(std::move(*filtered), num_nodes, options.num_gpus));

  HostsAdditions added;
  // deepspeed's --force_multi (typed before this) starts even this host alone over ssh.
  if (options.launcher == Options::Launcher::automatic && !options.deepspeed.force_multi &&
      runs_here_only(*limited)) {
    const HostSlots& here = limited->front();
    added.run_here = HostsAdditions::RunHere{
        .nproc_per_node = ProcCount{.kind = ProcCount::Kind::number,
                                    .number = static_cast<int>(here.slots.size())},
        .include = device_include(here, options.accelerator)};
    return added;
  }
  added.hosts = std::move(*limited);
  added.start_hosts = HostsAdditions::StartHosts{
      .launcher = options.launcher == Options::Launcher::openmpi ? Options::Launcher::openmpi
                                                                 : Options::Launcher::ssh,
      .nnodes = static_cast<int>(added.hosts.size())};
  return added;
}

Expected<void> check_hostfile_alone(const Options& options) {
  if (!options.hosts.hostfile) return {};
  GANGRUN_TRY(read_hostfile(*options.hosts.hostfile));
  return {};
}

}  // namespace gangrun::config
