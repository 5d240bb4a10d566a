// What hostfiles and starting gangrun on other hosts do beyond their rows'
// fields (build_options.cpp calls it after every row is applied).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// --ssh_port: 1..65535.
Expected<int> parse_ssh_port(std::string_view text);

// What a hostfile (or the job's hosts, when gangrun starts the others itself)
// adds to the options; build_options.cpp assigns each field.
struct HostsAdditions {
  // Options::hosts.hosts: the hosts to start, in node rank order; empty
  // without hosts, or when they name only this host.
  std::vector<HostSlots> hosts;
  // Only this host, and nothing asks to start it over ssh: it runs here, as
  // deepspeed does without ssh. Its slots stand for --nproc_per_node and for
  // the devices (--include replaces --include and --exclude).
  struct RunHere {
    ProcCount nproc_per_node;
    std::optional<std::string> include;
    bool operator==(const RunHere&) const = default;
  };
  std::optional<RunHere> run_here;
  // Otherwise the hosts stand for how gangrun starts the nodes (ssh, or the
  // openmpi launcher already chosen) and for their count, --nnodes N.
  struct StartHosts {
    Options::Launcher launcher;
    int nnodes;
    bool operator==(const StartHosts&) const = default;
  };
  std::optional<StartHosts> start_hosts;

  bool operator==(const HostsAdditions&) const = default;
};

// Reads the hostfile options.hosts names (its rows typed the flags already),
// or the job's hosts, and says what they add; changes nothing. Usage errors
// name the option as given.
Expected<HostsAdditions> type_hosts_values(const LayeredValues& values, const Options& options);

// Reads the hostfile alone, for when another value did not type and
// type_hosts_values does not run: a hostfile that cannot be read or parsed is
// reported with the other problems. Nothing when no hostfile is given.
Expected<void> check_hostfile_alone(const Options& options);

}  // namespace gangrun::config
